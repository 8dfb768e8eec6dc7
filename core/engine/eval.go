package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// EvalRequest grades a pack's authored cases on both paths, with the
// scripted policy (offline), a recording made over the pack (replay) or
// live Gemini (a planned batch: PlanBatch, then RunBatch, then
// BatchPlan.Eval).
type EvalRequest struct {
	Corpus string
	// Config is the retrieval configuration the runs search under (a
	// built-in's name or a configuration's JSON; "" is the pack's
	// default). A Replay eval's trials replay under their recorded one,
	// and one recorded under another than Config is refused.
	Config string
	Policy PolicyName // Scripted or Replay
	// Cases is a question set's text (ragagent-cases/1 JSON or TSV) to
	// grade instead of the pack's own cases; nil means the pack's.
	Cases []byte
	// File is the recording a Replay eval answers from.
	File *recording.File
	// Limits are the scripted runs' limits (the zero value: the defaults).
	Limits agent.Limits
	// OnTrial, if set, sees each trial as it ends: done of total.
	OnTrial func(done, total int, id string)
	// OnGraded, if set, is given each graded trial of a scripted eval as
	// it ends: its index in the plan's order (0-based; EvalPlan.Trials
	// lists them) before the next trial starts; an error stops the eval.
	// A server keeps them to resume after a crash.
	OnGraded func(i int, tr report.Trial) error
	// Done are graded trials of a scripted eval run before, by OnGraded's
	// index: they are not run again (OnTrial counts them done), and the
	// result is the one a run from the start gives, except the measured
	// durations (EvalResult.Unmeasured): a kept trial brings the seconds
	// it took when it ran. A trial whose id is not the plan's at its
	// index is refused.
	Done map[int]report.Trial
}

// EvalPlan is what a scripted eval will run, checked without running it:
// its pack's id, how many cases, and its trials' ids in running order
// (each case on the fixed path, then on the agent path).
type EvalPlan struct {
	Corpus string
	Cases  int
	Trials []string
}

// EvalCase is one case on one path: whether a target passage was read,
// the fixture outcome, the run's stop reason and the checks.
type EvalCase struct {
	ID         string           `json:"id"`
	Mode       string           `json:"mode"`
	Question   string           `json:"question"`
	TargetRead *bool            `json:"target_read"`
	Outcome    evaluate.Outcome `json:"outcome"`
	Reason     reason.Code      `json:"reason"`
	Checks     *evaluate.Checks `json:"checks"`
	Usage      *agent.Usage     `json:"usage,omitempty"`
}

// EvalResult is `ragagent eval`: the cases, then the summary per path.
type EvalResult struct {
	Corpus  string      `json:"corpus"`
	SearchK int         `json:"search_k"`
	Policy  PolicyName  `json:"policy"`
	Cases   []EvalCase  `json:"cases"`
	Summary EvalSummary `json:"summary"`
	// Experiment is the agent-level comparison beside the summary: each
	// path's rates with 95% intervals, tokens, cost and time, and the
	// agent path against the fixed one on the same cases.
	Experiment EvalExperiment `json:"experiment"`
	// Trials are the graded trials the cases are of, in their order (not
	// part of what `ragagent eval --json` prints): a front end shows each
	// one's trace.
	Trials []report.Trial `json:"-"`
}

// JSON is what `ragagent eval --json` prints for the result: indented by
// two spaces, HTML characters unescaped, a final newline; the page's
// download of an agent experiment is these bytes.
func (r *EvalResult) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Unmeasured is the result with its measured durations zeroed: each
// path's seconds and mean_seconds (the only measured fields of `ragagent
// eval --json`; a replay's are recorded, a run's measured on the clock)
// and each trial's elapsed seconds and step timings. Two runs of the same
// scripted eval, whole or resumed, natively or on a server, have equal
// unmeasured results (and JSON bytes); their measured seconds differ.
func (r *EvalResult) Unmeasured() *EvalResult {
	out := *r
	out.Experiment.Paths = append([]PathRates(nil), r.Experiment.Paths...)
	for i := range out.Experiment.Paths {
		out.Experiment.Paths[i].Seconds, out.Experiment.Paths[i].MeanSeconds = 0, 0
	}
	if r.Trials != nil {
		out.Trials = append([]report.Trial(nil), r.Trials...)
		for i := range out.Trials {
			out.Trials[i].ElapsedSeconds, out.Trials[i].Timing = nil, nil
		}
	}
	return &out
}

// EvalSummary is the outcomes per path, how many trials read a target
// passage, and how many of the unanswerable cases were declined.
type EvalSummary struct {
	Fixed       evaluate.Tally `json:"fixed"`
	Agent       evaluate.Tally `json:"agent"`
	TargetsRead PathCounts     `json:"target_read"`
	Answerable  int            `json:"answerable_cases"`
	Unanswer    int            `json:"unanswerable_cases"`
	Trials      int            `json:"trials"`
}

