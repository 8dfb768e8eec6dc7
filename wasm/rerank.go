//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// reranks is the Rerank view's state: the reranking lab opened on first
// use (not at load(), so the page's start-up does not pay for a second
// index), the bundled recordings parsed once, and the latest live rerank's
// recording.
type reranks struct {
	mu           sync.Mutex // one user of the replay suite at a time: it is not safe for concurrent use
	suite        *reranklab.Suite
	gemini       *recording.File
	crossEncoder *recording.File

	// ledger is held by a live rerank from its check to its last save,
	// and by a budget change, so the page's ledger has one writer at a
	// time (an engine-wide lock: two tabs share localStorage unlocked).
	ledger sync.Mutex

	recMu sync.Mutex
	rec   *recording.Recorder
}

// openSuite opens the reranking lab over the bundled fixtures.
func openSuite() (*reranklab.Suite, error) {
	return reranklab.Open(reranklab.Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded})
}

// open opens the replay suite and parses the bundled recordings, once.
// The caller holds r.mu.
func (r *reranks) open() error {
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
	s, err := openSuite()
	if err != nil {
		return err
	}
	r.suite, r.gemini, r.crossEncoder = s, g, c
	return nil
}

// recordingOr parses text when given, else returns the bundled file.
func recordingOr(bundled *recording.File, text js.Value) (*recording.File, string, error) {
	if text.Type() != js.TypeString {
		return bundled, "bundled", nil
	}
	f, err := recording.Parse([]byte(text.String()))
	return f, "loaded", err
}

// replay runs the three recorded runs in the browser: the coverage lab,
// the Gemini listwise run replayed from its recording (exact-request
// match) and the cross-encoder run from its logits, with the twelve-case
// summary. opts.gemini and opts.crossEncoder replace the bundled
// recordings with loaded ragagent-recording/1 text.
func (e *engine) rerankReplay(geminiText, encoderText js.Value) (any, error) {
	r := &e.rr
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	started := time.Now()
	gfile, gsource, err := recordingOr(r.gemini, geminiText)
	if err != nil {
		return nil, err
	}
	cfile, csource, err := recordingOr(r.crossEncoder, encoderText)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	cov, err := r.suite.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	replay := reranklab.NewReplay(gfile)
	gem, err := r.suite.Gemini(ctx, replay, reranklab.ListwiseReplayMode, defaultListwiseRate())
	if err != nil {
		return nil, err
	}
	ce, err := r.suite.CrossEncoder(ctx, reranklab.NewRecordedEncoder(cfile))
	if err != nil {
		return nil, fmt.Errorf("cross-encoder: %w", err)
	}
	return map[string]any{
		"coverage": cov, "gemini": gem, "cross_encoder": ce,
		"sources":       map[string]string{"gemini": gsource, "cross_encoder": csource},
		"gemini_unused": replay.Unused(),
		"cases_sha256":  r.suite.CasesSHA256(),
		"elapsed_ms":    msSince(started),
		"rate":          pageRate(defaultListwiseRate()),
	}, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// defaultListwiseRate is the listwise model's price in the shipped table.
func defaultListwiseRate() price.Rate {
	rate, _ := price.Defaults().Rate(reranklab.ListwiseModel)
	return rate
}

// liveRerank is what the live form asks for: {price?: {input_usd_per_mtok,
// output_usd_per_mtok}, endpoint?, hasKey}.
type liveRerank struct {
	rate     price.Rate
	endpoint string
	hasKey   bool
}

func parseLiveRerank(text string) (liveRerank, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return liveRerank{}, fmt.Errorf("rerank: the options are not JSON: %v", err)
	}
	o, _ := v.(*pyjson.Object)
	spec := liveRerank{rate: pageRate(defaultListwiseRate())}
	if p := get(o, "price"); p != nil {
		given, err := rateOf(p)
		if err != nil {
			return liveRerank{}, err
		}
		if given.InputPerMTok != spec.rate.InputPerMTok || given.OutputPerMTok != spec.rate.OutputPerMTok {
			spec.rate = given // the shipped rate keeps its source when the page sends it back unchanged
		}
	}
	spec.hasKey, _ = get(o, "hasKey").(bool)
	override, _ := get(o, "endpoint").(string)
	if spec.endpoint, err = gemini.ResolveModelEndpoint(reranklab.ListwiseModel, override); err != nil {
		return liveRerank{}, err
	}
	return spec, nil
}

// rateOf reads a price override for the listwise model: two finite,
// non-negative amounts of US dollars per million tokens.
func rateOf(v any) (price.Rate, error) {
	o, _ := v.(*pyjson.Object)
	in, ok1 := get(o, "input_usd_per_mtok").(pyjson.Number)
	out, ok2 := get(o, "output_usd_per_mtok").(pyjson.Number)
	valid := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	if !ok1 || !ok2 || !valid(in.Float64()) || !valid(out.Float64()) {
		return price.Rate{}, errors.New("rerank: price needs input_usd_per_mtok and output_usd_per_mtok, each a finite amount of at least 0")
	}
	return price.Rate{Model: reranklab.ListwiseModel, InputPerMTok: in.Float64(), OutputPerMTok: out.Float64(),
		Source: "given in the page"}, nil
}

