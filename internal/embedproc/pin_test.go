package embedproc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/internal/embedproc"
)

// TestPinMatchesTheFixturesManifest: pinning the tiny embedder's folder
// gives the files and sums its committed manifest pins.
func TestPinMatchesTheFixturesManifest(t *testing.T) {
	dir := filepath.Join("..", "..", "tests", "fixtures", "tiny-embedder")
	data, err := embedproc.Pin(dir, "ragagent-test/tiny-embedder", "fixture-1", "CC0-1.0", "", "onnx/model.onnx")
	require.NoError(t, err)
	got, err := rerank.ParseModelManifest(data)
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join(dir, embedproc.ManifestFile))
	require.NoError(t, err)
	want, err := rerank.ParseModelManifest(committed)
	require.NoError(t, err)
	pins := func(fs []rerank.ModelFile) map[string]string {
		out := map[string]string{}
		for _, f := range fs {
			out[f.Path] = *f.SHA256
		}
		return out
	}
	for path, sum := range pins(want.Files) {
		assert.Equal(t, sum, pins(got.Files)[path], path)
	}
	assert.Equal(t, *want.Weights[0].SHA256, *got.Weights[0].SHA256)
}

func TestPinRefuses(t *testing.T) {
	empty := t.TempDir()
	_, err := embedproc.Pin(empty, "o/m", "main", "MIT", "", "onnx/model.onnx")
	assert.ErrorContains(t, err, "config.json")
	dir := filepath.Join("..", "..", "tests", "fixtures", "tiny-embedder")
	_, err = embedproc.Pin(dir, "o/m", "main", "MIT", "", "model.safetensors")
	assert.ErrorContains(t, err, "not an .onnx file")
	_, err = embedproc.Pin(dir, "not an id", "main", "MIT", "", "onnx/model.onnx")
	assert.ErrorContains(t, err, "not an owner/name id")
}
