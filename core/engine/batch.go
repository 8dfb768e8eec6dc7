package engine

import (
	"context"
	"errors"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// BatchRequest is a fresh comparison to plan: the authored cases (all
// when none are named), repeated, on each path, under one set of limits.
type BatchRequest struct {
	// Corpus is the pack whose cases run ("" is the seed).
	Corpus string
	// Config is the retrieval configuration the trials search under (""
	// is the pack's default); the recording names it.
	Config string
	// CaseSet is a question set's text to plan instead of the pack's own
	// cases (nil: the pack's); Cases picks among its ids.
	CaseSet  []byte
	Cases    []string
	Repeats  int
	Modes    []agent.Mode
	Limits   agent.Limits
	Endpoint string // "" for the real API, or a loopback test double
	// Transport will carry the requests and holds the key (nil: no key).
	Transport gemini.Transport
	// KeySource says where the key was found (an environment variable's
	// name), for the plan; never the key.
	KeySource string
}

// BatchPlan is everything a live batch will be allowed to do, shown before
// anything is spent.
type BatchPlan struct {
	Corpus            string       `json:"corpus"`
	SearchK           int          `json:"search_k"`
	Model             string       `json:"model"`
	Endpoint          string       `json:"endpoint"`
	Config            any          `json:"config"`
	Limits            agent.Limits `json:"limits"`
	Cases             []string     `json:"cases"`
	Repeats           int          `json:"repeats"`
	Modes             []string     `json:"modes"`
	Trials            int          `json:"trials"`
	RequestAllowance  int          `json:"request_allowance"`
	MaxRequestBytes   int          `json:"max_request_bytes"`
	MaxResponseBytes  int          `json:"max_response_bytes"`
	MaxCallSeconds    int          `json:"max_call_timeout_seconds"`
	WorstCaseRequests int          `json:"worst_case_requests"`
	KeyVariable       *string      `json:"key_variable"`
	Price             *price.Rate  `json:"price"`
	WorstCaseUSD      *float64     `json:"worst_case_estimated_usd"`
	Note              string       `json:"note"`

	engine    *Engine
	lab       *lab.Lab
	plan      *lab.Plan
	transport gemini.Transport
}

// BatchNote is what every batch plan promises.
const BatchNote = "Nothing is sent without --execute-approved. No retries; redirects refused; every attempt is recorded and saved as it happens. Costs are estimates."

// PlanBatch checks a batch request and builds its plan; an error is one
// line about what is wrong.
func (e *Engine) PlanBatch(req BatchRequest) (*BatchPlan, error) {
	l, err := e.labUnder(req.Corpus, req.Config)
	if err != nil {
		return nil, err
	}
	if req.CaseSet != nil {
		if l, err = l.WithCases(req.CaseSet); err != nil {
			return nil, err
		}
	}
	plan, err := l.Plan(req.Cases, req.Repeats, req.Modes, req.Limits)
	if err != nil {
		return nil, err
	}
	endpoint, err := gemini.ResolveEndpoint(req.Endpoint)
	if err != nil {
		return nil, err
	}
	a := e.allowance.Limit()
	bp := &BatchPlan{Corpus: l.Pack.Manifest.ID, SearchK: l.SearchK, Model: gemini.Model, Endpoint: endpoint, Config: gemini.Config(), Limits: req.Limits,
		Repeats: req.Repeats, Trials: len(plan.Trials()), RequestAllowance: a, MaxRequestBytes: gemini.MaxRequestBytes,
		MaxResponseBytes: gemini.MaxResponseBytes, MaxCallSeconds: caps(0).CallTimeoutSeconds,
		WorstCaseRequests: plan.WorstCaseRequests(), Note: BatchNote, engine: e, lab: l, plan: plan, transport: req.Transport}
	for _, c := range plan.Cases {
		bp.Cases = append(bp.Cases, c.ID)
	}
	for _, m := range plan.Paths() {
		bp.Modes = append(bp.Modes, string(m))
	}
	if rate, ok := e.Rate(gemini.Model); ok {
		bp.Price = &rate
		usd := WorstCaseUSD(rate, min(bp.WorstCaseRequests, a))
		bp.WorstCaseUSD = &usd
	}
	if bp.HasKey() {
		source := req.KeySource
		bp.KeyVariable = &source
	}
	return bp, nil
}

// HasKey reports whether the plan's transport holds a key.
func (p *BatchPlan) HasKey() bool { return p.transport != nil && p.transport.HasKey() }

// Refusal is why the plan may not be sent (nil when it may): no key, or
// no request left in the allowance.
func (p *BatchPlan) Refusal() error { return p.engine.liveRefusal(p.transport) }

// BatchRun is how a planned batch runs.
type BatchRun struct {
	// Save gets the whole recording after every change (required: a paid
	// batch is never kept only in memory).
	Save func([]byte) error
	// OnTrial, if set, sees each trial's report as it ends.
	OnTrial func(report.Trial)
	// Environment describes where it ran, for the report.
	Environment map[string]string
	// Spend, if set, is the ledger each request's estimate is reserved in
	// before it is sent (the page's live eval; the command line has none).
	Spend *Spend
}

// RunBatch runs a plan with live Gemini, saving the recording after every
// attempt, and returns the report shaped like the reference lab's
// published record. It stops starting trials once ctx is done; the report
// then holds what ran. The error is a fault outside every trial's outcome
// (a recording that cannot be saved), returned with the report so far.
func (e *Engine) RunBatch(ctx context.Context, p *BatchPlan, run BatchRun) (*report.Batch, *report.Set, error) {
	if err := p.Refusal(); err != nil {
		return nil, nil, err
	}
	if run.Save == nil {
		return nil, nil, errors.New("batch: a live batch needs somewhere to save its recording")
	}
	began := e.clock()
	head := e.header(gemini.Model, p.Endpoint, gemini.Config())
	rec, err := recording.NewRecorder(head, run.Save)
	if err != nil {
		return nil, nil, err
	}
	used := e.allowance.Used()
	start := func(pt lab.PlannedTrial) (model.Model, func(float64) error, error) {
		client, live, err := e.startLive(rec, pt.Record(), LiveModel{Model: gemini.Model, Transport: p.transport, Endpoint: p.Endpoint})
		if err != nil {
			return nil, nil, err
		}
		if run.Spend != nil {
			return run.Spend.model(client, pt.ID), live.Log.Finish, nil
		}
		return client, live.Log.Finish, nil
	}
	rep, runErr := p.lab.RunBatch(ctx, p.plan, start, e.clock, nil, run.OnTrial)
	br := &report.Batch{ExecutionMode: "live-Gemini-API", Model: gemini.Model, Config: gemini.Config(),
		Endpoint: p.Endpoint, BatchRequestCap: p.RequestAllowance, Limits: p.Limits,
		CasesSHA256: p.lab.CasesSHA256, RecordedAt: head.RecordedAt,
		ActualAPIRequests: e.allowance.Used() - used, ElapsedSeconds: e.clock().Sub(began).Seconds(), Environment: run.Environment}
	br.Fill(rep, p.Price)
	return br, rep, runErr
}

// ScriptedReport runs the offline scripted policy once per case of a
// recording (those the lab knows, in the lab's order) on both paths under
// the default limits, to show beside the recorded paths. Once is enough:
// the policy is deterministic.
func (e *Engine) ScriptedReport(ctx context.Context, f *recording.File) (*report.Set, error) {
	inFile := map[string]bool{}
	for _, t := range f.Trials {
		inFile[t.CaseID] = true
	}
	var ids []string
	for _, c := range e.lab.Cases.Cases {
		if inFile[c.ID] {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return &report.Set{Trials: []report.Trial{}}, nil
	}
	plan, err := e.lab.Plan(ids, 1, []agent.Mode{agent.Fixed, agent.Agent}, agent.DefaultLimits())
	if err != nil {
		return nil, err
	}
	start := func(lab.PlannedTrial) (model.Model, func(float64) error, error) {
		return policy.Scripted{TermKey: e.lab.Retrieval.TermKey}, nil, nil
	}
	return e.lab.RunBatch(ctx, plan, start, nil, nil, nil)
}
