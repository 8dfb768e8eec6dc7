package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/stats"
	"github.com/ragagentlab/ragagent/core/tune"
)

// TuneRequest is `ragagent tune`: a pack and a question set to choose a
// retrieval configuration for. Its JSON form is what the page and the
// node API send ({corpus, cases, folds}).
type TuneRequest struct {
	// Corpus is the pack ("" is the seed).
	Corpus string `json:"corpus"`
	// Cases is the question set's text; empty means the pack's own cases.
	Cases string `json:"cases,omitempty"`
	// Folds is the number of cross-validation folds; 0 means
	// tune.DefaultFolds.
	Folds int `json:"folds,omitempty"`
	// Vectors and CrossEncoders widen the search with the models the
	// engine's Models holds (tune.WithModels over the pack's default and
	// general): `ragagent tune --model DIR --vectors DIR`.
	Vectors       []TuneVectors `json:"vectors,omitempty"`
	CrossEncoders []string      `json:"cross_encoders,omitempty"`
	// OnCase, if set, sees each case ranked (done of total, cases times
	// configurations): a long search's progress.
	OnCase func(done, total int, config string) `json:"-"`
}

// TuneVectors is a vector branch tune may fuse: the sentence encoder's
// id and the pack's vectors file of it.
type TuneVectors = tune.Vectors

// ParseTuneRequest reads a front end's tune request strictly.
func ParseTuneRequest(text string) (TuneRequest, error) {
	var req TuneRequest
	if err := jsonfile.Decode([]byte(text), &req); err != nil {
		return req, fmt.Errorf("tune: the request is not {corpus, cases, folds, vectors, cross_encoders}: %v", err)
	}
	return req, nil
}

// TuneResult is `ragagent tune --json` (DESIGN's fourth phase): the
// chosen configuration, the cross-validated estimate of the choice with
// 95% intervals, its paired differences against seed and the pack's
// default, the folds, and a warning when the set is too small to tell.
type TuneResult struct {
	Corpus     string `json:"corpus"`
	Cases      int    `json:"cases"`
	Answerable int    `json:"answerable"`
	// Space is how many configurations were compared.
	Space  int            `json:"space"`
	Folds  int            `json:"folds"`
	Chosen retrieval.Spec `json:"chosen"`
	// Estimate is the choice's cross-validated score: each question under
	// the configuration chosen without its fold.
	Estimate TuneEstimate `json:"estimate"`
	// InSample is the chosen configuration's score on every question, the
	// ones it was chosen on: optimistic, for comparison only.
	InSample TuneEstimate `json:"in_sample"`
	// Against compares the estimate with seed and with the pack's default
	// (once when they are the same), paired by question.
	Against []TuneComparison `json:"against"`
	// FoldChoices name the configuration chosen without each fold.
	FoldChoices []string `json:"fold_choices"`
	// Warning says, in plain words, when the set cannot tell the choice
	// from seed or from the default.
	Warning string `json:"warning,omitempty"`
}

// TuneEstimate is the two metrics tune reports.
type TuneEstimate struct {
	MRR10    Estimate `json:"mrr@10"`
	Recall10 Estimate `json:"recall@10"`
}

// TuneComparison is the choice's estimate minus a baseline's score on
// one metric, with its 95% interval and p-value from paired resamples.
type TuneComparison struct {
	Name       string     `json:"name"`
	Metric     string     `json:"metric"`
	Difference float64    `json:"difference"`
	CI95       [2]float64 `json:"ci95"`
	PValue     float64    `json:"p_value"`
}

