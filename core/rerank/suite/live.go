package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// Live is the listwise model called for real: each request goes through
// the transport (which holds the key, follows no redirect and counts the
// attempt against the process-wide allowance) only after its estimated
// cost is reserved in the ledger. It makes one attempt per case: no retry,
// whatever the failure.
type Live struct {
	Transport gemini.Transport
	Ledger    *budget.Ledger
	Rate      price.Rate // the ListwiseModel's price, from a visible, overridable table
	// Exchanges are the attempts that got a JSON reply or a transport
	// error, in order, ready to be written as a recording.
	Exchanges []recording.Exchange
}

// Decide sends one listwise request, checking in the agent provider's
// order: the body's size (provider_input_bytes_limit), the key
// (missing_api_key), then the ledger (budget_exceeded); a reservation is
// persisted before anything is sent and kept whatever happens next. A
// failed request is model_transport_failed:<kind> (HTTPError for a status
// outside 2xx); an oversized reply provider_response_bytes_limit; a body
// that is not JSON invalid_model_json.
func (l *Live) Decide(ctx context.Context, p agent.Prompt, timeout time.Duration) (agent.Reply, error) {
	if l.Transport == nil || l.Ledger == nil {
		return agent.Reply{}, errors.New("live listwise model: a transport and a ledger are required")
	}
	payload := gemini.Payload(p)
	body := gemini.Body(payload)
	if len(body) > gemini.MaxRequestBytes {
		return agent.Reply{}, reason.New(reason.ProviderInputBytesLimit, "the request body is %d bytes; the cap is %d", len(body), gemini.MaxRequestBytes)
	}
	if !l.Transport.HasKey() {
		return agent.Reply{}, reason.New(reason.MissingAPIKey, "no Gemini API key is configured")
	}
	sum := sha256.Sum256(body)
	seq, err := l.Ledger.Reserve(budget.Request{Label: "rerank listwise: " + question(p), Model: ListwiseModel,
		RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(l.Rate, len(body), MaxOutputTokens())})
	if err != nil {
		return agent.Reply{}, err
	}
	reply, failure := l.send(ctx, payload, body, timeout)
	outcome := budget.Completed
	if code, failed := reason.Of(failure); failed {
		outcome = string(code)
	}
	if err := l.Ledger.Settle(seq, outcome); err != nil {
		return agent.Reply{}, errors.Join(failure, err)
	}
	if failure != nil {
		return agent.Reply{}, failure
	}
	return reply, nil
}

// send makes the one attempt; every failure carries a reason code.
func (l *Live) send(ctx context.Context, payload *pyjson.Object, body []byte, timeout time.Duration) (agent.Reply, error) {
	if timeout <= 0 || timeout > CallTimeout {
		timeout = CallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, response, err := l.Transport.Post(ctx, ListwiseEndpoint, body)
	if err != nil {
		kind := "URLError"
		var te *gemini.TransportError
		if errors.As(err, &te) && te.Kind != "" {
			kind = te.Kind
		} else if errors.Is(err, context.DeadlineExceeded) {
			kind = "TimeoutError"
		}
		l.Exchanges = append(l.Exchanges, recording.Exchange{Request: payload, Error: kind})
		return agent.Reply{}, reason.New(reason.Transport(kind), "%s", err.Error())
	}
	if status < 200 || status > 299 {
		l.Exchanges = append(l.Exchanges, recording.Exchange{Request: payload, Error: "HTTPError", HTTPStatus: status})
		return agent.Reply{}, reason.New(reason.Transport("HTTPError"), "HTTP %d", status)
	}
	if len(response) > gemini.MaxResponseBytes {
		return agent.Reply{}, reason.New(reason.ProviderResponseBytesLimit, "the reply is over %d bytes", gemini.MaxResponseBytes)
	}
	decoded, err := pyjson.Decode(string(response))
	if err != nil {
		return agent.Reply{}, reason.New(reason.InvalidModelJSON, "the reply body is not JSON: %s", err.Error())
	}
	l.Exchanges = append(l.Exchanges, recording.Exchange{Request: payload, Response: decoded})
	return gemini.Decode(decoded)
}

// question is the question a listwise prompt carries, for the ledger.
func question(p agent.Prompt) string {
	v, _ := pyjson.Decode(p.State)
	q, _ := get(objectOf(v), "question").(string)
	if r := []rune(q); len(r) > 80 {
		q = string(r[:80]) + "…"
	}
	return q
}

// Recording is the live attempts as a ragagent-recording/1 file: one trial
// with every exchange in order, which Replay can replay.
func (l *Live) Recording(recordedAt time.Time) *recording.File {
	return &recording.File{Model: ListwiseModel, Endpoint: ListwiseEndpoint,
		Config: pyjson.NewObject("generationConfig", gemini.Config()), RecordedAt: recordedAt.UTC().Format(time.RFC3339),
		Trials: []recording.Trial{{ID: "live-listwise", Split: "development", Repeat: 1, Mode: "listwise", Exchanges: l.Exchanges}}}
}
