package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/secret"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/httptransport"
)

// dummyKey is obviously not a key; tests look for it where it must not be.
const dummyKey = "dummy-test-key-not-a-real-key"

func prompt(state string) model.Prompt {
	return model.Prompt{System: agent.Instruction(agent.Agent), State: state, Schema: agent.Schema()}
}

const smallState = `{"question": "Does Path.write_text overwrite?", "version": "3.12"}`

func stopDecision() *pyjson.Object {
	return pyjson.ValueOf(agent.Decision{Action: agent.Stop, Assessment: "Nothing supports an answer.", Citations: []agent.Quote{}}).(*pyjson.Object)
}

// attempts collects what a live model records (its attempts with their
// outcome in list, the write-ahead records made before each was sent in
// pending), and saves it through a real recorder so the saved bytes can
// be searched for the key.
type attempts struct {
	list    []gemini.Attempt
	pending []gemini.Attempt
	saved   []byte
	log     *recording.TrialLog
}

func newAttempts(t *testing.T) *attempts {
	a := &attempts{}
	rec, err := recording.NewRecorder(recording.File{Model: gemini.Model, Endpoint: gemini.Endpoint, Config: gemini.Config()},
		func(b []byte) error { a.saved = append([]byte(nil), b...); return nil })
	require.NoError(t, err)
	a.log, err = rec.Begin(recording.Trial{ID: "t-1", Question: "q", Version: "3.12", Mode: "agent"})
	require.NoError(t, err)
	return a
}

func (a *attempts) record(x gemini.Attempt) error {
	if x.Pending {
		a.pending = append(a.pending, x)
	} else {
		a.list = append(a.list, x)
	}
	return a.log.Record(x)
}

// TestLiveAgainstTheFake sends one request for each behaviour of the fake
// server through the native transport, and checks the reason, that exactly
// one attempt was made, counted and recorded, that the recording replays
// to the same reason, and that the key went only into x-goog-api-key.
func TestLiveAgainstTheFake(t *testing.T) {
	decision := pyjson.Dumps(stopDecision(), pyjson.Options{})
	rows := []struct {
		name    string
		reply   geminitest.Reply
		timeout time.Duration
		want    reason.Code // "" for an admitted decision
		error   string      // the recorded error; "" for a recorded response
		status  int
	}{
		{name: "decision", reply: geminitest.Decision(stopDecision())},
		{name: "thought parts are skipped", reply: geminitest.WithThought("I should stop.", decision)},
		{name: "429", reply: geminitest.Status(429), want: "model_transport_failed:HTTPError", error: "HTTPError", status: 429},
		{name: "500", reply: geminitest.Status(500), want: "model_transport_failed:HTTPError", error: "HTTPError", status: 500},
		{name: "503", reply: geminitest.Status(503), want: "model_transport_failed:HTTPError", error: "HTTPError", status: 503},
		{name: "redirect is not followed", reply: geminitest.Redirect("/v1beta/models/other:generateContent"),
			want: "model_transport_failed:HTTPError", error: "HTTPError", status: 302},
		// The deadline is long enough for the request to reach the fake on a
		// loaded machine (it then holds the reply for a minute): a shorter
		// one made the "one request reached the server" check flaky.
		{name: "slow reply past the deadline", reply: geminitest.Slow(time.Minute, geminitest.Decision(stopDecision())),
			timeout: 3 * time.Second, want: "model_transport_failed:TimeoutError", error: "TimeoutError"},
		{name: "oversized reply", reply: geminitest.Oversized(), want: reason.ProviderResponseBytesLimit, error: "provider_response_bytes_limit"},
		{name: "body not JSON", reply: geminitest.Raw(200, "<html>upstream error</html>"), want: reason.InvalidModelJSON, error: "invalid_model_json"},
		{name: "MAX_TOKENS", reply: geminitest.Finished("MAX_TOKENS", `{"action": "se`), want: reason.UnfinishedModelReply},
		{name: "SAFETY", reply: geminitest.Finished("SAFETY", ""), want: reason.UnfinishedModelReply},
		{name: "two candidates", reply: geminitest.TwoCandidates(decision), want: reason.UnfinishedModelReply},
		{name: "invalid JSON text", reply: geminitest.Text("{not json"), want: reason.InvalidModelJSON},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			fake := geminitest.NewServer(geminitest.Sequence(nil, row.reply))
			defer fake.Close()
			allowance, err := gemini.NewAllowance(5)
			require.NoError(t, err)
			rec := newAttempts(t)
			live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(), rec.record)
			require.NoError(t, err)
			timeout := row.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			p := prompt(smallState)
			reply, err := live.Decide(context.Background(), p, timeout)

			if row.want == "" {
				require.NoError(t, err)
				_, err = agent.ValidateDecision(reply.Value)
				assert.NoError(t, err)
				assert.Equal(t, geminitest.ModelVersion, reply.Meta.ModelVersion)
			} else {
				code, _ := reason.Of(err)
				assert.Equal(t, row.want, code, "error: %v", err)
			}
			assert.Equal(t, 1, allowance.Used(), "one attempt counted")
			require.Len(t, rec.list, 1, "one attempt recorded")
			got := rec.list[0]
			assert.Equal(t, row.error, got.Error)
			assert.Equal(t, row.status, got.HTTPStatus)
			assert.True(t, pyjson.Equal(gemini.Payload(p), got.Request), "the request is recorded as sent")
			if row.error == "" {
				assert.NotNil(t, got.Response)
			}

			gens := fake.Generations()
			require.Len(t, fake.Requests(), 1, "one request reached the server (no retry, no redirect followed)")
			require.Len(t, gens, 1)
			sent := gens[0]
			assert.Equal(t, gemini.Body(gemini.Payload(p)), sent.Body, "the body is json.dumps(payload)")
			assert.Equal(t, dummyKey, sent.Header.Get("X-Goog-Api-Key"))
			assert.Equal(t, "application/json", sent.Header.Get("Content-Type"))
			for name, values := range sent.Header {
				switch http.CanonicalHeaderKey(name) {
				case "Content-Type", "X-Goog-Api-Key", "Content-Length":
				default:
					t.Errorf("header %s: %q was sent; only Content-Type and x-goog-api-key may be", name, values)
				}
				if name != "X-Goog-Api-Key" {
					assert.NotContains(t, strings.Join(values, " "), dummyKey)
				}
			}
			assert.NotContains(t, sent.Path+string(sent.Body), dummyKey)
			assert.NotContains(t, string(rec.saved), dummyKey, "no key in the recording")
			if err != nil {
				assert.NotContains(t, err.Error(), dummyKey, "no key in the message")
			}

			// The saved recording replays to the same outcome.
			file, perr := recording.Parse(rec.saved)
			require.NoError(t, perr)
			require.Len(t, file.Trials, 1)
			require.Len(t, file.Trials[0].Exchanges, 1)
			_, rerr := recording.NewReplayer(file.Trials[0]).Decide(context.Background(), p, timeout)
			liveCode, _ := reason.Of(err)
			replayCode, _ := reason.Of(rerr)
			assert.Equal(t, liveCode, replayCode, "replay ends with the live reason")
		})
	}
}

