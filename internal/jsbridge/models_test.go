//go:build js && wasm

package jsbridge

import (
	"context"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modelRecord = `{id: "ragagent-test/tiny-embedder", revision: "fixture-1", dimensions: 2, pooling: "mean", normalize: true,
  files: [{path: "onnx/model.onnx", sha256: "a".repeat(64), bytes: 3}], runtime: {device: "cpu", threads: 2}, weights: "fp32"}`

func hooks(t *testing.T, vectors, embedder string) js.Value {
	t.Helper()
	o := js.Global().Get("Object").New()
	if vectors != "" {
		o.Set("vectors", jsFunc(t, "pack, name", vectors))
	}
	if embedder != "" {
		o.Set("embedder", jsFunc(t, "model", embedder))
	}
	return o
}

func TestModelsReadVectorsAndEmbed(t *testing.T) {
	m := ModelsOf(hooks(t, `return Promise.resolve(new TextEncoder().encode(pack + "/" + name))`,
		`let calls = 0; return Promise.resolve({model: `+modelRecord+`, embed: (texts) => {
		   calls++; const out = texts.map((t, i) => { const a = new Float32Array(3); a.set([t.length, i, calls]); return a.subarray(1); });
		   return Promise.resolve(out); }})`))
	require.NotNil(t, m)
	data, err := m.Vectors("python-3.11", "vectors.bin")
	require.NoError(t, err)
	assert.Equal(t, "python-3.11/vectors.bin", string(data))

	e, err := m.Embedder(context.Background(), "ragagent-test/tiny-embedder")
	require.NoError(t, err)
	assert.Equal(t, 2, e.Model().Dimensions)
	assert.Equal(t, "cpu", e.Model().Runtime["device"], "the runtime record crosses as it is")
	got, err := e.Embed(context.Background(), []string{"ab", "c"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{0, 1}, {1, 1}}, got, "a subarray's own bytes, not its buffer's")
	again, err := m.Embedder(context.Background(), "ragagent-test/tiny-embedder")
	require.NoError(t, err)
	assert.Same(t, e, again, "one embedder per model")
}

func TestModelsScore(t *testing.T) {
	o := hooks(t, "", "")
	o.Set("scorer", jsFunc(t, "model", `return Promise.resolve({model: `+modelRecord+`, score: (q, texts) => Promise.resolve(
	  q === "nan" ? texts.map(() => NaN) : Float64Array.from(texts, (t) => t.length - q.length))})`))
	m := ModelsOf(o)
	require.NotNil(t, m)
	s, err := m.Scorer(context.Background(), "ragagent-test/tiny-embedder")
	require.NoError(t, err)
	got, err := s.Score(context.Background(), "ab", []string{"abcd", "a"})
	require.NoError(t, err)
	assert.Equal(t, []float64{2, -1}, got)
	_, err = s.Score(context.Background(), "nan", []string{"x"})
	assert.ErrorContains(t, err, "not a finite number")
	_, err = ModelsOf(hooks(t, "return null", "")).Scorer(context.Background(), "m")
	assert.ErrorContains(t, err, "runs no cross-encoder")
}

func TestModelsRefuse(t *testing.T) {
	assert.Nil(t, ModelsOf(js.Global().Get("Object").New()), "no hooks, no models")
	for _, tc := range []struct {
		name, vectors, embedder, says string
		embed                         bool
	}{
		{"no vectors hook", "", `return Promise.resolve({})`, "gives no vectors files", false},
		{"a rejected read", `return Promise.reject(new Error("not in /tmp"))`, "", "not in /tmp", false},
		{"no embedder hook", `return Promise.resolve(new Uint8Array(1))`, "", "runs no model", true},
		{"no embed function", "", `return Promise.resolve({model: ` + modelRecord + `})`, "no embed(texts) function", true},
		{"a vector that is no Float32Array", "", `return Promise.resolve({model: ` + modelRecord + `, embed: (t) => Promise.resolve([[1, 2]])})`, "not a Float32Array", true},
		{"too few vectors", "", `return Promise.resolve({model: ` + modelRecord + `, embed: (t) => Promise.resolve([])})`, "no array of 1 vectors", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ModelsOf(hooks(t, tc.vectors, tc.embedder))
			require.NotNil(t, m)
			var err error
			if !tc.embed {
				_, err = m.Vectors("p", "v.bin")
			} else if e, oerr := m.Embedder(context.Background(), "ragagent-test/tiny-embedder"); oerr != nil {
				err = oerr
			} else {
				_, err = e.Embed(context.Background(), []string{"x"})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}
