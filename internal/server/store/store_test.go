package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// kinds are the two stores: the SQL store over go-sqlite3 (natively) and
// the D1 store over a SQLite batcher (the Worker's, statement for
// statement); every test here runs on both.
var kinds = []struct {
	name string
	open func(t testing.TB, path string) store.Store
}{
	{"sql", func(t testing.TB, path string) store.Store {
		s, err := store.OpenFile(context.Background(), path)
		require.NoError(t, err)
		return s
	}},
	{"d1", func(t testing.TB, path string) store.Store {
		b, err := store.OpenBatcher(context.Background(), path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		s, err := store.NewD1(context.Background(), b, 0)
		require.NoError(t, err)
		return s
	}},
}

// each runs a test on both stores, open(path) opening one ("" for a new
// file) and closing it at the end.
func each(t *testing.T, test func(t *testing.T, open func(path string) store.Store)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			test(t, func(path string) store.Store {
				if path == "" {
					path = filepath.Join(t.TempDir(), "api.db")
				}
				s := k.open(t, path)
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}

func ev(typ string) store.EventFunc {
	return func(r store.Run) store.NewEvent {
		return store.NewEvent{Type: typ, Data: fmt.Sprintf(`{"status":%q,"position":%d}`, r.Status, r.Position), At: t0}
	}
}

func admit(t testing.TB, s store.Store, id, token string, c store.Caps, enqueue bool) (store.Run, error) {
	t.Helper()
	return s.Admit(context.Background(), store.NewRun{ID: id, TokenID: token, Spec: `{}`, At: t0}, c, enqueue, ev("admitted"))
}

func TestAdmissionOrder(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		caps := store.Caps{Running: 2, RunningPerToken: 1, Queue: 2, QueuePerToken: 2}
		s := open("")
		rows := []struct {
			id, token string
			enqueue   bool
			status    string
			position  int
			err       error
		}{
			{"a1", "A", false, store.Running, 0, nil},
			{"a2", "A", false, "", 0, store.ErrAtCapacity}, // A at its per-token cap
			{"a3", "A", true, store.Queued, 0, nil},        // queued behind nobody
			{"b1", "B", false, store.Running, 0, nil},      // A's queued run cannot start: it does not block B
			{"c1", "C", false, "", 0, store.ErrAtCapacity}, // the global cap
			{"c2", "C", true, store.Queued, 1, nil},        // one ahead
			{"c3", "C", true, "", 0, store.ErrQueueFull},   // the queue holds two
		}
		for _, row := range rows {
			r, err := admit(t, s, row.id, row.token, caps, row.enqueue)
			if row.err != nil {
				assert.ErrorIs(t, err, row.err, row.id)
				_, found, err := s.Run(ctx, row.id)
				require.NoError(t, err)
				assert.False(t, found, "%s: a refused run is not stored", row.id)
				continue
			}
			require.NoError(t, err, row.id)
			assert.Equal(t, row.status, r.Status, row.id)
			assert.Equal(t, row.position, r.Position, row.id)
			evs, err := s.Events(ctx, row.id, 0, 10)
			require.NoError(t, err)
			require.Len(t, evs, 1, "%s: the admission event is written with the run", row.id)
			assert.Equal(t, fmt.Sprintf(`{"status":%q,"position":%d}`, row.status, row.position), evs[0].Data)
			// The event stored is first(run) of the run Admit returned,
			// numbered 1: a Worker's front sends it to the run's object with
			// the run's stream, which then starts without reading it.
			first := ev("admitted")(r)
			assert.Equal(t, []any{int64(1), first.Type, first.Data}, []any{evs[0].Seq, evs[0].Type, evs[0].Data}, row.id)
		}
		// Nothing can start while a1 and b1 run.
		_, _, ok, err := s.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		assert.False(t, ok)
		// b1 ends: the oldest queued run whose token is under its cap starts
		// (a3 is A's, and A still runs a1, so c2 goes first).
		_, ok, err = s.Finish(ctx, "b1", store.Outcome{Status: store.Answered, Reason: "citation_contract_passed", Report: `{}`, At: t0}, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		r, _, ok, err := s.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "c2", r.ID)
		// A finished run cannot finish twice.
		_, ok, err = s.Finish(ctx, "b1", store.Outcome{Status: store.Failed, At: t0}, ev("end"))
		require.NoError(t, err)
		assert.False(t, ok)
		// a3 is dropped from the queue by its own token only.
		_, ok, err = s.CancelQueued(ctx, "B", "a3", t0, ev("end"))
		require.NoError(t, err)
		assert.False(t, ok, "another token cannot drop it")
		r, ok, err = s.CancelQueued(ctx, "A", "a3", t0, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, store.Incomplete, r.Status)
		assert.Equal(t, "cancelled", r.Reason)
		evs, err := s.Events(ctx, "a3", 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 2)
		assert.Equal(t, []int64{1, 2}, []int64{evs[0].Seq, evs[1].Seq})
		assert.Equal(t, "end", evs[1].Type)
		c, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.Counts{Running: 2, MostRunningPerToken: 1}, c) // a1, c2
	})
}