// PathCounts counts trials per path.
type PathCounts struct {
	Fixed int `json:"fixed"`
	Agent int `json:"agent"`
}

// PlanEval checks a scripted eval as Eval would (its pack, configuration,
// question set and limits) and says what it will run: a server admits an
// agent experiment by it and counts its trials for progress.
func (e *Engine) PlanEval(req EvalRequest) (EvalPlan, error) {
	l, plan, err := e.scriptedPlan(req)
	if err != nil {
		return EvalPlan{}, err
	}
	out := EvalPlan{Corpus: l.Pack.Manifest.ID, Cases: len(plan.Cases), Trials: []string{}}
	for _, pt := range plan.Trials() {
		out.Trials = append(out.Trials, pt.ID)
	}
	return out, nil
}

// evalLab is the lab an eval runs in: the pack under the configuration,
// with the request's question set when it names one.
func (e *Engine) evalLab(req EvalRequest) (*lab.Lab, error) {
	l, err := e.labUnder(req.Corpus, req.Config)
	if err != nil {
		return nil, err
	}
	if req.Cases != nil {
		if l, err = l.WithCases(req.Cases); err != nil {
			return nil, err
		}
	}
	if len(l.Cases.Cases) == 0 {
		return nil, reason.New(reason.InvalidCases, "eval: pack %s has no authored cases", l.Pack.Manifest.ID)
	}
	return l, nil
}

// scriptedPlan is a scripted eval's lab and plan: every case once on each
// path under the request's limits (the defaults when zero).
func (e *Engine) scriptedPlan(req EvalRequest) (*lab.Lab, *lab.Plan, error) {
	l, err := e.evalLab(req)
	if err != nil {
		return nil, nil, err
	}
	limits := req.Limits
	if limits == (agent.Limits{}) {
		limits = agent.DefaultLimits()
	}
	plan, err := l.Plan(nil, 1, []agent.Mode{agent.Fixed, agent.Agent}, limits)
	if err != nil {
		return nil, nil, err
	}
	return l, plan, nil
}

// Eval runs every authored case of a pack once on each path (scripted) or
// replays a recording made over it, and grades each trial.
func (e *Engine) Eval(ctx context.Context, req EvalRequest) (*EvalResult, error) {
	if req.Policy != Scripted && (req.OnGraded != nil || len(req.Done) > 0) {
		return nil, fmt.Errorf("eval: only a scripted eval is resumed trial by trial, not policy %q", req.Policy)
	}
	if req.Policy == Scripted {
		return e.evalScripted(ctx, req)
	}
	l, err := e.evalLab(req)
	if err != nil {
		return nil, err
	}
	if req.Policy == Replay && req.File != nil {
		for _, t := range req.File.Trials {
			if err := checkRecorded(l, req.Config, t); err != nil {
				return nil, err
			}
		}
	}
	var rep *report.Set
	switch req.Policy {
	case Replay:
		if req.File == nil {
			return nil, errors.New("eval: a replay eval needs a recording")
		}
		res, err := e.Replay(ctx, ReplayRequest{Corpus: req.Corpus, File: req.File, OnTrial: req.OnTrial})
		if err != nil {
			return nil, err
		}
		rep = res.Report()
	default:
		return nil, fmt.Errorf("eval: policy %q is not scripted or replay (a live eval is a planned batch)", req.Policy)
	}
	return e.evalOf(l, req.Policy, rep), nil
}

