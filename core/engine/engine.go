// Package engine is the lab as its front ends use it: the command line, the
// page's WebAssembly adapter and the server all call these typed requests,
// so the rules they share (the pre-send refusals, how a recorded live run
// starts, case filters, exchange totals, the plan's caps, the defaults of
// a run request) are written once.
//
// An Engine holds the seed corpus with its index and cases, the bundled
// recordings, a session of runs (numbered, graded when they ask an
// authored case's question, live ones recorded), the reranking lab
// (core/reranklab's Bench, its suite opened on first use) and a registry
// of cancellable jobs. It knows no flags, files, DOM or keys: a front end
// passes a gemini.Transport (which holds the key), a budget.Store (where
// the ledger lives) and a save function (where a live recording goes).
//
// The engine is sealed: its API hands out its own types and those of the
// small vocabulary packages below it (core/report's trial reports,
// core/agent's tasks and results, core/evaluate's checks, core/rerank's
// records, core/reason's codes, core/recording's files), never the opened
// lab, the reranking suite, the tools or the index behind it, so a front
// end cannot come to depend on them (internal/layout
// TestTheEngineHandsOutItsOwnTypes). A run request is read by RunParser
// alone, whichever front end sent it.
package engine

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// MaxQuestionChars is the question's length cap in code points (the
// controller refuses a longer one with invalid_question).
const MaxQuestionChars = 512

// Options configure an engine.
type Options struct {
	// Clock times runs, stamps recordings and dates ledger entries; nil
	// means time.Now.
	Clock func() time.Time
	// Allowance is the session's live request allowance
	// (1..gemini.MaxAllowance); 0 means gemini.MaxAllowance.
	Allowance int
	// Prices is the price table for cost estimates; nil means the shipped
	// table (see PriceTable).
	Prices *price.Table
	// Packs are corpus packs besides the seed, opened when a request first
	// names one.
	Packs []PackSource
	// SHA256 hashes a pack's passages file (lower-case hex) to check it
	// against its manifest; nil means Go's crypto/sha256. The page's
	// adapter passes the browser's own (SubtleCrypto), many times faster
	// than Go's portable code compiled to WebAssembly.
	SHA256 func([]byte) (string, error)
	// Models run the configurations that need a model (a vector
	// branch); nil refuses them with reason.UnknownConfig.
	Models Models
}

// PriceTable is the shipped price table, each source ending with the
// front end's hint on how to change it ("override with --price"), with
// the overrides of spec (model=input/output,...) applied. A price whose
// worst-case estimate is not a finite amount is refused (see
// CheckRate).
func PriceTable(hint, spec string) (price.Table, error) {
	t := price.Defaults()
	if hint != "" {
		rates := t.Rates()
		for i := range rates {
			rates[i].Source += "; " + hint
		}
		t = price.NewTable(rates...)
	}
	t, err := t.Override(spec)
	if err != nil {
		return price.Table{}, err
	}
	for _, r := range t.Rates() {
		if err := CheckRate(r); err != nil {
			return price.Table{}, err
		}
	}
	return t, nil
}

// CheckRate refuses a price whose worst-case estimate (the whole allowance
// of full-size requests, WorstCaseUSD) is not a finite amount: finite
// prices such as 1e308 per million tokens overflow to +Inf, which no plan
// can show, no ledger can reserve and no JSON can carry.
func CheckRate(r price.Rate) error {
	if usd := WorstCaseUSD(r, gemini.MaxAllowance); math.IsInf(usd, 0) || math.IsNaN(usd) {
		return fmt.Errorf("the price of %s (%g/%g US dollars per million tokens) gives a worst-case estimate that is not finite; give a realistic price",
			r.Model, r.InputPerMTok, r.OutputPerMTok)
	}
	return nil
}

// Engine is the lab behind a front end. It is safe for concurrent use.
type Engine struct {
	lab       *lab.Lab
	clock     func() time.Time
	allowance *gemini.Allowance
	prices    price.Table
	bundled   *recording.File
	session   session
	loaded    kept
	rerank    *reranklab.Bench
	jobs      jobs
	packs     packs
	sha256    func([]byte) (string, error)
	models    Models
	vectors   vectorSets
}

// Open validates the seed corpus and cases, opens the seed's index from
// its lexicon (fixtures.SeedLexicon: no SQLite until something asks for
// snippets or another pack) and parses the bundled recording.
func Open(o Options) (*Engine, error) {
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	n := o.Allowance
	if n == 0 {
		n = gemini.MaxAllowance
	}
	a, err := gemini.NewAllowance(n)
	if err != nil {
		return nil, err
	}
	l, err := lab.OpenPackWith(fixtures.SeedManifest, fixtures.Snapshot, fixtures.SeedLexicon, fixtures.Cases, nil)
	if err != nil {
		return nil, err
	}
	bundled, err := recording.Parse(recordings.AgentComparison)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("the bundled recording: %w", err)
	}
	prices := price.Defaults()
	if o.Prices != nil {
		prices = *o.Prices
	}
	e := &Engine{lab: l, clock: clock, allowance: a, prices: prices, bundled: bundled, sha256: o.SHA256, models: o.Models}
	if err := e.packs.init(l, o.Packs); err != nil {
		l.Close()
		return nil, err
	}
	e.session.repeat = map[string]int{}
	e.rerank = reranklab.NewBench(clock, a)
	return e, nil
}

// Close releases the indexes.
func (e *Engine) Close() error {
	err := e.rerank.Close()
	if perr := e.packs.close(); err == nil {
		err = perr
	}
	return err
}