// Many goroutines admit, finish and promote at once while another samples
// the running count: no interleaving lets it pass a cap, and every run
// admitted ends up started exactly once.
func TestAdmissionHoldsTheCapsUnderConcurrency(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		caps := store.Caps{Running: 4, RunningPerToken: 2, Queue: 1000, QueuePerToken: 1000}
		const workers, perWorker = 24, 10
		var stop atomic.Bool
		var maxRunning, maxPerToken atomic.Int64
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			for !stop.Load() {
				c, err := s.Counts(ctx)
				if err != nil {
					continue
				}
				if int64(c.Running) > maxRunning.Load() {
					maxRunning.Store(int64(c.Running))
				}
				if int64(c.MostRunningPerToken) > maxPerToken.Load() {
					maxPerToken.Store(int64(c.MostRunningPerToken))
				}
			}
		}()
		var started sync.Map
		var wg sync.WaitGroup
		finish := func(id string) {
			_, ok, err := s.Finish(ctx, id, store.Outcome{Status: store.Answered, At: t0}, ev("end"))
			assert.NoError(t, err)
			assert.True(t, ok, id)
		}
		promoteAll := func() []string {
			var ids []string
			for {
				r, _, ok, err := s.Promote(ctx, caps, t0, ev("started"), 256)
				assert.NoError(t, err)
				if !ok {
					return ids
				}
				_, dup := started.LoadOrStore(r.ID, true)
				assert.False(t, dup, "%s started twice", r.ID)
				ids = append(ids, r.ID)
			}
		}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					id := fmt.Sprintf("r%d-%d", w, i)
					r, err := admit(t, s, id, fmt.Sprintf("T%d", w%3), caps, true)
					if !assert.NoError(t, err) {
						return
					}
					if r.Status == store.Running {
						_, dup := started.LoadOrStore(id, true)
						assert.False(t, dup)
						finish(id)
					}
					for _, p := range promoteAll() {
						finish(p)
					}
				}
			}()
		}
		wg.Wait()
		for ids := promoteAll(); len(ids) > 0; ids = promoteAll() {
			for _, p := range ids {
				finish(p)
			}
		}
		stop.Store(true)
		<-sampler
		assert.LessOrEqual(t, maxRunning.Load(), int64(caps.Running))
		assert.LessOrEqual(t, maxPerToken.Load(), int64(caps.RunningPerToken))
		n := 0
		started.Range(func(_, _ any) bool { n++; return true })
		assert.Equal(t, workers*perWorker, n, "every admitted run started once")
		c, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Zero(t, c)
	})
}

// Opening the same file again after a crash: the runs left running end
// interrupted with their end event, queued ones stay queued to resume, and
// every event written before is still there.
func TestReopenInterruptsRunningKeepsQueued(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "api.db")
		s := open(path)
		caps := store.Caps{Running: 1, RunningPerToken: 1, Queue: 5, QueuePerToken: 5}
		_, err := admit(t, s, "run", "A", caps, true)
		require.NoError(t, err)
		_, err = s.Append(ctx, "run", store.NewEvent{Type: "step", Data: `{}`, At: t0})
		require.NoError(t, err)
		_, err = admit(t, s, "wait", "A", caps, true)
		require.NoError(t, err)
		// No Close: the process "dies" with its connections open.

		again := open(path)
		ended, err := again.Interrupt(ctx, t0, ev("end"))
		require.NoError(t, err)
		require.Len(t, ended, 1)
		assert.Equal(t, "run", ended[0].ID)
		assert.Equal(t, "interrupted", ended[0].Reason)
		evs, err := again.Events(ctx, "run", 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 3)
		assert.Equal(t, []string{"admitted", "step", "end"}, []string{evs[0].Type, evs[1].Type, evs[2].Type})
		r, _, ok, err := again.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "wait", r.ID, "the queued run resumes")
	})
}

