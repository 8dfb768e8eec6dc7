package retrieval_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// embedder is a test double: fixed vectors for known queries, and a count
// of its calls.
type embedder struct {
	model   vectors.Model
	queries map[string][]float32
	calls   [][]string
}

func (e *embedder) Model() vectors.Model { return e.model }
func (e *embedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls = append(e.calls, texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := e.queries[t]
		if !ok {
			return nil, fmt.Errorf("no vector for %q", t)
		}
		out[i] = v
	}
	return out, nil
}

var tinyModel = vectors.Model{ID: "ragagent-test/tiny-embedder", Revision: "fixture-1", Dimensions: 3, Pooling: "mean", Normalize: true,
	Files: []vectors.File{{Path: "onnx/model.onnx", SHA256: strings.Repeat("a", 64), Bytes: 1}}}

// rows are the docs' vectors: the json passage (5) and the sqlite one (1)
// nearest the query [1 0 0], then the 3.12 passage (3).
var rows = [][]float32{{0, 1, 0}, {0.9, 0.1, 0}, {0, 0, 1}, {0.8, 0.6, 0}, {0, 0.5, 0.5}, {1, 0, 0}}

func vectorSet(t *testing.T, m vectors.Model, rows [][]float32) *vectors.Set {
	t.Helper()
	s, err := vectors.New(vectors.Header{Pack: "test", PassagesSHA256: strings.Repeat("b", 64), Model: m, Text: vectors.TextTitled}, rows)
	require.NoError(t, err)
	return s
}

func hybridSpec(t *testing.T, extra string) retrieval.Spec {
	t.Helper()
	s, err := retrieval.Parse([]byte(`{"name": "hybrid", "fusion": {"model": "ragagent-test/tiny-embedder", "vectors": "vectors.bin"` + extra + `}}`))
	require.NoError(t, err)
	return s
}

// TestFusionIsReciprocalRankFusion: each passage scores 1/(60+rank) from
// each branch that ranks it, the lexical ranks being the same spec's
// without fusion and the vector ranks by cosine; best first, ties by doc
// order; the version filter holds in both branches.
func TestFusionIsReciprocalRankFusion(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	emb := &embedder{model: tinyModel, queries: map[string][]float32{"file": {2, 0, 0}}}
	spec := hybridSpec(t, "")
	assert.Equal(t, 60, spec.Fusion.K)
	assert.Equal(t, retrieval.DefaultFusionDepth, spec.Fusion.Depth)
	s, err := base.OpenModels(spec, retrieval.Models{Vectors: vectorSet(t, tinyModel, rows), Embedder: emb})
	require.NoError(t, err)

	lexSpec := spec
	lexSpec.Fusion = nil
	lex, err := base.Open(lexSpec)
	require.NoError(t, err)
	for _, version := range []string{"3.11", ""} {
		lexical, err := lex.Search("file", 100, version)
		require.NoError(t, err)
		want := map[int]float64{}
		for _, h := range lexical {
			want[h.Doc] += 1 / float64(60+h.Rank)
		}
		var near []int // by cosine to [1 0 0]: 5, 1, 3, then 0, 2 and 4 tie at 0 (doc order)
		for _, d := range []int{5, 1, 3, 0, 2, 4} {
			if version == "" || docs[d].Version == version {
				near = append(near, d)
			}
		}
		for i, d := range near {
			want[d] += 1 / float64(60+i+1)
		}
		var order []int
		for d := range want {
			order = append(order, d)
		}
		sort.Slice(order, func(i, j int) bool {
			if want[order[i]] != want[order[j]] {
				return want[order[i]] > want[order[j]]
			}
			return order[i] < order[j]
		})
		got, err := s.Search("file", 10, version)
		require.NoError(t, err)
		require.Len(t, got, len(order), "version %q", version)
		for i, h := range got {
			assert.Equal(t, order[i], h.Doc, "version %q rank %d", version, i+1)
			assert.Equal(t, i+1, h.Rank)
			assert.InDelta(t, -want[h.Doc], h.Score, 1e-15)
		}
	}
	assert.Len(t, emb.calls, 1, "a query is embedded once and kept")
}