// pagePrices is the shipped price table with rate in force for the
// listwise model. pageRate swaps the command line's advice at the end of a
// shipped source (--price) for the page's (its price fields).
func pagePrices(rate price.Rate) []price.Rate {
	rates := price.NewTable(append(price.Defaults().Rates(), rate)...).Rates()
	for i, r := range rates {
		rates[i] = pageRate(r)
	}
	return rates
}

func pageRate(r price.Rate) price.Rate {
	if head, ok := strings.CutSuffix(r.Source, "; override with --price"); ok {
		r.Source = head + "; change it in the price fields"
	}
	return r
}

// calls are the live run's requests at rate (the replay suite builds them).
func (r *reranks) calls(rate price.Rate) ([]reranklab.Call, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	return r.suite.ListwiseCalls(context.Background(), rate)
}

// refusal is why a live rerank may not start, checked before anything is
// reserved or sent: no key (missing_api_key), too few requests left in the
// page's allowance (batch_request_limit), no budget, or reservations that
// would pass the budget (budget_exceeded).
func refusal(spec liveRerank, calls []reranklab.Call, a *gemini.Allowance, l *budget.Ledger) error {
	if !spec.hasKey {
		return reason.New(reason.MissingAPIKey, "paste a Gemini API key first; nothing was sent")
	}
	if left := a.Limit() - a.Used(); left < len(calls) {
		return reason.New(reason.BatchRequestLimit, "%d requests are needed and %d of the page's %d are left; nothing was sent", len(calls), left, a.Limit())
	}
	estimates := make([]float64, len(calls))
	for i, c := range calls {
		estimates[i] = c.EstimatedUSD
	}
	if _, ok := l.Budget(); !ok {
		return errors.New("set a budget first: no paid request is sent without one")
	}
	if err := l.Check(fmt.Sprintf("the %d listwise requests", len(calls)), estimates...); err != nil {
		if code, ok := reason.Of(err); ok {
			return reason.New(code, "%s; nothing was sent", reason.DetailOf(err))
		}
		return err
	}
	return nil
}

// refusalValue is a refusal as the plan shows it: its code (if it has one)
// and what to tell people.
func refusalValue(err error) map[string]any {
	code, ok := reason.Of(err)
	message := err.Error()
	if ok {
		message = reason.DetailOf(err)
	}
	return map[string]any{"code": string(code), "message": message}
}

// prepared is what both the plan and a live rerank start from: the
// options, the session (for its request allowance), the page's ledger and
// the run's requests priced at the rate in force.
type prepared struct {
	spec    liveRerank
	session *lab.Session
	ledger  *budget.Ledger
	calls   []reranklab.Call
}

func (e *engine) prepare(text string, store js.Value) (prepared, error) {
	var p prepared
	var err error
	if p.spec, err = parseLiveRerank(text); err != nil {
		return p, err
	}
	if p.session, err = e.loaded(); err != nil {
		return p, err
	}
	st, err := storeOf(store)
	if err != nil {
		return p, err
	}
	if p.ledger, err = budget.Open(st, e.clock); err != nil {
		return p, err
	}
	p.calls, err = e.rr.calls(p.spec.rate)
	return p, err
}

// refusal is why this rerank may not start (nil when it may).
func (p prepared) refusal() error {
	return refusal(p.spec, p.calls, p.session.Allowance(), p.ledger)
}

// rerankPlan is what a live rerank would do, shown before anything is
// sent: the model and endpoint, the price table with the rate in use, each
// request's size and reservation, their total, the ledger (budget, spent,
// remaining), the page's request allowance, the caps, and the refusal (if
// any) that would stop it.
func (e *engine) rerankPlan(text string, store js.Value) (any, error) {
	p, err := e.prepare(text, store)
	if err != nil {
		return nil, err
	}
	total := 0.0
	for _, c := range p.calls {
		total += c.EstimatedUSD
	}
	a := p.session.Allowance()
	plan := map[string]any{
		"model": reranklab.ListwiseModel, "endpoint": p.spec.endpoint, "rate": p.spec.rate,
		"prices":    pagePrices(p.spec.rate),
		"calls":     p.calls,
		"total_usd": total, "max_output_tokens": reranklab.MaxOutputTokens(),
		"ledger":    ledgerState(p.ledger),
		"allowance": map[string]any{"limit": a.Limit(), "used": a.Used(), "remaining": a.Limit() - a.Used()},
		"caps": map[string]any{"request_bytes": gemini.MaxRequestBytes, "response_bytes": gemini.MaxResponseBytes,
			"call_timeout_seconds": int(gemini.MaxCallTimeout.Seconds()), "retries": 0, "redirects": "refused"},
		"refusal": nil,
	}
	if err := p.refusal(); err != nil {
		plan["refusal"] = refusalValue(err)
	}
	return plan, nil
}

