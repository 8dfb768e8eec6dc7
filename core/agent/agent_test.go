package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
)

// script is a model that answers with generateContent responses built from
// reply texts, decoded exactly as a live or replayed reply would be. A reply
// starting with "!" is a response object given whole.
type script struct {
	replies []string
	prompts []model.Prompt
}

func (s *script) Decide(_ context.Context, p model.Prompt, _ time.Duration) (model.Reply, error) {
	s.prompts = append(s.prompts, p)
	if len(s.replies) == 0 {
		return model.Reply{}, reason.New(reason.ReplayExhausted, "script ran out")
	}
	text := s.replies[0]
	s.replies = s.replies[1:]
	var response any
	if raw, ok := strings.CutPrefix(text, "!"); ok {
		v, err := pyjson.Decode(raw)
		if err != nil {
			panic(err)
		}
		response = v
	} else {
		response = pyjson.NewObject("candidates", []any{pyjson.NewObject(
			"content", pyjson.NewObject("parts", []any{pyjson.NewObject("text", text)}),
			"finishReason", "STOP")})
	}
	return gemini.Decode(response)
}

func decision(action, query, source, answer string, citations ...[2]string) string {
	cites := make([]any, len(citations))
	for i, c := range citations {
		cites[i] = pyjson.NewObject("source_id", c[0], "quote", c[1])
	}
	return pyjson.Dumps(pyjson.NewObject("action", action, "assessment", "Need evidence.", "query", query,
		"source_id", source, "answer", answer, "citations", cites), pyjson.Options{})
}

func search(q string) string       { return decision("search", q, "", "") }
func read(id string) string        { return decision("read", "", id, "") }
func stop() string                 { return decision("stop", "", "", "") }
func answer(c ...[2]string) string { return decision("answer", "", "", "It is overwritten.", c...) }

const quote = "An existing file is overwritten."

func library(t *testing.T) *tools.Library {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := tools.Open(snap)
	require.NoError(t, err)
	t.Cleanup(func() { lib.Close() })
	return lib
}

// editing serves a passage whose text changed after its handle was issued.
type editing struct{ *tools.Library }

func (e editing) Read(h tools.Handle) (corpus.Passage, error) {
	p, err := e.Library.Read(h)
	p.Text = strings.Replace(p.Text, "overwritten", "kept", 1)
	return p, err
}

// ticking is a clock that advances by step on every reading.
func ticking(step time.Duration) func() time.Time {
	now := time.Unix(0, 0)
	return func() time.Time {
		t := now
		now = now.Add(step)
		return t
	}
}

const question = "In Python 3.12, does Path.write_text append to an existing file or overwrite it?"

