package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// countingStore counts the writes that charge requests.
type countingStore struct {
	store.Store
	charges, adds atomic.Int64
}

func (c *countingStore) Charge(ctx context.Context, tokenID, day string, m store.Meter, limit int) (bool, error) {
	if m == store.Requests {
		c.charges.Add(1)
	}
	return c.Store.Charge(ctx, tokenID, day, m, limit)
}

func (c *countingStore) AddRequests(ctx context.Context, counts []store.RequestCount) ([]int, error) {
	c.adds.Add(1)
	return c.Store.AddRequests(ctx, counts)
}

// Authenticated requests are counted against the daily allowance without
// a write each (every GET made one, synchronously): 50 GETs make no
// charge and one grouped write, the allowance still holds exactly, and a
// clean shutdown writes every count. With UsageFlush 0 (the Worker's) each
// request is written as it is counted, as before.
func TestRequestsAreCountedWithoutAWriteEach(t *testing.T) {
	var counted *countingStore
	e := newEnv(t, options{usageFlush: time.Hour, wrap: func(s store.Store) store.Store {
		counted = &countingStore{Store: s}
		return counted
	}})
	ctx := context.Background()
	tok := e.token("alice", []string{"read", "run"}, 1000, 1)
	lim := e.token("bob", []string{"read"}, 5, 1)
	usage := func(s store.Store, tok string) int {
		u, err := s.Usage(ctx, strings.Split(tok, "_")[1], "2026-11-29")
		require.NoError(t, err)
		return u.Requests
	}
	id := e.start(tok, `{`+overwrite+`}`)
	e.await(tok, id)
	require.NoError(t, e.srv.Flush(ctx))
	before, adds := usage(e.store, tok), counted.adds.Load()
	require.Positive(t, before, "the run's requests were written")
	for range 50 {
		r := e.do(req{method: "GET", path: "/v1/runs/" + id, token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status)
	}
	assert.Equal(t, before, usage(e.store, tok), "nothing written yet")
	require.NoError(t, e.srv.Flush(ctx))
	assert.Equal(t, before+50, usage(e.store, tok), "every request is written by the flush")
	assert.Equal(t, adds+1, counted.adds.Load(), "in one grouped write")
	assert.Zero(t, counted.charges.Load(), "no request was charged by a write of its own")

	for range 5 {
		assert.Equal(t, http.StatusOK, e.do(req{method: "GET", path: "/v1/runs", token: lim, valid: true}).status)
	}
	r := e.do(req{method: "GET", path: "/v1/runs", token: lim, valid: true})
	assert.Equal(t, http.StatusTooManyRequests, r.status, "the 6th request of 5")
	assert.Equal(t, "request_limit", r.code(t))
	for range 7 {
		assert.Equal(t, http.StatusOK, e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true}).status)
	}

	e.close() // a clean shutdown writes what was counted since
	s, err := store.OpenFile(ctx, e.dbPath)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, before+57, usage(s, tok), "every answered request is kept")
	assert.Equal(t, 5, usage(s, lim), "the refused one is not counted")

	sync := newEnv(t, options{usageFlush: -1, wrap: func(s store.Store) store.Store {
		counted = &countingStore{Store: s}
		return counted
	}})
	tok = sync.token("carol", []string{"read"}, 10, 1)
	for range 3 {
		sync.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true})
	}
	assert.Equal(t, int64(3), counted.charges.Load(), "UsageFlush 0: a write each")
}

// A token holds at most StreamsPerToken event streams at once: one more
// (GET events, or a streamed POST, which then admits nothing) is 429
// too_many_streams with Retry-After; another token is not held back, and
// a stream that closes frees its slot.
func TestOpenStreamsAreCappedPerToken(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL, streams: 2, caps: storeCaps(4, 2, 8, 4)})
	alice := e.token("alice", []string{"read", "run", "live"}, 1000, 100)
	bob := e.token("bob", []string{"read", "run", "live"}, 1000, 100)
	id := e.start(alice, `{`+overwrite+`, "policy": "gemini"}`)
	open := func(tok, path string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		hr, err := http.NewRequestWithContext(ctx, "GET", e.base+path, nil)
		require.NoError(t, err)
		hr.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		buf := make([]byte, 1)
		_, err = resp.Body.Read(buf)
		require.NoError(t, err)
		return resp, cancel
	}
	r1, c1 := open(alice, "/v1/runs/"+id+"/events")
	defer r1.Body.Close()
	defer c1()
	r2, c2 := open(alice, "/v1/runs/"+id+"/events")
	defer r2.Body.Close()

	r := e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: alice, valid: true})
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "too_many_streams", r.code(t))
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	r = e.do(req{method: "POST", path: "/v1/runs", token: alice, body: `{` + overwrite + `, "stream": true}`, valid: true})
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "too_many_streams", r.code(t))
	runs, err := e.store.Runs(context.Background(), strings.Split(alice, "_")[1], 0, 10)
	require.NoError(t, err)
	assert.Len(t, runs, 1, "the refused stream admitted no run")

	b := e.start(bob, `{`+overwrite+`}`)
	e.await(bob, b)
	assert.NotEmpty(t, e.events(bob, b, nil), "another token streams")

	c2()
	r2.Body.Close()
	waitFor(t, func() bool {
		r := e.do(req{method: "GET", path: "/v1/runs/" + id, token: alice, valid: true})
		require.Equal(t, http.StatusOK, r.status)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hr, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/v1/runs/"+id+"/events", nil)
		hr.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the closed stream's slot is free again")
	got := e.do(req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: alice, valid: true})
	assert.Equal(t, http.StatusOK, got.status)
}

