package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/ragagent -update to create it")
	assert.Equal(t, string(want), got)
}

func ragagent(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReplayGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"replay.txt", []string{"replay"}},
		{"replay-case-serialize-and-save.txt", []string{"replay", "--case", "serialize-and-save"}},
		{"replay-case-newline-version.txt", []string{"replay", "--case", "newline-version"}},
		{"replay.json", []string{"replay", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ragagent(c.args...)
			require.Equal(t, exitOK, code, stderr)
			assert.Empty(t, stderr)
			golden(t, c.name, stdout)
		})
	}
}

// TestReplayOTLPGolden: the exported trace of one case's trials is the
// same bytes every time (ids and times derive from the recording); its
// shape is checked against the OTLP JSON mapping in core/otlp.
func TestReplayOTLPGolden(t *testing.T) {
	out := filepath.Join(t.TempDir(), "trace.json")
	code, stdout, stderr := ragagent("replay", "--case", "newline-version", "--otlp", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "The 4 trials' trace (OTLP/JSON, OpenInference attributes) is in "+out)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	golden(t, "replay-newline-version.otlp.json", string(data))

	code, stdout, _ = ragagent("replay", "--case", "newline-version", "--json", "--otlp", out)
	require.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(stdout, "{"), "--json output stays one JSON object")
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))

	code, _, stderr = ragagent("replay", "--otlp", filepath.Join(t.TempDir(), "missing", "dir", "t.json"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "--otlp")
}

func TestReplaySummaryIsTheSeeds(t *testing.T) {
	_, stdout, _ := ragagent("replay")
	assert.Contains(t, stdout, "fixed  4     2     2")
	assert.Contains(t, stdout, "agent  4     3     1")
	assert.Contains(t, stdout, "40 of 40 recorded model exchanges used")
}

func TestReplayRefusesBadInputInOneLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	bundled, err := os.ReadFile(filepath.Join("..", "..", "recordings", "agent-comparison.json"))
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"replay", "--recording", filepath.Join(dir, "nope.json")}, exitError, "no such file"},
		{"truncated recording", []string{"replay", "--recording", write("cut.json", string(bundled[:len(bundled)/2]))}, exitError, "not valid JSON"},
		{"not a recording", []string{"replay", "--recording", write("other.json", `{"format": "something-else"}`)}, exitError, "format is"},
		{"exchange without an outcome", []string{"replay", "--recording", write("bad.json", `{"format": "ragagent-recording/1", "trials": [{"id": "x", "exchanges": [{"request": {}}]}]}`)}, exitError, "trial 1 (x) exchange 1"},
		{"unknown case", []string{"replay", "--case", "nope"}, exitUsage, "no trial has case \"nope\""},
		{"unknown flag", []string{"replay", "--nope"}, exitUsage, "flag provided but not defined"},
		{"stray argument", []string{"replay", "extra"}, exitUsage, "unexpected argument"},
		{"unknown command", []string{"replays"}, exitUsage, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ragagent(c.args...)
			assert.Equal(t, c.code, code)
			assert.Contains(t, stderr, c.want)
			if c.code == exitError {
				assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
				assert.Empty(t, stdout)
			}
		})
	}
}

func TestReplayOfARecordingWithARefusedTrial(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"format": "ragagent-recording/1", "trials": [{"id": "x", "case_id": "overwrite", "mode": "agent", "question": "q", "version": "3.12", "limits": {"reads": 9}, "exchanges": []}]}`), 0o644))
	code, stdout, stderr := ragagent("replay", "--recording", p)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "refused: invalid_limits")
	code, stdout, _ = ragagent("replay", "--recording", p, "--json")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, `"error": "invalid_limits"`)
	assert.Contains(t, stdout, `"result": null`)
	assert.Contains(t, stdout, `"checks": null`)
}

func TestImportPublishedCheck(t *testing.T) {
	out := filepath.Join("..", "..", "recordings", "agent-comparison.json")
	code, stdout, stderr := ragagent("import-published", "--check", "--output", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "up to date")

	stale := filepath.Join(t.TempDir(), "stale.json")
	require.NoError(t, os.WriteFile(stale, []byte("{}"), 0o644))
	code, _, stderr = ragagent("import-published", "--check", "--output", stale)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "differs from the rebuilt recording")
}

func TestHelp(t *testing.T) {
	code, stdout, _ := ragagent("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "replay")
	code, _, _ = ragagent()
	assert.Equal(t, exitUsage, code)
}
