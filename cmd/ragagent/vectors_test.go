package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/vectors"
)

// tinyEmbedder is the tests' tiny sentence encoder (random weights: its
// vectors mean nothing), run by the project's embedder under node.
var tinyEmbedder = filepath.Join("..", "..", "tests", "fixtures", "tiny-embedder")

// tinyCrossEncoder is the tests' tiny cross-encoder (random weights too).
var tinyCrossEncoder = filepath.Join("..", "..", "tests", "fixtures", "tiny-cross-encoder")

func useEmbedder(t *testing.T) {
	t.Helper()
	t.Setenv("RAGAGENT_EMBEDDER", filepath.Join("..", "..", "lab", "embed.mjs"))
}

const hybridSpec = `{"name": "hybrid", "tokenizer": "stemmed", "stop_words": "english", "fields": {"text": 1, "title": 0.5, "anchor": 1},
 "proximity": {"window": 4}, "fusion": {"model": "ragagent-test/tiny-embedder", "vectors": "vectors-tiny-embedder.bin"}}`

// TestEmbedThenRankTheVectorBranch: `corpus embed` writes the seed
// pack's vectors through the node embedder (the tiny model), and
// `retrieval` ranks a configuration that fuses them, against seed, with
// the same model embedding the questions. The ranks are a golden.
func TestEmbedThenRankTheVectorBranch(t *testing.T) {
	useEmbedder(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "vectors-tiny-embedder.bin")
	code, stdout, stderr := ragagent("corpus", "embed", "--corpus", "seed", "--model", tinyEmbedder, "--out", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "4 vectors of 32 dimensions from ragagent-test/tiny-embedder")
	assert.Contains(t, stderr, "embedded 4/4 passages")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	set, err := vectors.Parse(data)
	require.NoError(t, err)
	assert.Equal(t, "seed", set.Header.Pack)
	assert.Equal(t, "ragagent-test/tiny-embedder", set.Header.Model.ID)
	assert.NotEmpty(t, set.Header.Model.Runtime["transformers.js"], "the runtime is recorded")

	code, _, stderr = ragagent("corpus", "embed", "--corpus", "seed", "--model", tinyEmbedder, "--out", out)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "exists; remove it or give another --out")

	spec := filepath.Join(dir, "hybrid.json")
	require.NoError(t, os.WriteFile(spec, []byte(hybridSpec), 0o644))
	code, stdout, stderr = ragagent("retrieval", "--config", "seed", "--config", spec, "--model", tinyEmbedder, "--vectors", dir, "--json")
	require.Equal(t, exitOK, code, stderr)
	golden(t, "retrieval-hybrid-seed.json", stdout)
}

// TestTheVectorBranchNeedsItsFlags: one line each, naming what is
// missing.
func TestTheVectorBranchNeedsItsFlags(t *testing.T) {
	useEmbedder(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "hybrid.json")
	require.NoError(t, os.WriteFile(spec, []byte(hybridSpec), 0o644))
	notAModel := t.TempDir()
	ce := filepath.Join(dir, "ce.json")
	require.NoError(t, os.WriteFile(ce, []byte(`{"name": "ce", "second_stage": {"method": "cross-encoder", "model": "ragagent-test/tiny-embedder"}}`), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no model or vectors", []string{"retrieval", "--config", spec}, exitError, "needs the model and the pack's vectors: `ragagent corpus embed` makes them and `ragagent retrieval --model DIR --vectors DIR` runs it"},
		{"no vectors file", []string{"retrieval", "--config", spec, "--model", tinyEmbedder, "--vectors", dir}, exitError, "pack seed has no vectors file vectors-tiny-embedder.bin: it is not in " + dir},
		{"a folder that is no model", []string{"retrieval", "--config", spec, "--model", notAModel}, exitUsage, "ragagent-model.json"},
		{"a sentence encoder as the cross-encoder", []string{"retrieval", "--config", "seed", "--config", ce, "--model", tinyEmbedder}, exitError, "holds a model of kind embedder, not cross-encoder"},
		{"embed without a model", []string{"corpus", "embed", "--corpus", "seed"}, exitUsage, "--model is required"},
		{"embed a batch too big", []string{"corpus", "embed", "--corpus", "seed", "--model", tinyEmbedder, "--batch", "1000"}, exitUsage, "--batch must be from 1 to 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := ragagent(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stderr, tc.says)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %s", stderr)
		})
	}
}

