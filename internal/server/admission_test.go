package server_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// slowPolicy answers like the scripted policy after a delay, so runs stay
// running long enough to contend for the caps.
func slowPolicy(d time.Duration) geminitest.Responder {
	p := geminitest.Policy()
	return geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
		return geminitest.Slow(d, p.Reply(r))
	})
}

// Many clients of three tokens start Gemini runs at once, some rejecting
// and some queueing at the caps, while a sampler reads the running counts:
// no sample exceeds a cap, every request is either admitted or refused
// with 429 (at_capacity or queue_full), and every admitted run ends, once.
func TestAdmissionCapsHoldUnderConcurrentClients(t *testing.T) {
	f := newFake(t, slowPolicy(15*time.Millisecond))
	caps := storeCaps(3, 2, 6, 3)
	e := newEnv(t, options{endpoint: f.srv.URL, caps: caps})
	var toks []string
	for i := range 3 {
		toks = append(toks, e.token(fmt.Sprint("t", i), []string{"read", "run", "live"}, 1000, 1000))
	}

	sm := sample(e.store)

	const clients = 36
	var mu sync.Mutex
	accepted := map[string]string{} // run id -> token
	refused := map[string]int{}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := toks[i%3]
			strategy := "reject"
			if i%2 == 1 {
				strategy = "enqueue"
			}
			r := e.do(req{method: "POST", path: "/v1/runs", token: tok, valid: true,
				body: `{` + overwrite + `, "policy": "gemini", "mode": "fixed", "strategy": "` + strategy + `"}`})
			mu.Lock()
			defer mu.Unlock()
			switch r.status {
			case http.StatusAccepted:
				accepted[r.json(t)["id"].(string)] = tok
			case http.StatusTooManyRequests:
				refused[r.code(t)]++
				assert.Equal(t, "1", r.header.Get("Retry-After"))
			default:
				t.Errorf("unexpected %d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	for id, tok := range accepted {
		run := e.await(tok, id)
		assert.Contains(t, []string{"answered", "incomplete", "failed"}, run["status"])
		evs := e.events(tok, id, nil)
		ends := 0
		for _, ev := range evs {
			if ev.event == "end" {
				ends++
			}
		}
		assert.Equal(t, 1, ends, "%s ended once", id)
	}
	sm.halt()
	assert.Equal(t, clients, len(accepted)+refused["at_capacity"]+refused["queue_full"], "every request answered once: %v", refused)
	assert.NotEmpty(t, refused, "the caps were reached")
	assert.Greater(t, sm.samples.Load(), int64(10))
	assert.LessOrEqual(t, sm.all.Load(), int64(caps.Running), "the global cap")
	assert.LessOrEqual(t, sm.one.Load(), int64(caps.RunningPerToken), "the per-token cap")
	c, err := e.store.Counts(context.Background())
	require.NoError(t, err)
	assert.Zero(t, c)
}

// crash stops a server as a kill would: its database handle closes with
// no further write, its connections drop, nothing is shut down in order.
func (e *env) crash() {
	e.http.CloseClientConnections()
	e.http.Close()
	_ = e.store.Close()
	e.http = nil
}

// After a crash, opening the same database again ends the runs that were
// running as incomplete, interrupted (after every event a client had
// received), and the queued runs start and finish.
func TestRestartInterruptsRunningAndResumesQueued(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "api.db")
	f := newFake(t, hanging())
	a := newEnv(t, options{endpoint: f.srv.URL, dbPath: dbPath, caps: storeCaps(1, 1, 4, 4)})
	tok := a.token("alice", []string{"read", "run", "live"}, 100, 20)
	running := a.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	q1 := a.start(tok, `{`+overwrite+`, "strategy": "enqueue"}`)
	q2 := a.start(tok, `{`+overwrite+`, "mode": "fixed", "strategy": "enqueue"}`)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")
	seen, err := a.store.Events(context.Background(), running, 0, 100)
	require.NoError(t, err)
	require.NotEmpty(t, seen)
	a.crash()
	f.srv.CloseClientConnections() // the dead process's request ends too

	b := newEnv(t, options{dbPath: dbPath})
	run := b.await(tok, running)
	assert.Equal(t, "incomplete", run["status"])
	assert.Equal(t, "interrupted", run["reason"])
	evs := b.events(tok, running, nil)
	require.Len(t, evs, len(seen)+1)
	for i, ev := range seen {
		assert.Equal(t, ev.Type, evs[i].event, "event %d is still there", ev.Seq)
		assert.Equal(t, ev.Data, evs[i].data)
	}
	assert.Equal(t, "end", evs[len(evs)-1].event)
	for _, id := range []string{q1, q2} {
		run := b.await(tok, id)
		assert.Equal(t, "answered", run["status"], "queued run %s resumed", id)
		assert.Equal(t, "queued", b.events(tok, id, nil)[0].event)
	}
	time.Sleep(50 * time.Millisecond)
}
