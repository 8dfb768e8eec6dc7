package gemini

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// MaxAllowance is the most requests one process may ever be allowed: the
// reference lab's ceiling, so that no flag can turn a typo into a bill.
const MaxAllowance = 200

// MaxCallTimeout caps one attempt, whatever the run's deadline leaves.
const MaxCallTimeout = 45 * time.Second

// Allowance is the process-wide request allowance. One is made per batch
// (or per command) and shared by every run in it, because what it bounds is
// money spent by the process, not by one run. It is checked before each
// attempt and an attempt is counted before it is sent, so a request that
// fails, times out or is refused after sending still counts.
type Allowance struct {
	mu    sync.Mutex
	limit int
	used  int
}

// NewAllowance returns an allowance of limit requests (1..MaxAllowance).
func NewAllowance(limit int) (*Allowance, error) {
	if limit < 1 || limit > MaxAllowance {
		return nil, reason.New(reason.InvalidRequestAllowance,
			"the request allowance must be a whole number from 1 to %d, got %d", MaxAllowance, limit)
	}
	return &Allowance{limit: limit}, nil
}

// Limit is the number of requests allowed.
func (a *Allowance) Limit() int { return a.limit }

// Used is the number of attempts counted so far.
func (a *Allowance) Used() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used
}

func (a *Allowance) exhausted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used >= a.limit
}

// take counts one attempt; false when none is left (another run of the
// batch may have taken the last one since exhausted was checked).
func (a *Allowance) take() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used >= a.limit {
		return false
	}
	a.used++
	return true
}

// Attempt is one request that was counted and sent: the request body, then
// either the decoded response or why there is none. It is what a recording
// keeps of a paid call.
//
// Error is empty when a response was decoded. Otherwise it is a transport
// kind (HTTPError with HTTPStatus, URLError, TimeoutError), or, where an
// HTTP 2xx body arrived but could not be kept, the code the run ended with:
// provider_response_bytes_limit (over MaxResponseBytes) or
// invalid_model_json (not JSON). A request the person stopped is recorded
// as cancelled. The reference provider records only the request in those
// three cases, which its own replay cannot read back; recording the code
// lets a replay end the run exactly as the live run ended (AttemptReason).
//
// Before it is sent, the same request is recorded as Pending (with no
// outcome), so that a process killed while waiting for the reply still
// leaves the request it paid for on record (see NotRecorded); the attempt
// recorded after the reply replaces it.
type Attempt struct {
	Request    *pyjson.Object
	Response   any
	Error      string
	HTTPStatus int
	Pending    bool
	// SentAt is when the attempt was sent (RFC 3339), stamped by whoever
	// records it with its clock: on the pending record, and kept on its
	// outcome.
	SentAt string
}

// Transport kinds, the reference lab's exception names.
const (
	HTTPError    = "HTTPError"
	URLError     = "URLError"
	TimeoutError = "TimeoutError"
)

// NotRecorded is the error kind of a pending attempt: a request recorded
// before it was sent whose reply never was, because the recording process
// stopped (a kill, a crash, a power cut) while it waited. A recording
// keeps it with this kind, so a replay ends the run there with
// model_transport_failed:ReplyNotRecorded, counting the call, as the
// reference replay also reads it (any error string is a transport kind):
// the request was paid for, and what it would have answered is unknown.
const NotRecorded = "ReplyNotRecorded"

// AttemptReason is the code a failed attempt ends a run with, live and in
// replay alike: the three codes an attempt records for a body it could not
// keep or a stop stand for themselves, and any other error (a transport
// kind, or an exception name in a recording made by the reference lab) is
// model_transport_failed:<kind>.
func AttemptReason(kind string) reason.Code {
	switch c := reason.Code(kind); c {
	case reason.ProviderResponseBytesLimit, reason.InvalidModelJSON, reason.Cancelled:
		return c
	}
	return reason.Transport(kind)
}

// Client is the paid model: each decision is one generateContent request
// through a Transport, under the reference provider's guarantees and in its
// order of checks: a body over MaxRequestBytes is refused, then an
// exhausted allowance, then a missing key; only then is the attempt
// counted, recorded as pending (saved before a byte is sent), sent with a
// timeout of min(45 s, the run's remaining deadline), no retry and no
// redirect, and recorded again (saved) with whatever happened. The key
// stays in the Transport.
type Client struct {
	transport Transport
	allowance *Allowance
	endpoint  string
	record    func(Attempt) error
	// BeforeSend, if set, is called once every check has passed, just
	// before the attempt is counted and sent, with the exact body; an error
	// refuses the request, and nothing is counted or sent. A spending
	// ledger reserves here, so that what it reserves for is exactly what
	// this model sends, under the same checks.
	BeforeSend func(body []byte) error
}

