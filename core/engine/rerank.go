package engine

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
)

// The engine's reranking methods are thin: the lab's runs, live listwise
// reranks through the ledger and fresh cross-encoder scorings are
// core/reranklab's (a Bench the engine holds); the records they hand out
// are core/rerank's vocabulary. The engine adds what every front end
// shares: its price table, request allowance, caps and refusals.

// RerankRequest is a replay of the reranking lab's three runs. A nil file
// replays the bundled recording.
type RerankRequest struct {
	Gemini       *recording.File
	CrossEncoder *recording.File
}

// RerankSources says which recordings a rerank replayed: "bundled" or
// "loaded".
type RerankSources struct {
	Gemini       string `json:"gemini"`
	CrossEncoder string `json:"cross_encoder"`
}

// RerankResult is the reranking lab's three runs, in the published shapes,
// with the twelve-case summary (in the cross-encoder record).
type RerankResult struct {
	Coverage     *rerank.CoverageRecord     `json:"coverage"`
	Gemini       *rerank.GeminiRecord       `json:"gemini"`
	CrossEncoder *rerank.CrossEncoderRecord `json:"cross_encoder"`
	Sources      RerankSources              `json:"sources"`
	// GeminiUnused counts recorded exchanges the replay did not use.
	GeminiUnused int        `json:"gemini_unused"`
	CasesSHA256  string     `json:"cases_sha256"`
	ElapsedMS    float64    `json:"elapsed_ms"`
	Rate         price.Rate `json:"rate"`
}

// Rerank replays the three runs: the coverage lab, the Gemini listwise run
// from its recording (exact-request match) and the cross-encoder run from
// its logits.
func (e *Engine) Rerank(ctx context.Context, req RerankRequest) (*RerankResult, error) {
	started := e.clock()
	out := &RerankResult{Sources: RerankSources{Gemini: "bundled", CrossEncoder: "bundled"}, Rate: e.listwiseRate()}
	if req.Gemini != nil {
		out.Sources.Gemini = "loaded"
	}
	if req.CrossEncoder != nil {
		out.Sources.CrossEncoder = "loaded"
	}
	r, err := e.rerank.Replay(ctx, req.Gemini, req.CrossEncoder, out.Rate)
	if err != nil {
		return nil, err
	}
	out.Coverage, out.Gemini, out.CrossEncoder = r.Coverage, r.Gemini, r.CrossEncoder
	out.GeminiUnused, out.CasesSHA256 = r.GeminiUnused, r.CasesSHA256
	out.ElapsedMS = e.since(started)
	return out, nil
}

// listwiseRate is the listwise model's price in the engine's table.
func (e *Engine) listwiseRate() price.Rate {
	rate, _ := e.Rate(reranklab.ListwiseModel)
	return rate
}

// LiveRerankRequest is a live listwise rerank of the development cases.
type LiveRerankRequest struct {
	// Rate overrides the listwise model's price (nil: the table's).
	Rate *price.Rate
	// Endpoint is "" for the real API or a loopback test double.
	Endpoint string
	// Transport carries the requests and holds the key.
	Transport gemini.Transport
	// HasKey says whether there is a key, for a plan made before any
	// transport (nil Transport); a Transport's own HasKey wins.
	HasKey bool
	// Ledger is where the spending ledger lives.
	Ledger budget.Store
	// Save gets the live recording after every attempt; nil keeps it in
	// memory (RerankRecording).
	Save func([]byte) error
	// OnCase, if set, is told as each case's request ends.
	OnCase func(done, total int)
}

// live is the request as the bench takes it.
func (e *Engine) live(q LiveRerankRequest) reranklab.Live {
	l := reranklab.Live{Rate: e.listwiseRate(), Endpoint: q.Endpoint, HasKey: q.HasKey, Ledger: q.Ledger}
	if q.Rate != nil {
		l.Rate = *q.Rate
	}
	if q.Transport != nil {
		l.HasKey = q.Transport.HasKey()
	}
	return l
}

// RerankPlan is what a live rerank would do, shown before anything is
// sent: the model and endpoint, the price table with the rate in use, each
// request's size and reservation and their total, the ledger, the request
// allowance, the caps, and the refusal (if any) that would stop it.
type RerankPlan struct {
	Model           string           `json:"model"`
	Endpoint        string           `json:"endpoint"`
	Rate            price.Rate       `json:"rate"`
	Prices          []price.Rate     `json:"prices"`
	Calls           []rerank.Call    `json:"calls"`
	TotalUSD        float64          `json:"total_usd"`
	MaxOutputTokens int              `json:"max_output_tokens"`
	Ledger          budget.Statement `json:"ledger"`
	Allowance       *AllowanceState  `json:"allowance"`
	Caps            Caps             `json:"caps"`
	Refusal         *Refusal         `json:"refusal"`
}

// Refusal is why something may not start: its reason code (empty when
// the refusal has none) and what to tell people.
type Refusal struct {
	Code    reason.Code `json:"code"`
	Message string      `json:"message"`
}

// RefusalOf describes an error as a refusal.
func RefusalOf(err error) *Refusal {
	if err == nil {
		return nil
	}
	if code, ok := reason.Of(err); ok {
		return &Refusal{Code: code, Message: reason.DetailOf(err)}
	}
	return &Refusal{Message: err.Error()}
}