func TestChargeCountsUpToTheLimitPerDay(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		for i := range 3 {
			ok, err := s.Charge(ctx, "A", "2026-11-29", store.LiveCalls, 2)
			require.NoError(t, err)
			assert.Equal(t, i < 2, ok, "charge %d", i+1)
		}
		ok, err := s.Charge(ctx, "A", "2026-11-30", store.LiveCalls, 2)
		require.NoError(t, err)
		assert.True(t, ok, "a new day")
		ok, err = s.Charge(ctx, "A", "2026-11-29", store.Requests, 1)
		require.NoError(t, err)
		assert.True(t, ok, "the meters are separate")
		u, err := s.Usage(ctx, "A", "2026-11-29")
		require.NoError(t, err)
		assert.Equal(t, store.Usage{Requests: 1, LiveCalls: 2}, u)
	})
}

func TestTokensAreStoredAndRevoked(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		tok := store.Token{ID: "t1", Name: "ci", Hash: "ab", Scopes: []string{"read", "run"}, DailyRequests: 5, DailyLiveCalls: 1, CreatedAt: t0}
		require.NoError(t, s.AddToken(ctx, tok))
		got, ok, err := s.Token(ctx, "t1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, tok.Scopes, got.Scopes)
		assert.True(t, got.RevokedAt.IsZero())
		_, ok, err = s.RevokeToken(ctx, "t1", t0, ev("end"))
		require.NoError(t, err)
		assert.True(t, ok)
		_, ok, err = s.RevokeToken(ctx, "t1", t0, ev("end"))
		require.NoError(t, err)
		assert.False(t, ok, "already revoked")
		got, _, err = s.Token(ctx, "t1")
		require.NoError(t, err)
		assert.Equal(t, t0, got.RevokedAt)
	})
}

// Revoking a token ends what it started, in one transaction: its queued
// runs end (incomplete, token_revoked) with their end events, its running
// ones get a cancel request; afterwards nothing is charged to it, none of
// its runs is admitted or started, and another token's runs are untouched.
func TestRevokeEndsTheTokensRuns(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		caps := store.Caps{Running: 2, RunningPerToken: 1, Queue: 5, QueuePerToken: 5}
		s := open("")
		for _, id := range []string{"A", "B"} {
			require.NoError(t, s.AddToken(ctx, store.Token{ID: id, Name: id, Hash: "h", Scopes: []string{"run"}, DailyRequests: 9, DailyLiveCalls: 9, CreatedAt: t0}))
		}
		for _, r := range []struct{ id, token, status string }{{"a1", "A", store.Running}, {"a2", "A", store.Queued}, {"a3", "A", store.Queued}, {"b1", "B", store.Running}, {"b2", "B", store.Queued}} {
			run, err := admit(t, s, r.id, r.token, caps, true)
			require.NoError(t, err)
			require.Equal(t, r.status, run.Status, r.id)
		}
		ok, err := s.Charge(ctx, "A", "2026-11-29", store.LiveCalls, 9)
		require.NoError(t, err)
		require.True(t, ok)

		revoked, ok, err := s.RevokeToken(ctx, "A", t0, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		var dropped []string
		for _, r := range revoked.Dropped {
			dropped = append(dropped, r.ID)
			assert.Equal(t, store.Incomplete, r.Status)
			assert.Equal(t, store.TokenRevoked, r.Reason)
		}
		assert.Equal(t, []string{"a2", "a3"}, dropped)
		assert.Equal(t, []string{"a1"}, revoked.Stopping)
		for _, id := range []string{"a2", "a3"} {
			evs, err := s.Events(ctx, id, 0, 10)
			require.NoError(t, err)
			require.Len(t, evs, 2)
			assert.Equal(t, "end", evs[1].Type)
			assert.Contains(t, evs[1].Data, `"incomplete"`)
		}
		asked, err := s.CancelRequested(ctx, "a1")
		require.NoError(t, err)
		assert.True(t, asked, "the running run is asked to stop")
		asked, err = s.CancelRequested(ctx, "b1")
		require.NoError(t, err)
		assert.False(t, asked, "another token's run is not")

		ok, err = s.Charge(ctx, "A", "2026-11-29", store.LiveCalls, 9)
		require.NoError(t, err)
		assert.False(t, ok, "nothing more is charged to a revoked token")
		ok, err = s.Charge(ctx, "A", "2026-11-30", store.Requests, 9)
		require.NoError(t, err)
		assert.False(t, ok, "not on a new day either")
		ok, err = s.Charge(ctx, "B", "2026-11-29", store.LiveCalls, 9)
		require.NoError(t, err)
		assert.True(t, ok)
		_, err = admit(t, s, "a4", "A", caps, true)
		assert.ErrorIs(t, err, store.ErrRevoked)

		// a1 ends; the freed slot goes to B's queued run, never to A's.
		_, ok, err = s.Finish(ctx, "a1", store.Outcome{Status: store.Incomplete, Reason: store.TokenRevoked, At: t0}, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = s.Finish(ctx, "b1", store.Outcome{Status: store.Answered, At: t0}, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		run, _, ok, err := s.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "b2", run.ID)
		_, _, ok, err = s.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		assert.False(t, ok)
	})
}

