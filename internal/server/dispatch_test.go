package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// ownerDispatch is server.Dispatch over HTTP to another server's
// RunnerHandler: what the Worker's front does over Durable Object stubs
// (worker/), natively.
type ownerDispatch struct{ base string }

func (d *ownerDispatch) Local(string) bool { return false }

func (d *ownerDispatch) call(ctx context.Context, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, "POST", d.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, res.Status)
	}
	return nil
}

func (d *ownerDispatch) Start(ctx context.Context, run store.Run) error {
	body, err := json.Marshal(run)
	if err != nil {
		return err
	}
	return d.call(ctx, "/runner/start?id="+url.QueryEscape(run.ID), body)
}

func (d *ownerDispatch) Cancel(ctx context.Context, id string) error {
	return d.call(ctx, "/runner/cancel?id="+url.QueryEscape(id), nil)
}

func (d *ownerDispatch) Experiment(ctx context.Context, id string) error {
	return d.call(ctx, "/runner/experiments?id="+url.QueryEscape(id), nil)
}

func (d *ownerDispatch) Plan(ctx context.Context, id, tenant string, spec []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", d.base+server.PlanPath(id, tenant), bytes.NewReader(spec))
	if err != nil {
		return 0, nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

func (d *ownerDispatch) Stream(w http.ResponseWriter, r *http.Request, q server.StreamRequest) {
	req, err := http.NewRequestWithContext(r.Context(), "GET", d.base+q.Path(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// ownsAll is the owner's own Dispatch: it executes every run (as a lone
// run object does), so it serves their streams from its event logs.
type ownsAll struct{ server.Dispatch }

func (ownsAll) Local(string) bool { return true }

// A run handed to its owner (a Worker's Durable Object, here a second
// server over HTTP) executes there, its streams are served from there and
// a cancel reaches it as a call: both servers read the store once an hour,
// so nothing here may wait for a poll.
func TestRunsExecuteAtTheirOwner(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL, owner: true, caps: storeCaps(2, 2, 4, 4)})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)

	r := e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "stream": true}`, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	streamed := parseSSE(t, r.body)
	require.NotEmpty(t, streamed)
	assert.Equal(t, "end", streamed[len(streamed)-1].event, "the owner streamed the run to its end")
	id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
	assert.Equal(t, "answered", e.run(tok, id)["status"])
	assert.Equal(t, streamed, e.events(tok, id, nil), "the stream is the stored events")
	assert.Equal(t, types(streamed[2:]), types(e.events(tok, id, map[string]string{"Last-Event-ID": "2"})))

	live := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the owner sent the run's request")
	began := time.Now()
	r = e.do(req{method: "POST", path: "/v1/runs/" + live + "/cancel", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	assert.Equal(t, "cancelled", r.json(t)["reason"])
	assert.Less(t, time.Since(began), 3*time.Second, "the cancel was a call, not a poll (an hour)")
	waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 1 }, "the in-flight request was aborted")
}

// tailReads counts the store's Tail reads (a stream's read of a run its
// process holds no log of) by run, each the event it reads after.
type tailReads struct {
	store.Store
	mu    sync.Mutex
	reads map[string][]int64
}

func (c *tailReads) Tail(ctx context.Context, id string, after int64, limit int) (string, []store.Event, bool, error) {
	c.mu.Lock()
	if c.reads == nil {
		c.reads = map[string][]int64{}
	}
	c.reads[id] = append(c.reads[id], after)
	c.mu.Unlock()
	return c.Store.Tail(ctx, id, after, limit)
}

func (c *tailReads) of(id string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.reads[id]...)
}

// A streamed POST's stream begins with the event its admission stored,
// which the front sends with the stream to the run's owner: the owner
// sends it without reading the store (on a Worker, a D1 round trip a
// run), then the rest as for any stream. Here the run waits queued behind
// a running one: its queued event first, then, once the owner has started
// it, every event to its end, the stored events exactly.
func TestAStreamedPostBeginsWithoutARead(t *testing.T) {
	f := newFake(t, hanging())
	reads := &tailReads{}
	e := newEnv(t, options{endpoint: f.srv.URL, owner: true, caps: storeCaps(1, 1, 4, 4),
		wrap: func(s store.Store) store.Store { reads.Store = s; return reads }})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
	blocker := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the running run's request is in flight")

	done := make(chan response, 1)
	go func() {
		done <- e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "stream": true, "strategy": "enqueue"}`, valid: true})
	}()
	waitFor(t, func() bool { c, err := e.store.Counts(context.Background()); return err == nil && c.Queued == 1 }, "the streamed run is queued")
	r := e.do(req{method: "POST", path: "/v1/runs/" + blocker + "/cancel", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	r = <-done
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
	streamed := parseSSE(t, r.body)
	require.NotEmpty(t, streamed)
	assert.Equal(t, "queued", streamed[0].event)
	assert.Equal(t, "end", streamed[len(streamed)-1].event)
	assert.Empty(t, reads.of(id), "the owner read none of the run's events for its stream")
	assert.Equal(t, streamed, e.events(tok, id, nil), "the stream is the stored events")
}

// The owner refuses a stream whose first events are not events after the
// stream's start, numbered in order, each with a type (it would send them
// as they are).
func TestTheOwnerRefusesMalformedFirstEvents(t *testing.T) {
	e := newEnv(t, options{owner: true})
	tok := e.token("alice", []string{"read", "run"}, 100, 20)
	id := e.start(tok, `{`+overwrite+`}`)
	e.await(tok, id)
	c := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct{ name, first, after, want string }{
		{"not JSON", `[{`, "0", "first: unexpected EOF"},
		{"an unknown field", `[{"seq": 1, "type": "queued", "data": "{}", "at": 1}]`, "0", `first: json: unknown field`},
		{"not after the start", `[{"seq": 2, "type": "step", "data": "{}"}]`, "2", "event 1 is not an event after 2"},
		{"out of order", `[{"seq": 2, "type": "a", "data": ""}, {"seq": 2, "type": "b", "data": ""}]`, "0", "event 2 is not an event after 2"},
		{"no type", `[{"seq": 1, "data": "{}"}]`, "0", "event 1 is not an event after 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"id": {id}, "token": {tokenID(t, tok)}, "after": {tc.after}, "first": {tc.first}}
			resp, err := c.Get(e.ownerURL + "/runner/events?" + q.Encode())
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Contains(t, string(body), "malformed_request")
			assert.Contains(t, string(body), tc.want)
		})
	}
}

