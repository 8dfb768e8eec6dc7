package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvalExperimentJSON: eval --cases grades the set given, and its
// --json keeps every existing field with the experiment beside them:
// seven rates per path, each over the trials it applies to, and agent
// against fixed on each with the discordant pairs McNemar counts.
func TestEvalExperimentJSON(t *testing.T) {
	code, stdout, stderr := ragagent("eval", "--corpus", "python-3.11", "--cases", filepath.Join("testdata", "small-set.tsv"), "--json")
	require.Equal(t, exitOK, code, stderr)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &top))
	for _, k := range []string{"corpus", "search_k", "policy", "cases", "summary", "experiment"} {
		assert.Contains(t, top, k)
	}
	var out struct {
		Cases      []struct{ ID string }
		Experiment struct {
			Resamples int
			Paths     []struct {
				Path   string
				Trials int
				Rates  []struct {
					Name      string
					Count, Of int
					Value     *float64
					CI95      *[2]float64
				}
			}
			Comparisons []struct {
				A, B, Rate string
				Pairs      int
				AOnly      int      `json:"a_only"`
				BOnly      int      `json:"b_only"`
				McNemarP   float64  `json:"mcnemar_p"`
				PValue     *float64 `json:"p_value"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Cases, 10, "the set's 5 cases on both paths")
	assert.Equal(t, "read-whole-file", out.Cases[0].ID)
	assert.Equal(t, 10000, out.Experiment.Resamples)
	require.Len(t, out.Experiment.Paths, 2)
	for _, p := range out.Experiment.Paths {
		assert.Equal(t, 5, p.Trials)
		require.Len(t, p.Rates, 7)
		of := map[string]int{}
		for _, r := range p.Rates {
			of[r.Name] = r.Of
			require.NotNil(t, r.Value)
			assert.InDelta(t, float64(r.Count)/float64(r.Of), *r.Value, 1e-12)
			assert.True(t, r.CI95[0] <= *r.Value && *r.Value <= r.CI95[1])
		}
		assert.Equal(t, map[string]int{"target_read": 4, "answered": 5, "failed": 5, "incomplete": 5, "correct_abstention": 1, "valid_citations": 4, "pass": 5}, of)
	}
	require.Len(t, out.Experiment.Comparisons, 7)
	for _, c := range out.Experiment.Comparisons {
		assert.Equal(t, "fixed", c.A)
		assert.Equal(t, "agent", c.B)
		assert.LessOrEqual(t, c.AOnly+c.BOnly, c.Pairs)
		if c.Rate == "correct_abstention" {
			// Both paths stop on django-install (eval-python-small-set.txt).
			assert.Equal(t, 1, c.Pairs)
			assert.Zero(t, c.AOnly+c.BOnly, "both paths stop on django-install")
		}
		assert.Greater(t, c.McNemarP, 0.0)
		require.NotNil(t, c.PValue)
		assert.Greater(t, *c.PValue, 0.0)
	}
}

// TestEvalCasesRefusals: a malformed set is refused before any run, with
// one line naming the case and field, and nothing on stdout.
func TestEvalCasesRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"format": "ragagent-cases/1", "cases": [{"id": "x", "split": "dev", "question": "q"}]}`), 0o644))
	elsewhere := filepath.Join(dir, "elsewhere.tsv")
	require.NoError(t, os.WriteFile(elsewhere, []byte("x\tq?\thttps://docs.python.org/3.11/library/nowhere.html\n"), 0o644))
	for file, want := range map[string]string{
		bad:       `invalid_cases: case 1 ("x"): split: "dev" is not development or held-out`,
		elsewhere: `invalid_cases: case 1 ("x"): target_urls: no passage is on the page https://docs.python.org/3.11/library/nowhere.html`,
	} {
		code, stdout, stderr := ragagent("eval", "--corpus", "python-3.11", "--cases", file)
		assert.Equal(t, exitError, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, want)
	}
}
