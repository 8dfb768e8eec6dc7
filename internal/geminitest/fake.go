// Package geminitest is a loopback fake of the generateContent protocol, for
// tests and for the page's browser tests (through cmd/fakegemini). It
// answers from a script of replies (decisions, HTTP errors, a redirect, a
// slow reply, an oversized or invalid body, unfinished or multi-candidate
// replies, thought parts) or with the offline scripted policy, and keeps
// every request it saw, headers included, so a test can check exactly what
// was sent and where the key went.
package geminitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// ModelVersion is the modelVersion the fake's replies carry.
const ModelVersion = gemini.Model + "-fake"

// Reply is one answer of the fake, as it goes on the wire.
type Reply struct {
	Status   int // 0 means 200
	Header   http.Header
	Body     []byte
	Location string        // sent as the Location header (a redirect)
	Delay    time.Duration // wait this long, or until the client gives up, before answering
}

// Responder chooses the reply to an accepted request.
type Responder interface {
	Reply(r Request) Reply
}

// ResponderFunc adapts a function to Responder.
type ResponderFunc func(Request) Reply

// Reply calls f.
func (f ResponderFunc) Reply(r Request) Reply { return f(r) }

// Request is a request the fake received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Payload is the body decoded, when it is a JSON object.
	Payload *pyjson.Object
	// Status is what the fake answered.
	Status int
	// Reached is true when the request passed the fake's API checks and its
	// reply came from the responder: a generation attempt.
	Reached bool
}

// Prompt is the agent prompt the request carries (system and state text),
// as far as the body has them.
func (r Request) Prompt() model.Prompt {
	text := func(v any) string {
		o, _ := v.(*pyjson.Object)
		parts, _ := field(o, "parts").([]any)
		if len(parts) == 0 {
			return ""
		}
		s, _ := field(asObject(parts[0]), "text").(string)
		return s
	}
	contents, _ := field(r.Payload, "contents").([]any)
	var state string
	if len(contents) > 0 {
		state = text(contents[0])
	}
	return model.Prompt{System: text(field(r.Payload, "systemInstruction")), State: state}
}

