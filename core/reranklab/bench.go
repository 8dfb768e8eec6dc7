package reranklab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// Bench is the reranking lab behind a front end's engine: the replay
// suite over the bundled fixtures, opened on first use (so a front end's
// start-up does not pay for a second index), the bundled recordings parsed
// once, live listwise reranks through a spending ledger (one ledger writer
// at a time), the latest live rerank's recording, and fresh cross-encoder
// scorings taken through the acceptance contract. It is safe for
// concurrent use; its Suite never leaves it.
type Bench struct {
	clock     func() time.Time
	allowance *gemini.Allowance

	mu           sync.Mutex // one user of the replay suite at a time: it is not safe for concurrent use
	suite        *Suite
	gemini       *recording.File
	crossEncoder *recording.File

	// ledger is held by a live rerank from its check to its last save, and
	// by a budget change, so a bench has one ledger writer at a time.
	ledger sync.Mutex

	recMu sync.Mutex
	rec   *recording.Recorder
}

// NewBench makes a bench on clock (timing runs and stamping recordings and
// ledger entries) whose live requests count against allowance.
func NewBench(clock func() time.Time, allowance *gemini.Allowance) *Bench {
	return &Bench{clock: clock, allowance: allowance}
}

// OpenBundled opens the reranking lab over the bundled fixtures.
func OpenBundled() (*Suite, error) {
	return Open(Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded})
}

// open opens the replay suite and parses the bundled recordings, once.
// The caller holds b.mu.
func (b *Bench) open() error {
	if b.suite != nil {
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
	s, err := OpenBundled()
	if err != nil {
		return err
	}
	b.suite, b.gemini, b.crossEncoder = s, g, c
	return nil
}

// withSuite runs f with the opened replay suite, one caller at a time.
func (b *Bench) withSuite(f func(s *Suite) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.open(); err != nil {
		return err
	}
	return f(b.suite)
}

// Close releases the replay suite's index.
func (b *Bench) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.suite == nil {
		return nil
	}
	err := b.suite.Close()
	b.suite = nil
	return err
}

// Replayed is the lab's three runs replayed: the records in the published
// shapes, how many recorded Gemini exchanges the replay left unused, and
// the expanded cases' receipt.
type Replayed struct {
	Coverage     *rerank.CoverageRecord
	Gemini       *rerank.GeminiRecord
	CrossEncoder *rerank.CrossEncoderRecord
	GeminiUnused int
	CasesSHA256  string
}

