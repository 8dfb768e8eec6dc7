package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
	"github.com/ragagentlab/ragagent/recordings"
)

func runRerank(t *testing.T, r reranker, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	code = r.run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// offline has no key in its environment.
func offline() reranker {
	return reranker{getenv: func(string) string { return "" }, clock: fixedNow}
}

// withKey has a dummy key in its environment.
func withKey() reranker {
	return reranker{getenv: func(v string) string {
		if v == "GEMINI_API_KEY" {
			return "dummy-test-key-not-a-real-key"
		}
		return ""
	}, clock: fixedNow}
}

func fixedNow() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

func TestRerankTables(t *testing.T) {
	code, out, errOut := runRerank(t, offline())
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, errOut)
	golden(t, "rerank.golden", out)
	// The seed's table, as its rows read there.
	assert.Regexp(t, `path-read +1 +8, text, utf, when +0\.3333333333333333 +1`, out)
	assert.Regexp(t, `path-write +2 +8, select, text, utf +0\.3333333333333333 +2`, out)
	assert.Regexp(t, `json-text +3 +select +0\.08333333333333333 +3`, out)
	assert.Regexp(t, `diagnostic +coverage +3 +2 +0\.7777777777777778`, out)
}

func TestRerankJSON(t *testing.T) {
	code, out, errOut := runRerank(t, offline(), "--json")
	require.Equal(t, exitOK, code, errOut)
	golden(t, "rerank.json.golden", out)
	v, err := pyjson.Decode(out)
	require.NoError(t, err)
	root := v.(*pyjson.Object)
	assert.Equal(t, []string{"coverage", "gemini", "cross_encoder"}, root.Keys())
	cov, _ := root.Get("coverage")
	pub, err := pyjson.Decode(string(fixtures.PublishedCoverage))
	require.NoError(t, err)
	d, same := pyjson.Diff(cov, pub)
	assert.True(t, same, "coverage: %s", d)
	ce, _ := root.Get("cross_encoder")
	summary, _ := ce.(*pyjson.Object).Get("summary")
	pubCE, err := pyjson.Decode(string(fixtures.PublishedCrossEncoder))
	require.NoError(t, err)
	pubSummary, _ := pubCE.(*pyjson.Object).Get("summary")
	d, same = pyjson.Diff(summary, pubSummary)
	assert.True(t, same, "summary: %s", d)
}

func TestRerankPriceOverrideChangesTheReservations(t *testing.T) {
	code, out, errOut := runRerank(t, offline(), "--price", "gemini-3.1-flash-lite=1/2")
	require.Equal(t, exitOK, code, errOut)
	// utf8-write: 1776 bytes at $1/M plus 1024 tokens at $2/M.
	assert.Regexp(t, `utf8-write +1776 +[0-9a-f]{64} +0\.003824\n`, out)
	assert.Contains(t, out, "at $1.0/M, plus 1024 output tokens at $2.0/M")
}

func TestRerankUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--ledger", "x.json"},
		{"--budget", "1"},
		{"--live"},
		{"--live", "--ledger", "x.json", "--gemini", "y.json"},
		{"--live", "--ledger", "x.json", "--price", "nonsense"},
		{"--price", "gemini-3.1-flash-lite=1"},
		{"--price", "gemini-3.1-flash-lite=1e308/1e308"},
		{"--record", "x.json"},
		{"--allowance", "3"},
		{"--endpoint", "http://127.0.0.1:1"},
		{"extra"},
	} {
		code, _, errOut := runRerank(t, offline(), args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.NotEmpty(t, errOut, "%v", args)
	}
}

func TestRerankLiveWithoutAKeySaysSoAndTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	ledger, rec := filepath.Join(dir, "ledger.json"), filepath.Join(dir, "live.json")
	code, out, errOut := runRerank(t, offline(), "--live", "--ledger", ledger, "--budget", "0.05", "--record", rec)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, "ragagent rerank: --live needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent\n", errOut)
	assert.NoFileExists(t, ledger)
	assert.NoFileExists(t, rec)
}

// fakeAPI is a loopback fake of the Gemini API answering with the bundled
// recording's replies, in order.
func fakeAPI(t *testing.T) *geminitest.Server {
	t.Helper()
	file, err := recording.Parse(recordings.RerankGemini)
	require.NoError(t, err)
	var replies []geminitest.Reply
	for _, tr := range file.Trials {
		replies = append(replies, geminitest.Reply{Body: []byte(pyjson.Dumps(tr.Exchanges[0].Response, pyjson.Options{}))})
	}
	srv := geminitest.NewServer(geminitest.Sequence(nil, replies...))
	t.Cleanup(srv.Close)
	return srv
}

func reached(srv *geminitest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Reached {
			n++
		}
	}
	return n
}