// Allowance is the session's live request allowance, shared by every live
// run and live rerank the engine makes.
func (e *Engine) Allowance() *gemini.Allowance { return e.allowance }

// Prices is the price table in force, with the front end's hint.
func (e *Engine) Prices() price.Table { return e.prices }

// Rate is the model's price, if the table has one.
func (e *Engine) Rate(model string) (price.Rate, bool) { return e.prices.Rate(model) }

// Bundled is the bundled 16-trial comparison recording.
func (e *Engine) Bundled() *recording.File { return e.bundled }

// since is the milliseconds from t to now on the engine's clock.
func (e *Engine) since(t time.Time) float64 {
	return float64(e.clock().Sub(t).Microseconds()) / 1000
}

// Info is what a front end shows before anything runs: the corpus, the
// cases, the versions, the limits with their caps and defaults, the modes,
// the policies, and the engine's constants.
type Info struct {
	Passages  []Passage       `json:"passages"`
	Cases     []evaluate.Case `json:"cases"`
	Versions  []string        `json:"versions"`
	Limits    LimitsInfo      `json:"limits"`
	Modes     []string        `json:"modes"`
	Policies  []Policy        `json:"policies"`
	Constants Constants       `json:"constants"`
}

// Passage is a corpus passage with its size in bytes (what a read costs).
type Passage struct {
	corpus.Passage
	Bytes int `json:"bytes"`
}

// LimitsInfo lists the limits with their caps, and the defaults.
type LimitsInfo struct {
	Fields   []LimitField `json:"fields"`
	Defaults agent.Limits `json:"defaults"`
}

// LimitField is one limit's name and cap.
type LimitField struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
}

// Constants are the engine's fixed settings, so no front end restates
// them: the models and their endpoints, the seed's default version (a
// pack's is in its manifest), the seed's search depth, the cap on a file read, the caps on every live request, the price
// table and the note that labels every cost.
type Constants struct {
	Model            string       `json:"model"`
	Endpoint         string       `json:"endpoint"`
	ListwiseModel    string       `json:"listwise_model"`
	ListwiseEndpoint string       `json:"listwise_endpoint"`
	DefaultVersion   string       `json:"default_version"`
	SearchK          int          `json:"search_k"`
	MaxQuestionChars int          `json:"max_question_chars"`
	MaxInputBytes    int          `json:"max_input_bytes"` // a file read: a recording the page is given, a file the command line opens
	Caps             Caps         `json:"caps"`
	Prices           []price.Rate `json:"prices"`
	EstimateNote     string       `json:"estimate_note"`
	// Documents are the bounds of a pack built from a person's files.
	Documents DocumentCaps `json:"documents"`
}

// Caps are the guarantees every live request is sent under.
type Caps struct {
	RequestBytes       int    `json:"request_bytes"`
	ResponseBytes      int    `json:"response_bytes"`
	CallTimeoutSeconds int    `json:"call_timeout_seconds"`
	AllowanceMax       int    `json:"allowance_max,omitempty"`
	RunSeconds         int    `json:"run_seconds,omitempty"`
	Retries            int    `json:"retries"`
	Redirects          string `json:"redirects"`
}

// caps are the live request caps (runSeconds 0 when no run is planned).
func caps(runSeconds int) Caps {
	return Caps{RequestBytes: gemini.MaxRequestBytes, ResponseBytes: gemini.MaxResponseBytes,
		CallTimeoutSeconds: int(gemini.MaxCallTimeout / time.Second), RunSeconds: runSeconds, Retries: 0, Redirects: "refused"}
}

// Info describes the engine.
func (e *Engine) Info() Info {
	versions := map[string]bool{}
	for _, p := range e.lab.Snapshot.Passages {
		versions[p.Version] = true
	}
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	var fields []LimitField
	for _, f := range agent.LimitFields() {
		fields = append(fields, LimitField{Name: f.Name, Max: f.Max})
	}
	return Info{Passages: e.Passages(), Cases: e.lab.Cases.Cases, Versions: vs,
		Limits: LimitsInfo{Fields: fields, Defaults: agent.DefaultLimits()},
		Modes:  []string{string(agent.Agent), string(agent.Fixed)}, Policies: Policies(), Constants: e.Constants()}
}

// Constants are the engine's fixed settings.
func (e *Engine) Constants() Constants {
	c := caps(0)
	c.AllowanceMax = gemini.MaxAllowance
	return Constants{Model: gemini.Model, Endpoint: gemini.Endpoint,
		ListwiseModel: reranklab.ListwiseModel, ListwiseEndpoint: gemini.ModelEndpoint(reranklab.ListwiseModel),
		DefaultVersion: e.lab.Pack.Manifest.DefaultVersion, SearchK: agent.SearchK, MaxQuestionChars: MaxQuestionChars,
		MaxInputBytes: jsonfile.MaxInputBytes, Caps: c, Prices: e.prices.Rates(), EstimateNote: report.EstimateNote, Documents: documentCaps()}
}

// Passages lists the corpus with each passage's size.
func (e *Engine) Passages() []Passage {
	ps := e.lab.Snapshot.Passages
	out := make([]Passage, len(ps))
	for i, p := range ps {
		out[i] = Passage{Passage: p, Bytes: p.Bytes()}
	}
	return out
}

// session is the runs one person makes in an engine: numbered, graded
// when they ask an authored case's question, and every attempt of its live
// runs kept in one recording.
type session struct {
	mu     sync.Mutex
	rec    *recording.Recorder // made by the first live run kept in memory
	runs   int
	repeat map[string]int // case/mode -> runs so far
}
