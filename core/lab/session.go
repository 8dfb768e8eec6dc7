package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
)

// Recorder is a model that keeps every exchange it had, so a run can be
// saved and replayed later. A model that is not one (a test double) runs
// but leaves nothing to record.
type Recorder interface {
	agent.Model
	Exchanges() []recording.Exchange
}

// Session is the lab as one person uses it in a page or a process: runs made
// in it are numbered, graded when they ask an authored case's question, and
// their exchanges kept as a recording the person can download and replay.
// It is safe for concurrent use.
type Session struct {
	lab   *Lab
	clock func() time.Time

	mu     sync.Mutex
	file   recording.File
	runs   int
	repeat map[string]int // case/mode -> runs so far
}

// NewSession starts a session over an opened lab; clock stamps the
// recording and times each run (nil means time.Now).
func NewSession(l *Lab, clock func() time.Time) *Session {
	if clock == nil {
		clock = time.Now
	}
	return &Session{lab: l, clock: clock, repeat: map[string]int{}}
}

// Lab is the session's lab.
func (s *Session) Lab() *Lab { return s.lab }

// Provider names the model and endpoint a session's recording is made
// against; Config is recorded as is.
type Provider struct {
	Model    string
	Endpoint string
	Config   any
}

// Run runs one task with a model. The run is graded when its question and
// version are an authored case's; onStep sees each step as it is final. A
// run that starts is added to the session's recording if the model is a
// Recorder with at least one exchange, made against provider.
func (s *Session) Run(ctx context.Context, task agent.Task, model agent.Model, provider Provider,
	onStep func(agent.Step, *agent.Observation)) (TrialReport, error) {
	c, known := s.caseFor(task)
	s.mu.Lock()
	s.runs++
	n := s.runs
	key := string(task.Mode)
	if known {
		key = c.ID + "/" + key
	}
	s.repeat[key]++
	repeat := s.repeat[key]
	s.mu.Unlock()

	tr := TrialReport{ID: fmt.Sprintf("run-%d-%s", n, task.Mode), Repeat: repeat, Mode: string(task.Mode)}
	if known {
		tr.CaseID, tr.Split = c.ID, c.Split
	}
	started := s.clock()
	ctrl := agent.Controller{Tools: s.lab.tools, Model: model, Clock: s.clock, OnStep: onStep}
	res, err := ctrl.Run(ctx, task)
	if err != nil {
		return refused(tr, err)
	}
	elapsed := s.clock().Sub(started).Seconds()
	tr.Result, tr.ElapsedSeconds = res, &elapsed
	if known {
		checks := evaluate.Grade(c, res)
		tr.Checks = &checks
	}
	if rec, ok := model.(Recorder); ok {
		exchanges := rec.Exchanges()
		tr.Exchanges, tr.ExchangesUsed = len(exchanges), len(exchanges)
		if len(exchanges) > 0 {
			s.record(tr, task, exchanges, provider)
		}
	}
	return tr, nil
}

func (s *Session) record(tr TrialReport, task agent.Task, exchanges []recording.Exchange, p Provider) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.file.Trials) == 0 {
		s.file.Model, s.file.Endpoint, s.file.Config = p.Model, p.Endpoint, p.Config
	}
	s.file.RecordedAt = s.clock().UTC().Format(time.RFC3339)
	s.file.Trials = append(s.file.Trials, recording.Trial{
		ID: tr.ID, CaseID: tr.CaseID, Split: tr.Split, Repeat: tr.Repeat, Mode: string(task.Mode),
		Question: task.Question, Version: task.Version, Limits: limitsValue(task.Limits),
		Exchanges: exchanges, ElapsedSeconds: tr.ElapsedSeconds,
	})
}

// Recording is a copy of the session's recording so far: every recorded
// run, in order. It has no trials until a recorded run has finished.
func (s *Session) Recording() *recording.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.file
	f.Trials = append([]recording.Trial(nil), s.file.Trials...)
	return &f
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

// limitsValue is limits as a recording writes them, in published order.
func limitsValue(l agent.Limits) *pyjson.Object {
	return pyjson.NewObject("model_calls", l.ModelCalls, "searches", l.Searches, "reads", l.Reads,
		"source_bytes", l.SourceBytes, "seconds", l.Seconds)
}