// PlanRerank says what a live rerank would do and whether it may.
func (e *Engine) PlanRerank(req LiveRerankRequest) (*RerankPlan, error) {
	p, err := e.rerank.Prepare(e.live(req))
	if err != nil {
		return nil, err
	}
	return &RerankPlan{Model: reranklab.ListwiseModel, Endpoint: p.Endpoint, Rate: p.Rate,
		Prices: price.NewTable(append(e.prices.Rates(), p.Rate)...).Rates(), Calls: p.Calls, TotalUSD: p.TotalUSD(),
		MaxOutputTokens: gemini.MaxOutputTokens(), Ledger: p.Ledger.Statement(), Allowance: allowanceState(e.allowance),
		Caps: caps(0), Refusal: RefusalOf(e.rerank.Refusal(p))}, nil
}

// LiveRerankResult is a live listwise rerank: the Gemini record, the
// ledger after it, the endpoint and rate used and how many attempts were
// recorded.
type LiveRerankResult struct {
	Gemini    *rerank.GeminiRecord `json:"gemini"`
	Ledger    budget.Statement     `json:"ledger"`
	Endpoint  string               `json:"endpoint"`
	Rate      price.Rate           `json:"rate"`
	Exchanges int                  `json:"exchanges"`
	ElapsedMS float64              `json:"elapsed_ms"`
}

// ErrRerankRunning refuses a second live rerank or a budget change while
// one runs: an engine has one ledger writer at a time.
var ErrRerankRunning = reranklab.ErrRunning

// RerankLive reranks the development cases with live listwise calls,
// reserving each request's estimate in the ledger before it is sent and
// recording every attempt. A rerank its plan would refuse is refused
// whole, with nothing reserved or sent.
func (e *Engine) RerankLive(ctx context.Context, req LiveRerankRequest) (*LiveRerankResult, error) {
	l := e.live(req)
	ran, err := e.rerank.Run(ctx, l, reranklab.LiveRun{Transport: req.Transport, Save: req.Save, OnCase: req.OnCase})
	if err != nil {
		return nil, err
	}
	endpoint, _ := gemini.ResolveModelEndpoint(reranklab.ListwiseModel, req.Endpoint)
	return &LiveRerankResult{Gemini: ran.Gemini, Ledger: ran.Ledger, Endpoint: endpoint, Rate: l.Rate,
		Exchanges: ran.Exchanges, ElapsedMS: ran.ElapsedMS}, nil
}

// RerankRecording is the latest live rerank's recording (nil before any):
// every attempt, never the key; Rerank replays it as the Gemini file.
func (e *Engine) RerankRecording() *recording.File { return e.rerank.Recording() }

// Ledger reads the ledger in store.
func (e *Engine) Ledger(store budget.Store) (budget.Statement, error) { return e.rerank.Ledger(store) }

// SetBudget sets the ledger's budget in US dollars (refused while a live
// rerank runs).
func (e *Engine) SetBudget(store budget.Store, usd float64) (budget.Statement, error) {
	return e.rerank.SetBudget(store, usd)
}

// ParseLiveRerankSpec reads a front end's live rerank options, JSON
// {price?: {input_usd_per_mtok, output_usd_per_mtok}, endpoint?, hasKey}.
// A price equal to the shipped one keeps the shipped rate (and its
// source); another is the listwise model's rate with the given source.
func (e *Engine) ParseLiveRerankSpec(text, source string) (LiveRerankRequest, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return LiveRerankRequest{}, fmt.Errorf("rerank: the options are not JSON: %v", err)
	}
	o, _ := v.(*pyjson.Object)
	var req LiveRerankRequest
	if p := get(o, "price"); p != nil {
		given, err := rateOf(p, source)
		if err != nil {
			return LiveRerankRequest{}, err
		}
		if shipped := e.listwiseRate(); given.InputPerMTok != shipped.InputPerMTok || given.OutputPerMTok != shipped.OutputPerMTok {
			req.Rate = &given
		}
	}
	req.HasKey, _ = get(o, "hasKey").(bool)
	req.Endpoint, _ = get(o, "endpoint").(string)
	if _, err := gemini.ResolveModelEndpoint(reranklab.ListwiseModel, req.Endpoint); err != nil {
		return LiveRerankRequest{}, err
	}
	return req, nil
}

// rateOf reads a price for the listwise model: two finite, non-negative
// amounts of US dollars per million tokens.
func rateOf(v any, source string) (price.Rate, error) {
	o, _ := v.(*pyjson.Object)
	in, ok1 := get(o, "input_usd_per_mtok").(pyjson.Number)
	out, ok2 := get(o, "output_usd_per_mtok").(pyjson.Number)
	valid := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	if !ok1 || !ok2 || !valid(in.Float64()) || !valid(out.Float64()) {
		return price.Rate{}, errors.New("rerank: price needs input_usd_per_mtok and output_usd_per_mtok, each a finite amount of at least 0")
	}
	r := price.Rate{Model: reranklab.ListwiseModel, InputPerMTok: in.Float64(), OutputPerMTok: out.Float64(), Source: source}
	if err := CheckRate(r); err != nil {
		return price.Rate{}, fmt.Errorf("rerank: %w", err)
	}
	return r, nil
}
