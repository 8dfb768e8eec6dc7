package experiment

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/store"
)

// fake answers each question with fixed hits (doc indices), whatever k.
type fake map[string][]int

func (f fake) Search(query string, k int, version string) ([]store.Hit, error) {
	docs, ok := f[query]
	if !ok {
		return nil, store.ErrNoTerms
	}
	var hits []store.Hit
	for i, d := range docs {
		hits = append(hits, store.Hit{Doc: d, Rank: i + 1, Score: -1}) // every score tied
	}
	return hits, nil
}

const (
	pageA = "https://x.org/a.html"
	pageB = "https://x.org/b.html"
)

var heads = []corpus.Passage{
	{SourceID: "a-x", Version: "1.0", URL: pageA + "#x"},             // 0
	{SourceID: "a-y", Version: "1.0", URL: pageA + "#y"},             // 1
	{SourceID: "b-z", Version: "1.0", URL: pageB + "#z"},             // 2
	{SourceID: "c", Version: "1.0", URL: "https://x.org/c.html"},     // 3
	{SourceID: "a-x-2", Version: "2.0", URL: pageA + "#x"},           // 4: another version
	{SourceID: "d-w", Version: "1.0", URL: "https://x.org/d.html#w"}, // 5
}

// TestRankAndMetricsByHand: a page-level target with two passages on its
// page, several targets, a source id target, a miss, a question with no
// terms, tied scores (rank is the searcher's order) and the depth cut;
// every value computed by hand.
func TestRankAndMetricsByHand(t *testing.T) {
	cases := []*evaluate.Case{
		{ID: "page", Question: "page", Version: "1.0", TargetURLs: []string{pageA}},
		{ID: "several", Question: "several", Version: "1.0", TargetURLs: []string{pageB + "#z", "https://x.org/d.html#w"}},
		{ID: "source", Question: "source", Version: "1.0", Sources: []string{"c"}},
		{ID: "miss", Question: "miss", Version: "1.0", TargetURLs: []string{pageA + "#y"}},
		{ID: "no terms", Question: "?!", Version: "1.0", TargetURLs: []string{pageA + "#y"}},
		{ID: "tie", Question: "tie", Version: "1.0", TargetURLs: []string{pageA + "#y"}},
		{ID: "deep", Question: "deep", Version: "1.0", TargetURLs: []string{pageA + "#y"}},
		{ID: "other version", Question: "other", Version: "2.0", TargetURLs: []string{pageA + "#x"}},
	}
	s := fake{
		"page":    {2, 0, 5, 1},
		"several": {5, 2, 0},
		"source":  {0, 1, 2, 5, 3},
		"miss":    {3, 2},
		"tie":     {3, 1},
		"deep":    {3, 2, 0, 5, 1}, // the match is at rank 5, beyond k 4
		"other":   {0, 4},          // passage 0 has the URL but is of version 1.0
	}
	const k = 4
	ideals := Ideals(cases, heads, k)
	assert.Equal(t, []int{2, 2, 1, 1, 1, 1, 1, 1}, ideals, "passages of the case's version matching a target")
	calls := 0
	got, err := Rank(cases, heads, ideals, s, k, func() error { calls++; return nil })
	require.NoError(t, err)
	assert.Equal(t, len(cases), calls)
	ranks := make([]int, len(got))
	for i, r := range got {
		ranks[i] = r.Rank
	}
	assert.Equal(t, []int{2, 1, 0, 0, 0, 2, 0, 2}, ranks, "source is at rank 5, beyond k 4")
	assert.Equal(t, []int{2, 4}, got[0].Matches)
	assert.Equal(t, []int{1, 2}, got[1].Matches)

	for _, c := range []struct {
		row    int
		metric string
		want   float64
	}{
		{0, Recall1, 0}, {0, Recall5, 1}, {0, Recall10, 1}, {0, MRR10, 0.5},
		{0, NDCG10, (0.6309297535714575 + 0.43067655807339306) / (1 + 0.6309297535714575)},
		{1, Recall1, 1}, {1, MRR10, 1}, {1, NDCG10, 1},
		{2, Recall10, 0}, {2, MRR10, 0}, {2, NDCG10, 0},
		{3, Recall10, 0}, {3, NDCG10, 0},
		{5, Recall1, 0}, {5, Recall5, 1}, {5, MRR10, 0.5}, {5, NDCG10, 0.6309297535714575},
		{7, MRR10, 0.5},
	} {
		assert.InDelta(t, c.want, got[c.row].Value(c.metric), 1e-15, "%s %s", cases[c.row].ID, c.metric)
	}
}

func TestValueBeyondTen(t *testing.T) {
	r := Ranking{Rank: 12, Matches: []int{12, 13}, Ideal: 2}
	for _, m := range Metrics() {
		assert.Equal(t, 0.0, r.Value(m), m)
	}
	r = Ranking{Rank: 7, Matches: []int{7}, Ideal: 1}
	assert.Equal(t, 0.0, r.Value(Recall5))
	assert.Equal(t, 1.0, r.Value(Recall10))
	assert.Equal(t, 1.0/7, r.Value(MRR10))
	assert.Equal(t, 0.3333333333333333, r.Value(NDCG10))
	assert.Equal(t, 0.0, Ranking{}.Value(NDCG10), "nothing to find")
}

func TestDiscountsAreLog2(t *testing.T) {
	for i, d := range discount {
		assert.InDelta(t, 1/math.Log2(float64(i+2)), d, 1e-15, "Go's math.Log2 and Python's differ in the last place; the table is Python's")
	}
}

func TestRankRefusals(t *testing.T) {
	_, err := Rank(nil, heads, nil, fake{}, 0, nil)
	assert.ErrorContains(t, err, "k must be from 1 to 100")
	_, err = Rank([]*evaluate.Case{{ID: "x", Question: "x"}}, heads, []int{0}, fake{"x": {99}}, 3, nil)
	assert.ErrorContains(t, err, "passage 100 of 6")
}