// TestFusionDepthBoundsBothBranches: with depth 1 only each branch's
// first passage scores.
func TestFusionDepthBoundsBothBranches(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	emb := &embedder{model: tinyModel, queries: map[string][]float32{"json dumps": {1, 0, 0}}}
	s, err := base.OpenModels(hybridSpec(t, `, "depth": 1`), retrieval.Models{Vectors: vectorSet(t, tinyModel, rows), Embedder: emb})
	require.NoError(t, err)
	got, err := s.Search("json dumps", 10, "3.11")
	require.NoError(t, err)
	require.Len(t, got, 1, "both branches' first is the json passage")
	assert.Equal(t, 5, got[0].Doc)
	assert.InDelta(t, -2.0/61, got[0].Score, 1e-15)
}

func TestPrefetchEmbedsEachQueryOnceInBatches(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	qs := map[string][]float32{}
	var list []string
	for i := 0; i < 40; i++ {
		q := fmt.Sprintf("file %d", i)
		qs[q] = []float32{1, float32(i), 0}
		list = append(list, q, q)
	}
	emb := &embedder{model: tinyModel, queries: qs}
	s, err := base.OpenModels(hybridSpec(t, ""), retrieval.Models{Vectors: vectorSet(t, tinyModel, rows), Embedder: emb})
	require.NoError(t, err)
	require.NoError(t, s.Prefetch(list))
	require.Len(t, emb.calls, 2, "40 distinct queries in batches of 32")
	assert.Len(t, emb.calls[0], 32)
	for _, q := range list {
		_, err := s.Search(q, 3, "")
		require.NoError(t, err)
	}
	assert.Len(t, emb.calls, 2, "searches reuse the prefetched vectors")
}

