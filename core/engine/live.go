package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/recording"
)

// LiveModel is how a live run reaches a model of the Gemini API: which
// model, the transport that holds the key, and the endpoint ("" for the
// model's real URL, or a loopback test double).
type LiveModel struct {
	Model     string
	Transport gemini.Transport
	Endpoint  string
	// Allowance counts the attempts; nil means the engine's.
	Allowance *gemini.Allowance
	// BeforeSend, if set, sees every attempt before it is counted and sent
	// (gemini.Client.BeforeSend).
	BeforeSend func(body []byte) error
}

// liveTrial is a trial begun in a recording, whose record function logs
// every attempt and counts it.
type liveTrial struct {
	Log      *recording.TrialLog
	clock    func() time.Time
	sentAt   string // the attempt in flight's, from its pending record
	attempts atomic.Int64
	mu       sync.Mutex
	last     gemini.Attempt
}

// Last is the last attempt recorded.
func (l *liveTrial) Last() gemini.Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Attempts is how many attempts were sent and recorded with their outcome.
func (l *liveTrial) Attempts() int { return int(l.attempts.Load()) }

// record logs an attempt, stamping a pending one with the time it is sent;
// it is a live model's record function.
func (l *liveTrial) record(a gemini.Attempt) error {
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

// header is a recording's provider settings, stamped now. Every live
// recording the engine makes starts here, so they agree on the format of
// recorded_at (RFC 3339 with the clock's full precision).
func (e *Engine) header(modelName, endpoint string, config any) recording.File {
	return recording.File{Model: modelName, Endpoint: endpoint, Config: config,
		RecordedAt: e.clock().UTC().Format(time.RFC3339Nano)}
}

// beginLive begins a trial in rec: the one way every live run (a single
// run, a batch trial, a live rerank) starts its record.
func (e *Engine) beginLive(rec *recording.Recorder, trial recording.Trial) (*liveTrial, error) {
	log, err := rec.Begin(trial)
	if err != nil {
		return nil, err
	}
	return &liveTrial{Log: log, clock: e.clock}, nil
}

// startLive begins a trial in rec and returns the live client that records
// every attempt in it, counted against the engine's allowance.
func (e *Engine) startLive(rec *recording.Recorder, trial recording.Trial, m LiveModel) (*gemini.Client, *liveTrial, error) {
	lt, err := e.beginLive(rec, trial)
	if err != nil {
		return nil, nil, err
	}
	a := m.Allowance
	if a == nil {
		a = e.allowance
	}
	c, err := gemini.NewClientFor(m.Model, m.Transport, a, m.Endpoint, lt.record)
	if err != nil {
		return nil, nil, err
	}
	c.BeforeSend = m.BeforeSend
	return c, lt, nil
}
