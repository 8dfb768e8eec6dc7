package packs_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/fixtures"
)

// The Python pack searched from its image (bm25 computed in Go from the
// exported postings) ranks and scores exactly as FTS5 does over an index
// built from the same texts: the 200 benchmark queries and every question
// of the pack's cases, each version filter, k 3 and 10, every score the
// same float64.
func TestPythonImageSearchEqualsFTS5(t *testing.T) {
	manifest, passages := pythonBytes(t)
	m, err := corpus.ParseManifest(manifest)
	require.NoError(t, err)
	require.NoError(t, m.CheckFile(passages))
	ix, err := store.OpenImage(passages)
	require.NoError(t, err)
	defer ix.Close()
	ps, err := ix.Passages()
	require.NoError(t, err)
	_, err = corpus.NewPack(m, ps)
	require.NoError(t, err, "every passage of the committed pack is valid")
	docs := make([]store.Doc, len(ps))
	for i, p := range ps {
		docs[i] = store.Doc{Version: p.Version, Text: p.Text}
	}
	built, err := store.Open(docs)
	require.NoError(t, err)
	defer built.Close()

	data, err := os.ReadFile("testdata/queries.json")
	require.NoError(t, err)
	var queries []string
	require.NoError(t, json.Unmarshal(data, &queries))
	var cases struct {
		Cases []struct {
			Question string `json:"question"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(fixtures.PythonCases, &cases))
	for _, c := range cases.Cases {
		queries = append(queries, c.Question)
	}
	require.Greater(t, len(queries), 230)
	for _, q := range queries {
		for _, k := range []int{3, 10} {
			for _, version := range []string{"3.11", ""} {
				want, err := built.Search(q, k, version)
				require.NoError(t, err)
				got, err := ix.Search(q, k, version)
				require.NoError(t, err)
				require.Equal(t, len(want), len(got), q)
				for i := range want {
					require.Equal(t, want[i].Doc, got[i].Doc, "%q k %d rank %d", q, k, i+1)
					require.Equal(t, math.Float64bits(want[i].Score), math.Float64bits(got[i].Score), "%q rank %d", q, i+1)
				}
			}
		}
	}
	none, err := ix.Search("pathlib", 3, "3.12")
	require.NoError(t, err)
	assert.Empty(t, none, "a version the pack does not have finds nothing")
}