// A Worker's front counts requests in memory and writes them in the
// request that finds the counts a second old (it has no timer of its own),
// and each write brings back what the token's other isolates counted: here
// another writer adds to the stored count behind the server's back, and
// after the next write the allowance holds against the sum.
func TestRequestsAreWrittenByTheRequestThatFindsThemOld(t *testing.T) {
	var counted *countingStore
	e := newEnv(t, options{usageFlush: time.Second, flushInRequests: true, wrap: func(s store.Store) store.Store {
		counted = &countingStore{Store: s}
		return counted
	}})
	ctx := context.Background()
	tok := e.token("alice", []string{"read"}, 10, 1)
	id := strings.Split(tok, "_")[1]
	usage := func() int {
		u, err := e.store.Usage(ctx, id, "2026-11-29")
		require.NoError(t, err)
		return u.Requests
	}
	get := func() int { return e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true}).status }
	require.Equal(t, http.StatusOK, get())
	assert.Equal(t, 1, usage(), "the first request writes (nothing was written before)")
	require.Equal(t, http.StatusOK, get())
	require.Equal(t, http.StatusOK, get())
	assert.Equal(t, 1, usage(), "within the second: counted, not written")
	assert.Zero(t, counted.charges.Load(), "no charge of its own")

	// Another isolate counted 5 of the token's 10 meanwhile.
	_, err := e.store.AddRequests(ctx, []store.RequestCount{{TokenID: id, Day: "2026-11-29", Requests: 5}})
	require.NoError(t, err)
	e.clock.Set(e.clock.Now().Add(time.Second))
	require.Equal(t, http.StatusOK, get())
	assert.Equal(t, 9, usage(), "a second later the request writes the counts")
	require.Equal(t, http.StatusOK, get())
	assert.Equal(t, http.StatusTooManyRequests, get(), "the other isolate's 5 count: 11th of 10")
}

// stuckStore never answers one token's usage read, or any count write,
// until release closes, whatever the context says: a Worker's D1 call
// whose request was cut off, a promise that never settles.
type stuckStore struct {
	store.Store
	usageOf string // the token whose usage read sticks
	writes  bool   // whether count writes stick
	release chan struct{}
}

func (s *stuckStore) Usage(ctx context.Context, tokenID, day string) (store.Usage, error) {
	if tokenID == s.usageOf {
		<-s.release
	}
	return s.Store.Usage(ctx, tokenID, day)
}

func (s *stuckStore) AddRequests(ctx context.Context, counts []store.RequestCount) ([]int, error) {
	if s.writes {
		<-s.release
	}
	return s.Store.AddRequests(ctx, counts)
}

// One request's store call that never returns holds up no other request:
// neither the first read of a token's count (charge read it holding the
// meter's lock, so every authenticated request waited behind it) nor a
// request's write of the counts (the next request due waited for it).
// The local Worker once hung a GET for go test's ten minutes, which one of
// these would explain.
func TestAStuckUsageCallHoldsUpNoOtherRequest(t *testing.T) {
	for _, row := range []struct {
		name   string
		usage  bool
		writes bool
	}{
		{"the first read of a token's count", true, false},
		{"a request's write of the counts", false, true},
	} {
		t.Run(row.name, func(t *testing.T) {
			stuck := &stuckStore{writes: row.writes, release: make(chan struct{})}
			e := newEnv(t, options{usageFlush: time.Second, flushInRequests: true, wrap: func(s store.Store) store.Store {
				stuck.Store = s
				return stuck
			}})
			defer close(stuck.release)
			alice := e.token("alice", []string{"read"}, 10, 1)
			bob := e.token("bob", []string{"read"}, 10, 1)
			if row.usage {
				stuck.usageOf = strings.Split(alice, "_")[1]
			}
			get := func(tok string, status chan<- int) {
				hr, err := http.NewRequest("GET", e.base+"/v1/runs", nil)
				if err != nil {
					panic(err)
				}
				hr.Header.Set("Authorization", "Bearer "+tok)
				resp, err := harnessClient.Do(hr)
				if err != nil {
					status <- 0
					return
				}
				resp.Body.Close()
				status <- resp.StatusCode
			}
			aliceDone, bobDone := make(chan int, 1), make(chan int, 1)
			go get(alice, aliceDone)
			time.Sleep(200 * time.Millisecond) // alice's request is in its store call
			go get(bob, bobDone)
			select {
			case status := <-bobDone:
				assert.Equal(t, http.StatusOK, status)
			case <-time.After(5 * time.Second):
				t.Errorf("bob's request waited on alice's stuck store call")
			}
			select {
			case <-aliceDone:
				t.Errorf("alice's request answered while its store call was stuck")
			default:
			}
		})
	}
}
