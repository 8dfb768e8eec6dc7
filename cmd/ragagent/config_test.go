package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/recordings"
)

// bundledWith is the bundled recording, written to a file, with its first
// trial's retrieval field set to r (nil leaves it absent).
func bundledWith(t *testing.T, r *recording.Retrieval) string {
	t.Helper()
	f, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	f.Trials[0].Retrieval = r
	data, err := f.Bytes()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "recording.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// A recorded trial replays only under the configuration it was recorded
// under: asking run or eval for another with --config, or replaying a
// trial whose recorded configuration this build does not have or has
// changed (another digest), is config_mismatch in one line; the recorded
// one, named or not, replays.
func TestReplayRefusesAnotherConfiguration(t *testing.T) {
	plain := bundledWith(t, nil)
	first := "overwrite-fixed-1"
	f, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	require.Equal(t, first, f.Trials[0].ID)

	seed, err := retrieval.Lookup(retrieval.Seed)
	require.NoError(t, err)
	prox, err := retrieval.Lookup("proximity")
	require.NoError(t, err)
	changed := bundledWith(t, &recording.Retrieval{Name: "proximity", SpecSHA256: strings.Repeat("0", 64)})
	unknown := bundledWith(t, &recording.Retrieval{Name: "no-such-config", SpecSHA256: prox.SHA256()})
	namedSeed := bundledWith(t, &recording.Retrieval{Name: retrieval.Seed, SpecSHA256: seed.SHA256()})

	refused := []struct {
		name string
		args []string
		says string
	}{
		{"run under another built-in", []string{"run", "--policy", "replay:" + plain, "--trial", first, "--config", "proximity"}, `recorded under retrieval configuration "seed"; it cannot replay under "proximity"`},
		{"eval under another built-in", []string{"eval", "--policy", "replay:" + plain, "--config", "stemmed"}, `cannot replay under "stemmed"`},
		{"run of a changed digest", []string{"run", "--policy", "replay:" + changed, "--trial", first}, "with settings of sha256 " + strings.Repeat("0", 64)},
		{"run of a configuration this build lacks", []string{"run", "--policy", "replay:" + unknown, "--trial", first}, `"no-such-config", which is neither a built-in here nor the pack's default`},
		{"run of a changed digest under its own name", []string{"run", "--policy", "replay:" + changed, "--trial", first, "--config", "proximity"}, "with settings of sha256 " + strings.Repeat("0", 64)},
	}
	for _, row := range refused {
		t.Run(row.name, func(t *testing.T) {
			code, out, errs := ragagent(row.args...)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out, "a refused replay prints no run header first")
			assert.Contains(t, errs, "config_mismatch: ")
			assert.Contains(t, errs, row.says)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %q", errs)
		})
	}

	// replay reports such a trial refused with its code and replays the rest.
	code, out, errs := ragagent("replay", "--recording", changed, "--json")
	require.Equal(t, exitOK, code, errs)
	var rep struct {
		Trials []struct {
			ID     string  `json:"id"`
			Error  *string `json:"error"`
			Result any     `json:"result"`
		} `json:"trials"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Trials, 16)
	require.NotNil(t, rep.Trials[0].Error)
	assert.Equal(t, "config_mismatch", *rep.Trials[0].Error)
	for _, tr := range rep.Trials[1:] {
		assert.Nil(t, tr.Error, tr.ID)
	}

	for _, args := range [][]string{
		{"run", "--policy", "replay:" + plain, "--trial", first, "--config", "seed"},
		{"run", "--policy", "replay:" + namedSeed, "--trial", first},
		{"run", "--policy", "replay:" + namedSeed, "--trial", first, "--config", "seed"},
	} {
		code, out, errs := ragagent(args...)
		assert.Equal(t, exitOK, code, "%v: %s", args, errs)
		assert.Contains(t, out, "Answered: citation_contract_passed", args)
	}
}

// A live run records the configuration its searches ranked by when it is
// not seed (the Python pack's proximity, or one chosen with --config) and
// nothing when it is (the seed corpus, or --config seed): a seed run's
// recording is what it was before configurations existed. Each replays
// under its own, whatever the pack's default.
func TestLiveRecordingNamesItsConfiguration(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Policy())
	defer fake.Close()
	t.Setenv("GOOGLE_API_KEY", dummyKey)
	dir := t.TempDir()
	// The Python pack's default is the spec its build script names.
	pyDefault, err := os.ReadFile(filepath.Join("..", "..", "scripts", "configs", "python-3.11.json"))
	require.NoError(t, err)
	general, err := retrieval.Parse(pyDefault)
	require.NoError(t, err)
	stemmed, err := retrieval.Lookup("stemmed")
	require.NoError(t, err)
	toml := "How do I parse a TOML file in Python 3.11?"
	for _, row := range []struct {
		name string
		args []string
		want *recording.Retrieval
	}{
		{"the seed corpus", []string{"--question", overwriteQ}, nil},
		{"the Python pack's default", []string{"--corpus", "python-3.11", "--question", toml}, &recording.Retrieval{Name: general.Name, SpecSHA256: general.SHA256()}},
		{"another chosen", []string{"--corpus", "python-3.11", "--config", "stemmed", "--question", toml}, &recording.Retrieval{Name: "stemmed", SpecSHA256: stemmed.SHA256()}},
		{"seed chosen", []string{"--corpus", "python-3.11", "--config", "seed", "--question", toml}, nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			rec := filepath.Join(dir, strings.ReplaceAll(row.name, " ", "-")+".json")
			code, out, errs := ragagent(append([]string{"run", "--policy", "gemini", "--endpoint", fake.URL(), "--record", rec}, row.args...)...)
			require.Equal(t, exitOK, code, errs)
			data, err := os.ReadFile(rec)
			require.NoError(t, err)
			f, err := recording.Parse(data)
			require.NoError(t, err)
			require.Len(t, f.Trials, 1)
			assert.Equal(t, row.want, f.Trials[0].Retrieval)
			assert.Equal(t, row.want != nil, strings.Contains(string(data), `"retrieval"`))

			corpus := []string{}
			if len(row.args) > 2 {
				corpus = row.args[:2]
			}
			code, again, errs := ragagent(append([]string{"run", "--policy", "replay:" + rec}, corpus...)...)
			require.Equal(t, exitOK, code, errs)
			answer := func(s string) string {
				_, a, _ := strings.Cut(s, "\nAnswered: ")
				a, _, _ = strings.Cut(a, "\nTokens: ")
				return a
			}
			assert.Equal(t, answer(out), answer(again), "the replay reproduces the run")
		})
	}
}
