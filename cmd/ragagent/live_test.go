package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// dummyKey is obviously not a key; tests look for it where it must not be.
const dummyKey = "dummy-test-key-not-a-real-key"

func TestLivePlan(t *testing.T) {
	noKey(t)
	code, out, errs := ragagent("live")
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	golden(t, "live-plan.txt", out)

	code, out, _ = ragagent("live", "--json", "--cases", "overwrite", "--repeats", "1", "--modes", "agent", "--limits", "model_calls=4", "--allowance", "3")
	require.Equal(t, exitOK, code)
	var plan map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.Equal(t, 4.0, plan["worst_case_requests"])
	assert.Equal(t, 3.0, plan["request_allowance"])
	assert.Equal(t, 1.0, plan["trials"])
	assert.Nil(t, plan["key_variable"])

	t.Setenv("GEMINI_API_KEY", dummyKey)
	code, out, errs = ragagent("live")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "from GEMINI_API_KEY (never printed")
	assert.NotContains(t, out+errs, dummyKey)
}

// TestBadFlagValues: a wrong value is one line on stderr and exit 2,
// before anything is sent or written.
func TestBadFlagValues(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", dummyKey)
	t.Chdir(t.TempDir())
	rows := [][]string{
		{"live", "--repeats", "x"},
		{"live", "--repeats", "0"},
		{"live", "--repeats", "11"},
		{"live", "--modes", "both"},
		{"live", "--modes", ""},
		{"live", "--cases", "nope"},
		{"live", "--limits", "model_calls=99"},
		{"live", "--limits", "speed=3"},
		{"live", "--allowance", "0"},
		{"live", "--allowance", "201"},
		{"live", "--allowance", "many"},
		{"live", "--endpoint", "http://example.com/v1"},
		{"live", "--endpoint", "https://10.1.2.3"},
		{"live", "--price", "gemini-3.8-flash=cheap"},
		{"live", "--price", "gemini-3.8-flash=1e308/1e308"},
		{"live", "--limits", "model_calls=3,model_calls=1"},
		{"live", "--execute-approved", "--output", "same.json", "--report", "same.json"},
		{"run", "--question", "q", "--mode", "both"},
		{"run", "--question", "q", "--policy", "oracle"},
		{"run", "--question", "q", "--policy", "replay:"},
		{"run", "--question", "q", "--policy", "scripted:x"},
		{"run", "--question", "q", "--limits", "reads=0"},
		{"run", "--question", "q", "--version", "3"},
		{"run", "--question", "   "},
		{"run"},
		{"run", "--question", "q", "--trial", "x"},
		{"run", "--question", "q", "--price", "m=1"},
		{"run", "--question", "q", "--policy", "gemini", "--allowance", "0"},
		{"run", "--question", "q", "--policy", "gemini", "--endpoint", "http://192.168.1.1:80"},
	}
	for _, args := range rows {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := ragagent(args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			assert.True(t, strings.HasPrefix(errs, "ragagent "+args[0]+": "), errs)
			assert.NotContains(t, errs, dummyKey)
		})
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written")
}