// Writes that arrive together commit together, each in its own savepoint:
// of 40 admissions at once under a cap of 5, exactly 5 are stored (with
// their events) and the 35 refusals leave nothing, and 40 charges against
// a limit of 10 count exactly 10.
func TestGroupedWritesStayEachAllOrNothing(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		caps := store.Caps{Running: 5, RunningPerToken: 5, Queue: 0, QueuePerToken: 0}
		var wg sync.WaitGroup
		var admitted, refused, charged atomic.Int64
		for i := range 40 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := admit(t, s, fmt.Sprint("r", i), "A", caps, false)
				switch {
				case err == nil:
					admitted.Add(1)
				case errors.Is(err, store.ErrAtCapacity):
					refused.Add(1)
				default:
					t.Error(err)
				}
			}()
			go func() {
				defer wg.Done()
				ok, err := s.Charge(ctx, "A", "2026-11-29", store.Requests, 10)
				assert.NoError(t, err)
				if ok {
					charged.Add(1)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, int64(5), admitted.Load())
		assert.Equal(t, int64(35), refused.Load())
		assert.Equal(t, int64(10), charged.Load())
		rs, err := s.Runs(ctx, "A", 0, 100)
		require.NoError(t, err)
		assert.Len(t, rs, 5)
		for _, r := range rs {
			evs, err := s.Events(ctx, r.ID, 0, 10)
			require.NoError(t, err)
			assert.Len(t, evs, 1, r.ID)
		}
		u, err := s.Usage(ctx, "A", "2026-11-29")
		require.NoError(t, err)
		assert.Equal(t, 10, u.Requests)
	})
}

// A cancel request is kept for a running run only, where the process
// running it reads it.
func TestCancelRequestsOnlyForRunningRuns(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		caps := store.Caps{Running: 1, RunningPerToken: 1, Queue: 1, QueuePerToken: 1}
		_, err := admit(t, s, "run", "A", caps, true)
		require.NoError(t, err)
		_, err = admit(t, s, "wait", "A", caps, true)
		require.NoError(t, err)
		rows := []struct {
			id        string
			requested bool
		}{{"run", true}, {"wait", false}, {"none", false}}
		for _, row := range rows {
			ok, err := s.RequestCancel(ctx, row.id, t0)
			require.NoError(t, err)
			assert.Equal(t, row.requested, ok, row.id)
			got, err := s.CancelRequested(ctx, row.id)
			require.NoError(t, err)
			assert.Equal(t, row.requested, got, row.id)
		}
		ok, err := s.RequestCancel(ctx, "run", t0)
		require.NoError(t, err)
		assert.True(t, ok, "asking twice is asking")
	})
}

