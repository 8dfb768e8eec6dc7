package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
)

// LiveEvalRequest is a Gemini eval over a question set made by a front end
// that holds a spending ledger (the page): `ragagent eval --policy gemini`
// (one trial per case and path, capped by the engine's request allowance)
// with every request's estimate reserved in the ledger before it is sent.
type LiveEvalRequest struct {
	Corpus string
	Config string
	// Cases is a question set's text (nil: the pack's authored cases).
	Cases []byte
	// Limits are the runs' limits (the zero value: the defaults).
	Limits   agent.Limits
	Endpoint string // "" for the real API, or a loopback test double
	// Transport carries the requests and holds the key; for a plan it
	// need only say whether there is a key.
	Transport gemini.Transport
	// Ledger is where the spending ledger lives (required).
	Ledger budget.Store
	// Save gets the recording after every attempt (required for a run).
	Save func([]byte) error
	// OnTrial, if set, sees each trial as it ends: done of total.
	OnTrial func(done, total int, id string)
}

// LiveEvalNote is what a live eval's plan promises.
const LiveEvalNote = "Nothing is sent until the plan is approved, and a plan whose worst case does not fit the budget is refused whole. No retries; redirects refused; every request's estimate is reserved in the ledger before it is sent and every attempt is recorded as it happens. Costs are estimates."

// LiveEvalPlan is a live eval's batch plan (the command line's `eval
// --policy gemini` plan) with the ledger as it stands, the allowance, and
// the refusal, if any, that stops it: shown before anything is spent.
type LiveEvalPlan struct {
	*BatchPlan
	Ledger    budget.Statement `json:"ledger"`
	Allowance *AllowanceState  `json:"allowance"`
	Refusal   *Refusal         `json:"refusal"`

	ledger *budget.Ledger
	err    error
}

// PlanLiveEval checks a live eval and builds its plan; an error is one
// line about a request that cannot be planned at all, and a plan that may
// not be sent says why in Refusal.
func (e *Engine) PlanLiveEval(req LiveEvalRequest) (*LiveEvalPlan, error) {
	limits := req.Limits
	if limits == (agent.Limits{}) {
		limits = agent.DefaultLimits()
	}
	if req.Ledger == nil {
		return nil, errors.New("eval: a live eval needs the spending ledger")
	}
	bp, err := e.PlanBatch(BatchRequest{Corpus: req.Corpus, Config: req.Config, CaseSet: req.Cases, Repeats: 1,
		Modes: []agent.Mode{agent.Fixed, agent.Agent}, Limits: limits, Endpoint: req.Endpoint, Transport: req.Transport, KeySource: "given in the page"})
	if err != nil {
		return nil, err
	}
	bp.Note = LiveEvalNote
	led, err := budget.Open(req.Ledger, e.clock)
	if err != nil {
		return nil, err
	}
	p := &LiveEvalPlan{BatchPlan: bp, Ledger: led.Statement(), Allowance: allowanceState(e.allowance), ledger: led}
	p.err = e.evalRefusal(p)
	p.Refusal = RefusalOf(p.err)
	return p, nil
}

// evalRefusal is why a live eval may not start, in this order: no key or
// no request left (the batch's refusal), no price to bound it by, no
// budget, or a worst case (every planned request a full body and a full
// reply, at most the allowance's requests) over what the budget has left
// (budget_exceeded). An eval is refused whole: it never starts what its
// budget might not let it finish.
func (e *Engine) evalRefusal(p *LiveEvalPlan) error {
	if err := p.BatchPlan.Refusal(); err != nil {
		return err
	}
	if p.Price == nil || p.WorstCaseUSD == nil {
		return fmt.Errorf("eval: the price table has no rate for %s, so its worst case cannot be bounded; nothing was sent", p.Model)
	}
	if _, ok := p.ledger.Budget(); !ok {
		return errors.New("set a budget first: no paid request is sent without one")
	}
	n := min(p.WorstCaseRequests, p.RequestAllowance)
	if err := p.ledger.Check(fmt.Sprintf("the eval's worst case (%d requests)", n), *p.WorstCaseUSD); err != nil {
		if code, ok := reason.Of(err); ok {
			return reason.New(code, "%s; nothing was sent", reason.DetailOf(err))
		}
		return err
	}
	return nil
}

// LiveEvalResult is a live eval done, or stopped: the eval's result (the
// shape `ragagent eval --json` prints, over the trials that ran), the
// ledger after it, how many attempts were sent, and whether it was
// cancelled before every planned trial ran.
type LiveEvalResult struct {
	*EvalResult
	Ledger    budget.Statement `json:"ledger"`
	Requests  int              `json:"actual_api_requests"`
	Planned   int              `json:"planned_trials"`
	Cancelled bool             `json:"cancelled"`
	ElapsedMS float64          `json:"elapsed_ms"`
}