// rerankLive reranks the development cases with live listwise calls
// through the shell's fetch (hooks.post), reserving each request's
// estimate in the ledger (hooks.store) before sending it. It returns
// {id, result}; cancel(id) stops it. hooks.onCase(done, total) reports each
// case as it ends. A run the plan would refuse is refused whole, with
// nothing reserved or sent.
func (e *engine) rerankLive(specValue, hooks js.Value) any {
	text := fromJS(specValue)
	post, store, onCase := field(hooks, "post"), field(hooks, "store"), field(hooks, "onCase")
	return e.start(func(ctx context.Context) (any, error) {
		if !e.rr.ledger.TryLock() {
			return nil, errors.New("a live rerank is already running in this page")
		}
		defer e.rr.ledger.Unlock()
		if post.Type() != js.TypeFunction {
			return nil, errors.New("rerank: a live rerank calls the network and needs hooks.post")
		}
		p, err := e.prepare(text, store)
		if err != nil {
			return nil, err
		}
		if err := p.refusal(); err != nil {
			return nil, err
		}
		spec, calls, ledger := p.spec, p.calls, p.ledger
		// Its own suite: the run waits on the network for up to a minute
		// a case, and the replay suite stays free meanwhile.
		fresh, err := openSuite()
		if err != nil {
			return nil, err
		}
		defer fresh.Close()
		started := e.clock()
		rec, log, err := reranklab.NewLiveRecording(spec.endpoint, started, nil)
		if err != nil {
			return nil, err
		}
		e.rr.keep(rec)
		live, err := reranklab.NewLiveRanker(reranklab.LiveRankerConfig{Transport: &fetchTransport{post: post, hasKey: spec.hasKey},
			Allowance: p.session.Allowance(), Endpoint: spec.endpoint, Record: log.Record, Ledger: ledger, Rate: spec.rate})
		if err != nil {
			return nil, err
		}
		done := 0
		model := progress{Model: live, after: func() {
			done++
			notify(onCase, done, len(calls))
		}}
		gem, err := fresh.Gemini(ctx, model, reranklab.ListwiseLiveMode, spec.rate)
		if err != nil {
			return nil, err
		}
		if err := log.Finish(e.clock().Sub(started).Seconds()); err != nil {
			return nil, err
		}
		return map[string]any{"gemini": gem, "ledger": ledgerState(ledger), "endpoint": spec.endpoint, "rate": spec.rate,
			"exchanges": len(rec.File().Trials[0].Exchanges), "elapsed_ms": float64(e.clock().Sub(started).Microseconds()) / 1000}, nil
	})
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

func (r *reranks) keep(rec *recording.Recorder) {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	r.rec = rec
}

// rerankRecording is the latest live rerank's recording as
// ragagent-recording/1 text ({exchanges, text}), or null before any: every
// attempt, never the key; `ragagent rerank --gemini FILE` and
// rerank({gemini: text}) replay it.
func (e *engine) rerankRecording() (any, error) {
	e.rr.recMu.Lock()
	rec := e.rr.rec
	e.rr.recMu.Unlock()
	if rec == nil {
		return nil, nil
	}
	f := rec.File()
	text, err := writeRecording(f)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, t := range f.Trials {
		n += len(t.Exchanges)
	}
	return map[string]any{"exchanges": n, "text": string(text)}, nil
}

// ledgerOp opens the page's ledger and applies change (nil: read only).
func (e *engine) ledgerOp(store js.Value, change func(*budget.Ledger) error) (any, error) {
	st, err := storeOf(store)
	if err != nil {
		return nil, err
	}
	if change != nil {
		if !e.rr.ledger.TryLock() {
			return nil, errors.New("a live rerank is running; change the budget when it has finished")
		}
		defer e.rr.ledger.Unlock()
	}
	l, err := budget.Open(st, e.clock)
	if err != nil {
		return nil, err
	}
	if change != nil {
		if err := change(l); err != nil {
			return nil, err
		}
	}
	return ledgerState(l), nil
}

// exportRerank adds the Rerank view's methods to the API object.
func (e *engine) exportRerank(export func(string, func([]js.Value) any)) {
	export("rerank", func(args []js.Value) any {
		opts := arg(args, 0)
		g, c := field(opts, "gemini"), field(opts, "crossEncoder")
		return promise(func() (any, error) { return e.rerankReplay(g, c) })
	})
	export("rerankPlan", func(args []js.Value) any {
		spec, store := fromJS(arg(args, 0)), arg(args, 1)
		return promise(func() (any, error) { return e.rerankPlan(spec, store) })
	})
	export("rerankLive", func(args []js.Value) any { return e.rerankLive(arg(args, 0), arg(args, 1)) })
	export("rerankRecording", func([]js.Value) any { return promise(e.rerankRecording) })
	export("ledger", func(args []js.Value) any {
		store := arg(args, 0)
		return promise(func() (any, error) { return e.ledgerOp(store, nil) })
	})
	export("setBudget", func(args []js.Value) any {
		usd, store := arg(args, 0), arg(args, 1)
		return promise(func() (any, error) {
			if usd.Type() != js.TypeNumber {
				return nil, errors.New("setBudget: the budget must be a number of US dollars")
			}
			amount := usd.Float()
			return e.ledgerOp(store, func(l *budget.Ledger) error { return l.SetBudget(amount) })
		})
	})
}
