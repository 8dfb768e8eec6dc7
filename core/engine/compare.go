package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/stats"
)

// RankMetrics are the metrics a kept experiment's ranks give again on
// their own (the rank of the first matching passage is enough): recall@1,
// recall@5, recall@10 and mrr@10. nDCG@10 needs every matching rank and
// the ideal count, which `ragagent retrieval --json` does not print, so
// two kept experiments are not compared on it.
func RankMetrics() []string {
	return []string{experiment.Recall1, experiment.Recall5, experiment.Recall10, experiment.MRR10}
}

// KeptExperiment is what a comparison reads of a `ragagent retrieval
// --json` result (other fields are ignored): its depth and each
// configuration's name and per-case ranks.
type KeptExperiment struct {
	K       int          `json:"k"`
	Configs []KeptConfig `json:"configs"`
}

// KeptConfig is one configuration of a kept experiment.
type KeptConfig struct {
	Name  string     `json:"name"`
	Cases []CaseRank `json:"cases"`
}

// ConfigPair names a configuration of experiment A and one of B.
type ConfigPair struct {
	A string `json:"a"`
	B string `json:"b"`
}

// CompareExperimentsRequest is two kept experiments on the same cases and
// the configuration pairs to compare (configuration b of B against a of A).
type CompareExperimentsRequest struct {
	A     KeptExperiment `json:"a"`
	B     KeptExperiment `json:"b"`
	Pairs []ConfigPair   `json:"pairs"`
}

// ExperimentComparison is each pair's paired differences on the same
// answerable cases.
type ExperimentComparison struct {
	K     int              `json:"k"`
	Cases int              `json:"cases"`
	Pairs []PairComparison `json:"pairs"`
}

// PairComparison is configuration B of experiment B against A of
// experiment A, metric by metric (RankMetrics order).
type PairComparison struct {
	A       string             `json:"a"`
	B       string             `json:"b"`
	Metrics []MetricComparison `json:"metrics"`
}

// MetricComparison is one metric: each side's mean, B minus A, its 95%
// interval and the two-sided p-value from paired resamples.
type MetricComparison struct {
	Metric     string     `json:"metric"`
	AValue     float64    `json:"a_value"`
	BValue     float64    `json:"b_value"`
	Difference float64    `json:"difference"`
	CI95       [2]float64 `json:"ci95"`
	PValue     float64    `json:"p_value"`
}

// MaxComparePairs bounds the pairs of one comparison.
const MaxComparePairs = 64

// CompareExperiments compares configurations of two kept experiments
// question by question. Both must have ranked the same answerable cases
// (the same ids in the same order) to the same depth. The per-case values
// are those `ragagent retrieval` averages, resampled with core/stats'
// seeded draws (which depend only on the number of cases), so a pair's
// difference, interval and p-value are exactly the comparison `ragagent
// retrieval --json` prints when the two configurations run together
// (TestComparingTwoKeptExperimentsIsTheCommandsComparison).
func CompareExperiments(req CompareExperimentsRequest) (*ExperimentComparison, error) {
	if req.A.K != req.B.K {
		return nil, reason.New(reason.InvalidCases, "the experiments ranked to different depths (k %d and %d); run them to one depth", req.A.K, req.B.K)
	}
	if len(req.Pairs) == 0 {
		return nil, reason.New(reason.InvalidConfig, "name at least one pair of configurations to compare")
	}
	if len(req.Pairs) > MaxComparePairs {
		return nil, reason.New(reason.InvalidConfig, "at most %d pairs of configurations, got %d", MaxComparePairs, len(req.Pairs))
	}
	ids, err := sameCases(req.A, req.B)
	if err != nil {
		return nil, err
	}
	out := &ExperimentComparison{K: req.A.K, Cases: len(ids), Pairs: []PairComparison{}}
	metrics := RankMetrics()
	for _, p := range req.Pairs {
		a, err := configNamed(req.A, p.A, "A")
		if err != nil {
			return nil, err
		}
		b, err := configNamed(req.B, p.B, "B")
		if err != nil {
			return nil, err
		}
		series := make([][]float64, 0, 2*len(metrics))
		for _, c := range []*KeptConfig{a, b} {
			for _, m := range metrics {
				xs := make([]float64, len(c.Cases))
				for i, r := range c.Cases {
					rank := 0
					if r.Rank != nil {
						rank = *r.Rank
					}
					xs[i] = experiment.Ranking{Rank: rank}.Value(m)
				}
				series = append(series, xs)
			}
		}
		bs := stats.Resample(series, stats.Resamples, stats.Seed1, stats.Seed2)
		pc := PairComparison{A: a.Name, B: b.Name}
		for j, m := range metrics {
			sa, sb := j, len(metrics)+j
			ma, mb := stats.Mean(series[sa]), stats.Mean(series[sb])
			d := bs.Paired(sa, sb, ma, mb)
			pc.Metrics = append(pc.Metrics, MetricComparison{Metric: m, AValue: ma, BValue: mb,
				Difference: d.Difference, CI95: d.CI95, PValue: d.PValue})
		}
		out.Pairs = append(out.Pairs, pc)
	}
	return out, nil
}

// sameCases is the experiments' answerable case ids when every
// configuration of both ranked the same ones in the same order.
func sameCases(a, b KeptExperiment) ([]string, error) {
	if len(a.Configs) == 0 || len(b.Configs) == 0 {
		return nil, reason.New(reason.InvalidCases, "an experiment to compare has no configuration")
	}
	ids := make([]string, len(a.Configs[0].Cases))
	for i, c := range a.Configs[0].Cases {
		ids[i] = c.ID
	}
	if len(ids) == 0 {
		return nil, reason.New(reason.InvalidCases, "the experiments ranked no case")
	}
	for _, side := range []struct {
		name string
		x    KeptExperiment
	}{{"A", a}, {"B", b}} {
		for _, c := range side.x.Configs {
			if len(c.Cases) != len(ids) {
				return nil, reason.New(reason.InvalidCases, "not the same question set: experiment %s's %s ranked %d cases, experiment A's %d", side.name, c.Name, len(c.Cases), len(ids))
			}
			for i, r := range c.Cases {
				if r.ID != ids[i] {
					return nil, reason.New(reason.InvalidCases, "not the same question set: case %d is %q in experiment %s's %s and %q in experiment A", i+1, r.ID, side.name, c.Name, ids[i])
				}
				if r.Rank != nil && (*r.Rank < 1 || *r.Rank > a.K) {
					return nil, reason.New(reason.InvalidCases, "case %q has rank %d in experiment %s's %s, outside 1 to %d", r.ID, *r.Rank, side.name, c.Name, a.K)
				}
			}
		}
	}
	return ids, nil
}

func configNamed(x KeptExperiment, name, side string) (*KeptConfig, error) {
	for i := range x.Configs {
		if x.Configs[i].Name == name {
			return &x.Configs[i], nil
		}
	}
	return nil, reason.New(reason.UnknownConfig, "experiment %s has no configuration %q", side, name)
}

// SpecDigests is each configuration spec's sha256 (retrieval.Spec.SHA256,
// what a recording keeps): a built-in's name or a spec object each.
func SpecDigests(refs []ConfigRef) ([]string, error) {
	out := make([]string, len(refs))
	for i, r := range refs {
		var s retrieval.Spec
		var err error
		if r.Spec != nil {
			s, err = retrieval.Parse(r.Spec)
		} else {
			s, err = retrieval.Lookup(r.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("configuration %d: %w", i+1, err)
		}
		out[i] = s.SHA256()
	}
	return out, nil
}
