package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// MaxRepeats bounds a plan's repeats: enough to see variation, not a way to
// spend the allowance by accident.
const MaxRepeats = 10

// Plan is a batch of fresh runs: every case, repeated, on every path, under
// one set of limits. Trials run in the published order: repeat by repeat,
// case by case, fixed before agent.
type Plan struct {
	Cases   []*evaluate.Case
	Repeats int
	Modes   []agent.Mode
	Limits  agent.Limits
	// Retrieval is the lab's configuration as the recording names it.
	Retrieval *recording.Retrieval
}

// PlannedTrial is one run of a plan.
type PlannedTrial struct {
	ID     string
	CaseID string
	Split  string
	Repeat int
	Task   agent.Task
	// Retrieval is the configuration the trial's searches rank by, as its
	// recording names it (nil for seed).
	Retrieval *recording.Retrieval
}

// Plan builds a plan over the named cases (all, in file order, when none
// are named) and refuses what cannot run: an unknown case, a repeat count
// outside 1..MaxRepeats, no mode or a repeated one, invalid limits.
func (l *Lab) Plan(caseIDs []string, repeats int, modes []agent.Mode, limits agent.Limits) (*Plan, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if repeats < 1 || repeats > MaxRepeats {
		return nil, fmt.Errorf("repeats must be a whole number from 1 to %d, got %d", MaxRepeats, repeats)
	}
	if len(modes) == 0 {
		return nil, fmt.Errorf("a plan needs at least one mode (fixed, agent)")
	}
	seen := map[agent.Mode]bool{}
	for _, m := range modes {
		if m != agent.Fixed && m != agent.Agent {
			return nil, fmt.Errorf("mode %q is not fixed or agent", m)
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %q is named twice", m)
		}
		seen[m] = true
	}
	p := &Plan{Repeats: repeats, Modes: modes, Limits: limits, Retrieval: l.RetrievalRecord()}
	if len(caseIDs) == 0 {
		for i := range l.Cases.Cases {
			p.Cases = append(p.Cases, &l.Cases.Cases[i])
		}
	}
	named := map[string]bool{}
	for _, id := range caseIDs {
		c, ok := l.Cases.Case(id)
		if !ok {
			known := make([]string, len(l.Cases.Cases))
			for i, c := range l.Cases.Cases {
				known[i] = c.ID
			}
			return nil, fmt.Errorf("no case %q; the cases are %v", id, known)
		}
		if named[id] {
			return nil, fmt.Errorf("case %q is named twice", id)
		}
		named[id] = true
		p.Cases = append(p.Cases, c)
	}
	return p, nil
}

// Trials lists the plan's runs in order; ids are <case>-<mode>-<repeat>.
func (p *Plan) Trials() []PlannedTrial {
	var out []PlannedTrial
	for r := 1; r <= p.Repeats; r++ {
		for _, c := range p.Cases {
			for _, m := range p.Paths() {
				out = append(out, PlannedTrial{
					ID: fmt.Sprintf("%s-%s-%d", c.ID, m, r), CaseID: c.ID, Split: c.Split, Repeat: r,
					Task:      agent.Task{Question: c.Question, Version: c.Version, Mode: m, Limits: p.Limits},
					Retrieval: p.Retrieval,
				})
			}
		}
	}
	return out
}

// Paths is the plan's modes in running order, fixed first.
func (p *Plan) Paths() []agent.Mode {
	var out []agent.Mode
	for _, want := range []agent.Mode{agent.Fixed, agent.Agent} {
		for _, m := range p.Modes {
			if m == want {
				out = append(out, m)
			}
		}
	}
	return out
}

// WorstCaseRequests is the most model requests the plan can make: one per
// fixed trial (its only call must answer or stop) and the model-call limit
// per agent trial.
func (p *Plan) WorstCaseRequests() int {
	n := 0
	for _, t := range p.Trials() {
		n += CallsAtMost(t.Task)
	}
	return n
}

// CallsAtMost is the most model calls a task can make.
func CallsAtMost(t agent.Task) int {
	if t.Mode == agent.Fixed {
		return 1
	}
	return t.Limits.ModelCalls
}

// Record is the planned trial as a recording's trial (no exchanges yet).
func (pt PlannedTrial) Record() recording.Trial {
	return recording.Trial{ID: pt.ID, CaseID: pt.CaseID, Split: pt.Split, Repeat: pt.Repeat,
		Question: pt.Task.Question, Version: pt.Task.Version, Mode: string(pt.Task.Mode), Limits: pyjson.ValueOf(pt.Task.Limits),
		Retrieval: pt.Retrieval}
}

// Start supplies the model for one trial and a function to call when it
// ends (with its elapsed seconds), which may fail (a recording that cannot
// be saved stops the batch).
type Start func(PlannedTrial) (model.Model, func(elapsedSeconds float64) error, error)

// RunBatch runs the plan's trials in order, grading each, and stops
// starting new ones once ctx is done. onTrial, if set, sees each report as
// it is made; onStep, if set, sees every step of every trial. The error is
// a fault outside every trial's own outcome.
func (l *Lab) RunBatch(ctx context.Context, p *Plan, start Start, clock func() time.Time,
	onStep func(PlannedTrial, agent.Step, *agent.Observation), onTrial func(report.Trial)) (*report.Set, error) {
	if clock == nil {
		clock = time.Now
	}
	rep := &report.Set{Trials: []report.Trial{}}
	for _, pt := range p.Trials() {
		if ctx.Err() != nil {
			break
		}
		model, end, err := start(pt)
		if err != nil {
			return rep, fmt.Errorf("trial %s: %w", pt.ID, err)
		}
		o := TrialOptions{Clock: clock, OnEnd: end}
		if onStep != nil {
			o.OnStep = func(s agent.Step, obs *agent.Observation) { onStep(pt, s, obs) }
		}
		tr := report.Trial{ID: pt.ID, CaseID: pt.CaseID, Split: pt.Split, Repeat: pt.Repeat, Mode: string(pt.Task.Mode)}
		tr, err = l.Trial(ctx, tr, pt.Task, model, o)
		if err != nil {
			return rep, fmt.Errorf("trial %s: %w", pt.ID, err)
		}
		rep.Add(tr)
		if onTrial != nil {
			onTrial(tr)
		}
	}
	return rep, nil
}