// On D1, processes come and go while others run: Interrupt ends only the
// runs that have run longer than the stale age, and a run another process
// finished in between is left alone.
func TestD1InterruptsOnlyStaleRuns(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	defer b.Close()
	s, err := store.NewD1(ctx, b, time.Minute)
	require.NoError(t, err)
	caps := store.Caps{Running: 4, RunningPerToken: 4, Queue: 0, QueuePerToken: 0}
	for i, at := range []time.Time{t0, t0.Add(50 * time.Second), t0.Add(2 * time.Minute)} {
		_, err := s.Admit(ctx, store.NewRun{ID: fmt.Sprint("r", i), TokenID: "A", Spec: `{}`, At: at}, caps, false, ev("admitted"))
		require.NoError(t, err)
	}
	ended, err := s.Interrupt(ctx, t0.Add(100*time.Second), ev("end"))
	require.NoError(t, err)
	require.Len(t, ended, 1, "only r0 has run over a minute")
	assert.Equal(t, "r0", ended[0].ID)
	for id, want := range map[string]string{"r0": store.Incomplete, "r1": store.Running, "r2": store.Running} {
		r, _, err := s.Run(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, r.Status, id)
	}
	evs, err := s.Events(ctx, "r0", 0, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 2, "admitted and end")
}

// The D1 store splices a queued run's position into its event in SQL; an
// event that uses the position any other way is refused, nothing stored.
func TestD1RefusesAQueuedEventSQLCannotMake(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	defer b.Close()
	s, err := store.NewD1(ctx, b, 0)
	require.NoError(t, err)
	odd := func(r store.Run) store.NewEvent {
		return store.NewEvent{Type: "queued", Data: fmt.Sprintf(`{"next":%d}`, r.Position+1), At: t0}
	}
	_, err = s.Admit(ctx, store.NewRun{ID: "x", TokenID: "A", Spec: `{}`, At: t0}, store.Caps{Running: 1, RunningPerToken: 1, Queue: 1, QueuePerToken: 1}, true, odd)
	require.Error(t, err)
	_, found, err := s.Run(ctx, "x")
	require.NoError(t, err)
	assert.False(t, found)
}

func TestRunningListsTheRunningRunsOldestFirst(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		caps := store.Caps{Running: 2, RunningPerToken: 2, Queue: 5, QueuePerToken: 5}
		for _, id := range []string{"a", "b", "c"} {
			_, err := admit(t, s, id, "A", caps, true)
			require.NoError(t, err)
		}
		_, ok, err := s.Finish(ctx, "a", store.Outcome{Status: store.Answered, Reason: "citation_contract_passed", At: t0}, ev("end"))
		require.NoError(t, err)
		require.True(t, ok)
		_, _, ok, err = s.Promote(ctx, caps, t0, ev("started"), 256)
		require.NoError(t, err)
		require.True(t, ok)
		got, err := s.Running(ctx)
		require.NoError(t, err)
		var ids []string
		for _, r := range got {
			assert.Equal(t, store.Running, r.Status)
			ids = append(ids, r.ID)
		}
		assert.Equal(t, []string{"b", "c"}, ids, "a finished; c left the queue")
	})
}

func TestAppendAllNumbersInOrder(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		_, err := admit(t, s, "a", "A", store.Caps{Running: 1, RunningPerToken: 1}, false)
		require.NoError(t, err)
		got, err := s.AppendAll(ctx, "a", []store.NewEvent{{Type: "step", Data: `{"n": 1}`, At: t0}, {Type: "step", Data: `{"n": 2}`, At: t0}})
		require.NoError(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, []int64{2, 3}, []int64{got[0].Seq, got[1].Seq}, "after the admitted event")
		evs, err := s.Events(ctx, "a", 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 3)
		assert.Equal(t, `{"n": 2}`, evs[2].Data)
	})
}

