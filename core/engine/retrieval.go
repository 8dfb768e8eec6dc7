package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/stats"
	"github.com/ragagentlab/ragagent/core/store"
)

// The metrics of a retrieval experiment, in the order they are shown.
const (
	Recall1  = experiment.Recall1
	Recall5  = experiment.Recall5
	Recall10 = experiment.Recall10
	MRR10    = experiment.MRR10
	NDCG10   = experiment.NDCG10
)

// RetrievalMetrics lists the metrics in order.
func RetrievalMetrics() []string { return experiment.Metrics() }

// The depth a retrieval experiment ranks by default, and its cap.
const (
	DefaultRetrievalK = experiment.DefaultK
	MaxRetrievalK     = experiment.MaxK
)

// AllConfigs names every offline, deterministic built-in configuration
// (RetrievalConfigs order, seed first).
const AllConfigs = "all"

// ConfigRef names a configuration for an experiment: a built-in's name
// (or AllConfigs), or a configuration of one's own as its JSON spec. Its
// JSON form is a string (the name) or an object (the spec).
type ConfigRef struct {
	Name string
	Spec []byte
}

// MarshalJSON is the name as a string, or the spec object.
func (c ConfigRef) MarshalJSON() ([]byte, error) {
	if c.Spec != nil {
		return c.Spec, nil
	}
	return json.Marshal(c.Name)
}

// UnmarshalJSON reads a name (a string) or a spec (an object).
func (c *ConfigRef) UnmarshalJSON(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '"':
		return json.Unmarshal(trimmed, &c.Name)
	case len(trimmed) > 0 && trimmed[0] == '{':
		c.Spec = append([]byte(nil), trimmed...)
		return nil
	}
	return reason.New(reason.InvalidConfig, "a configuration is a built-in's name (a string) or a spec (an object), not %s", clipJSON(trimmed))
}

