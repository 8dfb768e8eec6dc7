package recording

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

func TestWriteThenParseRoundTrips(t *testing.T) {
	file, err := Parse(recordings.AgentComparison)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, file.Write(&buf))
	assert.Equal(t, string(recordings.AgentComparison), buf.String())
}

func TestParseRefusesMalformedRecordingsInOneLine(t *testing.T) {
	valid := `{"format": "ragagent-recording/1", "trials": [{"id": "t1", "exchanges": [{"request": {}, "response": {}}]}]}`
	for _, c := range []struct {
		name, text, want string
	}{
		{"empty file", ``, "not valid JSON"},
		{"truncated", valid[:len(valid)-7], "not valid JSON"},
		{"not an object", `[]`, "top level"},
		{"wrong format", `{"format": "ragagent-recording/2", "trials": []}`, "format"},
		{"no trials", `{"format": "ragagent-recording/1"}`, "trials is not a list"},
		{"trial not an object", `{"format": "ragagent-recording/1", "trials": [1]}`, "trial 1: not an object"},
		{"trial without id", `{"format": "ragagent-recording/1", "trials": [{"exchanges": []}]}`, "id must be"},
		{"repeated id", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": []}, {"id": "a", "exchanges": []}]}`, "repeats trial 1"},
		{"exchanges not a list", `{"format": "ragagent-recording/1", "trials": [{"id": "a"}]}`, "exchanges is not a list"},
		{"exchange without request", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": [{"response": {}}]}]}`, "exchange 1: has no request"},
		{"exchange without outcome", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": [{"request": {}}]}]}`, "neither a response nor an error"},
		{"error not a string", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": [{"request": {}, "error": 429}]}]}`, "error must be"},
		{"elapsed not finite", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "elapsed_seconds": NaN, "exchanges": []}]}`, "finite"},
		{"sent_at not a string", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": [{"request": {}, "sent_at": 1, "response": {}}]}]}`, "sent_at must be"},
		{"repeat not whole", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "repeat": 1.5, "exchanges": []}]}`, "repeat must be"},
		// A repeated key would silently drop what came first (json.loads
		// keeps the last value): refused, as are keys differing only in case.
		{"repeated trials key", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": []}], "trials": []}`, `the key "trials" appears twice`},
		{"repeated key in a response", `{"format": "ragagent-recording/1", "trials": [{"id": "a", "exchanges": [{"request": {}, "response": {"candidates": [], "candidates": []}}]}]}`, `the key "candidates" appears twice`},
		{"case-variant keys", `{"format": "ragagent-recording/1", "trials": [], "Trials": [{"id": "a", "exchanges": []}]}`, `differ only in case`},
		{"tiny values past the memory bound", "[" + strings.Repeat(`{"a":1},`, 1<<20) + `{"a":1}]`, "MB of memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n")
			assert.True(t, strings.HasPrefix(err.Error(), "recording: "))
		})
	}
	file, err := Parse([]byte(`{"format": "ragagent-recording/1", "unknown": true, "trials": [{"id": "t1", "x": 1, "exchanges": [{"request": {}, "error": "HTTPError", "http_status": 429, "response": {}}]}]}`))
	require.NoError(t, err, "unknown keys are ignored")
	assert.Equal(t, "HTTPError", file.Trials[0].Exchanges[0].Error, "an error wins over a response")
	assert.Equal(t, 429, file.Trials[0].Exchanges[0].HTTPStatus)
}

