package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// TestTuneThenApply: tune chooses on the Python pack's natural set with
// an estimate inside its interval and one against-row per baseline and
// metric; applying its choice makes it the pack's default (search names
// it), and the seed's default cannot be changed.
func TestTuneThenApply(t *testing.T) {
	e := packEngine(t)
	cases, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "cases", "python-3.11-natural.json"))
	require.NoError(t, err)
	res, err := e.Tune(context.Background(), engine.TuneRequest{Corpus: "python-3.11", Cases: string(cases)})
	require.NoError(t, err)
	assert.Equal(t, 35, res.Answerable)
	assert.Equal(t, 5, res.Folds)
	assert.Len(t, res.FoldChoices, 5)
	est := res.Estimate.MRR10
	assert.True(t, est.CI95[0] <= est.Value && est.Value <= est.CI95[1])
	names := map[string]int{}
	for _, a := range res.Against {
		names[a.Name]++
	}
	info, err := e.PackInfo("python-3.11")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"seed": 2, info.RetrievalConfig: 2}, names, "against seed and the pack's default")
	again, err := e.Tune(context.Background(), engine.TuneRequest{Corpus: "python-3.11", Cases: string(cases)})
	require.NoError(t, err)
	assert.Equal(t, res, again, "the same inputs give the same choice")

	spec, err := engine.SpecFile(res.Chosen)
	require.NoError(t, err)
	info, err = e.ApplyDefault("python-3.11", string(spec))
	require.NoError(t, err)
	assert.Equal(t, res.Chosen.Name, info.RetrievalConfig)
	found, err := e.Search(engine.SearchRequest{Corpus: "python-3.11", Query: "read a file line by line"})
	require.NoError(t, err)
	assert.Equal(t, res.Chosen.Name, found.Retrieval)
	_, err = e.ApplyDefault("seed", "stemmed")
	assert.ErrorContains(t, err, "the seed's search is the seed's")
}

// TestTuneWithModelsNeedsThem: a request naming a vector branch or a
// cross-encoder on an engine given no models is refused before anything
// is ranked, saying how to give them.
func TestTuneWithModelsNeedsThem(t *testing.T) {
	e := packEngine(t)
	cases, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "cases", "python-3.11-natural.json"))
	require.NoError(t, err)
	ranked := 0
	_, err = e.Tune(context.Background(), engine.TuneRequest{Corpus: "python-3.11", Cases: string(cases),
		CrossEncoders: []string{"cross-encoder/ms-marco-MiniLM-L-6-v2"}, OnCase: func(int, int, string) { ranked++ }})
	require.Error(t, err)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.UnknownConfig, code)
	assert.Contains(t, err.Error(), "--model DIR")
	assert.Zero(t, ranked)
}