// Replay replays the three runs: the coverage lab, the Gemini listwise run
// from geminiFile (exact-request match; nil is the bundled recording),
// priced at rate, and the cross-encoder run from crossEncoderFile's
// logits (nil: the bundled ones).
func (b *Bench) Replay(ctx context.Context, geminiFile, crossEncoderFile *recording.File, rate price.Rate) (*Replayed, error) {
	out := &Replayed{}
	err := b.withSuite(func(s *Suite) error {
		if geminiFile == nil {
			geminiFile = b.gemini
		}
		if crossEncoderFile == nil {
			crossEncoderFile = b.crossEncoder
		}
		out.CasesSHA256 = s.CasesSHA256()
		var err error
		if out.Coverage, err = s.Coverage(ctx); err != nil {
			return err
		}
		replay := NewReplay(geminiFile)
		if out.Gemini, err = s.Gemini(ctx, replay, ListwiseReplayMode, rate); err != nil {
			return err
		}
		if out.CrossEncoder, err = s.CrossEncoder(ctx, NewRecordedEncoder(crossEncoderFile)); err != nil {
			return fmt.Errorf("cross-encoder: %w", err)
		}
		out.GeminiUnused = replay.Unused()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Live is a live listwise rerank of the development cases, as its plan and
// its run both start from it.
type Live struct {
	// Rate is the listwise model's price, what each reservation is
	// estimated at.
	Rate price.Rate
	// Endpoint is "" for the real API or a loopback test double.
	Endpoint string
	// HasKey says whether the front end holds a key.
	HasKey bool
	// Ledger is where the spending ledger lives.
	Ledger budget.Store
}

// Prepared is a live rerank checked and priced: the endpoint it sends to,
// the ledger as loaded, and each request with the estimate reserved for it.
type Prepared struct {
	Live
	Endpoint string
	Ledger   *budget.Ledger
	Calls    []rerank.Call
}

// Prepare resolves the endpoint, opens the ledger and prices every request
// the run would send.
func (b *Bench) Prepare(l Live) (*Prepared, error) {
	p := &Prepared{Live: l}
	var err error
	if p.Endpoint, err = gemini.ResolveModelEndpoint(ListwiseModel, l.Endpoint); err != nil {
		return nil, err
	}
	if l.Ledger == nil {
		return nil, errors.New("rerank: a live rerank needs a ledger")
	}
	if p.Ledger, err = budget.Open(l.Ledger, b.clock); err != nil {
		return nil, err
	}
	err = b.withSuite(func(s *Suite) error {
		p.Calls, err = s.ListwiseCalls(context.Background(), l.Rate)
		return err
	})
	return p, err
}

// TotalUSD is what the run reserves in all.
func (p *Prepared) TotalUSD() float64 {
	total := 0.0
	for _, c := range p.Calls {
		total += c.EstimatedUSD
	}
	return total
}

// Refusal is why a live rerank may not start, checked before anything is
// reserved or sent (RefuseCalls). A rerank is refused whole: it never
// spends part of a budget it cannot finish.
func (b *Bench) Refusal(p *Prepared) error {
	return RefuseCalls(p.HasKey, b.allowance, p.Ledger, p.Calls)
}

// RefuseCalls is why listwise calls (a rerank's, or an experiment's
// listwise stages') may not be sent, in this order: no key
// (missing_api_key), too few requests left in the allowance
// (batch_request_limit), no budget, or reservations that together would
// pass the budget (budget_exceeded).
func RefuseCalls(hasKey bool, a *gemini.Allowance, led *budget.Ledger, calls []rerank.Call) error {
	if !hasKey {
		return reason.New(reason.MissingAPIKey, "no Gemini API key; nothing was sent")
	}
	if left := a.Limit() - a.Used(); left < len(calls) {
		return reason.New(reason.BatchRequestLimit, "%d requests are needed and %d of the %d allowed are left; nothing was sent", len(calls), left, a.Limit())
	}
	if _, ok := led.Budget(); !ok {
		return errors.New("set a budget first: no paid request is sent without one")
	}
	estimates := make([]float64, len(calls))
	for i, c := range calls {
		estimates[i] = c.EstimatedUSD
	}
	if err := led.Check(fmt.Sprintf("the %d listwise requests", len(calls)), estimates...); err != nil {
		return NothingSent(err)
	}
	return nil
}

// NothingSent adds to a coded refusal that nothing was sent (the
// reranking lab's and an experiment's listwise refusals say it alike).
func NothingSent(err error) error {
	if code, ok := reason.Of(err); ok {
		return reason.New(code, "%s; nothing was sent", reason.DetailOf(err))
	}
	return err
}

// reserveAll reserves every call of the run ahead (budget_exceeded, with
// nothing reserved or sent, when together they no longer fit).
func (p *Prepared) reserveAll() error {
	reqs := make([]budget.Request, len(p.Calls))
	for i, c := range p.Calls {
		reqs[i] = budget.Request{Label: "rerank listwise: case " + c.CaseID, Model: ListwiseModel,
			RequestSHA256: c.RequestSHA256, RequestBytes: c.RequestBytes, EstimatedUSD: c.EstimatedUSD}
	}
	_, err := p.Ledger.ReserveAll(reqs)
	return NothingSent(err)
}

// LiveRun is how a prepared live rerank runs.
type LiveRun struct {
	// Transport carries the requests and holds the key.
	Transport gemini.Transport
	// Save gets the live recording after every attempt; nil keeps it in
	// memory (Recording).
	Save func([]byte) error
	// OnCase, if set, is told as each case's request ends.
	OnCase func(done, total int)
}

// LiveRan is a live listwise rerank done: the Gemini record, the ledger
// after it, how many attempts were recorded, and how long it took.
type LiveRan struct {
	Gemini    *rerank.GeminiRecord
	Ledger    budget.Statement
	Exchanges int
	ElapsedMS float64
}

// ErrRunning refuses a second live rerank or a budget change while one
// runs: a bench has one ledger writer at a time.
var ErrRunning = errors.New("a live rerank is already running; wait until it has finished")

// Run reranks the development cases with live listwise calls, reserving
// each request's estimate in the ledger before it is sent and recording
// every attempt. A rerank its plan would refuse is refused whole, with
// nothing reserved or sent.
func (b *Bench) Run(ctx context.Context, l Live, run LiveRun) (res *LiveRan, err error) {
	if !b.ledger.TryLock() {
		return nil, ErrRunning
	}
	defer b.ledger.Unlock()
	if run.Transport == nil {
		return nil, errors.New("rerank: a live rerank calls the network and needs a transport")
	}
	l.HasKey = run.Transport.HasKey()
	p, err := b.Prepare(l)
	if err != nil {
		return nil, err
	}
	if err := b.Refusal(p); err != nil {
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
		if rerr := p.Ledger.ReleaseHeld(); rerr != nil {
			res, err = nil, errors.Join(err, rerr)
		}
	}()
	// Its own suite: the run waits on the network for up to a minute a
	// case, and the replay suite stays free meanwhile.
	fresh, err := OpenBundled()
	if err != nil {
		return nil, err
	}
	defer fresh.Close()
	started := b.clock()
	head := recording.Header(ListwiseModel, p.Endpoint, LiveConfig(), started)
	rec := recording.NewMemoryRecorder(head)
	if run.Save != nil {
		if rec, err = recording.NewRecorder(head, run.Save); err != nil {
			return nil, err
		}
	}
	b.keep(rec)
	trial, err := rec.BeginLive(LiveTrial(), b.clock)
	if err != nil {
		return nil, err
	}
	ranker, err := NewLiveRanker(LiveRankerConfig{Transport: run.Transport, Allowance: b.allowance,
		Endpoint: p.Endpoint, Record: trial.Record, Ledger: p.Ledger, Rate: p.Rate})
	if err != nil {
		return nil, err
	}
	done := 0
	m := progress{Model: ranker, after: func() {
		done++
		if run.OnCase != nil {
			run.OnCase(done, len(p.Calls))
		}
	}}
	gem, err := fresh.Gemini(ctx, m, ListwiseLiveMode, p.Rate)
	if err != nil {
		return nil, err
	}
	if err := trial.Log.Finish(b.clock().Sub(started).Seconds()); err != nil {
		return nil, err
	}
	if err := p.Ledger.ReleaseHeld(); err != nil {
		return nil, err
	}
	return &LiveRan{Gemini: gem, Ledger: p.Ledger.Statement(), Exchanges: trial.Attempts(),
		ElapsedMS: float64(b.clock().Sub(started).Microseconds()) / 1000}, nil
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

func (b *Bench) keep(rec *recording.Recorder) {
	b.recMu.Lock()
	defer b.recMu.Unlock()
	b.rec = rec
}

// Recording is the latest live rerank's recording (nil before any): every
// attempt, never the key; Replay replays it as the Gemini file.
func (b *Bench) Recording() *recording.File {
	b.recMu.Lock()
	rec := b.rec
	b.recMu.Unlock()
	if rec == nil {
		return nil
	}
	return rec.File()
}

// HoldLedger makes the caller the bench's one ledger writer (a live eval
// spending from the same ledger as the live reranks) until it calls the
// returned release; false when a live rerank, a budget change or another
// holder has it.
func (b *Bench) HoldLedger() (release func(), ok bool) {
	if !b.ledger.TryLock() {
		return nil, false
	}
	return b.ledger.Unlock, true
}

// Ledger reads the ledger in store.
func (b *Bench) Ledger(store budget.Store) (budget.Statement, error) {
	l, err := budget.Open(store, b.clock)
	if err != nil {
		return budget.Statement{}, err
	}
	return l.Statement(), nil
}

// SetBudget sets the ledger's budget in US dollars (refused while a live
// rerank or a live eval holds the ledger).
func (b *Bench) SetBudget(store budget.Store, usd float64) (budget.Statement, error) {
	if !b.ledger.TryLock() {
		return budget.Statement{}, errors.New("a live rerank or eval is spending from the ledger; change the budget when it has finished")
	}
	defer b.ledger.Unlock()
	l, err := budget.Open(store, b.clock)
	if err != nil {
		return budget.Statement{}, err
	}
	if err := l.SetBudget(usd); err != nil {
		return budget.Statement{}, err
	}
	return l.Statement(), nil
}

// EncoderCalls are the cross-encoder run's calls in order, each with the
// pairs it scores.
func (b *Bench) EncoderCalls(ctx context.Context) ([]EncoderCall, error) {
	var calls []EncoderCall
	err := b.withSuite(func(s *Suite) error {
		var err error
		calls, err = s.EncoderCalls(ctx)
		return err
	})
	return calls, err
}

// Accepted is a fresh cross-encoder scoring accepted by the core: the run's
// record (execution_mode fresh-local-cross-encoder-inference), its logits
// beside the published ones, and the recording that replays it.
type Accepted struct {
	CrossEncoder *rerank.CrossEncoderRecord
	Comparison   *rerank.LogitComparison
	Recording    *recording.File
}

// freshSource says where a fresh recording's logits come from.
const freshSource = "Fresh inference outside the core (the runtime is the environment), accepted through the cross-encoder acceptance contract: each request is the question and the candidates' ids and texts in candidate order, each response the raw logits in that order and the measured inference seconds."

// Accept takes a fresh scoring's payload (ScoresFormat) through the
// acceptance contract: the payload must answer every call of the run in
// order, and each call's scores must be one finite number per candidate
// (invalid_cross_encoder_scores otherwise, naming the case); the candidates
// are then sorted as the recorded path sorts them and summarised. It
// returns the record, its comparison with the published logits, and the
// recording (the bundled one's shape) that replays it offline.
func (b *Bench) Accept(ctx context.Context, payload string) (*Accepted, error) {
	var out *Accepted
	err := b.withSuite(func(s *Suite) error {
		calls, err := s.EncoderCalls(ctx)
		if err != nil {
			return err
		}
		scoring, err := ParseScoring(payload, calls)
		if err != nil {
			return err
		}
		file := scoring.Recording(calls, freshSource, b.clock().UTC().Format(time.RFC3339Nano))
		fresh, err := s.Fresh(ctx, file)
		if err != nil {
			return fmt.Errorf("cross-encoder: %w", err)
		}
		published, err := s.CrossEncoder(ctx, NewRecordedEncoder(b.crossEncoder))
		if err != nil {
			return fmt.Errorf("the bundled cross-encoder recording: %w", err)
		}
		cmp, err := Compare(fresh, published)
		if err != nil {
			return err
		}
		out = &Accepted{CrossEncoder: fresh, Comparison: cmp, Recording: file}
		return nil
	})
	return out, err
}

// publishedModelFiles are the files transformers.js reads for the published
// cross-encoder besides its weights; the published record pins each one's
// sha256. Their sizes are the hub's listing, rounded.
func publishedModelFiles() []rerank.ModelFile {
	return []rerank.ModelFile{
		{Path: "config.json", Bytes: 800, Approximate: true},
		{Path: "tokenizer.json", Bytes: 712_000, Approximate: true},
		{Path: "tokenizer_config.json", Bytes: 1_300, Approximate: true},
	}
}

// publishedWeights are the ONNX exports in the published model's repository
// the page offers. The published record pins the safetensors weights the
// seed ran, which a browser cannot run, and no ONNX file: their sha256 is
// recorded as downloaded. Sizes are the hub's listing, rounded.
func publishedWeights() []rerank.ModelWeights {
	return []rerank.ModelWeights{
		{ID: "fp32", Label: "full precision (fp32), the seed's arithmetic", ModelFile: rerank.ModelFile{Path: "onnx/model.onnx", Bytes: 90_900_000, Approximate: true}},
		{ID: "quint8", Label: "8-bit quantized weights (smaller; the logits change)", ModelFile: rerank.ModelFile{Path: "onnx/model_quint8_avx2.onnx", Bytes: 23_000_000, Approximate: true}},
	}
}

// PublishedModel is the published cross-encoder's manifest: its id,
// revision, licence and pins as the bundled recording holds them (rebuilt
// from the published record), with the files transformers.js reads.
func (b *Bench) PublishedModel() (rerank.ModelManifest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.open(); err != nil {
		return rerank.ModelManifest{}, err
	}
	config, _ := b.crossEncoder.Config.(*pyjson.Object)
	acq := objectOf(get(config, "model"))
	pins := objectOf(get(acq, "files"))
	m := rerank.ModelManifest{Format: rerank.ModelFormat, Description: "The cross-encoder the reference lab scored with; the published record pins its tokenizer and config files."}
	m.Model, _ = get(acq, "model").(string)
	m.Revision, _ = get(acq, "revision").(string)
	m.License, _ = get(acq, "license").(string)
	if m.Model == "" || m.Revision == "" {
		return rerank.ModelManifest{}, fmt.Errorf("the bundled cross-encoder recording names no model and revision")
	}
	for _, f := range publishedModelFiles() {
		pin, ok := get(pins, f.Path).(string)
		if !ok {
			return rerank.ModelManifest{}, fmt.Errorf("the published record pins no sha256 for %s", f.Path)
		}
		f.SHA256 = &pin
		m.Files = append(m.Files, f)
	}
	m.Weights = append(m.Weights, publishedWeights()...)
	return m, nil
}