// TestLiveGuardsInOrder checks the refusals before sending, one row per
// guard in provider.py's order: each later guard is also failing, so the
// row proves the earlier one is checked first. None sends or counts.
func TestLiveGuardsInOrder(t *testing.T) {
	big := `{"question": "` + strings.Repeat("x", gemini.MaxRequestBytes) + `"}`
	rows := []struct {
		name      string
		state     string
		used      int // attempts used before, of an allowance of 1
		key       string
		want      reason.Code
		wantCount int
	}{
		{"body over the cap", big, 1, "", reason.ProviderInputBytesLimit, 1},
		{"allowance exhausted", smallState, 1, "", reason.BatchRequestLimit, 1},
		{"missing key", smallState, 0, "", reason.MissingAPIKey, 0},
		{"all pass", smallState, 0, dummyKey, "", 1},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Decision(stopDecision()), geminitest.Decision(stopDecision())))
			defer fake.Close()
			allowance, err := gemini.NewAllowance(1)
			require.NoError(t, err)
			var recorded int
			record := func(gemini.Attempt) error { recorded++; return nil }
			if row.used > 0 {
				spend, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(), record)
				require.NoError(t, err)
				_, err = spend.Decide(context.Background(), prompt(smallState), time.Second*10)
				require.NoError(t, err)
			}
			before, sentBefore := recorded, len(fake.Requests())
			live, err := gemini.NewClient(httptransport.New(row.key), allowance, fake.URL(), record)
			require.NoError(t, err)
			_, err = live.Decide(context.Background(), prompt(row.state), 10*time.Second)
			code, _ := reason.Of(err)
			assert.Equal(t, row.want, code)
			assert.Equal(t, row.wantCount, allowance.Used())
			if row.want != "" {
				assert.Equal(t, before, recorded, "a refusal before sending records nothing")
				assert.Equal(t, sentBefore, len(fake.Requests()), "a refusal before sending sends nothing")
			}
		})
	}
}

