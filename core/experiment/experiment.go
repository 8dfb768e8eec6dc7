// Package experiment ranks a question set's answerable cases under a
// retrieval configuration and scores each ranking: the rank of the first
// passage matching a target, the ranks of every matching passage within
// the depth ranked, and how many matching passages there are to find. The
// metrics of `ragagent retrieval` (DESIGN, third phase) are means of the
// per-case values Value gives; core/stats makes their intervals.
package experiment

import (
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/store"
)

// Searcher ranks passages: the method set of *store.Index (the seed's
// search) and of core/retrieval's searchers.
type Searcher interface {
	Search(query string, k int, version string) ([]store.Hit, error)
}

// DefaultK is how many passages each case's ranking holds unless asked
// otherwise, whatever the agent's own search depth.
const DefaultK = 10

// MaxK bounds the depth ranked.
const MaxK = 100

// The metrics, in the order the JSON and the table show them.
const (
	Recall1  = "recall@1"
	Recall5  = "recall@5"
	Recall10 = "recall@10"
	MRR10    = "mrr@10"
	NDCG10   = "ndcg@10"
)

// Metrics lists the metrics in order (a fresh slice each call).
func Metrics() []string { return []string{Recall1, Recall5, Recall10, MRR10, NDCG10} }

// Ranking is one answerable case under one configuration.
type Ranking struct {
	// Rank is the 1-based rank of the first passage matching a target
	// among the first K ranked, 0 for none.
	Rank int
	// Matches are the ranks of every matching passage among the first K,
	// ascending.
	Matches []int
	// Ideal is how many passages of the case's version match a target,
	// capped at the cutoff of nDCG@10 and at K: the gains an ideal
	// ranking would place in the ranks scored.
	Ideal int
}

// Ideals counts, for each case, the passages of its version that match
// one of its targets, capped at min(10, k): what an ideal ranking of the
// depth scored would hold.
func Ideals(cases []*evaluate.Case, heads []corpus.Passage, k int) []int {
	limit := min(10, k)
	out := make([]int, len(cases))
	for i, c := range cases {
		for _, p := range heads {
			if p.Version == c.Version && c.Matches(p) {
				out[i]++
				if out[i] == limit {
					break
				}
			}
		}
	}
	return out
}

// Rank ranks each case's question under s, the first k passages of its
// version, and finds the targets among them (heads are the passages by
// index, as the searcher's hits name them; ideals from Ideals). A
// question with no searchable term ranks nothing: a miss, not an error.
// onCase, if set, sees each case as it is ranked; an error from it stops
// the ranking with that error (a cancelled experiment).
func Rank(cases []*evaluate.Case, heads []corpus.Passage, ideals []int, s Searcher, k int, onCase func() error) ([]Ranking, error) {
	if k < 1 || k > MaxK {
		return nil, fmt.Errorf("experiment: k must be from 1 to %d, got %d", MaxK, k)
	}
	out := make([]Ranking, len(cases))
	for i, c := range cases {
		hits, err := s.Search(c.Question, k, c.Version)
		if err != nil && !errors.Is(err, store.ErrNoTerms) {
			return nil, fmt.Errorf("case %q: %w", c.ID, err)
		}
		r := Ranking{Ideal: ideals[i]}
		for j, h := range hits {
			if j >= k {
				break
			}
			if h.Doc < 0 || h.Doc >= len(heads) {
				return nil, fmt.Errorf("case %q: the search returned passage %d of %d", c.ID, h.Doc+1, len(heads))
			}
			if p := heads[h.Doc]; p.Version == c.Version && c.Matches(p) {
				r.Matches = append(r.Matches, j+1)
			}
		}
		if len(r.Matches) > 0 {
			r.Rank = r.Matches[0]
		}
		out[i] = r
		if onCase != nil {
			if err := onCase(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// discount[i] is nDCG's 1/log2(i+2) for rank i+1, written out so the
// same bytes come natively and under WebAssembly (math.Log2 is machine
// code on some platforms).
var discount = [10]float64{1, 0.6309297535714575, 0.5, 0.43067655807339306, 0.38685280723454163,
	0.3562071871080222, 0.3333333333333333, 0.31546487678572877, 0.3010299956639812, 0.2890648263178879}

// Value is the ranking's value under metric: recall@k 1 when the first
// match is at rank k or better, else 0; mrr@10 1/rank for a rank of 10 or
// better, else 0; ndcg@10 the DCG of binary gains (one per matching
// passage in the first 10) over the DCG of Ideal gains in the first
// places (0 when there is nothing to find).
func (r Ranking) Value(metric string) float64 {
	within := func(k int) float64 {
		if r.Rank >= 1 && r.Rank <= k {
			return 1
		}
		return 0
	}
	switch metric {
	case Recall1:
		return within(1)
	case Recall5:
		return within(5)
	case Recall10:
		return within(10)
	case MRR10:
		if r.Rank >= 1 && r.Rank <= 10 {
			return 1 / float64(r.Rank)
		}
		return 0
	case NDCG10:
		var dcg, ideal float64
		for _, m := range r.Matches {
			if m <= 10 {
				dcg += discount[m-1]
			}
		}
		for i := range min(r.Ideal, 10) {
			ideal += discount[i]
		}
		if ideal == 0 {
			return 0
		}
		return dcg / ideal
	}
	panic("experiment: no metric " + metric)
}
