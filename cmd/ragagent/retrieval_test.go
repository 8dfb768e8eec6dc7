package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetrievalGoldens: the table and the JSON on the seed pack's own
// cases (every built-in) and on a small TSV set over the Python pack.
func TestRetrievalGoldens(t *testing.T) {
	small := filepath.Join("testdata", "small-set.tsv")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"retrieval-seed.txt", []string{"retrieval"}},
		{"retrieval-seed.json", []string{"retrieval", "--json"}},
		{"retrieval-small.txt", []string{"retrieval", "--corpus", "python-3.11", "--cases", small, "--config", "seed", "--config", "fields"}},
		{"retrieval-small.json", []string{"retrieval", "--corpus", "python-3.11", "--cases", small, "--config", "seed", "--config", "fields", "--k", "5", "--json"}},
		{"retrieval-list.txt", []string{"retrieval", "--list"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ragagent(c.args...)
			require.Equal(t, exitOK, code, stderr)
			golden(t, c.name, stdout)
		})
	}
}

// TestRetrievalJSONShape: exactly DESIGN's keys, and per configuration
// the answerable cases only, in file order, with null for a miss.
func TestRetrievalJSONShape(t *testing.T) {
	code, stdout, stderr := ragagent("retrieval", "--corpus", "python-3.11", "--cases", filepath.Join("testdata", "small-set.tsv"), "--config", "seed", "--config", "fields", "--json")
	require.Equal(t, exitOK, code, stderr)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.ElementsMatch(t, []string{"corpus", "k", "cases", "answerable", "configs", "comparisons"}, keys(got))
	var res struct {
		Cases, Answerable, K int
		Configs              []struct {
			Name    string
			Spec    map[string]any
			Metrics map[string]struct {
				Value float64
				CI95  [2]float64
			}
			Cases []struct {
				ID   string
				Rank *int
			}
		}
		Comparisons []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Equal(t, 5, res.Cases)
	assert.Equal(t, 4, res.Answerable)
	assert.Equal(t, 10, res.K)
	require.Len(t, res.Configs, 2)
	for _, c := range res.Configs {
		assert.Len(t, c.Metrics, 5)
		var ids []string
		for _, r := range c.Cases {
			ids = append(ids, r.ID)
		}
		assert.Equal(t, []string{"read-whole-file", "pretty-json", "glob-files", "sort-by-value"}, ids)
		for m, e := range c.Metrics {
			assert.True(t, e.CI95[0] <= e.Value && e.Value <= e.CI95[1], "%s %s: %v in %v", c.Name, m, e.Value, e.CI95)
		}
	}
	assert.Nil(t, res.Configs[0].Cases[1].Rank, "seed misses pretty-json in the top 10")
	require.Len(t, res.Comparisons, 5)
	for _, c := range res.Comparisons {
		assert.ElementsMatch(t, []string{"a", "b", "metric", "difference", "ci95", "p_value"}, keys(c))
		assert.Equal(t, "seed", c["a"])
		assert.Equal(t, "fields", c["b"])
		assert.Greater(t, c["p_value"], 0.0)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRetrievalOwnConfigFile: a spec file is a configuration of one's own.
func TestRetrievalOwnConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"name": "mine", "tokenizer": "stemmed", "stop_words": "english"}`), 0o644))
	code, stdout, stderr := ragagent("retrieval", "--config", "seed", "--config", path, "--json")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `"name": "mine"`)
	assert.Contains(t, stdout, `"b": "mine"`)
}

// TestRetrievalRefusals: a malformed set or configuration is refused
// with one line naming what is wrong, and nothing goes to stdout.
func TestRetrievalRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	badTSV := write("bad.tsv", "a\tq?\thttps://docs.python.org/3.12/library/json.html#json.dumps\nb\tr?\n")
	badJSON := write("bad.json", `{"format": "ragagent-cases/1", "cases": [{"id": "x", "split": "development", "question": "q", "verison": "3.12"}]}`)
	noTarget := write("missing.tsv", "a\tq?\thttps://docs.python.org/3.12/library/nowhere.html\n")
	empty := write("empty.tsv", "")
	badConfig := write("config.json", `{"name": "x", "tokenizer": "porter"}`)
	modelConfig := write("model.json", `{"name": "x", "second_stage": {"method": "cross-encoder", "model": "cross-encoder/ms-marco-MiniLM-L6-v2"}}`)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"tsv columns", []string{"retrieval", "--cases", badTSV}, exitError, "bad.tsv: invalid_cases: line 2: 2 tab-separated columns"},
		{"json key", []string{"retrieval", "--cases", badJSON}, exitError, `invalid_cases: case 1 ("x"): unknown field "verison"`},
		{"target nowhere", []string{"retrieval", "--cases", noTarget}, exitError, `invalid_cases: case 1 ("a"): target_urls: no passage is on the page`},
		{"empty set", []string{"retrieval", "--cases", empty}, exitError, "invalid_cases"},
		{"no such set", []string{"retrieval", "--cases", filepath.Join(dir, "nope.tsv")}, exitError, "nope.tsv"},
		{"unknown config", []string{"retrieval", "--config", "bm42"}, exitError, `unknown_config: --config "bm42" is neither a built-in`},
		{"invalid config", []string{"retrieval", "--config", badConfig}, exitError, "invalid_config"},
		{"model config", []string{"retrieval", "--config", modelConfig}, exitError, "unknown_config: configuration x reranks with the cross-encoder"},
		{"k", []string{"retrieval", "--k", "0"}, exitUsage, "--k must be from 1 to 100"},
		{"min metric", []string{"retrieval", "--min", "precision=0.5"}, exitUsage, `--min "precision=0.5" is not METRIC=VALUE`},
		{"min value", []string{"retrieval", "--min", "recall@10=high"}, exitUsage, `"high" is not a number from 0 to 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ragagent(c.args...)
			assert.Equal(t, c.code, code, stderr)
			assert.Empty(t, stdout, "nothing half-written")
			assert.Contains(t, stderr, c.want)
			assert.Equal(t, 1, strings.Count(stderr, "ragagent retrieval:"), "one line: %q", stderr)
		})
	}
}

// TestRetrievalMinimum: --min passes above, fails below with one line
// naming the first configuration and the metric.
func TestRetrievalMinimum(t *testing.T) {
	code, stdout, stderr := ragagent("retrieval", "--config", "seed", "--min", "recall@10=0.5", "--json")
	assert.Equal(t, exitOK, code, stderr)
	assert.NotEmpty(t, stdout)
	code, stdout, stderr = ragagent("retrieval", "--config", "stemmed", "--config", "seed", "--min", "recall@10=0.5", "--min", "ndcg@10=0.99")
	assert.Equal(t, exitError, code)
	assert.NotEmpty(t, stdout, "the report is printed, then the gate fails")
	assert.Regexp(t, `ragagent retrieval: stemmed on seed: ndcg@10 is [0-9.]+ \(95% interval [0-9.]+ to [0-9.]+\), below the minimum 0.99\n$`, stderr)
	assert.NotContains(t, stderr, "recall@10 is")
}