// TestGuards runs one row per guard, in the reference controller's order of
// checks: each row's last reply is the one the guard must refuse.
func TestGuards(t *testing.T) {
	type usage = agent.Usage
	for _, c := range []struct {
		name    string
		mode    agent.Mode
		limits  func(*agent.Limits)
		replies []string
		tools   func(*tools.Library) tools.Tools
		clock   func() time.Time
		stopped bool // the context is cancelled before the run starts
		status  agent.Status
		reason  reason.Code
		usage   usage
	}{
		{name: "answer passes the citation contract", replies: []string{search("Path.write_text"), read("path-write"), answer([2]string{"path-write", quote})},
			status: agent.Answered, reason: reason.CitationContractPassed, usage: usage{3, 1, 1, 224}},
		{name: "model stops", replies: []string{stop()}, status: agent.Incomplete, reason: reason.ModelStopped, usage: usage{1, 0, 0, 0}},
		{name: "not an object is an invalid decision", replies: []string{`["search"]`}, status: agent.Failed, reason: reason.InvalidDecision, usage: usage{1, 0, 0, 0}},
		{name: "unknown action", replies: []string{decision("browse", "", "", "")}, status: agent.Failed, reason: reason.UnknownAction, usage: usage{1, 0, 0, 0}},
		{name: "citation with extra key", replies: []string{`{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": [{"source_id": "path-write", "quote": "q", "url": "u"}]}`},
			status: agent.Failed, reason: reason.InvalidCitation, usage: usage{1, 0, 0, 0}},
		{name: "stop carrying a query", replies: []string{decision("stop", "more", "", "")}, status: agent.Failed, reason: reason.UnexpectedActionFields, usage: usage{1, 0, 0, 0}},
		{name: "blank query", replies: []string{search(" \t")}, status: agent.Failed, reason: reason.InvalidQuery, usage: usage{1, 0, 0, 0}},
		{name: "read without a source", replies: []string{read("")}, status: agent.Failed, reason: reason.InvalidSource, usage: usage{1, 0, 0, 0}},
		{name: "answer without citations", replies: []string{answer()}, status: agent.Failed, reason: reason.MissingAnswerEvidence, usage: usage{1, 0, 0, 0}},
		{name: "repeated search with equivalent terms", replies: []string{search("Path write_text"), search("text, WRITE path")},
			status: agent.Failed, reason: reason.DuplicateQuery, usage: usage{2, 1, 0, 0}},
		{name: "search allowance", limits: func(l *agent.Limits) { l.Searches = 1 }, replies: []string{search("Path.write_text"), search("json dumps")},
			status: agent.Incomplete, reason: reason.SearchLimit, usage: usage{2, 1, 0, 0}},
		{name: "search without terms is admitted, counted and fails", replies: []string{search("???")},
			status: agent.Failed, reason: reason.InvalidQuery, usage: usage{1, 1, 0, 0}},
		{name: "unissued source", replies: []string{read("path-write")}, status: agent.Failed, reason: reason.UnissuedSource, usage: usage{1, 0, 0, 0}},
		{name: "repeated read", replies: []string{search("Path.write_text"), read("path-write"), read("path-write")},
			status: agent.Failed, reason: reason.DuplicateRead, usage: usage{3, 1, 1, 224}},
		{name: "read allowance", limits: func(l *agent.Limits) { l.Reads = 1 }, replies: []string{search("Path.write_text"), read("path-write"), read("path-read")},
			status: agent.Incomplete, reason: reason.ReadOrByteLimit, usage: usage{3, 1, 1, 224}},
		{name: "source-byte allowance is priced before reading", limits: func(l *agent.Limits) { l.SourceBytes = 223 }, replies: []string{search("Path.write_text"), read("path-write")},
			status: agent.Incomplete, reason: reason.ReadOrByteLimit, usage: usage{2, 1, 0, 0}},
		{name: "changed read", replies: []string{search("Path.write_text"), read("path-write")}, tools: func(l *tools.Library) tools.Tools { return editing{l} },
			status: agent.Failed, reason: reason.ChangedRead, usage: usage{2, 1, 1, 224}},
		{name: "citation of an unread source", replies: []string{search("Path.write_text"), read("path-write"), answer([2]string{"path-read", "Path.read_text"})},
			status: agent.Failed, reason: reason.UnreadOrChangedCitation, usage: usage{3, 1, 1, 224}},
		{name: "altered quote", replies: []string{search("Path.write_text"), read("path-write"), answer([2]string{"path-write", "An existing file is replaced."})},
			status: agent.Failed, reason: reason.UnreadOrChangedCitation, usage: usage{3, 1, 1, 224}},
		{name: "fixed path refuses a tool request", mode: agent.Fixed, replies: []string{search("Path.write_text")},
			status: agent.Failed, reason: reason.FixedPolicyToolRequest, usage: usage{1, 1, 2, 423}},
		{name: "fixed path answers from its own retrieval", mode: agent.Fixed, replies: []string{answer([2]string{"path-write", quote})},
			status: agent.Answered, reason: reason.CitationContractPassed, usage: usage{1, 1, 2, 423}},
		{name: "fixed path runs out of reads before any model call", mode: agent.Fixed, limits: func(l *agent.Limits) { l.Reads = 1 },
			status: agent.Incomplete, reason: reason.ReadOrByteLimit, usage: usage{0, 1, 1, 224}},
		{name: "call limit", limits: func(l *agent.Limits) { l.ModelCalls = 2 }, replies: []string{search("Path.write_text"), search("json dumps")},
			status: agent.Incomplete, reason: reason.ModelCallLimit, usage: usage{2, 2, 0, 0}},
		{name: "cancellation before the deadline", stopped: true, clock: ticking(181 * time.Second), limits: func(l *agent.Limits) { l.Seconds = 180 },
			status: agent.Incomplete, reason: reason.Cancelled, usage: usage{0, 0, 0, 0}},
		{name: "deadline before a call", clock: ticking(61 * time.Second), limits: func(l *agent.Limits) { l.Seconds = 180 },
			replies: []string{search("Path.write_text")}, status: agent.Incomplete, reason: reason.Deadline, usage: usage{1, 1, 0, 0}},
		{name: "deadline reached during a call", clock: ticking(100 * time.Second), limits: func(l *agent.Limits) { l.Seconds = 180 },
			replies: []string{search("Path.write_text")}, status: agent.Incomplete, reason: reason.Deadline, usage: usage{1, 0, 0, 0}},
		{name: "unfinished reply", replies: []string{`!{"candidates": [{"finishReason": "MAX_TOKENS", "content": {"parts": [{"text": "{"}]}}]}`},
			status: agent.Failed, reason: reason.UnfinishedModelReply, usage: usage{1, 0, 0, 0}},
		{name: "undecodable JSON", replies: []string{`Sure, here it is: {}`}, status: agent.Failed, reason: reason.InvalidModelJSON, usage: usage{1, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lib := library(t)
			var ts tools.Tools = lib
			if c.tools != nil {
				ts = c.tools(lib)
			}
			limits := agent.DefaultLimits()
			if c.limits != nil {
				c.limits(&limits)
			}
			mode := c.mode
			if mode == "" {
				mode = agent.Agent
			}
			model := &script{replies: c.replies}
			clock := c.clock
			if clock == nil {
				clock = ticking(0)
			}
			ctrl := agent.Controller{Tools: ts, Model: model, Clock: clock}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.stopped {
				cancel()
			}
			res, err := ctrl.Run(ctx, agent.Task{Question: question, Version: "3.12", Mode: mode, Limits: limits})
			require.NoError(t, err)
			assert.Equal(t, c.status, res.Status)
			assert.Equal(t, c.reason, res.Reason, res.Detail)
			assert.Equal(t, c.usage, res.Usage)
			assert.Empty(t, model.replies, "every scripted reply is used")
			if res.Status != agent.Answered {
				assert.Empty(t, res.Answer, "no answer leaks from a refused run")
				assert.Empty(t, res.Citations)
			}
			for _, cite := range res.Citations {
				assert.NotEmpty(t, cite.URL, "the URL comes from the read record")
			}
		})
	}
}

