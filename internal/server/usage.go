package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// requestMeter counts each token's requests per UTC day in memory and
// writes the counts every UsageFlush in one transaction, so an
// authenticated GET costs no write of its own (each made one, synchronously:
// 1,551 GETs/s against 6,991 for /healthz). The daily allowance is checked
// against the stored count (read once per token and day) plus what this
// process counted since: exact while one server serves the database, which
// the serve lock makes sure of. A clean shutdown writes every count
// (Flush); a crash loses at most the last UsageFlush of them, so a token
// may be allowed that many requests more that day, never fewer. Live model
// calls are money and are still charged one by one before each is sent.
type requestMeter struct {
	flushing sync.Mutex // one flush at a time: a count is written once
	mu       sync.Mutex
	counts   map[usageKey]*usageCount
	last     time.Time // the last flush that wrote
}

// due reports whether counts are pending and the last write is every
// old or more: a Worker's front writes them in the request that finds so.
func (m *requestMeter) due(now time.Time, every time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.last) < every {
		return false
	}
	for _, c := range m.counts {
		if c.pending > 0 {
			return true
		}
	}
	return false
}

type usageKey struct{ token, day string }

type usageCount struct {
	known   int // stored when first read, plus every request counted since
	pending int // counted and not yet written
}

// charge counts one request for t today, unless its allowance is used.
func (m *requestMeter) charge(ctx context.Context, st store.Store, t store.Token, today string) (bool, error) {
	k := usageKey{t.ID, today}
	m.mu.Lock()
	_, ok := m.counts[k]
	m.mu.Unlock()
	var stored int
	if !ok {
		// Read without the lock: a read that never returns (a Worker's
		// D1 call whose request was cut off) must stop only its request.
		u, err := st.Usage(ctx, t.ID, today)
		if err != nil {
			return false, err
		}
		stored = u.Requests
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[usageKey]*usageCount{}
	}
	c, ok := m.counts[k]
	if !ok { // another request may have read it meanwhile: the first kept
		c = &usageCount{known: stored}
		m.counts[k] = c
	}
	if c.known >= t.DailyRequests {
		return false, nil
	}
	c.known++
	c.pending++
	return true, nil
}

// flush writes the pending counts (one transaction) and forgets the days
// before today; counts that could not be written stay pending. Unless
// wait is set, it returns at once when another flush is writing: a
// request that finds the counts due must not wait on another request's
// write, which on a Worker may never return (its request cut off).
func (m *requestMeter) flush(ctx context.Context, st store.Store, today string, now time.Time, wait bool) error {
	if wait {
		m.flushing.Lock()
	} else if !m.flushing.TryLock() {
		return nil
	}
	defer m.flushing.Unlock()
	m.mu.Lock()
	var batch []store.RequestCount
	for k, c := range m.counts {
		if c.pending > 0 {
			batch = append(batch, store.RequestCount{TokenID: k.token, Day: k.day, Requests: c.pending})
		}
	}
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	totals, err := st.AddRequests(ctx, batch)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = now
	for i, b := range batch {
		k := usageKey{b.TokenID, b.Day}
		c := m.counts[k]
		c.pending -= b.Requests
		// The stored total, with what other processes counted (a Worker's
		// other isolates), plus what this one counted since.
		c.known = totals[i] + c.pending
		if c.pending == 0 && k.day < today {
			delete(m.counts, k)
		}
	}
	return nil
}

// Flush writes every request counted and not yet written. Shutdown calls
// it; call it again once the HTTP server has stopped, for the requests
// answered after Shutdown.
func (s *Server) Flush(ctx context.Context) error {
	if s.usageFlush <= 0 {
		return nil
	}
	now := s.clock()
	if err := s.meter.flush(ctx, s.store, day(now), now, true); err != nil {
		return fmt.Errorf("server: writing request counts: %w", err)
	}
	return nil
}

// flushLoop writes the request counts every UsageFlush until stop closes.
func (s *Server) flushLoop(stop <-chan struct{}) {
	t := time.NewTicker(s.usageFlush)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := s.Flush(context.Background()); err != nil {
				s.log.Error("server fault", "during", "writing request counts", "error", err.Error())
			}
		}
	}
}

// streams counts each token's open event streams, for the per-token cap.
type streams struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire takes one of the token's stream slots; release gives it back.
// A refusal is 429 too_many_streams.
func (s *Server) acquireStream(tokenID string) (release func(), aerr *apiError) {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	if s.streams.open == nil {
		s.streams.open = map[string]int{}
	}
	if s.streams.open[tokenID] >= s.streamsPerToken {
		e := refuse(http.StatusTooManyRequests, CodeTooManyStreams,
			fmt.Sprintf("the token has %d event streams open, its cap; close one (or read the run with GET) and retry", s.streamsPerToken))
		e.retryAfter = 1
		return nil, e
	}
	s.streams.open[tokenID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.streams.mu.Lock()
			defer s.streams.mu.Unlock()
			if s.streams.open[tokenID]--; s.streams.open[tokenID] <= 0 {
				delete(s.streams.open, tokenID)
			}
		})
	}, nil
}