// TestSentAtIsKept: an exchange's sent time, when a recording has one,
// survives a parse and a write (the trace viewer's waterfall reads it).
func TestSentAtIsKept(t *testing.T) {
	text := `{"format": "ragagent-recording/1", "trials": [{"id": "t1", "exchanges": [{"request": {}, "sent_at": "2026-11-30T12:00:01.5Z", "response": {}}]}]}`
	file, err := Parse([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, "2026-11-30T12:00:01.5Z", file.Trials[0].Exchanges[0].SentAt)
	b, err := file.Bytes()
	require.NoError(t, err)
	again, err := Parse(b)
	require.NoError(t, err)
	assert.Equal(t, file.Trials[0].Exchanges, again.Trials[0].Exchanges)
}

func TestReplayerNamesTheDifference(t *testing.T) {
	file, err := Parse(recordings.AgentComparison)
	require.NoError(t, err)
	trial := file.Trials[1] // overwrite-agent-1
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := tools.Open(snap)
	require.NoError(t, err)
	defer lib.Close()

	task, err := agent.TaskFromJSON(trial.Question, trial.Version, trial.Mode, trial.Limits)
	require.NoError(t, err)
	task.Question = strings.Replace(task.Question, "append to", "add to", 1)
	res, err := (&agent.Controller{Tools: lib, Model: NewReplayer(trial)}).Run(context.Background(), task)
	require.NoError(t, err)
	assert.Equal(t, reason.ReplayRequestMismatch, res.Reason)
	assert.Contains(t, res.Detail, "trial overwrite-agent-1, exchange 1")
	assert.Contains(t, res.Detail, "$.contents[0].parts[0].text (character")
	assert.Contains(t, res.Detail, "add to")
	assert.Contains(t, res.Detail, "append to")

	short := trial
	short.Exchanges = trial.Exchanges[:1]
	task.Question = strings.Replace(task.Question, "add to", "append to", 1)
	res, err = (&agent.Controller{Tools: lib, Model: NewReplayer(short)}).Run(context.Background(), task)
	require.NoError(t, err)
	assert.Equal(t, reason.ReplayExhausted, res.Reason)
	assert.Contains(t, res.Detail, "model call 2 has no recorded exchange")
}

// FuzzParse: no input panics; whatever parses writes and parses again to
// the same trials.
func FuzzParse(f *testing.F) {
	f.Add(string(recordings.AgentComparison[:2000]))
	f.Add(`{"format": "ragagent-recording/1", "trials": [{"id": "t", "limits": {"reads": 1}, "exchanges": [{"request": {"a": NaN}, "error": "URLError"}]}]}`)
	f.Add(`{"format": "ragagent-recording/1", "trials": []}`)
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Parse([]byte(text))
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			return
		}
		var buf bytes.Buffer
		require.NoError(t, file.Write(&buf))
		again, err := Parse(buf.Bytes())
		require.NoError(t, err)
		require.Len(t, again.Trials, len(file.Trials))
	})
}

// TestRetrievalRoundTrips: a trial's retrieval configuration is written
// only when it names one (a seed run's trial has no "retrieval" key, as
// before configurations existed), survives a parse and a write, and a
// malformed one is refused in one line naming the trial.
func TestRetrievalRoundTrips(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	file := &File{Model: "m", Trials: []Trial{
		{ID: "t1", Exchanges: []Exchange{}, Retrieval: &Retrieval{Name: "proximity", SpecSHA256: sum}},
		{ID: "t2", Exchanges: []Exchange{}},
	}}
	data, err := file.Bytes()
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), `"retrieval"`), "written for the trial that names one only")
	assert.Contains(t, string(data), `"retrieval": {`+"\n"+`        "name": "proximity",`+"\n"+`        "spec_sha256": "`+sum+`"`)
	back, err := Parse(data)
	require.NoError(t, err)
	require.Len(t, back.Trials, 2)
	assert.Equal(t, &Retrieval{Name: "proximity", SpecSHA256: sum}, back.Trials[0].Retrieval)
	assert.Nil(t, back.Trials[1].Retrieval, "absent is seed")
	again, err := back.Bytes()
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))

	absent, err := Parse([]byte(`{"format": "ragagent-recording/1", "trials": [{"id": "a", "retrieval": null, "exchanges": []}]}`))
	require.NoError(t, err)
	assert.Nil(t, absent.Trials[0].Retrieval, "null is absent")
	for _, c := range []struct{ text, want string }{
		{`"retrieval": "proximity"`, "retrieval must be an object"},
		{`"retrieval": {"spec_sha256": "` + sum + `"}`, "retrieval name must be a non-empty string"},
		{`"retrieval": {"name": "proximity"}`, "retrieval spec_sha256 must be"},
		{`"retrieval": {"name": "proximity", "spec_sha256": 1}`, "retrieval spec_sha256 must be"},
	} {
		_, err := Parse([]byte(`{"format": "ragagent-recording/1", "trials": [{"id": "a", ` + c.text + `, "exchanges": []}]}`))
		require.Error(t, err, c.text)
		assert.Contains(t, err.Error(), "trial 1 (a)")
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "\n")
	}
}
