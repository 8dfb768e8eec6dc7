package engine_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// TestParseEvalRequest: a front end's eval request becomes the request
// `ragagent eval` makes from its flags, refusals in the parser's order.
func TestParseEvalRequest(t *testing.T) {
	req, err := engine.ParseEvalRequest(`{"corpus": "python-3.11", "cases": "a\tq\t-\n", "config": "fields"}`)
	require.NoError(t, err)
	assert.Equal(t, "python-3.11", req.Corpus)
	assert.Equal(t, engine.Scripted, req.Policy, "scripted by default")
	assert.Equal(t, "fields", req.Config)
	assert.Equal(t, "a\tq\t-\n", string(req.Cases))
	assert.Nil(t, req.File)

	req, err = engine.ParseEvalRequest(`{"config": {"name": "mine", "tokenizer": "stemmed"}}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name": "mine", "tokenizer": "stemmed"}`, req.Config, "a spec is passed on as its JSON")

	rec, err := os.ReadFile("../../recordings/agent-comparison.json")
	require.NoError(t, err)
	req, err = engine.ParseEvalRequest(`{"policy": "replay", "recording": ` + quoteJSON(string(rec)) + `}`)
	require.NoError(t, err)
	require.NotNil(t, req.File)
	assert.Len(t, req.File.Trials, 16)

	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", `{"corpus": "seed", "case": "x"}`, `unknown field "case"`},
		{"not an object", `[1]`, "eval: the request is not"},
		{"replay without its recording", `{"policy": "replay"}`, "needs the recording's text"},
		{"a malformed recording", `{"policy": "replay", "recording": "{}"}`, "recording"},
		{"another policy", `{"policy": "gemini"}`, string(engine.InvalidPolicy)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := engine.ParseEvalRequest(tc.text)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err = engine.ParseEvalRequest(`{"policy": "gemini"}`)
	code, _ := reason.Of(err)
	assert.Equal(t, engine.InvalidPolicy, code)
}

// TestParseExport: a kept run's export request reads its run as the run
// parser read the run, and refuses what the parser refuses.
func TestParseExport(t *testing.T) {
	e, err := engine.Open(engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	p := e.RunParser("hasKey")
	x, err := p.ParseExport(`{"corpus": "seed", "run": {"question": "Does Path.write_text overwrite?", "hasKey": false}, "recorded_at": "2026-12-02T10:00:00Z", "trial": {"id": "mine", "repeat": 2}}`)
	require.NoError(t, err)
	assert.Equal(t, "Does Path.write_text overwrite?", x.Run.Task.Question)
	assert.Equal(t, "mine", x.ID)
	assert.Equal(t, 2, x.Repeat)
	assert.Equal(t, "2026-12-02T10:00:00Z", x.RecordedAt)
	assert.Nil(t, x.File, "a scripted run has no recording")
	assert.Empty(t, x.Annotations)

	// The page's annotations of the run come with it.
	x, err = p.ParseExport(`{"run": {"question": "q"}, "trial": {"id": "mine"}, "annotations": [{"author": "user", "verdict": "wrong", "note": "n", "passage_url": "https://x.test/a#b", "time": "2026-12-07T02:10:00Z"}]}`)
	require.NoError(t, err)
	require.Len(t, x.Annotations, 1)
	assert.Equal(t, "wrong", x.Annotations[0].Verdict)
	assert.Equal(t, "https://x.test/a#b", x.Annotations[0].PassageURL)

	_, err = p.ParseExport(`{"run": {"question": ""}}`)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidQuestion, code, "%v", err)
	_, err = p.ParseExport(`{"run": {"question": "q"}, "recording": "nope"}`)
	assert.Error(t, err)
	_, err = p.ParseExport(`[`)
	assert.ErrorContains(t, err, "export: give")
}

// quoteJSON is s as a JSON string.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWarm: a warm call runs its rounds on throwaway engines (replaying on
// every fifth) and refuses a count out of range.
func TestWarm(t *testing.T) {
	w, err := engine.Warm(2, 3)
	require.NoError(t, err)
	assert.Equal(t, 2, w.Rounds)
	assert.Greater(t, w.ElapsedMS, 0.0)
	for _, n := range []int{0, engine.MaxWarmRounds + 1} {
		_, err := engine.Warm(n, 0)
		assert.ErrorContains(t, err, "rounds must be from 1 to 50")
	}
}