// evalScripted runs a scripted eval's trials in order, taking those in
// req.Done as run (counted, not run again) and giving each one it runs to
// req.OnGraded before the next starts.
func (e *Engine) evalScripted(ctx context.Context, req EvalRequest) (*EvalResult, error) {
	l, plan, err := e.scriptedPlan(req)
	if err != nil {
		return nil, err
	}
	planned := plan.Trials()
	for i, tr := range req.Done {
		if i < 0 || i >= len(planned) || tr.ID != planned[i].ID {
			return nil, fmt.Errorf("eval: the trial done at index %d (%q) is not the plan's", i, tr.ID)
		}
	}
	total, done := len(planned), 0
	count := func(id string) {
		done++
		if req.OnTrial != nil {
			req.OnTrial(done, total, id)
		}
	}
	rep := &report.Set{Trials: []report.Trial{}}
	scripted := func(lab.PlannedTrial) (model.Model, func(float64) error, error) {
		return policy.Scripted{TermKey: l.Retrieval.TermKey}, nil, nil
	}
	if req.OnGraded == nil && len(req.Done) == 0 {
		rep, err = l.RunBatch(ctx, plan, scripted, e.clock, nil, func(tr report.Trial) { count(tr.ID) })
		if err != nil {
			return nil, err
		}
		return e.evalOf(l, Scripted, rep), nil
	}
	// One trial at a time: a plan of the one case on the one path runs
	// exactly the trial the whole plan would (ids, task and limits are
	// the planned trial's), so a resumed eval grades what a whole one does.
	for i, pt := range planned {
		if tr, ok := req.Done[i]; ok {
			rep.Add(tr)
			count(tr.ID)
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c, _ := l.Cases.Case(pt.CaseID)
		one := *plan
		one.Cases, one.Modes = []*evaluate.Case{c}, []agent.Mode{pt.Task.Mode}
		part, err := l.RunBatch(ctx, &one, scripted, e.clock, nil, nil)
		if err != nil {
			return nil, err
		}
		if len(part.Trials) != 1 || part.Trials[0].ID != pt.ID {
			if err := ctx.Err(); err != nil {
				return nil, err // stopped before the trial started
			}
			return nil, fmt.Errorf("eval: trial %s did not run as planned", pt.ID)
		}
		tr := part.Trials[0]
		if req.OnGraded != nil {
			if err := req.OnGraded(i, tr); err != nil {
				return nil, err
			}
		}
		rep.Add(tr)
		count(tr.ID)
	}
	return e.evalOf(l, Scripted, rep), nil
}

// Eval is a batch's report as an eval result: each case on each path,
// graded, with the summary over the plan's pack (the live eval:
// PlanBatch, RunBatch, then Eval).
func (p *BatchPlan) Eval(rep *report.Set) *EvalResult { return p.engine.evalOf(p.lab, Gemini, rep) }

// evalOf is a graded report over l's cases as an eval result.
func (e *Engine) evalOf(l *lab.Lab, p PolicyName, rep *report.Set) *EvalResult {
	out := &EvalResult{Corpus: l.Pack.Manifest.ID, SearchK: l.SearchK, Policy: p, Cases: []EvalCase{}}
	for _, c := range l.Cases.Cases {
		if len(c.Sources)+len(c.TargetURLs) > 0 {
			out.Summary.Answerable++
		} else {
			out.Summary.Unanswer++
		}
	}
	for _, tr := range rep.Trials {
		ec := EvalCase{ID: tr.CaseID, Mode: tr.Mode, Checks: tr.Checks}
		if tr.Result != nil {
			ec.Question, ec.Reason, ec.Usage = tr.Result.Question, tr.Result.Reason, &tr.Result.Usage
		} else if tr.Error != nil {
			ec.Reason = *tr.Error
		}
		if tr.Checks != nil {
			ec.TargetRead, ec.Outcome = tr.Checks.RetrievalTargetsRead, tr.Checks.Outcome
			if ec.TargetRead != nil && *ec.TargetRead {
				switch agent.Mode(tr.Mode) {
				case agent.Fixed:
					out.Summary.TargetsRead.Fixed++
				case agent.Agent:
					out.Summary.TargetsRead.Agent++
				}
			}
		}
		out.Cases = append(out.Cases, ec)
	}
	out.Summary.Fixed, out.Summary.Agent, out.Summary.Trials = rep.Summary.Fixed, rep.Summary.Agent, len(rep.Trials)
	out.Trials = rep.Trials
	out.Experiment = e.experimentOf(l, rep)
	return out
}

// evalFront is a front end's eval request as JSON: the corpus, the policy
// (scripted, the default, or replay), the recording's text a replay
// answers from, the configuration and the question set's text.
type evalFront struct {
	Corpus    string     `json:"corpus"`
	Policy    string     `json:"policy"`
	Recording *string    `json:"recording"`
	Config    *ConfigRef `json:"config"`
	Cases     *string    `json:"cases"`
}

// ParseEvalRequest reads a front end's eval request, JSON {corpus, policy,
// recording?, config?, cases?}, strictly (unknown keys refused), into the
// request `ragagent eval` makes from its flags: the page and the node
// module grade what the command line grades.
func ParseEvalRequest(text string) (EvalRequest, error) {
	var f evalFront
	if err := jsonfile.Decode([]byte(text), &f); err != nil {
		if _, ok := reason.Of(err); ok {
			return EvalRequest{}, err
		}
		return EvalRequest{}, fmt.Errorf("eval: the request is not {corpus, policy, recording, config, cases}: %v", err)
	}
	req := EvalRequest{Corpus: f.Corpus, Policy: PolicyName(cmp.Or(f.Policy, string(Scripted)))}
	if f.Config != nil {
		req.Config = f.Config.Name
		if f.Config.Spec != nil {
			req.Config = string(f.Config.Spec)
		}
	}
	if f.Cases != nil {
		req.Cases = []byte(*f.Cases)
	}
	switch req.Policy {
	case Scripted:
	case Replay:
		if f.Recording == nil {
			return req, errors.New("eval: policy replay needs the recording's text")
		}
		file, err := ParseRecording([]byte(*f.Recording))
		if err != nil {
			return req, err
		}
		req.File = file
	default:
		return req, reason.New(InvalidPolicy, "eval: policy %q is not scripted or replay", f.Policy)
	}
	return req, nil
}