// TestModelPin: a downloaded folder without a manifest gets one pinning
// its files, which the embedder then accepts; an existing one is never
// overwritten.
func TestModelPin(t *testing.T) {
	useEmbedder(t)
	dir := t.TempDir()
	for _, rel := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"} {
		data, err := os.ReadFile(filepath.Join(tinyEmbedder, rel))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), data, 0o644))
	}
	code, stdout, stderr := ragagent("model", "pin", dir, "--id", "someone/tiny", "--revision", "abc123", "--license", "CC0-1.0")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "compare them with the ones someone/tiny's host lists")
	code, stdout, stderr = ragagent("corpus", "embed", "--corpus", "seed", "--model", dir, "--out", filepath.Join(t.TempDir(), "v.bin"))
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "from someone/tiny")

	code, _, stderr = ragagent("model", "pin", dir, "--id", "someone/tiny", "--revision", "abc123", "--license", "CC0-1.0")
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "exists")
	code, _, stderr = ragagent("model", "pin", dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--id, --revision and --license are required")
}

// TestTuneSearchesTheModelsGiven: `tune --model DIR --vectors DIR` adds
// to its search the pack's default fused with each sentence encoder whose
// vectors of the pack are found, and reordered by each other model as a
// cross-encoder (tune.WithModels); a sentence encoder without its vectors
// is refused by kind, and the choice's bytes do not depend on the run.
func TestTuneSearchesTheModelsGiven(t *testing.T) {
	useEmbedder(t)
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	topics := []string{"kettle", "toaster", "blender", "oven", "fridge", "freezer", "grill", "mixer", "juicer", "steamer", "dishwasher", "microwave"}
	var cases strings.Builder
	cases.WriteString(`{"format": "ragagent-cases/1", "cases": [`)
	for i, topic := range topics {
		page := fmt.Sprintf("# The %s\n\nHow to clean the %s: unplug the %s, wipe it with a damp cloth, and dry it before use.\n\n## Safety\n\nNever run the %s empty.\n", topic, topic, topic, topic)
		require.NoError(t, os.WriteFile(filepath.Join(docs, topic+".md"), []byte(page), 0o644))
		if i > 0 {
			cases.WriteString(", ")
		}
		fmt.Fprintf(&cases, `{"id": "q%d", "question": "how do I clean my %s?", "split": "development", "target_urls": ["https://notes.example.org/%s.md"]}`, i+1, topic, topic)
	}
	cases.WriteString("]}")
	casesFile := filepath.Join(dir, "cases.json")
	require.NoError(t, os.WriteFile(casesFile, []byte(cases.String()), 0o644))
	pack := filepath.Join(dir, "pack")
	code, _, stderr := ragagent("corpus", "build", "--from", docs, "--out", pack, "--id", "kitchen", "--title", "Kitchen notes",
		"--version", "1.0", "--base-url", "https://notes.example.org/", "--licence", "CC0", "--attribution", "me")
	require.Equal(t, exitOK, code, stderr)
	vecs := t.TempDir()
	code, _, stderr = ragagent("corpus", "embed", "--corpus", pack, "--model", tinyEmbedder, "--out", filepath.Join(vecs, "vectors-tiny-embedder.bin"))
	require.Equal(t, exitOK, code, stderr)

	tuned := func(args ...string) (map[string]any, string) {
		t.Helper()
		code, stdout, stderr := ragagent(append([]string{"tune", "--corpus", pack, "--cases", casesFile, "--json"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &r))
		return r, stdout
	}
	lexical, _ := tuned()
	withBoth, first := tuned("--model", tinyEmbedder, "--model", tinyCrossEncoder, "--vectors", vecs)
	// The pack's default is general: one base, so one fusion and one
	// cross-encoder stage.
	assert.Equal(t, lexical["space"].(float64)+2, withBoth["space"])
	_, again := tuned("--model", tinyCrossEncoder, "--model", tinyEmbedder, "--vectors", vecs)
	assert.Equal(t, first, again, "the same models in another order choose the same bytes")

	code, _, stderr = ragagent("tune", "--corpus", pack, "--cases", casesFile, "--model", tinyEmbedder)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "holds a model of kind embedder, not cross-encoder")
}
