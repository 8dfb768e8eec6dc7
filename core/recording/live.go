package recording

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// Header is a live recording's provider settings, stamped at now. Every
// live recording starts here (a run, a batch, a live rerank), so they agree
// on the format of recorded_at: RFC 3339 with the clock's full precision.
func Header(model, endpoint string, config any, now time.Time) File {
	return File{Model: model, Endpoint: endpoint, Config: config, RecordedAt: now.UTC().Format(time.RFC3339Nano)}
}

// Live is a trial begun in a recording for a live model. Its Record, the
// model's record function, stamps a pending attempt with the time it is
// sent (sent_at) and the outcome that replaces it with the same time, and
// counts the attempts whose outcome came.
type Live struct {
	// Log is the trial's log; Finish it when the run ends.
	Log      *TrialLog
	clock    func() time.Time
	sentAt   string // the attempt in flight's, from its pending record
	attempts atomic.Int64
	mu       sync.Mutex
	last     gemini.Attempt
}

// BeginLive begins t in r for a live model timed by clock: the one way
// every live trial starts its record.
func (r *Recorder) BeginLive(t Trial, clock func() time.Time) (*Live, error) {
	log, err := r.Begin(t)
	if err != nil {
		return nil, err
	}
	return &Live{Log: log, clock: clock}, nil
}

// Record logs an attempt, stamping a pending one with the time it is sent.
func (l *Live) Record(a gemini.Attempt) error {
	if a.Pending {
		l.sentAt = l.clock().UTC().Format(time.RFC3339Nano)
		a.SentAt = l.sentAt
		return l.Log.Record(a)
	}
	a.SentAt = l.sentAt
	l.attempts.Add(1)
	l.mu.Lock()
	l.last = a
	l.mu.Unlock()
	return l.Log.Record(a)
}

// Attempts is how many attempts were sent and recorded with their outcome.
func (l *Live) Attempts() int { return int(l.attempts.Load()) }

// Last is the last attempt recorded with its outcome.
func (l *Live) Last() gemini.Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
