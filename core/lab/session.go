package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
)

// Session is the lab as one person uses it in a page: runs made in it are
// numbered, graded when they ask an authored case's question, and every
// attempt of its live runs is kept as a recording the person can download
// and replay. Its live runs share one request allowance, as a batch's do.
// It is safe for concurrent use.
type Session struct {
	lab       *Lab
	clock     func() time.Time
	allowance *gemini.Allowance

	mu     sync.Mutex
	rec    *recording.Recorder // made by the first live run
	runs   int
	repeat map[string]int // case/mode -> runs so far
}

// NewSession starts a session over an opened lab with a live request
// allowance (1..gemini.MaxAllowance); clock times the runs and stamps the
// recording (nil means time.Now).
func NewSession(l *Lab, allowance int, clock func() time.Time) (*Session, error) {
	a, err := gemini.NewAllowance(allowance)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = time.Now
	}
	return &Session{lab: l, clock: clock, allowance: a, repeat: map[string]int{}}, nil
}

// Lab is the session's lab.
func (s *Session) Lab() *Lab { return s.lab }

// Allowance is the session's live request allowance.
func (s *Session) Allowance() *gemini.Allowance { return s.allowance }

// Live is how a live run reaches the model: the transport that holds the
// key, and the endpoint ("" for the real API, or a loopback test double).
type Live struct {
	Transport gemini.Transport
	Endpoint  string
}

// Run runs one task with an offline model (the scripted policy, a replay):
// nothing is sent and nothing recorded. onStep sees each step as it is
// final.
func (s *Session) Run(ctx context.Context, task agent.Task, model model.Model,
	onStep func(agent.Step, *agent.Observation)) (TrialReport, error) {
	tr, c := s.begin(task)
	return s.run(ctx, tr, c, task, model, onStep)
}

// RunLive runs one task with the live Gemini model over live's transport,
// counting every attempt against the session's allowance and recording it
// in the session's recording as it happens.
func (s *Session) RunLive(ctx context.Context, task agent.Task, live Live,
	onStep func(agent.Step, *agent.Observation)) (TrialReport, error) {
	if err := task.Validate(); err != nil {
		tr, _ := s.begin(task)
		return refused(tr, err)
	}
	endpoint, err := gemini.ResolveEndpoint(live.Endpoint)
	if err != nil {
		return TrialReport{}, err
	}
	tr, c := s.begin(task)
	log, err := s.recorder(endpoint).Begin(recording.Trial{ID: tr.ID, CaseID: tr.CaseID, Split: tr.Split,
		Repeat: tr.Repeat, Mode: string(task.Mode), Question: task.Question, Version: task.Version, Limits: pyjson.ValueOf(task.Limits)})
	if err != nil {
		return TrialReport{}, err
	}
	attempts := 0
	record := func(a gemini.Attempt) error {
		attempts++
		return log.Record(a)
	}
	model, err := gemini.NewClient(live.Transport, s.allowance, endpoint, record)
	if err != nil {
		return TrialReport{}, err
	}
	report, err := s.run(ctx, tr, c, task, model, onStep)
	if report.ElapsedSeconds != nil {
		if ferr := log.Finish(*report.ElapsedSeconds); ferr != nil && err == nil {
			err = ferr
		}
	}
	report.Exchanges, report.ExchangesUsed = attempts, attempts
	return report, err
}

// begin numbers a run and finds its case.
func (s *Session) begin(task agent.Task) (TrialReport, *evaluate.Case) {
	c, known := s.caseFor(task)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs++
	key := string(task.Mode)
	if known {
		key = c.ID + "/" + key
	}
	s.repeat[key]++
	tr := TrialReport{ID: fmt.Sprintf("run-%d-%s", s.runs, task.Mode), Repeat: s.repeat[key], Mode: string(task.Mode)}
	if known {
		tr.CaseID, tr.Split = c.ID, c.Split
	}
	return tr, c
}

func (s *Session) run(ctx context.Context, tr TrialReport, c *evaluate.Case, task agent.Task, model model.Model,
	onStep func(agent.Step, *agent.Observation)) (TrialReport, error) {
	started := s.clock()
	ctrl := agent.Controller{Tools: s.lab.tools, Model: model, Clock: s.clock, OnStep: onStep}
	res, err := ctrl.Run(ctx, task)
	if err != nil {
		return refused(tr, err)
	}
	elapsed := s.clock().Sub(started).Seconds()
	tr.Result, tr.ElapsedSeconds = res, &elapsed
	if c != nil {
		checks := evaluate.Grade(c, res)
		tr.Checks = &checks
	}
	return tr, nil
}

// recorder is the session's recording, started by its first live run. It
// lives in memory: the page offers it for download.
func (s *Session) recorder(endpoint string) *recording.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		head := recording.File{Model: gemini.Model, Endpoint: endpoint, Config: gemini.Config(),
			RecordedAt: s.clock().UTC().Format(time.RFC3339)}
		s.rec = recording.NewMemoryRecorder(head)
	}
	return s.rec
}

// Recording is a copy of the session's recording so far: every live run's
// attempts, in order. It has no trials before the first live run.
func (s *Session) Recording() *recording.File {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec == nil {
		return &recording.File{Model: gemini.Model, Endpoint: gemini.Endpoint, Config: gemini.Config()}
	}
	return rec.File()
}

// caseFor finds the authored case a task asks, by question and version.
func (s *Session) caseFor(t agent.Task) (*evaluate.Case, bool) {
	for i := range s.lab.Cases.Cases {
		c := &s.lab.Cases.Cases[i]
		if c.Question == t.Question && c.Version == t.Version {
			return c, true
		}
	}
	return nil, false
}
