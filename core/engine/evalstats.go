package engine

import (
	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/core/stats"
)

// The yes/no outcomes an agent-level experiment rates, in the order they
// are shown, each over its own trials: a target passage read (answerable
// cases), answered, failed (a run that failed or was refused before it
// started), incomplete, a correct abstention (an explicit stop on a case
// the documents cannot answer), valid citations (an answer citing every
// target of an answerable case) and the fixture's pass.
const (
	RateTargetRead        = "target_read"
	RateAnswered          = "answered"
	RateFailed            = "failed"
	RateIncomplete        = "incomplete"
	RateCorrectAbstention = "correct_abstention"
	RateValidCitations    = "valid_citations"
	RatePass              = "pass"
)

// EvalRates lists the rates in order.
func EvalRates() []string {
	return []string{RateTargetRead, RateAnswered, RateFailed, RateIncomplete, RateCorrectAbstention, RateValidCitations, RatePass}
}

// EvalExperiment is an eval as an experiment: each path's rates with 95%
// intervals, and the agent path against the fixed one on every rate.
type EvalExperiment struct {
	// Resamples is how many seeded resamples of the trials made each
	// interval (core/stats).
	Resamples   int              `json:"resamples"`
	Paths       []PathRates      `json:"paths"`
	Comparisons []PathComparison `json:"comparisons"`
}

// PathRates is one path (fixed or agent): its trials, each rate, and what
// its runs took.
type PathRates struct {
	Path   string `json:"path"`
	Trials int    `json:"trials"`
	// Rates are by name (EvalRates), in that order.
	Rates []Rate `json:"rates"`
	// Tokens are the model's, summed over the path's trials (zero for the
	// scripted policy, which calls no model), and their estimated cost
	// at the list price the trials were priced at (core/report's
	// estimate).
	Tokens model.Tokens `json:"tokens"`
	// EstimatedUSD is null when some trial's model is not priced.
	EstimatedUSD *float64 `json:"estimated_usd"`
	// Seconds is the trials' elapsed time, summed (recorded for a replay,
	// measured for a run), and MeanSeconds its mean per trial.
	Seconds     float64 `json:"seconds"`
	MeanSeconds float64 `json:"mean_seconds"`
}

// Rate is how many of Of trials had an outcome, the share (null when Of
// is 0: no trial it applies to) and its 95% interval.
type Rate struct {
	Name  string      `json:"name"`
	Count int         `json:"count"`
	Of    int         `json:"of"`
	Value *float64    `json:"value"`
	CI95  *[2]float64 `json:"ci95"`
}

// PathComparison is path B against path A on one rate, over the pairs of
// trials of the same case and repeat it applies to: B's share minus A's,
// the 95% interval and two-sided p-value from paired resamples of the
// pairs, and the exact McNemar p-value of the discordant pairs (AOnly: A
// yes and B no; BOnly the other way).
type PathComparison struct {
	A          string      `json:"a"`
	B          string      `json:"b"`
	Rate       string      `json:"rate"`
	Pairs      int         `json:"pairs"`
	Difference *float64    `json:"difference"`
	CI95       *[2]float64 `json:"ci95"`
	PValue     *float64    `json:"p_value"`
	AOnly      int         `json:"a_only"`
	BOnly      int         `json:"b_only"`
	McNemarP   float64     `json:"mcnemar_p"`
}

// outcomes are one trial's yes/no outcomes by rate; a rate absent does
// not apply to the trial's case.
func outcomes(c *evaluate.Case, tr report.Trial) map[string]bool {
	status := agent.Failed // a trial refused before it started
	if tr.Result != nil {
		status = tr.Result.Status
	}
	out := map[string]bool{
		RateAnswered:   status == agent.Answered,
		RateFailed:     status == agent.Failed,
		RateIncomplete: status == agent.Incomplete,
		RatePass:       tr.Checks != nil && tr.Checks.Outcome == evaluate.Pass,
	}
	if c == nil || tr.Checks == nil {
		return out
	}
	if c.Answerable() {
		out[RateTargetRead] = tr.Checks.RetrievalTargetsRead != nil && *tr.Checks.RetrievalTargetsRead
		code := tr.Checks.AnswerReason.Code
		out[RateValidCitations] = status == agent.Answered && code != reason.NotAnswered && code != reason.TargetNotCited
	} else {
		out[RateCorrectAbstention] = tr.Checks.Outcome == evaluate.Pass
	}
	return out
}