// TestLiveEndToEnd runs the default batch against the loopback fake (which
// answers with the scripted policy after three scripted failures), then
// replays the recording it wrote and compares every trial.
func TestLiveEndToEnd(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Sequence(geminitest.Policy(),
		geminitest.Status(429),                          // overwrite-fixed-1
		geminitest.Oversized(),                          // overwrite-agent-1, call 1
		geminitest.Finished("MAX_TOKENS", `{"ac`),       // serialize-and-save-fixed-1
		geminitest.Raw(200, "<html>proxy error</html>"), // serialize-and-save-agent-1, call 1
	))
	defer fake.Close()
	dir := t.TempDir()
	output := filepath.Join(dir, "rec.json")
	t.Setenv("GOOGLE_API_KEY", dummyKey)

	code, out, errs := ragagent("live", "--execute-approved", "--endpoint", fake.URL(), "--output", output)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "[16/16]")
	assert.Contains(t, out, "Wrote the recording")

	recData, err := os.ReadFile(output)
	require.NoError(t, err)
	repData, err := os.ReadFile(filepath.Join(dir, "rec.report.json"))
	require.NoError(t, err)
	for name, text := range map[string]string{"stdout": out, "stderr": errs, "recording": string(recData), "report": string(repData)} {
		assert.NotContains(t, text, dummyKey, "no key in the %s", name)
	}
	gens := fake.Generations()
	for _, g := range gens {
		assert.Equal(t, dummyKey, g.Header.Get("X-Goog-Api-Key"))
	}

	var report struct {
		ActualAPIRequests int             `json:"actual_api_requests"`
		Trials            []trialJSON     `json:"trials"`
		Summary           json.RawMessage `json:"summary"`
		Cost              struct {
			EstimatedUSD *float64 `json:"estimated_usd"`
			Note         string   `json:"note"`
		} `json:"cost"`
	}
	require.NoError(t, json.Unmarshal(repData, &report))
	assert.Equal(t, len(gens), report.ActualAPIRequests, "every request the fake saw is counted")
	require.Len(t, report.Trials, 16)
	assert.NotNil(t, report.Cost.EstimatedUSD)
	assert.Contains(t, report.Cost.Note, "Estimate")
	reasons := map[string]string{}
	for _, tr := range report.Trials {
		reasons[tr.ID] = reasonOf(t, tr.Result)
	}
	assert.Equal(t, "model_transport_failed:HTTPError", reasons["overwrite-fixed-1"])
	assert.Equal(t, "provider_response_bytes_limit", reasons["overwrite-agent-1"])
	assert.Equal(t, "unfinished_model_reply", reasons["serialize-and-save-fixed-1"])
	assert.Equal(t, "invalid_model_json", reasons["serialize-and-save-agent-1"])
	assert.Equal(t, "citation_contract_passed", reasons["overwrite-fixed-2"])

	exchanges := 0
	for _, raw := range pyjsonField(t, recData, "trials").([]any) {
		exchanges += len(field(raw, "exchanges").([]any))
	}
	assert.Equal(t, len(gens), exchanges, "every attempt is in the recording")

	// The recording replays to the same results.
	code, replayOut, errs := ragagent("replay", "--recording", output, "--json")
	require.Equal(t, exitOK, code, errs)
	var replayed struct {
		Trials  []trialJSON     `json:"trials"`
		Summary json.RawMessage `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(replayOut), &replayed))
	require.Len(t, replayed.Trials, 16)
	assert.JSONEq(t, string(report.Summary), string(replayed.Summary))
	for i, live := range report.Trials {
		again := replayed.Trials[i]
		require.Equal(t, live.ID, again.ID)
		assert.JSONEq(t, string(live.Checks), string(again.Checks), live.ID)
		for _, k := range []string{"status", "reason", "answer", "citations", "question", "version", "mode",
			"limits", "usage", "decisions", "observations", "tokens"} {
			assert.JSONEq(t, string(live.Result[k]), string(again.Result[k]), "%s result.%s", live.ID, k)
		}
	}

	// A second run refuses to overwrite, before sending anything.
	before := len(fake.Requests())
	code, _, errs = ragagent("live", "--execute-approved", "--endpoint", fake.URL(), "--output", output)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "already exists; refusing to overwrite")
	assert.Equal(t, before, len(fake.Requests()))
	again, err := os.ReadFile(output)
	require.NoError(t, err)
	assert.Equal(t, recData, again)
}

func TestLiveNeedsAKey(t *testing.T) {
	noKey(t)
	fake := geminitest.NewServer(geminitest.Policy())
	defer fake.Close()
	dir := t.TempDir()
	code, _, errs := ragagent("live", "--execute-approved", "--endpoint", fake.URL(), "--output", filepath.Join(dir, "r.json"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "no API key")
	assert.Empty(t, fake.Requests())
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)
}

type trialJSON struct {
	ID     string                     `json:"id"`
	Result map[string]json.RawMessage `json:"result"`
	Checks json.RawMessage            `json:"checks"`
}

func reasonOf(t *testing.T, r map[string]json.RawMessage) string {
	var s string
	require.NoError(t, json.Unmarshal(r["reason"], &s))
	return s
}

func pyjsonField(t *testing.T, data []byte, k string) any {
	v, err := pyjson.Decode(string(data))
	require.NoError(t, err)
	return field(v, k)
}

func field(v any, k string) any {
	o, _ := v.(*pyjson.Object)
	x, _ := o.Get(k)
	return x
}