func clipJSON(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// RetrievalRequest is `ragagent retrieval`: a question set's answerable
// cases ranked under each configuration, the first the baseline. Its
// JSON form is what the page and the node API send ({corpus, cases,
// configs, k}; see ParseRetrievalRequest).
type RetrievalRequest struct {
	// Corpus is the pack ("" is the seed).
	Corpus string `json:"corpus"`
	// Cases is the question set's text (ragagent-cases/1 JSON or TSV);
	// empty means the pack's own cases.
	Cases string `json:"cases,omitempty"`
	// Configs are the configurations, the first the baseline; none means
	// AllConfigs.
	Configs []ConfigRef `json:"configs,omitempty"`
	// K is how many passages each case's ranking holds (1..MaxRetrievalK);
	// 0 means DefaultRetrievalK, whatever the agent's own search depth.
	K int `json:"k,omitempty"`
	// OnCase, if set, sees each case ranked: done of total (cases times
	// configurations) and the configuration's name.
	OnCase func(done, total int, config string) `json:"-"`
	// Models, if set, are this request's models (a vector branch's
	// vectors and embedder), in place of the engine's Options.Models.
	Models Models `json:"-"`
	// Listwise, if set, is how listwise stages call Gemini (live or
	// replayed); without it they are refused.
	Listwise *ListwiseRun `json:"-"`
	// Gemini is a listwise recording's text to replay the listwise
	// stages from (a front end's form of Listwise{Replay}).
	Gemini string `json:"gemini,omitempty"`
	// OnRanked, if set, is given each case's ranking as it is made:
	// configuration c, answerable case a (both 0-based, in the request's
	// order), before the next case is ranked; an error stops the
	// experiment. A server keeps them to resume after a crash.
	OnRanked func(c, a int, r experiment.Ranking) error `json:"-"`
	// Done are rankings made before, by OnRanked's indexes: they are not
	// made again (a resumed experiment ranks only the rest, OnCase counting
	// them done), and the result is the one a run from the start gives.
	// Listwise stages are not resumed.
	Done map[RankedCase]experiment.Ranking `json:"-"`
}

// RankedCase names one ranking of an experiment: configuration C's
// ranking of answerable case A.
type RankedCase struct{ C, A int }

// ParseRetrievalRequest reads a front end's experiment request, JSON
// {corpus, cases, configs, k, gemini}, strictly (unknown keys refused).
func ParseRetrievalRequest(text string) (RetrievalRequest, error) {
	var req RetrievalRequest
	if err := jsonfile.Decode([]byte(text), &req); err != nil {
		if _, ok := reason.Of(err); ok {
			return req, err
		}
		return req, fmt.Errorf("retrieval: the request is not {corpus, cases, configs, k, gemini}: %v", err)
	}
	return req, nil
}

// RetrievalResult is `ragagent retrieval --json`, exactly DESIGN's
// object: the corpus, the depth ranked, the cases and how many are
// answerable, each configuration's metrics and per-case ranks, and each
// configuration after the first compared with it on every metric.
type RetrievalResult struct {
	Corpus      string         `json:"corpus"`
	K           int            `json:"k"`
	Cases       int            `json:"cases"`
	Answerable  int            `json:"answerable"`
	Configs     []ConfigResult `json:"configs"`
	Comparisons []Comparison   `json:"comparisons"`
	// Listwise is what listwise stages did (nil without one): not part of
	// DESIGN's JSON; the command line reports it apart.
	Listwise *ListwiseOutcome `json:"-"`
}

// ConfigResult is one configuration: its name and spec, its metrics and
// the rank of each answerable case, in the set's order.
type ConfigResult struct {
	Name    string         `json:"name"`
	Spec    retrieval.Spec `json:"spec"`
	Metrics Metrics        `json:"metrics"`
	Cases   []CaseRank     `json:"cases"`
}

// Metrics are a configuration's five metrics, in DESIGN's order.
type Metrics struct {
	Recall1  Estimate `json:"recall@1"`
	Recall5  Estimate `json:"recall@5"`
	Recall10 Estimate `json:"recall@10"`
	MRR10    Estimate `json:"mrr@10"`
	NDCG10   Estimate `json:"ndcg@10"`
}

// Get is the metric called name (one of RetrievalMetrics).
func (m *Metrics) Get(name string) (*Estimate, bool) {
	switch name {
	case Recall1:
		return &m.Recall1, true
	case Recall5:
		return &m.Recall5, true
	case Recall10:
		return &m.Recall10, true
	case MRR10:
		return &m.MRR10, true
	case NDCG10:
		return &m.NDCG10, true
	}
	return nil, false
}

// Estimate is a metric's value (unrounded) and its 95% interval.
type Estimate struct {
	Value float64    `json:"value"`
	CI95  [2]float64 `json:"ci95"`
}

// CaseRank is one answerable case's rank: the 1-based rank of the first
// passage matching a target within k, or null.
type CaseRank struct {
	ID   string `json:"id"`
	Rank *int   `json:"rank"`
}

// Comparison is configuration B against the baseline A on one metric:
// B minus A, its 95% interval from paired resamples and the two-sided
// p-value from the same resamples.
type Comparison struct {
	A          string     `json:"a"`
	B          string     `json:"b"`
	Metric     string     `json:"metric"`
	Difference float64    `json:"difference"`
	CI95       [2]float64 `json:"ci95"`
	PValue     float64    `json:"p_value"`
}

// resolveConfigs turns the request's references into specs, in order:
// AllConfigs adds every built-in not already named; a name repeated with
// the same settings counts once, two different configurations under one
// name are refused (comparisons are by name).
func resolveConfigs(refs []ConfigRef, models, listwise bool) ([]retrieval.Spec, error) {
	if len(refs) == 0 {
		refs = []ConfigRef{{Name: AllConfigs}}
	}
	var out []retrieval.Spec
	byName := map[string]string{}
	add := func(s retrieval.Spec, explicit bool) error {
		if sum, dup := byName[s.Name]; dup {
			if sum != s.SHA256() && explicit {
				return reason.New(reason.InvalidConfig, "two different configurations are called %q; rename one (comparisons are by name)", s.Name)
			}
			return nil
		}
		byName[s.Name] = s.SHA256()
		out = append(out, s)
		return nil
	}
	for _, r := range refs {
		switch {
		case r.Spec != nil:
			s, err := retrieval.Parse(r.Spec)
			if err != nil {
				return nil, err
			}
			if err := add(s, true); err != nil {
				return nil, err
			}
		case r.Name == AllConfigs:
			for _, s := range retrieval.Builtins() {
				if err := add(s, false); err != nil {
					return nil, err
				}
			}
		default:
			s, err := retrieval.Lookup(r.Name)
			if err != nil {
				return nil, err
			}
			if err := add(s, true); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range out {
		needsModel := s.Fusion != nil || s.SecondStage.Method == retrieval.StageCrossEncoder
		if models && needsModel {
			continue // checked when its models are opened
		}
		if err := s.Runnable(); err != nil && !(listwise && s.SecondStage.Method == retrieval.StageListwise) {
			return nil, err
		}
	}
	return out, nil
}

// Retrieval ranks a question set's answerable cases under each
// configuration and compares each with the first: recall@1/5/10, mrr@10
// and nDCG@10 with 95% intervals from the seeded resampling of
// core/stats, and paired differences. Everything is checked (the set,
// every configuration) before anything is ranked. The index is the
// pack's, held from the runs while it ranks.
func (e *Engine) Retrieval(ctx context.Context, req RetrievalRequest) (*RetrievalResult, error) {
	k := req.K
	if k == 0 {
		k = DefaultRetrievalK
	}
	if k < 1 || k > MaxRetrievalK {
		return nil, fmt.Errorf("retrieval: k must be from 1 to %d, got %d", MaxRetrievalK, req.K)
	}
	if req.Gemini != "" {
		if req.Listwise != nil {
			return nil, errors.New("retrieval: a listwise recording to replay and a listwise run are two ways; give one")
		}
		rec, err := recording.Parse([]byte(req.Gemini))
		if err != nil {
			return nil, fmt.Errorf("retrieval: the listwise recording: %w", err)
		}
		req.Listwise = &ListwiseRun{Replay: rec}
	}
	models := req.Models
	if models == nil {
		models = e.models
	}
	specs, err := resolveConfigs(req.Configs, models != nil, req.Listwise != nil)
	if err != nil {
		return nil, err
	}
	r, err := e.rank(ctx, req, specs, models, k)
	if err != nil {
		return nil, err
	}
	l, answerable, rankings, lw := r.lab, r.answerable, r.rankings, r.listwise
	res := summarize(l.Pack.Manifest.ID, k, len(l.Cases.Cases), answerable, specs, rankings)
	if lw != nil {
		res.Listwise = lw.outcome
	}
	return res, nil
}

// openSearcher opens spec over base; a vector branch gets the pack's
// vectors and its model's embedder, and the cases' questions embedded up
// front; a cross-encoder stage its scorer.
func (e *Engine) openSearcher(ctx context.Context, models Models, keep bool, l *lab.Lab, base *retrieval.Base, spec retrieval.Spec, cases []*evaluate.Case) (*retrieval.Searcher, error) {
	if spec.Fusion == nil && spec.SecondStage.Method != retrieval.StageCrossEncoder {
		return base.Open(spec)
	}
	v, err := e.modelsFor(ctx, models, keep, l, spec)
	if err != nil {
		return nil, err
	}
	s, err := base.OpenModels(spec, v)
	if err != nil {
		return nil, err
	}
	questions := make([]string, len(cases))
	for i, c := range cases {
		questions[i] = c.Question
	}
	return s, s.Prefetch(questions)
}

// summarize is the experiment's result: each configuration's metrics with
// intervals from one resampling of the answerable cases (the same draws
// for every configuration and metric, so each comparison is paired).
func summarize(corpusID string, k, cases int, answerable []*evaluate.Case, specs []retrieval.Spec, rankings [][]experiment.Ranking) *RetrievalResult {
	metrics := experiment.Metrics()
	series := make([][]float64, 0, len(specs)*len(metrics))
	for _, rs := range rankings {
		for _, m := range metrics {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = r.Value(m)
			}
			series = append(series, xs)
		}
	}
	bs := stats.Resample(series, stats.Resamples, stats.Seed1, stats.Seed2)
	out := &RetrievalResult{Corpus: corpusID, K: k, Cases: cases, Answerable: len(answerable), Configs: []ConfigResult{}, Comparisons: []Comparison{}}
	for c, spec := range specs {
		cr := ConfigResult{Name: spec.Name, Spec: spec, Cases: make([]CaseRank, len(answerable))}
		for j, m := range metrics {
			s := c*len(metrics) + j
			est, _ := cr.Metrics.Get(m)
			*est = Estimate{Value: stats.Mean(series[s]), CI95: bs.CI95(s)}
		}
		for i, r := range rankings[c] {
			cr.Cases[i].ID = answerable[i].ID
			if r.Rank > 0 {
				rank := r.Rank
				cr.Cases[i].Rank = &rank
			}
		}
		out.Configs = append(out.Configs, cr)
	}
	for c := 1; c < len(specs); c++ {
		for j, m := range metrics {
			a, b := j, c*len(metrics)+j
			d := bs.Paired(a, b, stats.Mean(series[a]), stats.Mean(series[b]))
			out.Comparisons = append(out.Comparisons, Comparison{A: specs[0].Name, B: specs[c].Name, Metric: m,
				Difference: d.Difference, CI95: d.CI95, PValue: d.PValue})
		}
	}
	return out
}

// JSON is the result as `ragagent retrieval --json` prints it: indented
// two spaces, nothing HTML-escaped, a final newline. The command line and
// the page's download (the wasm export) both write these bytes, so a
// download equals the command's output for the same input.
func (r *RetrievalResult) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseQuestionSet reads a question set's text exactly as an experiment
// (and the command line's --cases) reads it: the file's rules
// (ragagent-cases/1 or TSV, bounded) and then the pack's, each version one
// of the pack's and each target some passage's (lab.CheckCases), every
// refusal one invalid_cases line naming the case and field. It returns
// the cases, a case without a version given the pack's default: what the
// page shows beside each question's ranks, its early check of a file a
// person chose, and its check of a question set it keeps.
func (e *Engine) ParseQuestionSet(corpusID, text string) ([]evaluate.Case, error) {
	l, err := e.labFor(corpusID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return nil, reason.New(reason.InvalidCases, "the question set is empty")
	}
	checked, err := l.WithCases([]byte(text))
	if err != nil {
		return nil, err
	}
	return append([]evaluate.Case(nil), checked.Cases.Cases...), nil
}

// ranked is a question set's answerable cases ranked under each
// configuration: what an experiment summarizes and tune chooses from.
type ranked struct {
	lab        *lab.Lab
	answerable []*evaluate.Case
	rankings   [][]experiment.Ranking
	listwise   *listwise
}

// rank ranks req's question set (or the pack's own) under each of specs,
// k passages deep, telling req.OnCase of each case ranked.
func (e *Engine) rank(ctx context.Context, req RetrievalRequest, specs []retrieval.Spec, models Models, k int) (*ranked, error) {
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	if req.Cases != "" {
		if l, err = l.WithCases([]byte(req.Cases)); err != nil {
			return nil, err
		}
	}
	var answerable []*evaluate.Case
	for i := range l.Cases.Cases {
		if c := &l.Cases.Cases[i]; c.Answerable() {
			answerable = append(answerable, c)
		}
	}
	if len(answerable) == 0 {
		if len(l.Cases.Cases) == 0 {
			return nil, reason.New(reason.InvalidCases, "pack %s has no cases of its own; give a question set", l.Pack.Manifest.ID)
		}
		return nil, reason.New(reason.InvalidCases, "the question set has no answerable case (every one names no target), so there is nothing to rank")
	}
	hasListwise := false
	for _, spec := range specs {
		hasListwise = hasListwise || spec.SecondStage.Method == retrieval.StageListwise
	}
	if hasListwise && (req.OnRanked != nil || len(req.Done) > 0) {
		return nil, errors.New("retrieval: an experiment with a listwise stage is not resumed case by case")
	}
	if hasListwise && req.Listwise.Replay == nil {
		release, ok := e.rerank.HoldLedger()
		if !ok {
			return nil, ErrLedgerBusy
		}
		defer release()
	}
	rankings := make([][]experiment.Ranking, len(specs))
	total, done := len(answerable)*len(specs), 0
	var lw *listwise
	err = l.Ranking(func(base *retrieval.Base, heads []corpus.Passage, index func(func() error) error) error {
		ideals := experiment.Ideals(answerable, heads, k)
		if hasListwise {
			var err error
			if lw, err = e.planListwise(ctx, req.Listwise, base, index, heads, specs, answerable, ideals, k); err != nil {
				return err
			}
		}
		for i, spec := range specs {
			at := 0
			var opened *retrieval.Searcher
			err := index(func() (err error) {
				if spec.SecondStage.Method == retrieval.StageListwise {
					opened, err = base.OpenModels(spec, retrieval.Models{Ctx: ctx, Lister: lw.lister(spec, answerable, &at, req.Listwise.OnCall)})
				} else {
					opened, err = e.openSearcher(ctx, models, req.Models == nil, l, base, spec, answerable)
				}
				return err
			})
			if err != nil {
				return err
			}
			s := indexSearcher{opened, index}
			tick := func() error {
				done++
				at++
				if req.OnCase != nil {
					req.OnCase(done, total, spec.Name)
				}
				return ctx.Err()
			}
			if req.OnRanked != nil || len(req.Done) > 0 {
				rankings[i], err = rankEach(req, i, answerable, heads, ideals, s, k, tick)
			} else {
				rankings[i], err = experiment.Rank(answerable, heads, ideals, s, k, tick)
			}
			if err != nil {
				return fmt.Errorf("configuration %s: %w", spec.Name, err)
			}
		}
		return nil
	})
	if lw != nil {
		err = errors.Join(err, lw.finish())
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, reason.New(reason.Cancelled, "the experiment was stopped")
		}
		return nil, err
	}
	return &ranked{lab: l, answerable: answerable, rankings: rankings, listwise: lw}, nil
}

// indexSearcher is an experiment's searcher reaching the pack's index
// through Lab.Ranking's index: each search holds the runs' searches off
// while it lasts, and no longer.
type indexSearcher struct {
	s     *retrieval.Searcher
	index func(func() error) error
}

func (is indexSearcher) Search(query string, k int, version string) (hits []store.Hit, err error) {
	err = is.index(func() error {
		hits, err = is.s.Search(query, k, version)
		return err
	})
	return hits, err
}

// rankEach is experiment.Rank one case at a time for configuration c:
// a ranking in req.Done is taken as made (tick counts it), every other is
// made, given to req.OnRanked and then counted.
func rankEach(req RetrievalRequest, c int, cases []*evaluate.Case, heads []corpus.Passage, ideals []int, s experiment.Searcher, k int, tick func() error) ([]experiment.Ranking, error) {
	out := make([]experiment.Ranking, len(cases))
	for a := range cases {
		if r, ok := req.Done[RankedCase{c, a}]; ok {
			out[a] = r
			if err := tick(); err != nil {
				return nil, err
			}
			continue
		}
		rs, err := experiment.Rank(cases[a:a+1], heads, ideals[a:a+1], s, k, nil)
		if err != nil {
			return nil, err
		}
		out[a] = rs[0]
		if req.OnRanked != nil {
			if err := req.OnRanked(c, a, rs[0]); err != nil {
				return nil, err
			}
		}
		if err := tick(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RetrievalPlan is what an experiment request will rank, checked before
// anything is ranked: its configurations' names in order (the first the
// baseline), the question set's cases and answerable cases, and the
// depth. A server admits an experiment on it and counts its progress
// against Total.
type RetrievalPlan struct {
	Corpus     string
	Configs    []string
	Cases      int
	Answerable int
	K          int
}

// Total is how many rankings the experiment makes: each answerable case
// under each configuration.
func (p RetrievalPlan) Total() int { return p.Answerable * len(p.Configs) }

// PlanRetrieval checks req as Retrieval would (k, the configurations, the
// question set and its answerable cases) without ranking anything, so a
// server refuses a bad request with its reason code when it is sent, not
// when the experiment starts. A request with a listwise stage or a
// configuration needing models this engine lacks is refused as Retrieval
// would refuse it.
func (e *Engine) PlanRetrieval(req RetrievalRequest) (RetrievalPlan, error) {
	k := req.K
	if k == 0 {
		k = DefaultRetrievalK
	}
	if k < 1 || k > MaxRetrievalK {
		return RetrievalPlan{}, reason.New(InvalidField, "k must be from 1 to %d, got %d", MaxRetrievalK, req.K)
	}
	models := req.Models
	if models == nil {
		models = e.models
	}
	specs, err := resolveConfigs(req.Configs, models != nil, false)
	if err != nil {
		return RetrievalPlan{}, err
	}
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return RetrievalPlan{}, err
	}
	if req.Cases != "" {
		if l, err = l.WithCases([]byte(req.Cases)); err != nil {
			return RetrievalPlan{}, err
		}
	}
	p := RetrievalPlan{Corpus: l.Pack.Manifest.ID, Cases: len(l.Cases.Cases), K: k}
	for i := range l.Cases.Cases {
		if l.Cases.Cases[i].Answerable() {
			p.Answerable++
		}
	}
	if p.Answerable == 0 {
		if p.Cases == 0 {
			return RetrievalPlan{}, reason.New(reason.InvalidCases, "pack %s has no cases of its own; give a question set", p.Corpus)
		}
		return RetrievalPlan{}, reason.New(reason.InvalidCases, "the question set has no answerable case (every one names no target), so there is nothing to rank")
	}
	for _, s := range specs {
		p.Configs = append(p.Configs, s.Name)
	}
	return p, nil
}

// QuestionSetObject is a question set's text (ragagent-cases/1 JSON or a
// TSV) as the ragagent-cases/1 object a server's experiment takes (`"cases":
// {...}`): read as --cases reads it, so a set the command line refuses is
// refused before anything is sent, with the same invalid_cases line. A
// JSON set is sent as written; a TSV becomes the object its rows mean
// (split held-out, no patterns), which ranks as the TSV does.
func QuestionSetObject(text string) ([]byte, error) {
	cs, err := evaluate.ParseCases([]byte(text))
	if err != nil {
		return nil, err
	}
	if t := strings.TrimLeft(text, " \t\r\n\ufeff"); strings.HasPrefix(t, "{") {
		return []byte(t), nil
	}
	return json.Marshal(cs)
}