func field(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

func asObject(v any) *pyjson.Object {
	o, _ := v.(*pyjson.Object)
	return o
}

// Fake is the fake API as an http.Handler. It refuses what the real API
// refuses before any generation (a method other than POST, another path, no
// key, a body that is not a JSON object), answers CORS preflights allowing
// only the Content-Type and x-goog-api-key headers, and hands every other
// request to its responder.
type Fake struct {
	responder Responder
	mu        sync.Mutex
	requests  []Request
}

// NewFake returns a fake answering with r.
func NewFake(r Responder) *Fake { return &Fake{responder: r} }

// Requests returns every request received so far, preflights and refusals
// included, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Generations returns the requests that reached the responder.
func (f *Fake) Generations() []Request {
	var out []Request
	for _, r := range f.Requests() {
		if r.Reached {
			out = append(out, r)
		}
	}
	return out
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
	req := Request{Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	if v, err := pyjson.Decode(string(body)); err == nil {
		req.Payload, _ = v.(*pyjson.Object)
	}
	reply, reached := f.route(hr, req)
	req.Status, req.Reached = reply.Status, reached
	if req.Status == 0 {
		req.Status = http.StatusOK
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-hr.Context().Done():
			return
		}
	}
	h := w.Header()
	for k, v := range reply.Header {
		h[k] = v
	}
	if reply.Location != "" {
		h.Set("Location", reply.Location)
	}
	if hr.Method != http.MethodOptions {
		h.Set("Content-Type", "application/json; charset=UTF-8")
	}
	w.WriteHeader(req.Status)
	w.Write(reply.Body)
}

func (f *Fake) route(hr *http.Request, req Request) (Reply, bool) {
	if hr.Method == http.MethodOptions {
		return preflight(hr), false
	}
	refuse := func(r Reply) (Reply, bool) {
		r.Header = http.Header{"Access-Control-Allow-Origin": {"*"}}
		return r, false
	}
	switch {
	case hr.Method != http.MethodPost:
		return refuse(apiError(http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "only POST is served"))
	case !strings.HasSuffix(hr.URL.Path, ":generateContent"):
		return refuse(apiError(http.StatusNotFound, "NOT_FOUND", "no such method: "+hr.URL.Path))
	case hr.Header.Get("X-Goog-Api-Key") == "":
		return refuse(apiError(http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers. Please use an API key."))
	case !strings.HasPrefix(hr.Header.Get("Content-Type"), "application/json"):
		return refuse(apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "the body must be application/json"))
	case req.Payload == nil:
		return refuse(apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received."))
	}
	r := f.responder.Reply(req)
	r.Header = r.Header.Clone() // a responder may hand out one reply many times
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Access-Control-Allow-Origin", "*")
	return r, true
}

// preflight answers a CORS preflight as the real API does for a browser:
// POST with Content-Type and x-goog-api-key is allowed, any other requested
// header is not (the browser then refuses to send the request).
func preflight(hr *http.Request) Reply {
	for _, h := range strings.Split(hr.Header.Get("Access-Control-Request-Headers"), ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h != "" && h != "content-type" && h != "x-goog-api-key" {
			return Reply{Status: http.StatusForbidden}
		}
	}
	if m := hr.Header.Get("Access-Control-Request-Method"); m != "" && m != http.MethodPost {
		return Reply{Status: http.StatusForbidden}
	}
	return Reply{Status: http.StatusNoContent, Header: http.Header{
		"Access-Control-Allow-Origin":  {"*"},
		"Access-Control-Allow-Methods": {"POST"},
		"Access-Control-Allow-Headers": {"content-type, x-goog-api-key"},
		"Access-Control-Max-Age":       {"3600"},
	}}
}

// Server is a Fake on an httptest loopback server.
type Server struct {
	*Fake
	srv *httptest.Server
}

// NewServer starts a fake on 127.0.0.1 answering with r.
func NewServer(r Responder) *Server {
	f := NewFake(r)
	return &Server{Fake: f, srv: httptest.NewServer(f)}
}

// URL is the server's origin, http://127.0.0.1:port.
func (s *Server) URL() string { return s.srv.URL }

// Endpoint is the generateContent URL on the server.
func (s *Server) Endpoint() string {
	return s.srv.URL + "/v1beta/models/" + gemini.Model + ":generateContent"
}

// Close stops the server (a slow reply in progress ends when its client
// gives up).
func (s *Server) Close() { s.srv.Close() }

// Sequence hands out replies in order, then lets then answer (nil: every
// further request gets HTTP 500 saying the script is exhausted).
func Sequence(then Responder, replies ...Reply) Responder {
	steps := make([]Responder, len(replies))
	for i, reply := range replies {
		steps[i] = constant(reply)
	}
	return Steps(then, steps...)
}

// Steps is Sequence for replies that depend on their request (a ranking of
// the candidates it carries): the i-th request is answered by steps[i].
func Steps(then Responder, steps ...Responder) Responder {
	var mu sync.Mutex
	next := 0
	return ResponderFunc(func(r Request) Reply {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if i < len(steps) {
			return steps[i].Reply(r)
		}
		if then != nil {
			return then.Reply(r)
		}
		return apiError(http.StatusInternalServerError, "INTERNAL", fmt.Sprintf("the fake's script of %d replies is exhausted", len(steps)))
	})
}

func constant(reply Reply) Responder { return ResponderFunc(func(Request) Reply { return reply }) }

// Policy answers every request as a deterministic model would: an agent
// request with the offline scripted policy's decision for the prompt it
// carries, a listwise rerank request with its candidates ranked by
// coverage (Ranking). A realistic model for end-to-end tests and for
// trying the page or the command line without a key.
func Policy() Responder {
	return ResponderFunc(func(r Request) Reply {
		if isListwise(r) {
			return Ranking(RankByCoverage).Reply(r)
		}
		text := pyjson.Dumps(policy.Scripted{}.Next(r.Prompt()), pyjson.Options{})
		return build(len(r.Body)/4, candidate("STOP", part(text)))
	})
}

// Decision is a finished reply whose one candidate's text is the JSON of v
// (a decision value, or any JSON value).
func Decision(v any) Reply {
	return Text(pyjson.Dumps(v, pyjson.Options{}))
}

// Text is a finished reply (finishReason STOP) whose one candidate's text is
// text, which need not be JSON.
func Text(text string) Reply {
	return Candidates(candidate("STOP", part(text)))
}

// Finished is a one-candidate reply with another finishReason (MAX_TOKENS,
// SAFETY, ...).
func Finished(finishReason, text string) Reply {
	return Candidates(candidate(finishReason, part(text)))
}

// TwoCandidates is a reply with two finished candidates of the same text.
func TwoCandidates(text string) Reply {
	return Candidates(candidate("STOP", part(text)), candidate("STOP", part(text)))
}

// WithThought is a finished reply whose candidate starts with a thought part
// (which a decoder must skip) before text.
func WithThought(thought, text string) Reply {
	return Candidates(candidate("STOP", pyjson.NewObject("text", thought, "thought", true), part(text)))
}

// Candidates is a reply with the given candidates.
func Candidates(cands ...any) Reply { return build(0, cands...) }

// build is a 200 reply with the candidates and usage metadata counting
// about four bytes a token (promptTokens is given: a scripted reply does
// not know its request).
func build(promptTokens int, cands ...any) Reply {
	out := 0
	for _, c := range cands {
		out += len(pyjson.Dumps(c, pyjson.Options{})) / 4
	}
	usage := pyjson.NewObject("promptTokenCount", promptTokens, "candidatesTokenCount", out,
		"totalTokenCount", promptTokens+out)
	body := pyjson.NewObject("candidates", cands, "usageMetadata", usage,
		"modelVersion", ModelVersion, "responseId", "fake")
	return Reply{Status: http.StatusOK, Body: []byte(pyjson.Dumps(body, pyjson.Options{}))}
}

func candidate(finishReason string, parts ...any) *pyjson.Object {
	return pyjson.NewObject("content", pyjson.NewObject("parts", parts, "role", "model"),
		"finishReason", finishReason, "index", 0)
}

func part(text string) *pyjson.Object { return pyjson.NewObject("text", text) }

// Status is an HTTP error in the API's error shape (429, 500, 503, ...).
func Status(code int) Reply {
	names := map[int]string{429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 400: "INVALID_ARGUMENT"}
	name := names[code]
	if name == "" {
		name = "UNKNOWN"
	}
	return apiError(code, name, fmt.Sprintf("fake %s (HTTP %d)", name, code))
}

func apiError(code int, status, message string) Reply {
	body := pyjson.NewObject("error", pyjson.NewObject("code", code, "message", message, "status", status))
	return Reply{Status: code, Body: []byte(pyjson.Dumps(body, pyjson.Options{}))}
}

// Redirect is a 302 to location (which a client must not follow).
func Redirect(location string) Reply {
	return Reply{Status: http.StatusFound, Location: location, Body: []byte(`{}`)}
}

// Slow is r delivered after d (or never, if the client gives up first).
func Slow(d time.Duration, r Reply) Reply {
	r.Delay = d
	return r
}

// Oversized is a 200 reply of valid JSON one byte over the response cap.
func Oversized() Reply {
	head, tail := []byte(`{"candidates": [], "padding": "`), []byte(`"}`)
	pad := bytes.Repeat([]byte("x"), gemini.MaxResponseBytes+1-len(head)-len(tail))
	return Reply{Status: http.StatusOK, Body: append(append(head, pad...), tail...)}
}

// Raw is any status and body as given (a body that is not JSON, say).
func Raw(status int, body string) Reply {
	return Reply{Status: status, Body: []byte(body)}
}
