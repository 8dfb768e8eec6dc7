package rerank_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/rerank"
)

// A pack's rerank keeps the lexical order, reorders the same candidates by
// coverage (ties in lexical order), and judges each order against the
// case's targets: URLs when it names any, else source ids.
func TestRerankPackJudgesBothOrders(t *testing.T) {
	hits := []rerank.Hit{
		{SourceID: "a", URL: "https://x.test/p.html#a", Score: -3, Text: "open a file"},
		{SourceID: "b", URL: "https://x.test/p.html#b", Score: -2, Text: "write text to a file with an encoding"},
		{SourceID: "c", URL: "https://x.test/q.html#c", Score: -1, Text: "write text"},
	}
	var asked []string
	search := func(q string, k int, version string) ([]rerank.Hit, error) {
		asked = append(asked, version)
		require.Equal(t, 3, k)
		return hits, nil
	}
	cases := []rerank.PackCase{
		{ID: "by-url", Question: "How do I write text with an encoding?", Version: "3.11", TargetURLs: []string{"https://x.test/p.html#b"}},
		{ID: "by-source", Question: "How do I write text?", Version: "3.10", Sources: []string{"c"}},
		{ID: "unanswerable", Question: "What is the weather?", Version: "3.11"},
	}
	res, err := rerank.RerankPack(context.Background(), "p", cases, search, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"3.11", "3.10", "3.11"}, asked, "each case searches its own version")
	assert.Equal(t, rerank.NoVectorsNote, res.Note)
	require.Len(t, res.Cases, 3)
	first := res.Cases[0]
	assert.Equal(t, []string{"a", "b", "c"}, ids(first.Lexical))
	assert.Equal(t, []string{"b", "c", "a"}, ids(first.Coverage), "most covered first, ties in lexical order")
	assert.False(t, *first.Outcomes["lexical"].Top1Hit)
	assert.True(t, *first.Outcomes["coverage"].Top1Hit)
	assert.Nil(t, res.Cases[2].Outcomes["lexical"].Top1Hit, "no target, no hit or miss")
	assert.Equal(t, 2, res.Summary["coverage"].Answerable)

	// The lab's own judgement, when given, decides: a page-level target
	// or an alias matches a candidate whose URL is not the target.
	judged := []rerank.PackCase{{ID: "page-level", Question: "How do I write text?", Version: "3.11",
		TargetURLs: []string{"https://x.test/q.html"}, Matches: func(id string) bool { return id == "c" }}}
	res, err = rerank.RerankPack(context.Background(), "p", judged, search, 3)
	require.NoError(t, err)
	assert.Equal(t, 1/3.0, res.Cases[0].Outcomes["lexical"].ReciprocalRank, "c is third in lexical order")
	assert.True(t, *res.Cases[0].Outcomes["coverage"].Top1Hit == false)

	_, err = rerank.RerankPack(context.Background(), "p", cases, func(string, int, string) ([]rerank.Hit, error) {
		return nil, errors.New("index gone")
	}, 3)
	assert.ErrorContains(t, err, "case by-url: index gone")
}

func ids(cs []rerank.PackCandidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.SourceID
	}
	return out
}
