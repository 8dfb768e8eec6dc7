package engine_test

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// hashEmbedder is a test double: a bag of hashed words, so a question and
// a passage sharing words are near; it counts its calls.
type hashEmbedder struct {
	model vectors.Model
	calls int
	texts int
}

func newHashEmbedder() *hashEmbedder {
	return &hashEmbedder{model: vectors.Model{ID: "ragagent-test/hash", Revision: "1", Dimensions: 64, Pooling: "mean", Normalize: true,
		Files: []vectors.File{{Path: "hash.txt", SHA256: strings.Repeat("d", 64)}}}}
}

func (h *hashEmbedder) Model() vectors.Model { return h.model }
func (h *hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	h.calls++
	h.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		v[0] = 0.01
		for _, w := range store.Terms(t) {
			f := fnv.New32a()
			f.Write([]byte(w))
			v[f.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

// models is a test double of engine.Models: vectors files by name, one
// embedder.
type models struct {
	files map[string][]byte
	emb   *hashEmbedder
}

func (m *models) Vectors(pack, name string) ([]byte, error) {
	if b, ok := m.files[pack+"/"+name]; ok {
		return b, nil
	}
	return nil, errors.New("no such file")
}

func (m *models) Scorer(context.Context, string) (retrieval.Scorer, error) {
	return nil, errors.New("no cross-encoder here")
}

func (m *models) Embedder(_ context.Context, model string) (vectors.Embedder, error) {
	if model != m.emb.model.ID {
		return nil, errors.New("no folder holds it")
	}
	return m.emb, nil
}

const hybrid = `{"name": "hybrid", "tokenizer": "stemmed", "fields": {"text": 1, "title": 0.5, "anchor": 1},
 "fusion": {"model": "ragagent-test/hash", "vectors": "vectors-hash.bin"}}`

// TestEmbedPackThenRankWithTheVectorBranch: the seed pack's passages
// embedded in index order into a file bound to the pack's receipt, then an
// experiment with a vector branch over those vectors, its questions
// embedded in one call.
func TestEmbedPackThenRankWithTheVectorBranch(t *testing.T) {
	ms := &models{files: map[string][]byte{}, emb: newHashEmbedder()}
	e, err := engine.Open(engine.Options{Models: ms})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })

	var progress [][2]int
	set, err := e.EmbedPack(context.Background(), engine.EmbedRequest{Corpus: "seed", Embedder: ms.emb, Batch: 3, CreatedBy: "test",
		OnBatch: func(done, total int) { progress = append(progress, [2]int{done, total}) }})
	require.NoError(t, err)
	assert.Equal(t, [][2]int{{3, 4}, {4, 4}}, progress)
	assert.Equal(t, "seed", set.Header.Pack)
	assert.Equal(t, 4, set.Len())
	ps := e.Passages()
	want, err := ms.emb.Embed(context.Background(), []string{vectors.PassageText(ps[2].Title, ps[2].Text)})
	require.NoError(t, err)
	require.NoError(t, vectors.Normalize(want[0]))
	assert.Equal(t, want[0], set.Row(2), "row i is passage i's title and text")
	file, err := set.Encode()
	require.NoError(t, err)
	ms.files["seed/vectors-hash.bin"] = file

	ms.emb.calls = 0
	res, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(hybrid)}}})
	require.NoError(t, err)
	require.Len(t, res.Configs, 2)
	assert.Equal(t, "hybrid", res.Configs[1].Name)
	assert.Equal(t, 1, ms.emb.calls, "the three questions in one call")
	assert.Equal(t, 60, res.Configs[1].Spec.Fusion.K)
	for _, c := range res.Configs[1].Cases {
		assert.NotNil(t, c.Rank, "case %s: on four passages every target is within 10", c.ID)
	}
}

func TestTheVectorBranchIsRefused(t *testing.T) {
	ms := &models{files: map[string][]byte{}, emb: newHashEmbedder()}
	e, err := engine.Open(engine.Options{Models: ms})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	set, err := e.EmbedPack(context.Background(), engine.EmbedRequest{Corpus: "seed", Embedder: ms.emb})
	require.NoError(t, err)
	other, err := vectors.New(vectors.Header{Pack: "python-3.11", PassagesSHA256: set.Header.PassagesSHA256, Model: set.Header.Model, Text: vectors.TextTitled},
		[][]float32{set.Row(0), set.Row(1), set.Row(2), set.Row(3)})
	require.NoError(t, err)
	otherFile, err := other.Encode()
	require.NoError(t, err)
	goodFile, err := set.Encode()
	require.NoError(t, err)

	noModels, err := engine.Open(engine.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { noModels.Close() })
	for _, tc := range []struct {
		name string
		e    *engine.Engine
		file []byte
		spec string
		code reason.Code
		says string
	}{
		{"no models here", noModels, nil, hybrid, reason.UnknownConfig, "needs the model and the pack's vectors"},
		{"no vectors file", e, nil, hybrid, reason.UnknownConfig, "pack seed has no vectors file vectors-hash.bin"},
		{"vectors of another pack", e, otherFile, hybrid, reason.InvalidConfig, "is of pack python-3.11"},
		{"not a vectors file", e, []byte("garbage"), hybrid, reason.InvalidConfig, "not a vectors file"},
		{"a model nobody has", e, goodFile, strings.Replace(hybrid, "ragagent-test/hash", "ragagent-test/none", 1), reason.UnknownConfig, "the model ragagent-test/none: no folder holds it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delete(ms.files, "seed/vectors-hash.bin")
			if tc.file != nil {
				ms.files["seed/vectors-hash.bin"] = tc.file
			}
			_, err := tc.e.Retrieval(context.Background(), engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(tc.spec)}}})
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}