// TestOpenModelsRefuses: the vector branch runs only on vectors of this
// index made by the spec's model, with an embedder of that model; without
// them the spec is refused as it is offline.
func TestOpenModelsRefuses(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	other := tinyModel
	other.Files = []vectors.File{{Path: "onnx/model.onnx", SHA256: strings.Repeat("c", 64)}}
	named := tinyModel
	named.ID = "sentence-transformers/all-MiniLM-L6-v2"
	for _, tc := range []struct {
		name string
		v    retrieval.Models
		code reason.Code
		want string
	}{
		{"no vectors", retrieval.Models{Embedder: &embedder{model: tinyModel}}, reason.UnknownConfig, "ragagent corpus embed"},
		{"no embedder", retrieval.Models{Vectors: vectorSet(t, tinyModel, rows)}, reason.UnknownConfig, "--model DIR"},
		{"vectors of another index", retrieval.Models{Vectors: vectorSet(t, tinyModel, rows[:5]), Embedder: &embedder{model: tinyModel}}, reason.InvalidConfig, "holds 5 vectors; the pack has 6 passages"},
		{"vectors of another model", retrieval.Models{Vectors: vectorSet(t, named, rows), Embedder: &embedder{model: named}}, reason.InvalidConfig, "was made by model sentence-transformers/all-MiniLM-L6-v2, not ragagent-test/tiny-embedder"},
		{"an embedder of other files", retrieval.Models{Vectors: vectorSet(t, tinyModel, rows), Embedder: &embedder{model: other}}, reason.InvalidConfig, "the embedder loaded ragagent-test/tiny-embedder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := base.OpenModels(hybridSpec(t, ""), tc.v)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := base.Open(hybridSpec(t, ""))
	code, _ := reason.Of(err)
	assert.Equal(t, reason.UnknownConfig, code, "Open has no models: a vector branch is refused as before")
}

// scorer is a test double of a cross-encoder: a logit per text from a
// function of it.
type scorer struct {
	model vectors.Model
	logit func(text string) float64
	calls int
}

func (s *scorer) Model() vectors.Model { return s.model }
func (s *scorer) Score(_ context.Context, _ string, texts []string) ([]float64, error) {
	s.calls++
	out := make([]float64, len(texts))
	for i, t := range texts {
		out[i] = s.logit(t)
	}
	return out, nil
}

func crossSpec(t *testing.T, depth int) retrieval.Spec {
	t.Helper()
	s, err := retrieval.Parse([]byte(fmt.Sprintf(`{"name": "ce", "tokenizer": "stemmed", "second_stage": {"method": "cross-encoder", "model": "ragagent-test/tiny-cross-encoder", "depth": %d}}`, depth)))
	require.NoError(t, err)
	return s
}

var crossModel = vectors.Model{ID: "ragagent-test/tiny-cross-encoder", Revision: "fixture-1", Dimensions: 1,
	Files: []vectors.File{{Path: "onnx/model.onnx", SHA256: strings.Repeat("e", 64)}}}

// TestCrossEncoderReordersTheFirstDepth: the first stage's first depth
// reordered by the scorer's logit, higher first, ties in first-stage
// order; the rest after, as the first stage ranked them.
func TestCrossEncoderReordersTheFirstDepth(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	spec := crossSpec(t, 3)
	first := spec
	first.SecondStage = retrieval.SecondStage{Method: retrieval.StageNone}
	fs, err := base.Open(first)
	require.NoError(t, err)
	lexical, err := fs.Search("file", 10, "")
	require.NoError(t, err)
	require.Greater(t, len(lexical), 3)

	// The logit is whether the text mentions "line": docs 2 and 4 do.
	sc := &scorer{model: crossModel, logit: func(text string) float64 {
		if strings.Contains(text, "line") {
			return 2.5
		}
		return -1
	}}
	s, err := base.OpenModels(spec, retrieval.Models{Scorer: sc})
	require.NoError(t, err)
	got, err := s.Search("file", 10, "")
	require.NoError(t, err)
	var top []int
	for _, h := range lexical[:3] {
		if strings.Contains(docs[h.Doc].Text, "line") {
			top = append(top, h.Doc)
		}
	}
	for _, h := range lexical[:3] {
		if !strings.Contains(docs[h.Doc].Text, "line") {
			top = append(top, h.Doc)
		}
	}
	for _, h := range lexical[3:] {
		top = append(top, h.Doc)
	}
	var order []int
	for _, h := range got {
		order = append(order, h.Doc)
	}
	assert.Equal(t, top, order)
	assert.Equal(t, 1, sc.calls, "one call per search")
	assert.Contains(t, []float64{-2.5, 1}, got[0].Score, "a reranked passage's score is its negated logit")

	sc.logit = func(string) float64 { return math.NaN() }
	_, err = s.Search("file", 10, "")
	assert.ErrorContains(t, err, "the cross-encoder's score for passage 1 is NaN")
}

func TestCrossEncoderIsRefusedWithoutItsModel(t *testing.T) {
	base := retrieval.NewBase(openIndex(t))
	other := crossModel
	other.ID = "cross-encoder/ms-marco-MiniLM-L6-v2"
	for _, tc := range []struct {
		name string
		m    retrieval.Models
		code reason.Code
		says string
	}{
		{"no scorer", retrieval.Models{}, reason.UnknownConfig, "needs the model: `ragagent retrieval --model DIR` runs it"},
		{"a scorer of another model", retrieval.Models{Scorer: &scorer{model: other}}, reason.InvalidConfig, "the scorer loaded cross-encoder/ms-marco-MiniLM-L6-v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := base.OpenModels(crossSpec(t, 0), tc.m)
			code, _ := reason.Of(err)
			assert.Equal(t, tc.code, code)
			assert.ErrorContains(t, err, tc.says)
		})
	}
	_, err := base.Open(crossSpec(t, 0))
	code, _ := reason.Of(err)
	assert.Equal(t, reason.UnknownConfig, code, "Open has no models")
}
