package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// rerankLab is the reranking lab behind the engine: the replay suite
// opened on first use (so a front end's start-up does not pay for a second
// index), the bundled recordings parsed once, and the latest live rerank's
// recording.
type rerankLab struct {
	engine *Engine

	mu           sync.Mutex // one user of the replay suite at a time: it is not safe for concurrent use
	suite        *reranklab.Suite
	gemini       *recording.File
	crossEncoder *recording.File

	// ledger is held by a live rerank from its check to its last save, and
	// by a budget change, so an engine has one ledger writer at a time.
	ledger sync.Mutex

	recMu sync.Mutex
	rec   *recording.Recorder
}

// OpenRerankLab opens the reranking lab over the bundled fixtures.
func OpenRerankLab() (*reranklab.Suite, error) {
	return reranklab.Open(reranklab.Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded})
}

// open opens the replay suite and parses the bundled recordings, once.
// The caller holds r.mu.
func (r *rerankLab) open() error {
	if r.suite != nil {
		return nil
	}
	g, err := recording.Parse(recordings.RerankGemini)
	if err != nil {
		return fmt.Errorf("the bundled Gemini listwise recording: %w", err)
	}
	c, err := recording.Parse(recordings.RerankCrossEncoder)
	if err != nil {
		return fmt.Errorf("the bundled cross-encoder recording: %w", err)
	}
	s, err := OpenRerankLab()
	if err != nil {
		return err
	}
	r.suite, r.gemini, r.crossEncoder = s, g, c
	return nil
}

func (r *rerankLab) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.suite == nil {
		return nil
	}
	err := r.suite.Close()
	r.suite = nil
	return err
}

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
	Coverage     *reranklab.CoverageRecord     `json:"coverage"`
	Gemini       *reranklab.GeminiRecord       `json:"gemini"`
	CrossEncoder *reranklab.CrossEncoderRecord `json:"cross_encoder"`
	Sources      RerankSources                 `json:"sources"`
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
	r := &e.rerank
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	started := e.clock()
	out := &RerankResult{Sources: RerankSources{Gemini: "bundled", CrossEncoder: "bundled"},
		CasesSHA256: r.suite.CasesSHA256(), Rate: e.listwiseRate()}
	gfile, cfile := r.gemini, r.crossEncoder
	if req.Gemini != nil {
		gfile, out.Sources.Gemini = req.Gemini, "loaded"
	}
	if req.CrossEncoder != nil {
		cfile, out.Sources.CrossEncoder = req.CrossEncoder, "loaded"
	}
	var err error
	if out.Coverage, err = r.suite.Coverage(ctx); err != nil {
		return nil, err
	}
	replay := reranklab.NewReplay(gfile)
	if out.Gemini, err = r.suite.Gemini(ctx, replay, reranklab.ListwiseReplayMode, out.Rate); err != nil {
		return nil, err
	}
	if out.CrossEncoder, err = r.suite.CrossEncoder(ctx, reranklab.NewRecordedEncoder(cfile)); err != nil {
		return nil, fmt.Errorf("cross-encoder: %w", err)
	}
	out.GeminiUnused = replay.Unused()
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