// TestRerankLiveAgainstALoopbackFake runs --live end to end through the
// native transport: it reserves in the ledger, records every attempt, and
// the recording replays to the bundled output.
func TestRerankLiveAgainstALoopbackFake(t *testing.T) {
	dir := t.TempDir()
	ledger, rec := filepath.Join(dir, "ledger.json"), filepath.Join(dir, "live.json")
	srv := fakeAPI(t)
	code, out, errOut := runRerank(t, withKey(), "--live", "--ledger", ledger, "--budget", "0.05", "--record", rec, "--endpoint", srv.URL())
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 4, reached(srv))
	for _, r := range srv.Requests() {
		assert.Equal(t, "/v1beta/models/gemini-3.1-flash-lite:generateContent", r.Path)
	}
	assert.Contains(t, out, "fresh-gemini-listwise-reranking")
	assert.Regexp(t, `Ledger .*ledger\.json: budget \$0\.05, reserved \$0\.0079\d*, remaining \$0\.042\d*`, out)
	assert.Contains(t, out, "Recording: "+rec)

	l, err := budget.Open(ledgerfile.File{Path: ledger}, fixedNow)
	require.NoError(t, err)
	require.Len(t, l.Entries(), 4)
	for _, e := range l.Entries() {
		assert.Equal(t, budget.Completed, e.Outcome)
		assert.Equal(t, "2026-11-29T12:00:00Z", e.At)
	}

	// The recording replays offline to the bundled tables.
	code, replayed, errOut := runRerank(t, offline(), "--gemini", rec)
	require.Equal(t, exitOK, code, errOut)
	bundled, err := os.ReadFile(filepath.Join("testdata", "rerank.golden"))
	require.NoError(t, err)
	assert.Equal(t, string(bundled), replayed)

	// The recording is never overwritten.
	code, _, errOut = runRerank(t, withKey(), "--live", "--ledger", ledger, "--record", rec, "--endpoint", srv.URL())
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "already exists")
	assert.Equal(t, 4, reached(srv), "nothing more was sent")

	// Lowered to $0.009, the budget leaves about $0.0011, less than the
	// run's reservations: the run is refused whole before anything is
	// reserved or sent (the engine's rule, as in the page), and the
	// command fails.
	code, _, errOut = runRerank(t, withKey(), "--live", "--ledger", ledger, "--budget", "0.009", "--record", filepath.Join(dir, "second.json"), "--endpoint", srv.URL(), "--json")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "budget_exceeded")
	assert.Contains(t, errOut, "nothing was sent")
	assert.NoFileExists(t, filepath.Join(dir, "second.json"), "nothing was recorded")
	assert.Equal(t, 4, reached(srv), "nothing more was sent")
	assert.Equal(t, 1, strings.Count(errOut, "\n"))
}

// TestRerankLiveAgainstTheDefaultFake: without a script the fake (as
// `make fake` serves it) ranks listwise requests by coverage, so --live can
// be tried end to end without a key: every case succeeds in coverage order.
func TestRerankLiveAgainstTheDefaultFake(t *testing.T) {
	dir := t.TempDir()
	srv := geminitest.NewServer(geminitest.Policy())
	t.Cleanup(srv.Close)
	code, out, errOut := runRerank(t, withKey(), "--live", "--ledger", filepath.Join(dir, "ledger.json"), "--budget", "0.05",
		"--record", filepath.Join(dir, "live.json"), "--endpoint", srv.URL(), "--json")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 4, reached(srv))
	var got struct {
		Gemini struct {
			Cases []struct {
				CaseID   string `json:"case_id"`
				Coverage []struct {
					SourceID string `json:"source_id"`
				} `json:"coverage"`
				Gemini []struct {
					SourceID string `json:"source_id"`
				} `json:"gemini"`
			} `json:"cases"`
		} `json:"gemini"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Gemini.Cases, 4)
	for _, c := range got.Gemini.Cases {
		assert.Equal(t, c.Coverage, c.Gemini, c.CaseID)
	}
}

func TestRerankLiveRefusesANonLoopbackEndpoint(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runRerank(t, withKey(), "--live", "--ledger", filepath.Join(dir, "l.json"), "--budget", "1", "--endpoint", "https://example.com")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "--endpoint")
	assert.NoFileExists(t, filepath.Join(dir, "l.json"))
}

func TestRerankCorruptLedgerIsOneLine(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.json")
	require.NoError(t, os.WriteFile(ledger, []byte(`{"format": "ragagent-ledger/1", "entries": [`), 0o644))
	srv := fakeAPI(t)
	code, out, errOut := runRerank(t, withKey(), "--live", "--ledger", ledger, "--endpoint", srv.URL(), "--record", filepath.Join(t.TempDir(), "r.json"))
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(errOut, "\n"))
	assert.Contains(t, errOut, "ledger.json: ledger: not a ragagent-ledger/1 file")
	assert.Zero(t, reached(srv))
}

func TestRerankBadRecordingIsOneLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"format": "ragagent-recording/1", "trials": [`), 0o644))
	for _, flagName := range []string{"--gemini", "--cross-encoder"} {
		code, _, errOut := runRerank(t, offline(), flagName, bad)
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, "bad.json: recording: not valid JSON")
		assert.Equal(t, 1, strings.Count(errOut, "\n"))
		code, _, errOut = runRerank(t, offline(), flagName, filepath.Join(t.TempDir(), "missing.json"))
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, flagName)
	}
}
