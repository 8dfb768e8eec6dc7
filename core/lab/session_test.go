package lab_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

func newLab(t testing.TB) *lab.Lab {
	t.Helper()
	l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func newSession(t testing.TB, allowance int) (*lab.Session, *lab.Lab) {
	t.Helper()
	l := newLab(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s, err := lab.NewSession(l, allowance, func() time.Time { return now })
	require.NoError(t, err)
	return s, l
}

// inProcess is a gemini.Transport that answers like the loopback fake
// (the scripted policy's decision as a generateContent reply) without a
// network, as the page's fetch hook would.
type inProcess struct {
	key   bool
	calls int
	fail  error
}

func (f *inProcess) HasKey() bool { return f.key }

func (f *inProcess) Post(ctx context.Context, _ string, body []byte) (int, []byte, error) {
	f.calls++
	if f.fail != nil {
		return 0, nil, f.fail
	}
	v, err := pyjson.Decode(string(body))
	if err != nil {
		return 400, nil, nil
	}
	payload, _ := v.(*pyjson.Object)
	reply := geminitest.Policy().Reply(geminitest.Request{Method: "POST", Body: body, Payload: payload})
	status := reply.Status
	if status == 0 {
		status = 200
	}
	return status, reply.Body, ctx.Err()
}

func task(t *testing.T, l *lab.Lab, caseID string, mode agent.Mode) agent.Task {
	c, ok := l.Cases.Case(caseID)
	require.True(t, ok)
	return agent.Task{Question: c.Question, Version: c.Version, Mode: mode, Limits: agent.DefaultLimits()}
}

func TestSessionOfflineRunIsGradedNotRecorded(t *testing.T) {
	s, l := newSession(t, 10)
	var steps []agent.Step
	tr, err := s.Run(context.Background(), task(t, l, "overwrite", agent.Agent), policy.Scripted{},
		func(st agent.Step, _ *agent.Observation) { steps = append(steps, st) })
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, "run-1-agent", tr.ID)
	assert.Equal(t, "overwrite", tr.CaseID)
	assert.Len(t, steps, len(tr.Result.Steps), "every step is reported as it happens")
	require.NotNil(t, tr.Checks, "an authored case's question is graded")
	assert.Equal(t, evaluate.Pass, tr.Checks.Outcome)
	assert.Zero(t, tr.Exchanges)
	assert.Empty(t, s.Recording().Trials, "offline runs send and record nothing")
	assert.Zero(t, s.Allowance().Used())

	other := task(t, l, "overwrite", agent.Agent)
	other.Question = "What does Path.read_text return?"
	tr, err = s.Run(context.Background(), other, policy.Scripted{}, nil)
	require.NoError(t, err)
	assert.Nil(t, tr.Checks, "no case asks this question")
	assert.Equal(t, "run-2-agent", tr.ID)
	assert.Equal(t, 1, tr.Repeat)
}

func TestSessionLiveRunRecordsEveryAttemptAndReplays(t *testing.T) {
	s, l := newSession(t, 20)
	transport := &inProcess{key: true}
	want := task(t, l, "serialize-and-save", agent.Agent)
	tr, err := s.RunLive(context.Background(), want, lab.Live{Transport: transport}, nil)
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, transport.calls, tr.Exchanges)
	assert.Equal(t, tr.Result.Usage.ModelCalls, transport.calls)
	assert.Equal(t, transport.calls, s.Allowance().Used())

	fixed := task(t, l, "serialize-and-save", agent.Fixed)
	_, err = s.RunLive(context.Background(), fixed, lab.Live{Transport: transport}, nil)
	require.NoError(t, err)

	file := s.Recording()
	require.Len(t, file.Trials, 2)
	assert.Equal(t, gemini.Model, file.Model)
	assert.Equal(t, gemini.Endpoint, file.Endpoint)
	assert.Equal(t, "2026-11-29T12:00:00Z", file.RecordedAt)
	var buf bytes.Buffer
	require.NoError(t, file.Write(&buf))
	parsed, err := recording.Parse(buf.Bytes())
	require.NoError(t, err)
	rep, err := l.Replay(context.Background(), parsed, nil)
	require.NoError(t, err)
	require.Len(t, rep.Trials, 2)
	assert.Equal(t, tr.Result.Reason, rep.Trials[0].Result.Reason)
	assert.Equal(t, tr.Result.Answer, rep.Trials[0].Result.Answer)
	assert.Equal(t, tr.Checks.Outcome, rep.Trials[0].Checks.Outcome)
	assert.Equal(t, rep.Trials[0].Exchanges, rep.Trials[0].ExchangesUsed)
}

func TestSessionLiveRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allowance int
		transport *inProcess
		endpoint  string
		cancel    bool
		want      reason.Code
		attempts  int
	}{
		{"no key: nothing sent", 5, &inProcess{}, "", false, reason.MissingAPIKey, 0},
		{"allowance spent mid-run", 1, &inProcess{key: true}, "", false, reason.BatchRequestLimit, 1},
		{"transport failure is recorded", 5, &inProcess{key: true, fail: &gemini.TransportError{Kind: "URLError", Err: errors.New("refused")}}, "", false, "model_transport_failed:URLError", 1},
		{"stopped before sending", 5, &inProcess{key: true}, "", true, reason.Cancelled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, l := newSession(t, tc.allowance)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			tr, err := s.RunLive(ctx, task(t, l, "overwrite", agent.Agent), lab.Live{Transport: tc.transport, Endpoint: tc.endpoint}, nil)
			require.NoError(t, err)
			require.NotNil(t, tr.Result)
			assert.Equal(t, tc.want, tr.Result.Reason)
			assert.Equal(t, tc.attempts, tc.transport.calls)
			assert.Equal(t, tc.attempts, tr.Exchanges)
			require.Len(t, s.Recording().Trials, 1)
			assert.Len(t, s.Recording().Trials[0].Exchanges, tc.attempts)
		})
	}
}

func TestSessionRefusesBeforeStarting(t *testing.T) {
	s, l := newSession(t, 5)
	bad := task(t, l, "overwrite", agent.Agent)
	bad.Question = " "
	tr, err := s.RunLive(context.Background(), bad, lab.Live{Transport: &inProcess{key: true}}, nil)
	require.NoError(t, err)
	require.NotNil(t, tr.Error)
	assert.Equal(t, reason.InvalidQuestion, *tr.Error)
	assert.Empty(t, s.Recording().Trials)

	_, err = s.RunLive(context.Background(), task(t, l, "overwrite", agent.Agent),
		lab.Live{Transport: &inProcess{key: true}, Endpoint: "https://example.com/v1"}, nil)
	assert.ErrorContains(t, err, "refused")

	_, err = lab.NewSession(l, 0, nil)
	assert.Error(t, err, "an allowance of 0 is refused")
}

func TestExplainMatchesLibrary(t *testing.T) {
	l := newLab(t)
	for _, q := range []string{"write_text utf-8", "newline read_text", "json"} {
		want, err := l.Library.Explain(q, 4, "")
		require.NoError(t, err)
		got, err := l.Explain(q, 4, "")
		require.NoError(t, err)
		assert.Equal(t, want, got, q)
	}
	_, err := l.Explain("!!!", 2, "3.12")
	assert.ErrorContains(t, err, "invalid_query")
}
