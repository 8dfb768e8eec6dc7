package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/core/retrieval"
)

// ListwiseTrialID names the one trial of an experiment's listwise
// recording: its exchanges are the requests in configuration order, then
// case order.
const ListwiseTrialID = "retrieval-listwise"

// ListwiseRun is how an experiment's listwise stages call Gemini: live
// (Transport), each request's estimate reserved in the ledger before it is
// sent and every attempt recorded, or replayed from such a recording
// (Replay), each request served only if it is the one recorded.
type ListwiseRun struct {
	Transport gemini.Transport
	Endpoint  string // "" for the real API, or a loopback test double
	Ledger    budget.Store
	// Save gets the recording after every attempt (nil keeps it in
	// memory; ListwiseOutcome.Recording has it at the end).
	Save   func([]byte) error
	Replay *recording.File
	// OnCall, if set, sees each request end: done of total.
	OnCall func(done, total int)
	// OnPlan, if set, sees the plan before anything is sent; an error
	// stops the experiment there.
	OnPlan func(*ListwisePlan) error
}

// ListwisePlan is what an experiment's listwise stages will send, shown
// before anything is: each request (case, body sha256 and size) with the
// estimate reserved for it, their total, and the ledger as it stands.
type ListwisePlan struct {
	Model    string           `json:"model"`
	Endpoint string           `json:"endpoint"`
	Calls    []rerank.Call    `json:"calls"`
	TotalUSD float64          `json:"total_estimated_usd"`
	Ledger   budget.Statement `json:"ledger"`
	Replay   bool             `json:"replay"`
}

// ListwiseOutcome is what the listwise stages did: requests made, the
// cases whose reply was refused (ranked in first-stage order instead),
// the ledger after, and the recording.
type ListwiseOutcome struct {
	Requests  int               `json:"requests"`
	Refused   []ListwiseRefusal `json:"refused"`
	Ledger    *budget.Statement `json:"ledger,omitempty"`
	Recording *recording.File   `json:"-"`
}

// ListwiseRefusal is one case whose listwise reply was refused.
type ListwiseRefusal struct {
	Config string      `json:"config"`
	CaseID string      `json:"case_id"`
	Code   reason.Code `json:"code"`
	Detail string      `json:"detail"`
}

// planLister records the prompts a listwise stage would send, and for
// which case (at, the case being ranked), answering each in first-stage
// order: the plan's pass.
type planLister struct {
	at      *int
	prompts []model.Prompt
	cases   []int
}

