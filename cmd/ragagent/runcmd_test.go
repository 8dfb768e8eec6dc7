package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/recordings"
)

const overwriteQ = "In Python 3.12, does Path.write_text append to an existing file or overwrite it?"

func TestRunScripted(t *testing.T) {
	rows := []struct {
		golden string
		args   []string
	}{
		{"run-scripted-agent.txt", []string{"run", "--question", overwriteQ}},
		{"run-scripted-fixed.txt", []string{"run", "--question", overwriteQ, "--mode", "fixed"}},
		{"run-scripted-stop.txt", []string{"run", "--question", "For Python 3.13 Path.read_text, what does newline control and how do I select UTF-8?", "--version", "3.13"}},
		{"run-scripted-limit.txt", []string{"run", "--question", overwriteQ, "--limits", "source_bytes=100"}},
	}
	for _, row := range rows {
		t.Run(row.golden, func(t *testing.T) {
			code, out, errs := ragagent(row.args...)
			require.Equal(t, exitOK, code, errs)
			assert.Empty(t, errs)
			golden(t, row.golden, out)
		})
	}
}

func TestRunJSON(t *testing.T) {
	code, out, errs := ragagent("run", "--question", overwriteQ, "--json")
	require.Equal(t, exitOK, code, errs)
	var got struct {
		Policy string `json:"policy"`
		Result struct {
			Status    string `json:"status"`
			Reason    string `json:"reason"`
			Citations []struct {
				SourceID string `json:"source_id"`
				URL      string `json:"url"`
			} `json:"citations"`
			Steps []json.RawMessage `json:"steps"`
		} `json:"result"`
		Tokens struct {
			Replies int `json:"replies"`
		} `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "scripted", got.Policy)
	assert.Equal(t, "answered", got.Result.Status)
	assert.Equal(t, "citation_contract_passed", got.Result.Reason)
	require.NotEmpty(t, got.Result.Citations)
	assert.Equal(t, "https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.write_text", got.Result.Citations[0].URL)
	assert.Len(t, got.Result.Steps, 6)
	assert.Zero(t, got.Tokens.Replies)
}

// TestRunReplay replays one trial of the bundled recording, chosen by id
// or by its question and mode.
func TestRunReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "comparison.json")
	require.NoError(t, os.WriteFile(file, recordings.AgentComparison, 0o644))

	code, out, errs := ragagent("run", "--policy", "replay:"+file, "--trial", "serialize-and-save-agent-1")
	require.Equal(t, exitOK, code, errs)
	golden(t, "run-replay.txt", strings.ReplaceAll(out, file, "FILE"))

	code, out, errs = ragagent("run", "--policy", "replay:"+file, "--question", overwriteQ, "--mode", "fixed", "--json")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, `"reason": "citation_contract_passed"`)

	code, out, _ = ragagent("run", "--policy", "replay:"+file, "--question", overwriteQ, "--limits", "model_calls=8")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "replay_request_mismatch", "other limits change the request")

	code, _, errs = ragagent("run", "--policy", "replay:"+file, "--trial", "nope")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, `has no trial "nope"`)
}

// TestRunGemini runs one live question against the fake, recording every
// attempt to a new file that replays to the same result.
func TestRunGemini(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Policy())
	defer fake.Close()
	t.Setenv("GOOGLE_API_KEY", dummyKey)
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.json")
	code, out, errs := ragagent("run", "--policy", "gemini", "--endpoint", fake.URL(), "--record", rec, "--question", overwriteQ)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "Answered: citation_contract_passed")
	assert.Contains(t, out, "tokens:")
	assert.Contains(t, out, "(estimate)")
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	assert.NotContains(t, string(data)+out+errs, dummyKey)
	assert.Len(t, fake.Generations(), 6)

	code, again, errs := ragagent("run", "--policy", "replay:"+rec)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, again, "Answered: citation_contract_passed")
	assert.Len(t, fake.Generations(), 6, "replay sends nothing")

	code, _, errs = ragagent("run", "--policy", "gemini", "--endpoint", fake.URL(), "--record", rec, "--question", overwriteQ)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "refusing to overwrite")

	noKey(t)
	code, _, errs = ragagent("run", "--policy", "gemini", "--endpoint", fake.URL(), "--record", filepath.Join(dir, "x.json"), "--question", overwriteQ)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "needs GOOGLE_API_KEY or GEMINI_API_KEY")
	assert.Len(t, fake.Generations(), 6)
}

// TestRunGeminiRefusedKey: a 403 is reported as the key's problem, and the
// run is not graded.
func TestRunGeminiRefusedKey(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Status(403)))
	defer fake.Close()
	t.Setenv("GOOGLE_API_KEY", dummyKey)
	code, out, errs := ragagent("run", "--policy", "gemini", "--endpoint", fake.URL(), "--record", filepath.Join(t.TempDir(), "r.json"), "--question", overwriteQ)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "The API refused the key (HTTP 403)")
	assert.NotContains(t, out, "Checks:", "a key problem is not graded")
}

func TestReplayWithScripted(t *testing.T) {
	code, out, errs := ragagent("replay", "--with-scripted")
	require.Equal(t, exitOK, code, errs)
	golden(t, "replay-with-scripted.txt", out)

	code, out, errs = ragagent("replay", "--with-scripted", "--json", "--case", "unsupported")
	require.Equal(t, exitOK, code, errs)
	var got struct {
		Trials   []json.RawMessage `json:"trials"`
		Scripted struct {
			Trials  []struct{ ID string } `json:"trials"`
			Summary map[string]map[string]int
		} `json:"scripted"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Len(t, got.Trials, 4)
	require.Len(t, got.Scripted.Trials, 2)
	assert.Equal(t, "unsupported-fixed-1", got.Scripted.Trials[0].ID)
	assert.Equal(t, 1, got.Scripted.Summary["agent"]["pass"])
}
