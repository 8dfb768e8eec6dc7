package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/recordings"
)

// TestCrossEncoderPlanNamesThePublishedModel: the plan names the published
// model, revision and licence, pins each tokenizer and config file with the
// published sha256, offers the ONNX weights unpinned (the record pins the
// safetensors the seed ran), and lists the run's 16 calls (44 pairs).
func TestCrossEncoderPlanNamesThePublishedModel(t *testing.T) {
	plan, err := open(t, 0).CrossEncoderPlan(nil)
	require.NoError(t, err)
	m := plan.Model
	assert.Equal(t, rerank.ModelFormat, m.Format)
	assert.Equal(t, "cross-encoder/ms-marco-MiniLM-L6-v2", m.Model)
	assert.Equal(t, "233902d25c440f23af6f7d6e94d2946bac0bee0a", m.Revision)
	assert.Equal(t, "Apache-2.0", m.License)
	pins := map[string]string{}
	for _, f := range m.Files {
		require.NotNil(t, f.SHA256, f.Path)
		pins[f.Path] = *f.SHA256
	}
	assert.Equal(t, map[string]string{
		"config.json":           "380e02c93f431831be65d99a4e7e5f67c133985bf2e77d9d4eba46847190bacc",
		"tokenizer.json":        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
		"tokenizer_config.json": "a5c2e5a7b1a29a0702cd28c08a399b5ecc110c263009d17f7e3b415f25905fd8",
	}, pins)
	require.Len(t, m.Weights, 2)
	assert.Equal(t, "fp32", m.Weights[0].ID, "full precision is the default")
	assert.Equal(t, "onnx/model.onnx", m.Weights[0].Path)
	for _, w := range m.Weights {
		assert.Nil(t, w.SHA256, "%s: the published record pins no ONNX file", w.Path)
		assert.True(t, w.Approximate)
	}
	require.Len(t, plan.Calls, 16)
	assert.Equal(t, 44, plan.Pairs)
	assert.Equal(t, 512, plan.ContextTokens)
	assert.Equal(t, "original/utf8-write", plan.Calls[0].ID)
	q, _ := plan.Calls[0].Request.Get("question")
	assert.Equal(t, "How do I explicitly select UTF-8 when saving text with pathlib?", q)
}

// TestCrossEncoderPlanTakesATestHostsManifest: the tiny test model's
// manifest is read as it is.
func TestCrossEncoderPlanTakesATestHostsManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "fixtures", "tiny-cross-encoder", "ragagent-model.json"))
	require.NoError(t, err)
	plan, err := open(t, 0).CrossEncoderPlan(data)
	require.NoError(t, err)
	assert.Equal(t, "ragagent-test/tiny-cross-encoder", plan.Model.Model)
	assert.Len(t, plan.Model.Files, 3)
	require.Len(t, plan.Model.Weights, 2)
	assert.Equal(t, "onnx/model.onnx", plan.Model.Weights[0].Path)
	assert.NotNil(t, plan.Model.Weights[0].SHA256)
	assert.False(t, plan.Model.Weights[0].Approximate)
	assert.Len(t, plan.Calls, 16)
}

// freshPayload is the published logits sent back as a fresh scoring, with
// call i's scores replaced by scores[i] where given.
func freshPayload(t testing.TB, scores map[int]any) string {
	t.Helper()
	file, err := recording.Parse(recordings.RerankCrossEncoder)
	require.NoError(t, err)
	var calls []any
	for i, tr := range file.Trials {
		resp := tr.Exchanges[0].Response.(*pyjson.Object)
		s, _ := resp.Get("scores")
		if x, ok := scores[i]; ok {
			s = x
		}
		calls = append(calls, pyjson.NewObject("id", tr.ID, "scores", s, "inference_seconds", 0.5))
	}
	return pyjson.Dumps(pyjson.NewObject("format", reranklab.ScoresFormat,
		"model", pyjson.NewObject("model", "org/fresh", "revision", "r2", "license", "MIT",
			"files", pyjson.NewObject("onnx/model.onnx", strings.Repeat("cd", 32))),
		"environment", pyjson.NewObject("runtime", "transformers.js 4.3.2", "device", "wasm"),
		"timings", pyjson.NewObject("first_score_ms", 12.5),
		"calls", calls), pyjson.Options{})
}