// Tune ranks the question set's answerable cases under every
// configuration of tune.Space (and the pack's default, when it is not
// one of them), chooses by tune.Choose (the pack's default stays unless
// the questions show better) and estimates the choice.
func (e *Engine) Tune(ctx context.Context, req TuneRequest) (*TuneResult, error) {
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	space := tune.Space()
	def := l.Retrieval
	if def.Name == "" {
		def, _ = retrieval.Lookup(retrieval.Seed)
	}
	specs, defAt := space, -1
	for i, s := range space {
		if bytes.Equal(tune.Settings(s), tune.Settings(def)) {
			defAt = i
		}
	}
	if defAt < 0 {
		specs = append(append([]retrieval.Spec(nil), space...), def)
		defAt = len(specs) - 1
	}
	if len(req.Vectors) > 0 || len(req.CrossEncoders) > 0 {
		if e.models == nil {
			return nil, reason.New(reason.UnknownConfig, "tune: a vector branch or a cross-encoder needs its model, which this engine was not given (ragagent tune --model DIR --vectors DIR)")
		}
		general, _ := retrieval.Lookup(retrieval.General)
		more, err := tune.WithModels([]retrieval.Spec{def, general}, req.Vectors, req.CrossEncoders)
		if err != nil {
			return nil, reason.New(reason.InvalidConfig, "%v", err)
		}
		specs = append(specs[:len(specs):len(specs)], more...)
	}
	k := DefaultRetrievalK
	r, err := e.rank(ctx, RetrievalRequest{Corpus: req.Corpus, Cases: req.Cases, OnCase: req.OnCase}, specs, e.models, k)
	if err != nil {
		return nil, err
	}
	scores := tune.Scores{}
	series := func(i int, metric string) []float64 {
		xs := make([]float64, len(r.rankings[i]))
		for q, rk := range r.rankings[i] {
			xs[q] = rk.Value(metric)
		}
		return xs
	}
	for i := range specs {
		scores.MRR = append(scores.MRR, series(i, experiment.MRR10))
		scores.Recall = append(scores.Recall, series(i, experiment.Recall10))
	}
	choice, err := tune.Choose(scores, defAt, req.Folds)
	if err != nil {
		return nil, reason.New(reason.InvalidCases, "%v", err)
	}
	// Series: the estimate's two, the in-sample two, seed's, the default's.
	all := [][]float64{choice.MRR, choice.Recall, scores.MRR[choice.Chosen], scores.Recall[choice.Chosen],
		scores.MRR[0], scores.Recall[0], series(defAt, experiment.MRR10), series(defAt, experiment.Recall10)}
	bs := stats.Resample(all, stats.Resamples, stats.Seed1, stats.Seed2)
	est := func(s int) Estimate { return Estimate{Value: stats.Mean(all[s]), CI95: bs.CI95(s)} }
	out := &TuneResult{Corpus: l.Pack.Manifest.ID, Cases: len(r.lab.Cases.Cases), Answerable: len(r.answerable), Space: len(specs),
		Folds: choice.Folds, Chosen: specs[choice.Chosen], Estimate: TuneEstimate{est(0), est(1)}, InSample: TuneEstimate{est(2), est(3)},
		Against: []TuneComparison{}, FoldChoices: []string{}}
	against := func(name string, mrr, recall int) {
		for _, m := range []struct {
			metric string
			a, b   int
		}{{experiment.MRR10, mrr, 0}, {experiment.Recall10, recall, 1}} {
			d := bs.Paired(m.a, m.b, stats.Mean(all[m.a]), stats.Mean(all[m.b]))
			out.Against = append(out.Against, TuneComparison{Name: name, Metric: m.metric, Difference: d.Difference, CI95: d.CI95, PValue: d.PValue})
		}
	}
	against(retrieval.Seed, 4, 5)
	if def.Name != retrieval.Seed {
		against(def.Name, 6, 7)
	}
	for _, c := range choice.FoldChoices {
		out.FoldChoices = append(out.FoldChoices, specs[c].Name)
	}
	out.Warning = tuneWarning(out)
	return out, nil
}

// tuneWarning is the plain warning a small or undecided set earns, or "".
func tuneWarning(r *TuneResult) string {
	var undecided []string
	for _, a := range r.Against {
		if a.Metric == experiment.MRR10 && a.Name != r.Chosen.Name && a.CI95[0] <= 0 && a.CI95[1] >= 0 {
			undecided = append(undecided, a.Name)
		}
	}
	switch {
	case r.Answerable < tune.SmallSet:
		return fmt.Sprintf("only %d answerable questions: too few to tell configurations apart by a few hundredths; write at least %d before trusting the choice", r.Answerable, tune.SmallSet)
	case len(undecided) > 0:
		return fmt.Sprintf("the set cannot tell the choice from %s (the 95%% interval of the MRR@10 difference holds 0): write more questions before trusting the difference", joinAnd(undecided))
	}
	return ""
}

func joinAnd(xs []string) string {
	if len(xs) == 2 {
		return xs[0] + " and " + xs[1]
	}
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

// JSON is the result as `ragagent tune --json` prints it (indented two
// spaces, nothing HTML-escaped, a final newline): the same bytes from the
// command line, node and the page.
func (r *TuneResult) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SpecFile is a spec as `--out` writes it and `--config FILE` reads it:
// indented JSON with a final newline.
func SpecFile(s retrieval.Spec) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ApplyDefault makes a configuration (a built-in's name or a spec's JSON)
// the open pack's default for the rest of the engine's life: its searches,
// the agent's among them, rank by it, as `ragagent corpus config` makes it
// a built pack's for good. The manifest and its receipt stay as loaded;
// the seed's search stays the seed's.
func (e *Engine) ApplyDefault(id, config string) (*PackInfo, error) {
	if id == "" || id == SeedPack {
		return nil, reason.New(reason.InvalidConfig, "the seed's search is the seed's: choose another pack to change its default")
	}
	spec, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	if err := spec.Runnable(); err != nil {
		return nil, err
	}
	l, err := e.labFor(id)
	if err != nil {
		return nil, err
	}
	p, err := e.packs.entry(id)
	if err != nil {
		return nil, err
	}
	p.once.Lock()
	view, err := l.Under(spec)
	if err == nil {
		p.opened.Store(view)
	}
	p.once.Unlock()
	if err != nil {
		return nil, err
	}
	return e.PackInfo(id)
}