func (q LiveRerankRequest) hasKey() bool {
	if q.Transport != nil {
		return q.Transport.HasKey()
	}
	return q.HasKey
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
	Calls           []reranklab.Call `json:"calls"`
	TotalUSD        float64          `json:"total_usd"`
	MaxOutputTokens int              `json:"max_output_tokens"`
	Ledger          LedgerState      `json:"ledger"`
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

// liveRerank is what a plan and a live rerank both start from.
type liveRerank struct {
	req      LiveRerankRequest
	rate     price.Rate
	endpoint string
	ledger   *budget.Ledger
	calls    []reranklab.Call
}

func (e *Engine) prepareRerank(req LiveRerankRequest) (*liveRerank, error) {
	p := &liveRerank{req: req, rate: e.listwiseRate()}
	if req.Rate != nil {
		p.rate = *req.Rate
	}
	var err error
	if p.endpoint, err = gemini.ResolveModelEndpoint(reranklab.ListwiseModel, req.Endpoint); err != nil {
		return nil, err
	}
	if req.Ledger == nil {
		return nil, errors.New("rerank: a live rerank needs a ledger")
	}
	if p.ledger, err = budget.Open(req.Ledger, e.clock); err != nil {
		return nil, err
	}
	r := &e.rerank
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	p.calls, err = r.suite.ListwiseCalls(context.Background(), p.rate)
	return p, err
}

// refusal is why a live rerank may not start, checked before anything is
// reserved or sent, in this order: no key (missing_api_key), too few
// requests left in the allowance (batch_request_limit), no budget, or
// reservations that together would pass the budget (budget_exceeded). A
// rerank is refused whole: it never spends part of a budget it cannot
// finish.
func (e *Engine) rerankRefusal(p *liveRerank) error {
	if !p.req.hasKey() {
		return reason.New(reason.MissingAPIKey, "no Gemini API key; nothing was sent")
	}
	a := e.allowance
	if left := a.Limit() - a.Used(); left < len(p.calls) {
		return reason.New(reason.BatchRequestLimit, "%d requests are needed and %d of the %d allowed are left; nothing was sent", len(p.calls), left, a.Limit())
	}
	if _, ok := p.ledger.Budget(); !ok {
		return errors.New("set a budget first: no paid request is sent without one")
	}
	estimates := make([]float64, len(p.calls))
	for i, c := range p.calls {
		estimates[i] = c.EstimatedUSD
	}
	if err := p.ledger.Check(fmt.Sprintf("the %d listwise requests", len(p.calls)), estimates...); err != nil {
		if code, ok := reason.Of(err); ok {
			return reason.New(code, "%s; nothing was sent", reason.DetailOf(err))
		}
		return err
	}
	return nil
}

// reserveAll reserves every call of the run ahead (budget_exceeded, with
// nothing reserved or sent, when together they no longer fit).
func (p *liveRerank) reserveAll() error {
	reqs := make([]budget.Request, len(p.calls))
	for i, c := range p.calls {
		reqs[i] = budget.Request{Label: "rerank listwise: case " + c.CaseID, Model: reranklab.ListwiseModel,
			RequestSHA256: c.RequestSHA256, RequestBytes: c.RequestBytes, EstimatedUSD: c.EstimatedUSD}
	}
	if _, err := p.ledger.ReserveAll(reqs); err != nil {
		if code, ok := reason.Of(err); ok {
			return reason.New(code, "%s; nothing was sent", reason.DetailOf(err))
		}
		return err
	}
	return nil
}

// PlanRerank says what a live rerank would do and whether it may.
func (e *Engine) PlanRerank(req LiveRerankRequest) (*RerankPlan, error) {
	p, err := e.prepareRerank(req)
	if err != nil {
		return nil, err
	}
	total := 0.0
	for _, c := range p.calls {
		total += c.EstimatedUSD
	}
	return &RerankPlan{Model: reranklab.ListwiseModel, Endpoint: p.endpoint, Rate: p.rate,
		Prices: price.NewTable(append(e.prices.Rates(), p.rate)...).Rates(), Calls: p.calls, TotalUSD: total,
		MaxOutputTokens: gemini.MaxOutputTokens(), Ledger: LedgerStateOf(p.ledger), Allowance: allowanceState(e.allowance),
		Caps: caps(0), Refusal: RefusalOf(e.rerankRefusal(p))}, nil
}

// LiveRerankResult is a live listwise rerank: the Gemini record, the
// ledger after it, the endpoint and rate used and how many attempts were
// recorded.
type LiveRerankResult struct {
	Gemini    *reranklab.GeminiRecord `json:"gemini"`
	Ledger    LedgerState             `json:"ledger"`
	Endpoint  string                  `json:"endpoint"`
	Rate      price.Rate              `json:"rate"`
	Exchanges int                     `json:"exchanges"`
	ElapsedMS float64                 `json:"elapsed_ms"`
}

// ErrRerankRunning refuses a second live rerank or a budget change while
// one runs: an engine has one ledger writer at a time.
var ErrRerankRunning = errors.New("a live rerank is already running; wait until it has finished")

// RerankLive reranks the development cases with live listwise calls,
// reserving each request's estimate in the ledger before it is sent and
// recording every attempt. A rerank its plan would refuse is refused
// whole, with nothing reserved or sent.
func (e *Engine) RerankLive(ctx context.Context, req LiveRerankRequest) (res *LiveRerankResult, err error) {
	r := &e.rerank
	if !r.ledger.TryLock() {
		return nil, ErrRerankRunning
	}
	defer r.ledger.Unlock()
	if req.Transport == nil {
		return nil, errors.New("rerank: a live rerank calls the network and needs a transport")
	}
	p, err := e.prepareRerank(req)
	if err != nil {
		return nil, err
	}
	if err := e.rerankRefusal(p); err != nil {
		return nil, err
	}
	// The run's requests are reserved together, as one step under the
	// ledger's lock: another process or tab may have spent since the
	// check, and a rerank is still refused whole rather than stopped
	// part-way. What the run does not send is released at the end.
	if err := p.reserveAll(); err != nil {
		return nil, err
	}
	defer func() {
		if rerr := p.ledger.ReleaseHeld(); rerr != nil {
			res, err = nil, errors.Join(err, rerr)
		}
	}()
	// Its own suite: the run waits on the network for up to a minute a
	// case, and the replay suite stays free meanwhile.
	fresh, err := OpenRerankLab()
	if err != nil {
		return nil, err
	}
	defer fresh.Close()
	started := e.clock()
	head := e.header(reranklab.ListwiseModel, p.endpoint, reranklab.LiveConfig())
	rec := recording.NewMemoryRecorder(head)
	if req.Save != nil {
		if rec, err = recording.NewRecorder(head, req.Save); err != nil {
			return nil, err
		}
	}
	r.keep(rec)
	trial, err := e.beginLive(rec, reranklab.LiveTrial())
	if err != nil {
		return nil, err
	}
	ranker, err := reranklab.NewLiveRanker(reranklab.LiveRankerConfig{Transport: req.Transport, Allowance: e.allowance,
		Endpoint: p.endpoint, Record: trial.record, Ledger: p.ledger, Rate: p.rate})
	if err != nil {
		return nil, err
	}
	done := 0
	m := progress{Model: ranker, after: func() {
		done++
		if req.OnCase != nil {
			req.OnCase(done, len(p.calls))
		}
	}}
	gem, err := fresh.Gemini(ctx, m, reranklab.ListwiseLiveMode, p.rate)
	if err != nil {
		return nil, err
	}
	if err := trial.Log.Finish(e.clock().Sub(started).Seconds()); err != nil {
		return nil, err
	}
	if err := p.ledger.ReleaseHeld(); err != nil {
		return nil, err
	}
	return &LiveRerankResult{Gemini: gem, Ledger: LedgerStateOf(p.ledger), Endpoint: p.endpoint, Rate: p.rate,
		Exchanges: trial.Attempts(), ElapsedMS: e.since(started)}, nil
}

// progress reports each listwise decision as it ends.
type progress struct {
	model.Model
	after func()
}

func (p progress) Decide(ctx context.Context, prompt model.Prompt, timeout time.Duration) (model.Reply, error) {
	defer p.after()
	return p.Model.Decide(ctx, prompt, timeout)
}

func (r *rerankLab) keep(rec *recording.Recorder) {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	r.rec = rec
}

// RerankRecording is the latest live rerank's recording (nil before any):
// every attempt, never the key; Rerank replays it as the Gemini file.
func (e *Engine) RerankRecording() *recording.File {
	r := &e.rerank
	r.recMu.Lock()
	rec := r.rec
	r.recMu.Unlock()
	if rec == nil {
		return nil
	}
	return rec.File()
}

// LedgerState is the spending ledger as a front end shows it: the budget
// (nil until one is set), what is reserved, what remains (nil without a
// budget) and every reservation.
type LedgerState struct {
	Format       string         `json:"format"`
	BudgetUSD    *float64       `json:"budget_usd"`
	SpentUSD     float64        `json:"spent_usd"`
	RemainingUSD *float64       `json:"remaining_usd"`
	Entries      []budget.Entry `json:"entries"`
}

// LedgerStateOf describes a ledger.
func LedgerStateOf(l *budget.Ledger) LedgerState {
	s := LedgerState{Format: budget.Format, SpentUSD: l.Spent(), Entries: l.Entries()}
	if b, ok := l.Budget(); ok {
		remaining := l.Remaining()
		s.BudgetUSD, s.RemainingUSD = &b, &remaining
	}
	if s.Entries == nil {
		s.Entries = []budget.Entry{}
	}
	return s
}

// Ledger reads the ledger in store.
func (e *Engine) Ledger(store budget.Store) (LedgerState, error) {
	l, err := budget.Open(store, e.clock)
	if err != nil {
		return LedgerState{}, err
	}
	return LedgerStateOf(l), nil
}

// SetBudget sets the ledger's budget in US dollars (refused while a live
// rerank runs).
func (e *Engine) SetBudget(store budget.Store, usd float64) (LedgerState, error) {
	r := &e.rerank
	if !r.ledger.TryLock() {
		return LedgerState{}, errors.New("a live rerank is running; change the budget when it has finished")
	}
	defer r.ledger.Unlock()
	l, err := budget.Open(store, e.clock)
	if err != nil {
		return LedgerState{}, err
	}
	if err := l.SetBudget(usd); err != nil {
		return LedgerState{}, err
	}
	return LedgerStateOf(l), nil
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
