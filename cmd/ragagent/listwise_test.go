package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/geminitest"
)

const listwiseConfig = `{"name": "lw", "tokenizer": "stemmed", "second_stage": {"method": "listwise", "depth": 3}}`

// TestRetrievalListwiseLiveThenReplay: against the loopback fake (it
// ranks listwise requests by coverage) the plan is printed before the
// requests, each is reserved in the ledger, every attempt is recorded,
// and --gemini replays the recording to the same JSON without the
// network; a changed configuration is refused by the replay.
func TestRetrievalListwiseLiveThenReplay(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "dummy-test-key-not-a-real-key")
	t.Setenv("GOOGLE_API_KEY", "")
	dir := t.TempDir()
	spec := filepath.Join(dir, "lw.json")
	require.NoError(t, os.WriteFile(spec, []byte(listwiseConfig), 0o644))
	srv := geminitest.NewServer(geminitest.Policy())
	t.Cleanup(srv.Close)
	rec, ledger := filepath.Join(dir, "rec.json"), filepath.Join(dir, "ledger.json")
	code, live, stderr := ragagent("retrieval", "--config", "seed", "--config", spec, "--live", "--ledger", ledger, "--budget", "0.05",
		"--record", rec, "--endpoint", srv.URL(), "--json")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, 3, reached(srv))
	assert.Contains(t, stderr, "listwise: 3 requests to gemini-3.1-flash-lite at "+srv.URL())
	assert.Less(t, strings.Index(stderr, "listwise: 3 requests to"), strings.Index(stderr, "listwise 3/3 requests"), "the plan comes first")
	assert.Contains(t, stderr, "listwise: 3 requests sent; ledger "+ledger+": budget $0.0500")
	assert.Contains(t, stderr, "listwise: recording "+rec)
	assert.FileExists(t, ledger)

	srv.Close()
	code, replayed, stderr := ragagent("retrieval", "--config", "seed", "--config", spec, "--gemini", rec, "--json")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, live, replayed, "the recording replays to the same bytes")
	assert.Contains(t, stderr, "listwise: replaying 3 requests")

	other := filepath.Join(dir, "lw2.json")
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(listwiseConfig, `"depth": 3`, `"depth": 2`, 1)), 0o644))
	code, _, stderr = ragagent("retrieval", "--config", "seed", "--config", other, "--gemini", rec)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "replay_request_mismatch")
}

func TestRetrievalListwiseFlags(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "lw.json")
	require.NoError(t, os.WriteFile(spec, []byte(listwiseConfig), 0o644))
	ledger := filepath.Join(dir, "ledger.json")
	for _, tc := range []struct {
		name string
		key  string
		args []string
		code int
		says string
	}{
		{"offline", "", []string{"--config", spec}, exitError, "unknown_config: configuration lw reranks with Gemini listwise calls"},
		{"ledger without live", "", []string{"--config", spec, "--ledger", ledger}, exitUsage, "--ledger goes with --live"},
		{"live without a ledger", "", []string{"--config", spec, "--live"}, exitUsage, "--live needs --ledger FILE"},
		{"live and replay", "", []string{"--config", spec, "--live", "--ledger", ledger, "--gemini", "x.json"}, exitUsage, "cannot go with --live"},
		{"no key", "", []string{"--config", spec, "--live", "--ledger", ledger}, exitError, "--live needs GOOGLE_API_KEY or GEMINI_API_KEY"},
		{"a remote endpoint", "dummy-test-key-not-a-real-key", []string{"--config", spec, "--live", "--ledger", ledger, "--endpoint", "https://example.com"}, exitError, "--endpoint"},
		{"no budget", "dummy-test-key-not-a-real-key", []string{"--config", spec, "--live", "--ledger", ledger, "--record", filepath.Join(dir, "r.json")}, exitError, "set a budget first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", tc.key)
			t.Setenv("GOOGLE_API_KEY", "")
			code, _, stderr := ragagent(append([]string{"retrieval"}, tc.args...)...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.says)
			assert.NoFileExists(t, filepath.Join(dir, "r.json"), "nothing recorded")
		})
	}
}
