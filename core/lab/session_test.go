package lab_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

func tally(pass, fail, incomplete int) evaluate.Tally {
	return evaluate.Tally{Pass: pass, Fail: fail, Incomplete: incomplete}
}

// scripted is a test double: it answers with fixed decisions and keeps each
// exchange as a generateContent response would carry it.
type scripted struct {
	decisions []*pyjson.Object
	exchanges []recording.Exchange
}

func (m *scripted) Decide(_ context.Context, p agent.Prompt, _ time.Duration) (agent.Reply, error) {
	if len(m.exchanges) >= len(m.decisions) {
		return agent.Reply{}, reason.New(reason.ReplayExhausted, "script ended")
	}
	d := m.decisions[len(m.exchanges)]
	response := pyjson.NewObject("candidates", []any{pyjson.NewObject(
		"content", pyjson.NewObject("parts", []any{pyjson.NewObject("text", pyjson.Dumps(d, pyjson.Options{}))}, "role", "model"),
		"finishReason", "STOP")},
		"usageMetadata", pyjson.NewObject("promptTokenCount", 100, "candidatesTokenCount", 20, "totalTokenCount", 120))
	m.exchanges = append(m.exchanges, recording.Exchange{Request: gemini.Payload(p), Response: response})
	return gemini.Decode(response)
}

func (m *scripted) Exchanges() []recording.Exchange { return m.exchanges }

func decision(action, assessment, query, source, answer string, quotes ...string) *pyjson.Object {
	cites := []any{}
	for i := 0; i+1 < len(quotes); i += 2 {
		cites = append(cites, pyjson.NewObject("source_id", quotes[i], "quote", quotes[i+1]))
	}
	return pyjson.NewObject("action", action, "assessment", assessment, "query", query,
		"source_id", source, "answer", answer, "citations", cites)
}

func overwriteScript() *scripted {
	return &scripted{decisions: []*pyjson.Object{
		decision("search", "Need the write_text passage.", "write_text overwrite", "", ""),
		decision("read", "Read the top candidate.", "", "path-write", ""),
		decision("answer", "The passage says it.", "", "", "It overwrites the file.", "path-write", "An existing file is overwritten."),
	}}
}

func TestSessionRunGradesRecordsAndReplays(t *testing.T) {
	l := openLab(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := lab.NewSession(l, func() time.Time { return now })
	overwrite, ok := l.Cases.Case("overwrite")
	require.True(t, ok)
	task := agent.Task{Question: overwrite.Question, Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()}

	var steps []agent.Step
	tr, err := s.Run(context.Background(), task, overwriteScript(), lab.Provider{Model: "m", Endpoint: "e"},
		func(st agent.Step, _ *agent.Observation) { steps = append(steps, st) })
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, "run-1-agent", tr.ID)
	assert.Equal(t, reason.CitationContractPassed, tr.Result.Reason)
	assert.Len(t, steps, 3, "every model call is reported as a step")
	require.NotNil(t, tr.Checks, "an authored case's question is graded")
	assert.Equal(t, evaluate.Pass, tr.Checks.Outcome)
	assert.Equal(t, 3, tr.Exchanges)

	// A question of no case runs ungraded and counts its own repeats.
	other := task
	other.Question = "What does Path.read_text return?"
	tr2, err := s.Run(context.Background(), other, &scripted{decisions: []*pyjson.Object{
		decision("stop", "Nothing to go on.", "", "", "")}}, lab.Provider{}, nil)
	require.NoError(t, err)
	assert.Nil(t, tr2.Checks)
	assert.Equal(t, "run-2-agent", tr2.ID)
	assert.Equal(t, reason.ModelStopped, tr2.Result.Reason)

	// The session's recording replays to the same outcomes.
	file := s.Recording()
	require.Len(t, file.Trials, 2)
	assert.Equal(t, "m", file.Model)
	assert.Equal(t, "2026-11-29T12:00:00Z", file.RecordedAt)
	var buf bytes.Buffer
	require.NoError(t, file.Write(&buf))
	parsed, err := recording.Parse(buf.Bytes())
	require.NoError(t, err)
	rep, err := l.Replay(context.Background(), parsed, nil)
	require.NoError(t, err)
	require.Len(t, rep.Trials, 2)
	assert.Equal(t, reason.CitationContractPassed, rep.Trials[0].Result.Reason)
	assert.Equal(t, evaluate.Pass, rep.Trials[0].Checks.Outcome)
	assert.Equal(t, reason.ModelStopped, rep.Trials[1].Result.Reason)
	assert.Equal(t, lab.Summary{Agent: tally(1, 0, 0)}, rep.Summary)
}

func TestSessionRefusesBadTaskWithoutRecording(t *testing.T) {
	l := openLab(t)
	s := lab.NewSession(l, nil)
	tr, err := s.Run(context.Background(), agent.Task{Question: " ", Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()},
		overwriteScript(), lab.Provider{}, nil)
	require.NoError(t, err)
	assert.Nil(t, tr.Result)
	require.NotNil(t, tr.Error)
	assert.Equal(t, reason.InvalidQuestion, *tr.Error)
	assert.Empty(t, s.Recording().Trials)
}

func TestSessionCancelledRunEndsIncomplete(t *testing.T) {
	l := openLab(t)
	s := lab.NewSession(l, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr, err := s.Run(ctx, agent.Task{Question: "write_text", Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()},
		overwriteScript(), lab.Provider{}, nil)
	require.NoError(t, err)
	assert.Equal(t, agent.Incomplete, tr.Result.Status)
	assert.Equal(t, reason.Cancelled, tr.Result.Reason)
	assert.Empty(t, s.Recording().Trials, "a run that made no exchange is not recorded")
}