// ErrLedgerBusy refuses a live eval while another ledger writer (a live
// rerank, a budget change, another eval) holds the ledger.
var ErrLedgerBusy = errors.New("eval: a live rerank, a budget change or another live eval is using the ledger; wait until it has finished")

// EvalLive plans a live eval, refuses it whole when the plan may not be
// sent, then runs it case by case, reserving each request's estimate in
// the ledger before it is sent, saving the recording after every attempt
// and reporting each trial. Cancelling stops it before the next trial (the
// trial in flight ends cancelled); the result then covers what ran.
func (e *Engine) EvalLive(ctx context.Context, req LiveEvalRequest) (*LiveEvalResult, error) {
	release, ok := e.rerank.HoldLedger()
	if !ok {
		return nil, ErrLedgerBusy
	}
	defer release()
	if req.Transport == nil {
		return nil, errors.New("eval: a live eval calls the network and needs a transport")
	}
	p, err := e.PlanLiveEval(req)
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	started := e.clock()
	done := 0
	br, rep, err := e.RunBatch(ctx, p.BatchPlan, BatchRun{Save: req.Save,
		Spend: &Spend{Ledger: p.ledger, Rate: *p.Price, Label: "eval"},
		OnTrial: func(tr report.Trial) {
			done++
			if req.OnTrial != nil {
				req.OnTrial(done, p.Trials, tr.ID)
			}
		}})
	if err != nil {
		return nil, err
	}
	return &LiveEvalResult{EvalResult: p.Eval(rep), Ledger: p.ledger.Statement(), Requests: br.ActualAPIRequests,
		Planned: p.Trials, Cancelled: ctx.Err() != nil, ElapsedMS: e.since(started)}, nil
}

// Spend is a spending ledger a live batch reserves in: before each request
// is sent, its estimate (its exact body, a full reply) at Rate, labelled
// with Label and the trial.
type Spend struct {
	Ledger *budget.Ledger
	Rate   price.Rate
	Label  string
}

// model wraps a trial's live client so that every request it sends is
// reserved first and settled after.
func (s *Spend) model(c *gemini.Client, trial string) model.Model {
	m := &spending{client: c, spend: s, label: s.Label + ": " + trial}
	c.BeforeSend = m.reserve
	return m
}

// spending is a live client behind the ledger: a request it refuses
// before sending reserves nothing; any other has its estimate reserved,
// and saved, before it is sent, and the reservation settled with how it
// ended.
type spending struct {
	client  *gemini.Client
	spend   *Spend
	label   string
	pending int
}

func (m *spending) Decide(ctx context.Context, p model.Prompt, timeout time.Duration) (model.Reply, error) {
	m.pending = 0
	reply, failure := m.client.Decide(ctx, p, timeout)
	if m.pending == 0 {
		return reply, failure
	}
	outcome := budget.Completed
	if failure != nil {
		outcome = "failed: " + failure.Error()
		if code, ok := reason.Of(failure); ok {
			outcome = string(code)
		}
	}
	if err := m.spend.Ledger.Settle(m.pending, outcome); err != nil {
		return model.Reply{}, errors.Join(failure, fmt.Errorf("the request was sent: %w", err))
	}
	return reply, failure
}

func (m *spending) reserve(body []byte) error {
	sum := sha256.Sum256(body)
	seq, err := m.spend.Ledger.Reserve(budget.Request{Label: m.label, Model: gemini.Model,
		RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(m.spend.Rate, len(body), gemini.MaxOutputTokens())})
	if err != nil {
		return err
	}
	m.pending = seq
	return nil
}

// evalLiveFront is a front end's live eval request as JSON.
type evalLiveFront struct {
	Corpus   string     `json:"corpus"`
	Config   *ConfigRef `json:"config"`
	Cases    *string    `json:"cases"`
	Endpoint string     `json:"endpoint"`
	HasKey   bool       `json:"hasKey"`
}

// ParseLiveEvalRequest reads a front end's live eval request, JSON
// {corpus, config?, cases?, endpoint?, hasKey}, strictly (unknown keys
// refused). The front end adds the transport, the ledger and the save.
func ParseLiveEvalRequest(text string) (LiveEvalRequest, bool, error) {
	var f evalLiveFront
	if err := jsonfile.Decode([]byte(text), &f); err != nil {
		return LiveEvalRequest{}, false, fmt.Errorf("eval: the request is not {corpus, config, cases, endpoint, hasKey}: %v", err)
	}
	req := LiveEvalRequest{Corpus: f.Corpus, Endpoint: f.Endpoint}
	if f.Config != nil {
		req.Config = f.Config.Name
		if f.Config.Spec != nil {
			req.Config = string(f.Config.Spec)
		}
	}
	if f.Cases != nil {
		req.Cases = []byte(*f.Cases)
	}
	if _, err := gemini.ResolveEndpoint(req.Endpoint); err != nil {
		return req, false, err
	}
	return req, f.HasKey, nil
}
