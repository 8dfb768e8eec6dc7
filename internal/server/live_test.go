package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// fake is a loopback Gemini: the geminitest fake behind a handler that
// counts the requests it got and those whose client gave up (an aborted
// in-flight request), or that resets every connection.
type fake struct {
	*geminitest.Fake
	srv     *httptest.Server
	mu      sync.Mutex
	got     int
	aborted int
	reset   bool
}

func newFake(t testing.TB, r geminitest.Responder) *fake {
	t.Helper()
	f := &fake{Fake: geminitest.NewFake(r)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got++
		reset := f.reset
		f.mu.Unlock()
		if reset {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // RST, not FIN
				}
				conn.Close()
			}
			return
		}
		f.Fake.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			f.mu.Lock()
			f.aborted++
			f.mu.Unlock()
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) counts() (got, aborted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got, f.aborted
}

func hanging() geminitest.Responder {
	return geminitest.ResponderFunc(func(geminitest.Request) geminitest.Reply {
		return geminitest.Slow(time.Minute, geminitest.Status(500))
	})
}

// A Gemini run through the server: every attempt recorded and charged
// once, the recording replays offline to the same ending, and the key
// appears in no response, event, recording, log line or database page,
// only in the x-goog-api-key header of the requests to the model (and an
// error body that echoes it is redacted before it reaches the run).
func TestGeminiRunKeyNeverInOutputs(t *testing.T) {
	echo := geminitest.Raw(500, `{"error": {"code": 500, "message": "bad request from key `+dummyKey+`"}}`)
	f := newFake(t, geminitest.Policy())
	g := newFake(t, geminitest.Sequence(nil, echo))
	var outputs [][]byte
	keep := func(r response) response {
		hdr, _ := json.Marshal(r.header)
		outputs = append(outputs, r.body, hdr)
		return r
	}
	dir := t.TempDir()
	for _, fk := range []*fake{f, g} {
		e := newEnv(t, options{endpoint: fk.srv.URL, dbPath: filepath.Join(dir, "api.db")})
		tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
		r := keep(e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "policy": "gemini", "stream": true}`, valid: true}))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
		run := e.await(tok, id)
		keep(e.do(req{method: "GET", path: "/v1/runs/" + id, token: tok, valid: true}))
		keep(e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true}))
		keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: tok, valid: true}))
		rec := keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/recording", token: tok, valid: true}))
		require.Equal(t, http.StatusOK, rec.status)

		report := run["report"].(map[string]any)
		result := report["result"].(map[string]any)
		calls := int(result["usage"].(map[string]any)["model_calls"].(float64))
		got, _ := fk.counts()
		assert.Equal(t, calls, got, "one request per model call, nothing retried")
		u, err := e.store.Usage(context.Background(), strings.Split(tok, "_")[1], "2026-11-29")
		require.NoError(t, err)
		assert.Equal(t, calls, u.LiveCalls, "each attempt charged once")
		file, err := recording.Parse(rec.body)
		require.NoError(t, err)
		require.Len(t, file.Trials, 1)
		assert.Len(t, file.Trials[0].Exchanges, calls, "every attempt recorded")
		res, err := e.engine.Replay(context.Background(), engine.ReplayRequest{File: file})
		require.NoError(t, err)
		replayed := res.Trials[0]
		require.NotNil(t, replayed.Result)
		assert.Equal(t, run["reason"], string(replayed.Result.Reason), "the recording replays to the same ending")
		if fk == g {
			assert.Equal(t, "failed", run["status"])
			assert.Equal(t, "model_transport_failed:HTTPError", run["reason"])
		} else {
			assert.Equal(t, "answered", run["status"])
		}
		for _, gr := range fk.Requests() {
			assert.Equal(t, []string{dummyKey}, gr.Header.Values("X-Goog-Api-Key"), "the key travels only in its header")
			assert.NotContains(t, string(gr.Body), dummyKey)
		}
		e.close()
		outputs = append(outputs, []byte(e.log.String()))
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if data, err := os.ReadFile(filepath.Join(dir, "api.db") + suffix); err == nil {
			outputs = append(outputs, data)
		}
	}
	require.NotEmpty(t, outputs)
	for i, out := range outputs {
		assert.False(t, bytes.Contains(out, []byte(dummyKey)), "output %d carries the key", i)
	}
}

// Faults of the model: a reply that never comes (the call times out at
// the run's deadline), a connection reset, an HTTP 500. Each run ends
// failed with the core's transport reason after exactly one request
// (nothing retried), charged exactly once, and recorded.
func TestModelFaultsEndRunsWithTransportReasons(t *testing.T) {
	rows := []struct {
		name   string
		fake   func(*testing.T) *fake
		limits string
		reason string
	}{
		{"hang", func(t *testing.T) *fake { return newFake(t, hanging()) }, `{"seconds": 1}`, "model_transport_failed:TimeoutError"},
		{"reset", func(t *testing.T) *fake { f := newFake(t, geminitest.Policy()); f.reset = true; return f }, `null`, "model_transport_failed:URLError"},
		{"500", func(t *testing.T) *fake { return newFake(t, geminitest.Sequence(nil, geminitest.Status(500))) }, `null`, "model_transport_failed:HTTPError"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			f := row.fake(t)
			e := newEnv(t, options{endpoint: f.srv.URL})
			tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
			id := e.start(tok, `{`+overwrite+`, "policy": "gemini", "limits": `+row.limits+`}`)
			run := e.await(tok, id)
			assert.Equal(t, "failed", run["status"])
			assert.Equal(t, row.reason, run["reason"])
			got, _ := f.counts()
			assert.Equal(t, 1, got, "nothing retried")
			u, err := e.store.Usage(context.Background(), strings.Split(tok, "_")[1], "2026-11-29")
			require.NoError(t, err)
			assert.Equal(t, 1, u.LiveCalls, "charged once")
			rec := e.do(req{method: "GET", path: "/v1/runs/" + id + "/recording", token: tok, valid: true})
			require.Equal(t, http.StatusOK, rec.status)
			file, err := recording.Parse(rec.body)
			require.NoError(t, err)
			require.Len(t, file.Trials[0].Exchanges, 1)
			kind, _ := strings.CutPrefix(row.reason, "model_transport_failed:")
			assert.Equal(t, kind, file.Trials[0].Exchanges[0].Error)
		})
	}
}

// The token's daily live calls bound its spending across runs: an attempt
// past them is refused unsent (the run ends with batch_request_limit), and
// a new gemini run is refused at the door until the next UTC day.
func TestDailyLiveCallAllowance(t *testing.T) {
	f := newFake(t, geminitest.Policy())
	e := newEnv(t, options{endpoint: f.srv.URL})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 2)
	id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	run := e.await(tok, id)
	assert.Equal(t, "failed", run["status"])
	assert.Equal(t, "batch_request_limit", run["reason"])
	got, _ := f.counts()
	assert.Equal(t, 2, got, "the third attempt was not sent")
	r := e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "policy": "gemini"}`, valid: true})
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "batch_request_limit", r.code(t))
	assert.Equal(t, "43200", r.header.Get("Retry-After"))
	e.await(tok, e.start(tok, `{`+overwrite+`}`)) // scripted runs spend nothing
}

