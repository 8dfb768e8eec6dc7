package reranklab

import (
	"fmt"
	"math"
	"slices"

	"github.com/ragagentlab/ragagent/core/rerank"
)

// Compare sets fresh beside published, call by call. Both must be runs of
// this lab (the same calls over the same candidates), or it fails.
func Compare(fresh, published *rerank.CrossEncoderRecord) (*rerank.LogitComparison, error) {
	type run struct {
		id, split string
		cands     []rerank.Candidate
		scores    []float64
		order     []rerank.Scored
	}
	flatten := func(r *rerank.CrossEncoderRecord) []run {
		var out []run
		for _, c := range r.Original {
			out = append(out, run{"original/" + c.CaseID, "development", c.Candidates, c.Scores, c.CrossEncoder})
		}
		for _, c := range r.Expanded {
			out = append(out, run{"expanded/" + c.CaseID, c.Split, c.Candidates, c.Scores, c.CrossEncoder})
		}
		return out
	}
	f, p := flatten(fresh), flatten(published)
	if len(f) != len(p) {
		return nil, fmt.Errorf("compare: %d calls beside %d published", len(f), len(p))
	}
	cmp := &rerank.LogitComparison{}
	var sum float64
	for i := range f {
		a, b := f[i], p[i]
		if a.id != b.id || len(a.cands) != len(b.cands) || len(a.scores) != len(a.cands) || len(b.scores) != len(b.cands) {
			return nil, fmt.Errorf("compare: call %d is %s with %d candidates, the published one %s with %d", i+1, a.id, len(a.cands), b.id, len(b.cands))
		}
		cd := rerank.CallDiff{ID: a.id, Split: a.split, PublishedOrder: rerank.Sources(b.order), FreshOrder: rerank.Sources(a.order)}
		for j, c := range a.cands {
			if c.ChunkID != b.cands[j].ChunkID {
				return nil, fmt.Errorf("compare: %s candidate %d is %s, the published one %s", a.id, j+1, c.ChunkID, b.cands[j].ChunkID)
			}
			d := a.scores[j] - b.scores[j]
			cd.Pairs = append(cd.Pairs, rerank.PairDiff{ChunkID: c.ChunkID, SourceID: c.SourceID, Published: b.scores[j], Fresh: a.scores[j], Diff: d})
			cmp.MaxAbsDiff = math.Max(cmp.MaxAbsDiff, math.Abs(d))
			sum += math.Abs(d)
			cmp.Pairs++
		}
		cd.OrderAgrees = slices.Equal(cd.PublishedOrder, cd.FreshOrder)
		if cd.OrderAgrees {
			cmp.OrdersAgree++
		}
		cmp.Calls = append(cmp.Calls, cd)
	}
	if cmp.Pairs > 0 {
		cmp.MeanAbsDiff = sum / float64(cmp.Pairs)
	}
	cmp.AllOrdersSame = cmp.OrdersAgree == len(cmp.Calls)
	cmp.Summary = rerank.SummaryDiff{Published: published.Summary, Fresh: fresh.Summary,
		Agrees: sameTally(fresh.Summary.Diagnostic.CrossEncoder, published.Summary.Diagnostic.CrossEncoder) &&
			sameTally(fresh.Summary.Validation.CrossEncoder, published.Summary.Validation.CrossEncoder)}
	return cmp, nil
}

func sameTally(a, b rerank.Tally) bool {
	if a.Answerable != b.Answerable || a.Top1Hits != b.Top1Hits || (a.MRR == nil) != (b.MRR == nil) {
		return false
	}
	return a.MRR == nil || *a.MRR == *b.MRR
}