func TestTaskRefusalsComeBeforeAnyRun(t *testing.T) {
	valid := agent.Task{Question: question, Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()}
	for _, c := range []struct {
		name   string
		change func(*agent.Task)
		code   reason.Code
	}{
		{"limits first, even with a blank question", func(t *agent.Task) { t.Limits.Reads = 0; t.Question = "" }, reason.InvalidLimits},
		{"model_calls over its cap", func(t *agent.Task) { t.Limits.ModelCalls = 13 }, reason.InvalidLimits},
		{"seconds zero", func(t *agent.Task) { t.Limits.Seconds = 0 }, reason.InvalidLimits},
		{"blank question", func(t *agent.Task) { t.Question = " \u3000\x1c" }, reason.InvalidQuestion},
		{"question over 512 characters", func(t *agent.Task) { t.Question = strings.Repeat("é", 513) }, reason.InvalidQuestion},
		{"version with three parts", func(t *agent.Task) { t.Version = "3.12.1" }, reason.InvalidVersion},
		{"version with a fullwidth digit", func(t *agent.Task) { t.Version = "３.12" }, reason.InvalidVersion},
		{"version with a trailing newline", func(t *agent.Task) { t.Version = "3.12\n" }, reason.InvalidVersion},
		{"unknown mode", func(t *agent.Task) { t.Mode = "hybrid" }, reason.InvalidMode},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := valid
			c.change(&task)
			model := &script{}
			_, err := (&agent.Controller{Tools: library(t), Model: model}).Run(context.Background(), task)
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.code, code)
			assert.Empty(t, model.prompts, "nothing is sent for a refused task")
		})
	}
	task := valid
	task.Question = strings.Repeat("😀", 512)
	assert.NoError(t, task.Validate(), "512 code points is within the cap whatever their UTF-8 length")
}

func TestCancelledRunStopsAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	model := &cancelling{cancel: cancel}
	ctrl := agent.Controller{Tools: library(t), Model: model}
	res, err := ctrl.Run(ctx, agent.Task{Question: question, Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	require.NoError(t, err)
	assert.Equal(t, agent.Incomplete, res.Status)
	assert.Equal(t, reason.Cancelled, res.Reason)
	assert.Equal(t, 1, res.Usage.ModelCalls)
}

// cancelling cancels the run while its first call is in flight.
type cancelling struct{ cancel func() }

func (c *cancelling) Decide(ctx context.Context, _ model.Prompt, _ time.Duration) (model.Reply, error) {
	c.cancel()
	<-ctx.Done()
	return model.Reply{}, reason.New(reason.Transport("TimeoutError"), "%v", ctx.Err())
}

func TestStepsReportEachCallAsItHappens(t *testing.T) {
	var seen []agent.Step
	var observed []*agent.Observation
	model := &script{replies: []string{search("Path.write_text"), read("path-write"), answer([2]string{"path-write", quote})}}
	ctrl := agent.Controller{Tools: library(t), Model: model, OnStep: func(s agent.Step, o *agent.Observation) {
		seen = append(seen, s)
		observed = append(observed, o)
	}}
	res, err := ctrl.Run(context.Background(), agent.Task{Question: question, Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	require.NoError(t, err)
	require.Len(t, seen, 3)
	assert.Equal(t, res.Steps, seen)
	assert.Equal(t, agent.Admitted, seen[0].Outcome)
	assert.Equal(t, "Path.write_text", seen[0].Argument)
	require.NotNil(t, observed[0])
	assert.Equal(t, agent.Search, observed[0].Tool)
	assert.Equal(t, agent.Usage{ModelCalls: 2, Searches: 1, Reads: 1, SourceBytes: 224}, seen[1].Usage)
	assert.Equal(t, agent.Finished, seen[2].Outcome)
	assert.Nil(t, observed[2])
}

// TestStateIsWhatTheModelSees checks the request state: json.dumps with
// sorted keys, the question, version, accepted observations (search metadata
// without text or receipts), counters before the call and the limits.
func TestStateIsWhatTheModelSees(t *testing.T) {
	model := &script{replies: []string{search("Path.write_text"), stop()}}
	ctrl := agent.Controller{Tools: library(t), Model: model}
	_, err := ctrl.Run(context.Background(), agent.Task{Question: question, Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	require.NoError(t, err)
	require.Len(t, model.prompts, 2)
	state := model.prompts[1].State
	assert.True(t, strings.HasPrefix(state, `{"limits": {"model_calls": 9, "reads": 4, "searches": 3, "seconds": 180, "source_bytes": 4096}, "observations": [{"arguments": {"query": "Path.write_text"}, "result": {"candidates": [{"rank": 1, "source_id": "path-write", "version": "3.12"}, {"rank": 2, "source_id": "path-read", "version": "3.12"}], "query": "Path.write_text"}, "tool": "search"}], "question": `), state)
	assert.Contains(t, state, `"usage": {"model_calls": 1, "reads": 0, "searches": 1, "source_bytes": 0}, "version": "3.12"}`)
	assert.NotContains(t, state, "text_sha256", "search metadata carries no receipt")
	assert.Equal(t, agent.SystemPrompt, model.prompts[0].System)
}