// TestAcceptCrossEncoderRecordsComparesAndReplays: a fresh scoring is
// accepted through the contract, set beside the published logits, and its
// recording replays through Rerank as a loaded cross-encoder file.
func TestAcceptCrossEncoderRecordsComparesAndReplays(t *testing.T) {
	e := open(t, 0)
	ctx := context.Background()
	run, err := e.AcceptCrossEncoder(ctx, freshPayload(t, map[int]any{0: []any{1.5, 2.5, -3.0}}))
	require.NoError(t, err)
	assert.Equal(t, reranklab.CrossEncoderLiveMode, run.CrossEncoder.ExecutionMode)
	assert.Equal(t, []string{"path-write", "path-read", "json-text"}, rerank.Sources(run.CrossEncoder.Original[0].CrossEncoder))
	assert.Equal(t, 44, run.Comparison.Pairs)
	assert.InDelta(t, 11.016639709472656-3.0, run.Comparison.MaxAbsDiff, 1e-9, "the largest change is json-text's")
	assert.True(t, run.Comparison.Calls[0].OrderAgrees)
	assert.True(t, run.Comparison.Summary.Agrees)
	assert.Equal(t, 16, run.Recording.Trials)

	file, err := recording.Parse([]byte(run.Recording.Text))
	require.NoError(t, err)
	assert.Equal(t, "org/fresh", file.Model)
	assert.Equal(t, now.Format("2006-01-02T15:04:05Z"), file.RecordedAt)
	cfg := file.Config.(*pyjson.Object)
	timings, _ := cfg.Get("timings")
	sameValue(t, pyjson.NewObject("first_score_ms", pyjson.Number("12.5")), timings)

	res, err := e.Rerank(ctx, engine.RerankRequest{CrossEncoder: file})
	require.NoError(t, err)
	assert.Equal(t, "loaded", res.Sources.CrossEncoder)
	assert.Equal(t, reranklab.CrossEncoderReplayMode, res.CrossEncoder.ExecutionMode)
	sameValue(t, pyjson.ValueOf(res.CrossEncoder.Expanded), pyjson.ValueOf(run.CrossEncoder.Expanded))
	assert.Equal(t, []float64{1.5, 2.5, -3.0}, res.CrossEncoder.Original[0].Scores)
}

// TestAcceptCrossEncoderRefusesMalformedScores: NaN (null through JSON), a
// wrong count or a string is refused by the contract, naming the case.
func TestAcceptCrossEncoderRefusesMalformedScores(t *testing.T) {
	e := open(t, 0)
	for i, tc := range []struct {
		call   int
		scores any
		want   string
	}{
		{0, []any{1.0, nil, 2.0}, "original case utf8-write: invalid_cross_encoder_scores: score 2 is null, not a finite number"},
		{6, []any{1.0, 2.0}, "expanded case heldout-json: invalid_cross_encoder_scores: 2 scores for 3 candidates"},
		{7, []any{1.0, 2.0, 3.0, 4.0}, "4 scores for 3 candidates"},
		{9, []any{"1", 2.0, 3.0}, `score 1 is "1"`},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			_, err := e.AcceptCrossEncoder(context.Background(), freshPayload(t, map[int]any{tc.call: tc.scores}))
			require.Error(t, err)
			code, ok := reason.Of(err)
			require.True(t, ok)
			assert.Equal(t, reason.InvalidCrossEncoderScores, code)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := e.AcceptCrossEncoder(context.Background(), "{}")
	assert.ErrorContains(t, err, "cross-encoder scores: format is null")
}

func sameValue(t testing.TB, want, got any) {
	t.Helper()
	d, same := pyjson.Diff(got, want)
	assert.True(t, same, "%s", d)
}