// experimentOf rates each path of a graded report and compares the agent
// path with the fixed one, trial pairs matched by case and repeat.
func (e *Engine) experimentOf(l *lab.Lab, rep *report.Set) EvalExperiment {
	type key struct {
		caseID string
		repeat int
	}
	paths := []string{string(agent.Fixed), string(agent.Agent)}
	byPath := map[string][]map[string]bool{}
	byPair := map[string]map[key]map[string]bool{}
	out := EvalExperiment{Resamples: stats.Resamples, Paths: []PathRates{}, Comparisons: []PathComparison{}}
	totals := map[string]*PathRates{}
	for _, p := range paths {
		byPair[p] = map[key]map[string]bool{}
		zero := 0.0
		totals[p] = &PathRates{Path: p, Rates: []Rate{}, EstimatedUSD: &zero}
	}
	var order []key
	seen := map[key]bool{}
	for _, tr := range rep.Trials {
		pr, ok := totals[tr.Mode]
		if !ok {
			continue
		}
		c, _ := l.Cases.Case(tr.CaseID)
		o := outcomes(c, tr)
		byPath[tr.Mode] = append(byPath[tr.Mode], o)
		k := key{tr.CaseID, tr.Repeat}
		byPair[tr.Mode][k] = o
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
		pr.Trials++
		if tr.ElapsedSeconds != nil {
			pr.Seconds += *tr.ElapsedSeconds
		}
		if tr.Result != nil {
			t := report.TokensOf(tr.Result, nil).Tokens
			pr.Tokens = pr.Tokens.Add(t)
			switch {
			case t == (model.Tokens{}):
				// no model call: nothing to price
			case tr.Cost == nil:
				pr.EstimatedUSD = nil
			case pr.EstimatedUSD != nil:
				usd := *pr.EstimatedUSD + tr.Cost.TotalUSD
				pr.EstimatedUSD = &usd
			}
		}
	}
	for _, p := range paths {
		pr := totals[p]
		if pr.Trials == 0 {
			continue
		}
		pr.MeanSeconds = pr.Seconds / float64(pr.Trials)
		for _, name := range EvalRates() {
			var xs []float64
			count := 0
			for _, o := range byPath[p] {
				if v, applies := o[name]; applies {
					xs = append(xs, boolValue(v))
					if v {
						count++
					}
				}
			}
			r := Rate{Name: name, Count: count, Of: len(xs)}
			if len(xs) > 0 {
				mean := stats.Mean(xs)
				ci := [2]float64(stats.Resample([][]float64{xs}, stats.Resamples, stats.Seed1, stats.Seed2).CI95(0))
				r.Value, r.CI95 = &mean, &ci
			}
			pr.Rates = append(pr.Rates, r)
		}
		out.Paths = append(out.Paths, *pr)
	}
	if totals[paths[0]].Trials == 0 || totals[paths[1]].Trials == 0 {
		return out
	}
	for _, name := range EvalRates() {
		var a, b []float64
		cmp := PathComparison{A: paths[0], B: paths[1], Rate: name}
		for _, k := range order {
			oa, okA := byPair[paths[0]][k]
			ob, okB := byPair[paths[1]][k]
			if !okA || !okB {
				continue
			}
			va, appliesA := oa[name]
			vb, appliesB := ob[name]
			if !appliesA || !appliesB {
				continue
			}
			a, b = append(a, boolValue(va)), append(b, boolValue(vb))
			switch {
			case va && !vb:
				cmp.AOnly++
			case vb && !va:
				cmp.BOnly++
			}
		}
		cmp.Pairs = len(a)
		cmp.McNemarP = stats.McNemar(cmp.AOnly, cmp.BOnly)
		if len(a) > 0 {
			bs := stats.Resample([][]float64{a, b}, stats.Resamples, stats.Seed1, stats.Seed2)
			d := bs.Paired(0, 1, stats.Mean(a), stats.Mean(b))
			ci := [2]float64(d.CI95)
			cmp.Difference, cmp.CI95, cmp.PValue = &d.Difference, &ci, &d.PValue
		}
		out.Comparisons = append(out.Comparisons, cmp)
	}
	return out
}

func boolValue(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