// Cancel: a running Gemini run ends incomplete with reason cancelled and
// its in-flight request aborted; a queued run is dropped without running;
// a finished one is a conflict.
func TestCancelRunningAndQueued(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL, caps: storeCaps(1, 1, 4, 4)})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
	running := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	queued := e.start(tok, `{`+overwrite+`, "strategy": "enqueue"}`)
	q := e.run(tok, queued)
	assert.Equal(t, "queued", q["status"])
	assert.Equal(t, 0.0, q["queue_position"])
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")

	r := e.do(req{method: "POST", path: "/v1/runs/" + queued + "/cancel", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	dropped := r.json(t)
	assert.Equal(t, "incomplete", dropped["status"])
	assert.Equal(t, "cancelled", dropped["reason"])
	assert.Nil(t, dropped["report"], "it never ran")
	assert.Equal(t, []string{"queued", "end"}, types(e.events(tok, queued, nil)))

	r = e.do(req{method: "POST", path: "/v1/runs/" + running + "/cancel", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	stopped := r.json(t)
	assert.Equal(t, "incomplete", stopped["status"])
	assert.Equal(t, "cancelled", stopped["reason"])
	waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 1 }, "the in-flight request was aborted")
	evs := e.events(tok, running, nil)
	assert.Equal(t, "end", evs[len(evs)-1].event)

	r = e.do(req{method: "POST", path: "/v1/runs/" + running + "/cancel", token: tok, valid: true})
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "already_finished", r.code(t))
	got, _ := f.counts()
	assert.Equal(t, 1, got, "the dropped run sent nothing")
}

// A streaming client that goes away does not cancel its run unless it
// asked for that with on_disconnect: cancel.
func TestDisconnectCancelsOnlyWhenAsked(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
	open := func(onDisconnect string) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body := `{` + overwrite + `, "policy": "gemini", "stream": true, "on_disconnect": "` + onDisconnect + `"}`
		hr, err := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/v1/runs", strings.NewReader(body))
		require.NoError(t, err)
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		buf := make([]byte, 1)
		_, err = resp.Body.Read(buf) // the first event has begun
		require.NoError(t, err)
		id := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
		cancel()
		resp.Body.Close()
		return id
	}
	kept := open("continue")
	cancelled := open("cancel")
	run := e.await(tok, cancelled)
	assert.Equal(t, "incomplete", run["status"])
	assert.Equal(t, "cancelled", run["reason"])
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, "running", e.run(tok, kept)["status"], "the other run goes on")
	r := e.do(req{method: "POST", path: "/v1/runs/" + kept + "/cancel", token: tok, valid: true})
	assert.Equal(t, http.StatusOK, r.status)
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting: %s", what)
		time.Sleep(5 * time.Millisecond)
	}
}

// Two processes on one database, as Worker isolates are: a cancel that
// reaches the process not running the run leaves a request in the store,
// the running process reads it at its next poll and aborts the in-flight
// request, and the cancel answers with the ended run.
func TestCancelReachesTheRunThroughTheStore(t *testing.T) {
	f := newFake(t, hanging())
	dbPath := filepath.Join(t.TempDir(), "api.db")
	a := newEnv(t, options{endpoint: f.srv.URL, dbPath: dbPath})
	b := newEnv(t, options{endpoint: f.srv.URL, dbPath: dbPath})
	tok := a.token("alice", []string{"read", "run", "live"}, 100, 20)
	id := a.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")
	r := b.do(req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	assert.Equal(t, "incomplete", r.json(t)["status"])
	assert.Equal(t, "cancelled", r.json(t)["reason"])
	waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 1 }, "the in-flight request was aborted")
	assert.Contains(t, a.log.String(), "cancel requested through the store")
}