// FinishHeld stores the held steps and the end in one write, the end made
// from the run the caller holds as the outcome leaves it; a run no longer
// running gets the steps (as AppendAll then Finish would) but no second end.
func TestFinishHeldStoresTheStepsAndTheEnd(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		run, err := admit(t, s, "a", "A", store.Caps{Running: 1, RunningPerToken: 1}, false)
		require.NoError(t, err)
		require.Equal(t, store.Running, run.Status)
		o := store.Outcome{Status: "answered", Reason: "answered", Report: `{"r": 1}`, At: t0.Add(time.Second)}
		var seen store.Run
		end := func(r store.Run) store.NewEvent {
			seen = r
			return store.NewEvent{Type: "end", Data: r.ID + " " + r.Status, At: r.FinishedAt}
		}
		steps := []store.NewEvent{{Type: "step", Data: "1", At: t0}, {Type: "step", Data: "2", At: t0}}
		evs, r, ok, err := s.FinishHeld(ctx, run, steps, o, end)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, []int64{2, 3}, []int64{evs[0].Seq, evs[1].Seq})
		assert.Equal(t, "answered", r.Status)
		assert.Equal(t, "A", seen.TokenID, "the end is made from the held run")
		assert.Equal(t, "answered", seen.Status)
		stored, err := s.Events(ctx, "a", 0, 10)
		require.NoError(t, err)
		require.Len(t, stored, 4)
		assert.Equal(t, []string{"admitted", "step", "step", "end"}, []string{stored[0].Type, stored[1].Type, stored[2].Type, stored[3].Type})
		assert.Equal(t, "a answered", stored[3].Data)

		evs, _, ok, err = s.FinishHeld(ctx, run, []store.NewEvent{{Type: "step", Data: "late", At: t0}}, o, end)
		require.NoError(t, err)
		assert.False(t, ok, "not running any more")
		assert.Len(t, evs, 1)
		stored, err = s.Events(ctx, "a", 0, 10)
		require.NoError(t, err)
		assert.Len(t, stored, 5, "the step, no second end")
	})
}

// AddRequests returns each day's stored total, with what other writers
// added (a Worker's isolates each count their own).
func TestAddRequestsReturnsTheTotals(t *testing.T) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		ctx := context.Background()
		s := open("")
		ok, err := s.Charge(ctx, "A", "2026-11-29", store.Requests, 10)
		require.NoError(t, err)
		require.True(t, ok)
		totals, err := s.AddRequests(ctx, []store.RequestCount{{TokenID: "A", Day: "2026-11-29", Requests: 3}, {TokenID: "B", Day: "2026-11-29", Requests: 2}})
		require.NoError(t, err)
		assert.Equal(t, []int{4, 2}, totals)
	})
}

// countingBatcher counts D1's round trips and the statements of each.
type countingBatcher struct {
	store.Batcher
	n     int
	sizes []int
}

func (c *countingBatcher) Batch(ctx context.Context, stmts []store.Statement) ([]store.Rows, error) {
	c.n++
	c.sizes = append(c.sizes, len(stmts))
	return c.Batcher.Batch(ctx, stmts)
}