// TestTheInputCapMeasuresTheDumpedBody: a body of exactly the cap is sent,
// one byte more is not.
func TestTheInputCapMeasuresTheDumpedBody(t *testing.T) {
	base := len(gemini.Body(gemini.Payload(prompt(""))))
	// the state is one JSON string in the body: each "x" adds one byte
	for _, extra := range []int{0, 1} {
		state := strings.Repeat("x", gemini.MaxRequestBytes-base+extra)
		require.Equal(t, gemini.MaxRequestBytes+extra, len(gemini.Body(gemini.Payload(prompt(state)))))
		fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Decision(stopDecision())))
		allowance, _ := gemini.NewAllowance(1)
		live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(), nil)
		require.NoError(t, err)
		_, err = live.Decide(context.Background(), prompt(state), 10*time.Second)
		code, _ := reason.Of(err)
		if extra == 0 {
			assert.NoError(t, err)
			assert.Len(t, fake.Requests(), 1)
		} else {
			assert.Equal(t, reason.ProviderInputBytesLimit, code)
			assert.Empty(t, fake.Requests())
		}
		fake.Close()
	}
}

// TestNoResponse covers the attempts that get no HTTP response at all: a
// refused connection is URLError, a stop by the person is cancelled; both
// are counted and recorded.
func TestNoResponse(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Sequence(nil))
	closed := fake.URL()
	fake.Close()

	allowance, _ := gemini.NewAllowance(2)
	rec := newAttempts(t)
	live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, closed, rec.record)
	require.NoError(t, err)
	_, err = live.Decide(context.Background(), prompt(smallState), 10*time.Second)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.Code("model_transport_failed:URLError"), code)

	slow := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Slow(time.Minute, geminitest.Decision(stopDecision()))))
	defer slow.Close()
	live, err = gemini.NewClient(httptransport.New(dummyKey), allowance, slow.URL(), rec.record)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(slow.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = live.Decide(ctx, prompt(smallState), 10*time.Second)
	code, _ = reason.Of(err)
	assert.Equal(t, reason.Cancelled, code)

	assert.Equal(t, 2, allowance.Used())
	require.Len(t, rec.list, 2)
	assert.Equal(t, "URLError", rec.list[0].Error)
	assert.Equal(t, "cancelled", rec.list[1].Error)
	assert.NotContains(t, string(rec.saved), dummyKey)
}

// TestAllowanceIsSharedAcrossRuns: two runs of one batch draw on one
// allowance, and the second run's call is refused once it is spent.
func TestAllowanceIsSharedAcrossRuns(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Policy())
	defer fake.Close()
	allowance, err := gemini.NewAllowance(2)
	require.NoError(t, err)
	lib := openLibrary(t)
	var reasons []reason.Code
	for range 2 {
		live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(), nil)
		require.NoError(t, err)
		ctrl := agent.Controller{Tools: lib, Model: live}
		res, err := ctrl.Run(context.Background(), agent.Task{Question: "Does Path.write_text overwrite an existing file?",
			Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
		require.NoError(t, err)
		reasons = append(reasons, res.Reason)
	}
	assert.Equal(t, reason.BatchRequestLimit, reasons[0], "two requests are not enough for the first run")
	assert.Equal(t, reason.BatchRequestLimit, reasons[1], "nothing is left for the second")
	assert.Equal(t, 2, allowance.Used())
	assert.Len(t, fake.Requests(), 2)
}