// NewClient returns a live model. endpoint is "" for Endpoint or a loopback
// override (see ResolveEndpoint). record is called before every attempt is
// sent (a Pending attempt) and after it, before the reply is decoded; it
// should save the recording, and an error from it stops the run as a fault
// (spending more without a record of it would be worse): before sending,
// nothing is sent.
func NewClient(t Transport, a *Allowance, endpoint string, record func(Attempt) error) (*Client, error) {
	return NewClientFor(Model, t, a, endpoint, record)
}

// NewClientFor is NewLive for another model of the API, with the same
// guarantees; endpoint "" is that model's real URL (ResolveModelEndpoint).
func NewClientFor(model string, t Transport, a *Allowance, endpoint string, record func(Attempt) error) (*Client, error) {
	if t == nil || a == nil {
		return nil, errors.New("gemini: a live model needs a transport and an allowance")
	}
	ep, err := ResolveModelEndpoint(model, endpoint)
	if err != nil {
		return nil, err
	}
	if record == nil {
		record = func(Attempt) error { return nil }
	}
	return &Client{transport: t, allowance: a, endpoint: ep, record: record}, nil
}

// Endpoint is the URL this model posts to.
func (m *Client) Endpoint() string { return m.endpoint }

// Decide sends one request for the prompt. See Live for the guarantees.
func (m *Client) Decide(ctx context.Context, p model.Prompt, timeout time.Duration) (model.Reply, error) {
	payload := Payload(p)
	body := Body(payload)
	if len(body) > MaxRequestBytes {
		return model.Reply{}, reason.New(reason.ProviderInputBytesLimit,
			"the request body is %d bytes, over the %d-byte cap; nothing was sent", len(body), MaxRequestBytes)
	}
	if m.allowance.exhausted() {
		return model.Reply{}, reason.New(reason.BatchRequestLimit,
			"all %d requests of the allowance are used; nothing was sent", m.allowance.Limit())
	}
	if !m.transport.HasKey() {
		return model.Reply{}, reason.New(reason.MissingAPIKey, "no API key is configured; nothing was sent")
	}
	if ctx.Err() != nil {
		return model.Reply{}, reason.New(reason.Cancelled, "stopped before the request was sent")
	}
	if m.BeforeSend != nil {
		if err := m.BeforeSend(body); err != nil {
			return model.Reply{}, err
		}
	}
	if !m.allowance.take() {
		return model.Reply{}, reason.New(reason.BatchRequestLimit,
			"all %d requests of the allowance are used; nothing was sent", m.allowance.Limit())
	}
	if err := m.record(Attempt{Request: payload, Pending: true}); err != nil {
		return model.Reply{}, fmt.Errorf("request %d was not sent: it could not be recorded first: %w", m.allowance.Used(), err)
	}
	call, cancel := context.WithTimeout(ctx, min(timeout, MaxCallTimeout))
	defer cancel()
	status, raw, err := m.transport.Post(call, m.endpoint, body)
	a := Attempt{Request: payload}
	reply, failure := settle(ctx, call, &a, status, raw, err)
	if err := m.record(a); err != nil {
		return reply, fmt.Errorf("request %d was sent but could not be recorded: %w", m.allowance.Used(), err)
	}
	return reply, failure
}

// settle fills the attempt from what the transport brought back and returns
// the decoded reply or the run's reason to end.
func settle(ctx, call context.Context, a *Attempt, status int, raw []byte, err error) (model.Reply, error) {
	fail := func(kind, format string, args ...any) (model.Reply, error) {
		a.Error = kind
		return model.Reply{}, reason.New(AttemptReason(kind), format, args...)
	}
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return fail(string(reason.Cancelled), "stopped while waiting for the reply")
		case call.Err() != nil:
			return fail(TimeoutError, "no reply in time: %s", err.Error())
		}
		var te *TransportError
		if errors.As(err, &te) && te.Kind == TimeoutError {
			return fail(TimeoutError, "%s", err.Error())
		}
		return fail(URLError, "%s", err.Error())
	}
	if status < 200 || status > 299 {
		a.HTTPStatus = status
		return fail(HTTPError, "HTTP %d%s", status, serverMessage(raw))
	}
	if len(raw) > MaxResponseBytes {
		return fail(string(reason.ProviderResponseBytesLimit),
			"the response body is over the %d-byte cap", MaxResponseBytes)
	}
	v, err := pyjson.Decode(string(raw))
	if err != nil {
		return fail(string(reason.InvalidModelJSON), "the response body is not JSON: %s", err.Error())
	}
	a.Response = v
	return Decode(v)
}

// serverMessage is the API's own explanation of an HTTP error (its
// error.message), shortened, for people; it is never recorded.
func serverMessage(raw []byte) string {
	v, err := pyjson.Decode(string(raw))
	if err != nil {
		return ""
	}
	o, _ := v.(*pyjson.Object)
	e, _ := o.Get("error")
	eo, _ := e.(*pyjson.Object)
	msg, _ := eo.Get("message")
	s, ok := msg.(string)
	if !ok || s == "" {
		return ""
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return ": " + s
}