// D1 starts a queued run in one round trip (the run chosen, its started
// event, the start and the run's events in one batch), the event as the
// EventFunc makes it; an event that is not a template over the run's id
// takes the read first and is still right (its events then not read).
func TestD1PromotesInOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	defer b.Close()
	cb := &countingBatcher{Batcher: b}
	s, err := store.NewD1(ctx, cb, 0)
	require.NoError(t, err)
	caps := store.Caps{Running: 1, RunningPerToken: 1, Queue: 4, QueuePerToken: 4}
	for _, id := range []string{"run_a", "run_b", "run_c"} {
		_, err := admit(t, s, id, "A", caps, true)
		require.NoError(t, err)
	}
	_, ok, err := s.Finish(ctx, "run_a", store.Outcome{Status: "answered", At: t0}, ev("end"))
	require.NoError(t, err)
	require.True(t, ok)
	started := func(r store.Run) store.NewEvent {
		return store.NewEvent{Type: "started", Data: `{"run_id":"` + r.ID + `","status":"` + r.Status + `"}`, At: t0}
	}
	before := cb.n
	r, got, ok, err := s.Promote(ctx, caps, t0, started, 256)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "run_b", r.ID)
	assert.Equal(t, store.Running, r.Status)
	assert.Equal(t, 1, cb.n-before, "one round trip")
	evs, err := s.Events(ctx, "run_b", 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, evs, got, "the started run's events, as a read finds them")
	assert.Equal(t, store.NewEvent{Type: "started", Data: `{"run_id":"run_b","status":"running"}`, At: t0}, store.NewEvent{Type: evs[1].Type, Data: evs[1].Data, At: evs[1].At})
	before = cb.n
	_, _, ok, err = s.Promote(ctx, caps, t0, started, 256)
	require.NoError(t, err)
	assert.False(t, ok, "the cap is reached")
	assert.Equal(t, 1, cb.n-before, "one round trip to find none can start")

	_, ok, err = s.Finish(ctx, "run_b", store.Outcome{Status: "answered", At: t0}, ev("end"))
	require.NoError(t, err)
	require.True(t, ok)
	byToken := func(r store.Run) store.NewEvent {
		return store.NewEvent{Type: "started", Data: r.TokenID + r.ID, At: t0}
	}
	r, got, ok, err = s.Promote(ctx, caps, t0, byToken, 256)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Nil(t, got, "not read in the promotion")
	evs, err = s.Events(ctx, r.ID, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "Arun_c", evs[len(evs)-1].Data, "made from the run read first")
}

// D1 appends a run's held steps in one statement (a statement each made
// D1 pay for every step), byte for byte and in their order, however their
// text is escaped; steps past the bound on one statement's JSON go in a
// next one, numbered on.
func TestD1AppendsHeldStepsInOneStatement(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	defer b.Close()
	sc := &countingBatcher{Batcher: b}
	s, err := store.NewD1(ctx, sc, 0)
	require.NoError(t, err)
	run, err := admit(t, s, "a", "A", store.Caps{Running: 1, RunningPerToken: 1}, false)
	require.NoError(t, err)
	data := []string{`{"q": "a \"quoted\" <b>&amp;</b>"}`, "line\nbreak\ttab", `\u00e9 é 🐍`, `[1, 2.50, 1e3]`, "", `{"nul": "\u0000"}`}
	var steps []store.NewEvent
	for i, d := range data {
		steps = append(steps, store.NewEvent{Type: fmt.Sprint("step", i), Data: d, At: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	sc.sizes = nil
	o := store.Outcome{Status: "answered", Reason: "answered", Report: `{}`, At: t0.Add(time.Second)}
	end := func(r store.Run) store.NewEvent { return store.NewEvent{Type: "end", Data: "{}", At: r.FinishedAt} }
	evs, _, ok, err := s.FinishHeld(ctx, run, steps, o, end)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []int{3}, sc.sizes, "the steps, the end and the finish: three statements in one batch")
	stored, err := s.Events(ctx, "a", 0, 20)
	require.NoError(t, err)
	require.Len(t, stored, len(data)+2)
	for i, d := range data {
		assert.Equal(t, int64(i+2), evs[i].Seq)
		assert.Equal(t, d, stored[i+1].Data, "step %d byte for byte", i)
		assert.Equal(t, fmt.Sprint("step", i), stored[i+1].Type)
		assert.True(t, stored[i+1].At.Equal(steps[i].At), "step %d's time", i)
	}

	_, err = admit(t, s, "b", "B", store.Caps{Running: 2, RunningPerToken: 1}, false)
	require.NoError(t, err)
	big := strings.Repeat("x", 300<<10)
	sc.sizes = nil
	got, err := s.AppendAll(ctx, "b", []store.NewEvent{{Type: "s", Data: big + "1", At: t0}, {Type: "s", Data: big + "2", At: t0}, {Type: "s", Data: "3", At: t0}})
	require.NoError(t, err)
	assert.Equal(t, []int{2}, sc.sizes, "two statements: the first event's JSON and the next two's")
	assert.Equal(t, []int64{2, 3, 4}, []int64{got[0].Seq, got[1].Seq, got[2].Seq})
	stored, err = s.Events(ctx, "b", 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 4)
	assert.Equal(t, big+"2", stored[2].Data)
	assert.Equal(t, "3", stored[3].Data)
}