func (p *planLister) Order(_ context.Context, query string, cands []retrieval.Candidate) ([]int, error) {
	p.prompts = append(p.prompts, listwisePrompt(query, cands))
	p.cases = append(p.cases, *p.at)
	return identity(len(cands)), nil
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// listwisePrompt is the reranking lab's listwise request (rerank.Prompt)
// over a stage's candidates.
func listwisePrompt(query string, cands []retrieval.Candidate) model.Prompt {
	rc := make([]rerank.Candidate, len(cands))
	for i, c := range cands {
		rc[i] = rerank.Candidate{ChunkID: c.ID, Text: c.Text}
	}
	return rerank.Prompt(query, rc)
}

// modelLister asks a model (live or replayed) for each order. A reply that
// is not a permutation of the candidates, or a request refused for this
// case alone, leaves the case in first-stage order and is kept in
// outcome; a replay that does not match, a cancelled run or a ledger that
// cannot be saved stops the experiment.
type modelLister struct {
	model   model.Model
	replay  bool
	config  string
	cases   []*evaluate.Case
	at      *int // the case being ranked
	total   int
	done    *int
	outcome *ListwiseOutcome
	onCall  func(done, total int)
}

func (m *modelLister) Order(ctx context.Context, query string, cands []retrieval.Candidate) ([]int, error) {
	caseID := m.cases[*m.at].ID
	reply, err := m.model.Decide(ctx, listwisePrompt(query, cands), gemini.MaxCallTimeout)
	*m.done++
	if m.onCall != nil {
		m.onCall(*m.done, m.total)
	}
	var order []int
	if err == nil {
		order, err = permutation(reply.Value, cands)
	}
	if err == nil {
		return order, nil
	}
	code, refused := reason.Of(err)
	if !refused || ctx.Err() != nil || (m.replay && (code == reason.ReplayRequestMismatch || code == reason.ReplayExhausted)) {
		return nil, err // experiment.Rank names the case
	}
	m.outcome.Refused = append(m.outcome.Refused, ListwiseRefusal{Config: m.config, CaseID: caseID, Code: code, Detail: reason.DetailOf(err)})
	return identity(len(cands)), nil
}

// permutation is the reranking lab's check of a listwise reply (an object
// with exactly the key ranked_ids, a list naming every candidate once:
// invalid_ranking_schema, ranking_not_candidate_permutation), as indexes.
func permutation(v any, cands []retrieval.Candidate) ([]int, error) {
	o, ok := v.(*pyjson.Object)
	var raw any
	has := false
	if ok {
		raw, has = o.Get("ranked_ids")
	}
	if !ok || !has || o.Len() != 1 {
		return nil, reason.New(reason.InvalidRankingSchema, "the reply must be an object with exactly the key ranked_ids")
	}
	list, ok := raw.([]any)
	if !ok || len(list) != len(cands) {
		return nil, reason.New(reason.RankingNotCandidatePermutation, "ranked_ids must list each of the %d candidates once", len(cands))
	}
	index := make(map[string]int, len(cands))
	for i, c := range cands {
		index[c.ID] = i
	}
	out := make([]int, len(list))
	seen := make([]bool, len(cands))
	for r, x := range list {
		id, _ := x.(string)
		i, known := index[id]
		if !known || seen[i] {
			return nil, reason.New(reason.RankingNotCandidatePermutation, "ranked_ids[%d] is %s, which is not a candidate not yet named", r, pyjson.Dumps(x, pyjson.Options{}))
		}
		seen[i] = true
		out[r] = i
	}
	return out, nil
}

// listwise is an experiment's listwise stages set up: the model their
// searchers ask, the outcome, and what to do when the experiment ends.
type listwise struct {
	model   model.Model
	replay  bool
	total   int
	done    int
	outcome *ListwiseOutcome
	finish  func() error
}

// planListwise ranks each listwise configuration's first stage over the
// cases to know every request before any is sent, shows the plan, and
// refuses the run whole when it may not be sent; then it opens the live
// model (each request reserved, every attempt recorded) or the replay.
func (e *Engine) planListwise(ctx context.Context, run *ListwiseRun, base *retrieval.Base, index func(func() error) error, heads []corpus.Passage, specs []retrieval.Spec, cases []*evaluate.Case, ideals []int, k int) (*listwise, error) {
	rate := e.listwiseRate()
	plan := &ListwisePlan{Model: ListwiseModel, Replay: run.Replay != nil}
	for _, spec := range specs {
		if spec.SecondStage.Method != retrieval.StageListwise {
			continue
		}
		at := 0
		pl := &planLister{at: &at}
		var s *retrieval.Searcher
		err := index(func() (err error) {
			s, err = base.OpenModels(spec, retrieval.Models{Ctx: ctx, Lister: pl})
			return err
		})
		if err != nil {
			return nil, err
		}
		if _, err := experiment.Rank(cases, heads, ideals, indexSearcher{s, index}, k, func() error { at++; return nil }); err != nil {
			return nil, fmt.Errorf("configuration %s: %w", spec.Name, err)
		}
		for i, p := range pl.prompts {
			c := reranklab.RequestCall(spec.Name+": "+cases[pl.cases[i]].ID, p, rate)
			plan.Calls = append(plan.Calls, c)
			plan.TotalUSD += c.EstimatedUSD
		}
	}
	lw := &listwise{replay: run.Replay != nil, total: len(plan.Calls), outcome: &ListwiseOutcome{Refused: []ListwiseRefusal{}}, finish: func() error { return nil }}
	if run.Replay != nil {
		if run.OnPlan != nil {
			if err := run.OnPlan(plan); err != nil {
				return nil, err
			}
		}
		lw.model = reranklab.NewReplay(run.Replay)
		return lw, nil
	}
	if run.Transport == nil {
		return nil, errors.New("retrieval: a live listwise stage calls the network and needs a transport")
	}
	var err error
	if plan.Endpoint, err = gemini.ResolveModelEndpoint(ListwiseModel, run.Endpoint); err != nil {
		return nil, err
	}
	if run.Ledger == nil {
		return nil, errors.New("retrieval: a live listwise stage needs the spending ledger")
	}
	led, err := budget.Open(run.Ledger, e.clock)
	if err != nil {
		return nil, err
	}
	plan.Ledger = led.Statement()
	if run.OnPlan != nil {
		if err := run.OnPlan(plan); err != nil {
			return nil, err
		}
	}
	if err := reranklab.RefuseCalls(run.Transport.HasKey(), e.allowance, led, plan.Calls); err != nil {
		return nil, err
	}
	reqs := make([]budget.Request, len(plan.Calls))
	for i, c := range plan.Calls {
		reqs[i] = budget.Request{Label: "retrieval listwise: " + c.CaseID, Model: ListwiseModel,
			RequestSHA256: c.RequestSHA256, RequestBytes: c.RequestBytes, EstimatedUSD: c.EstimatedUSD}
	}
	// Reserved together, under the ledger's lock: another process may
	// have spent since the check, and the run is still refused whole.
	if _, err := led.ReserveAll(reqs); err != nil {
		return nil, reranklab.NothingSent(err)
	}
	started := e.clock()
	head := recording.Header(ListwiseModel, plan.Endpoint, reranklab.LiveConfig(), started)
	rec := recording.NewMemoryRecorder(head)
	if run.Save != nil {
		if rec, err = recording.NewRecorder(head, run.Save); err != nil {
			led.ReleaseHeld()
			return nil, err
		}
	}
	trial, err := rec.BeginLive(recording.Trial{ID: ListwiseTrialID, Split: "experiment", Repeat: 1, Mode: "listwise"}, e.clock)
	if err == nil {
		lw.model, err = reranklab.NewLiveRanker(reranklab.LiveRankerConfig{Transport: run.Transport, Allowance: e.allowance,
			Endpoint: plan.Endpoint, Record: trial.Record, Ledger: led, Rate: rate})
	}
	if err != nil {
		led.ReleaseHeld()
		return nil, err
	}
	lw.finish = func() error {
		ferr := trial.Log.Finish(e.clock().Sub(started).Seconds())
		rerr := led.ReleaseHeld()
		st := led.Statement()
		lw.outcome.Ledger, lw.outcome.Recording = &st, rec.File()
		lw.outcome.Requests = trial.Attempts()
		return errors.Join(ferr, rerr)
	}
	return lw, nil
}

// lister is the listwise stage of spec over cases (at the case being
// ranked), asking lw's model.
func (lw *listwise) lister(spec retrieval.Spec, cases []*evaluate.Case, at *int, onCall func(done, total int)) *modelLister {
	return &modelLister{model: lw.model, replay: lw.replay, config: spec.Name, cases: cases, at: at, total: lw.total, done: &lw.done, outcome: lw.outcome, onCall: onCall}
}