// TestARecordingFailureStopsTheRun: a request whose record cannot be saved
// ends the run as a fault, not with a reason: nothing more is spent.
func TestARecordingFailureStopsTheRun(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Policy())
	defer fake.Close()
	allowance, _ := gemini.NewAllowance(10)
	live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(),
		func(gemini.Attempt) error { return assert.AnError })
	require.NoError(t, err)
	ctrl := agent.Controller{Tools: openLibrary(t), Model: live}
	res, err := ctrl.Run(context.Background(), agent.Task{Question: "Does Path.write_text overwrite?",
		Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	assert.Nil(t, res)
	assert.ErrorIs(t, err, assert.AnError)
	assert.Equal(t, 1, allowance.Used())
}

func openLibrary(t *testing.T) *tools.Library {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := tools.Open(snap)
	require.NoError(t, err)
	t.Cleanup(func() { lib.Close() })
	return lib
}

func TestAllowanceBounds(t *testing.T) {
	for _, n := range []int{-1, 0, 201} {
		_, err := gemini.NewAllowance(n)
		code, _ := reason.Of(err)
		assert.Equal(t, reason.InvalidRequestAllowance, code, "allowance %d", n)
	}
	for _, n := range []int{1, 200} {
		a, err := gemini.NewAllowance(n)
		require.NoError(t, err)
		assert.Equal(t, n, a.Limit())
	}
}

// uEscaped writes every character of s as a \uXXXX escape.
func uEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// TestKeyEchoIsRedacted: whatever the status, a body that echoes the key
// (verbatim, as \u escapes, URL-encoded) reaches neither the run's error,
// the reply, nor the recording; the key compared is the one sent
// (trimmed). A 403 echoing the key as \u escapes printed it on stdout and
// in --json detail; a 2xx reply echoing it put it in the recording.
func TestKeyEchoIsRedacted(t *testing.T) {
	errorBody := func(message string) geminitest.Reply {
		return geminitest.Raw(403, `{"error": {"code": 403, "message": "`+message+`", "status": "PERMISSION_DENIED"}}`)
	}
	for _, c := range []struct {
		name  string
		key   string // as configured
		reply func(sent string) geminitest.Reply
	}{
		{"403 verbatim", dummyKey, func(k string) geminitest.Reply { return errorBody("API key " + k + " not valid") }},
		{"403 as \\u escapes", dummyKey, func(k string) geminitest.Reply { return errorBody("API key " + uEscaped(k) + " not valid") }},
		{"403 URL-encoded", dummyKey, func(k string) geminitest.Reply {
			return errorBody("see https://example.com/?key=" + url.QueryEscape(k) + "%21")
		}},
		{"2xx whose text echoes the key", dummyKey, func(k string) geminitest.Reply {
			return geminitest.Decision(pyjson.NewObject("action", "stop", "assessment", "my key is "+k, "query", "", "source_id", "", "answer", "", "citations", []any{}))
		}},
		{"2xx whose text echoes it as \\u escapes", dummyKey, func(k string) geminitest.Reply {
			return geminitest.Text(`{"action": "stop", "assessment": "key ` + uEscaped(k) + `", "query": "", "source_id": "", "answer": "", "citations": []}`)
		}},
		{"a key with a trailing space", dummyKey + " \n", func(k string) geminitest.Reply { return errorBody("API key " + k + " not valid") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent string
			fake := geminitest.NewServer(geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
				sent = r.Header.Get("X-Goog-Api-Key")
				return c.reply(sent)
			}))
			defer fake.Close()
			allowance, _ := gemini.NewAllowance(1)
			rec := newAttempts(t)
			live, err := gemini.NewClient(httptransport.New(c.key), allowance, fake.URL(), rec.record)
			require.NoError(t, err)
			reply, err := live.Decide(context.Background(), prompt(smallState), 10*time.Second)
			assert.Equal(t, dummyKey, sent, "the key is sent trimmed")
			shown := fmt.Sprint(err) + pyjson.Dumps(reply.Value, pyjson.Options{})
			assert.False(t, secret.Contains([]byte(shown), dummyKey), "the run's error and reply: %s", shown)
			assert.False(t, secret.Contains(rec.saved, dummyKey), "the recording")
			assert.Contains(t, shown+string(rec.saved), secret.Mark)
		})
	}
}

// TestTimeoutIsCappedByTheRunDeadline: with 50 ms of the run's 180 s left,
// a reply that takes a minute ends the run with TimeoutError after one
// attempt.
func TestTimeoutIsCappedByTheRunDeadline(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Slow(time.Minute, geminitest.Decision(stopDecision()))))
	defer fake.Close()
	allowance, _ := gemini.NewAllowance(5)
	rec := newAttempts(t)
	live, err := gemini.NewClient(httptransport.New(dummyKey), allowance, fake.URL(), rec.record)
	require.NoError(t, err)
	start := time.Unix(1000, 0)
	readings := 0
	clock := func() time.Time { // the start, then 179.95 s later
		readings++
		if readings == 1 {
			return start
		}
		return start.Add(179950 * time.Millisecond)
	}
	ctrl := agent.Controller{Tools: openLibrary(t), Model: live, Clock: clock}
	res, err := ctrl.Run(context.Background(), agent.Task{Question: "Does Path.write_text overwrite?",
		Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	require.NoError(t, err)
	assert.Equal(t, reason.Code("model_transport_failed:TimeoutError"), res.Reason)
	assert.Equal(t, agent.Failed, res.Status)
	assert.Equal(t, 1, allowance.Used())
	require.Len(t, rec.list, 1)
	assert.Equal(t, "TimeoutError", rec.list[0].Error)
}

// BenchmarkLiveDecideLoopback is one live decision over loopback HTTP
// against the fake: framing, the guards, the request, decoding and the
// per-attempt record (kept in memory here).
func BenchmarkLiveDecideLoopback(b *testing.B) {
	fake := geminitest.NewServer(geminitest.ResponderFunc(func(geminitest.Request) geminitest.Reply {
		return geminitest.Decision(stopDecision())
	}))
	defer fake.Close()
	transport := httptransport.New(dummyKey)
	p := prompt(smallState)
	for b.Loop() {
		allowance, _ := gemini.NewAllowance(1)
		live, _ := gemini.NewClient(transport, allowance, fake.URL(), nil)
		if _, err := live.Decide(context.Background(), p, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