// The owner's alarm (Recover): a run the store shows running that the
// owner does not hold (its object was evicted) ends incomplete,
// interrupted, with its end event, once the grace has passed; the queued
// run behind it then starts at the owner.
func TestRecoverEndsTheRunsItsOwnerLost(t *testing.T) {
	e := newEnv(t, options{owner: true, caps: storeCaps(1, 1, 4, 4)})
	tok := e.token("alice", []string{"read", "run"}, 100, 20)
	id := tokenID(t, tok)
	ctx := context.Background()
	lost, err := e.store.Admit(ctx, store.NewRun{ID: "run_lost", TokenID: id, Spec: `{}`, At: e.clock.Now()}, storeCaps(1, 1, 4, 4), true,
		func(store.Run) store.NewEvent {
			return store.NewEvent{Type: "started", Data: `{"run_id": "run_lost", "status": "running"}`, At: e.clock.Now()}
		})
	require.NoError(t, err)
	require.Equal(t, store.Running, lost.Status)
	queued := e.start(tok, `{`+overwrite+`, "strategy": "enqueue"}`)
	assert.Equal(t, "queued", e.run(tok, queued)["status"])

	got, err := e.owner.Recover(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, got.Held)
	assert.Equal(t, 1, got.Queued)
	assert.Equal(t, 1, got.InGrace, "within the grace the run is left alone (its start may be on its way), and counted, so the alarm stays")
	r, _, err := e.store.Run(ctx, "run_lost")
	require.NoError(t, err)
	assert.Equal(t, store.Running, r.Status)

	e.clock.Set(e.clock.Now().Add(2 * time.Minute))
	got, err = e.owner.Recover(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, got.InGrace)
	r, _, err = e.store.Run(ctx, "run_lost")
	require.NoError(t, err)
	assert.Equal(t, store.Incomplete, r.Status)
	assert.Equal(t, "interrupted", r.Reason)
	evs, err := e.store.Events(ctx, "run_lost", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "end", evs[len(evs)-1].Type)
	done := e.await(tok, queued)
	assert.Equal(t, "answered", done["status"], "the queued run started at the owner")
}

// A stream the owner serves under a name (stream=, as a Worker's run
// object serves the streams it relays) ends when /runner/gone names it,
// its connection still open: the run goes on when its stream did not ask
// to cancel, and ends incomplete, cancelled, with its in-flight request
// aborted, when it did (on_disconnect "cancel" on the Worker, whose run
// object learns of a gone client only from the relay).
func TestRelayedStreamEndsWhenItsClientIsGone(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL, owner: true, caps: storeCaps(2, 2, 4, 4)})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 20)
	c := &http.Client{Timeout: 10 * time.Second}
	for i, cancel := range []bool{false, true} {
		id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
		waitFor(t, func() bool { got, _ := f.counts(); return got == i+1 }, "the owner sent the run's request")
		key := fmt.Sprint("s", i)
		q := url.Values{"id": {id}, "token": {tokenID(t, tok)}, "after": {"0"}, "stream": {key}}
		if cancel {
			q.Set("cancel", "1")
		}
		resp, err := c.Get(e.ownerURL + "/runner/events?" + q.Encode())
		require.NoError(t, err)
		first, err := bufio.NewReader(resp.Body).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "id: 1\n", first, "the stream has begun")
		taken, err := c.Get(e.ownerURL + "/runner/events?" + q.Encode())
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, taken.StatusCode, "one open stream a name")
		taken.Body.Close()

		gone, err := c.Post(e.ownerURL+"/runner/gone?stream="+key, "", nil)
		require.NoError(t, err)
		var said map[string]bool
		require.NoError(t, json.NewDecoder(gone.Body).Decode(&said))
		gone.Body.Close()
		assert.True(t, said["open"])
		_, err = io.Copy(io.Discard, resp.Body)
		assert.NoError(t, err, "the stream ended")
		resp.Body.Close()
		if !cancel {
			time.Sleep(100 * time.Millisecond)
			assert.Equal(t, "running", e.run(tok, id)["status"], "a run whose stream did not ask to cancel goes on")
			r := e.do(req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: tok, valid: true})
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			continue
		}
		run := e.await(tok, id)
		assert.Equal(t, "incomplete", run["status"])
		assert.Equal(t, "cancelled", run["reason"])
		waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 2 }, "the in-flight request was aborted")
	}
	gone, err := c.Post(e.ownerURL+"/runner/gone?stream=s0", "", nil)
	require.NoError(t, err)
	defer gone.Body.Close()
	var said map[string]bool
	require.NoError(t, json.NewDecoder(gone.Body).Decode(&said))
	assert.False(t, said["open"], "a stream that ended is no longer named")
}

// tokenID is the id part of a bearer token rag_<id>_<secret>.
func tokenID(t *testing.T, tok string) string {
	parts := strings.Split(tok, "_")
	require.Len(t, parts, 3)
	return parts[1]
}
