package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/otlp"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func open(t testing.TB, allowance int) *engine.Engine {
	t.Helper()
	e, err := engine.Open(engine.Options{Allowance: allowance, Clock: func() time.Time { return now }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// inProcess is a gemini.Transport that answers like the loopback fake (the
// scripted policy's decision, or a listwise ranking by coverage) without a
// network, as the page's fetch hook or the native transport would.
type inProcess struct {
	key bool
	mu  sync.Mutex
	n   int
	// fail, if set, is every attempt's error.
	fail error
	// block, if set, holds each attempt until the context ends.
	block bool
	// status, if set, is every attempt's HTTP status, with an API error body.
	status int
	// responder, if set, answers in place of the fake's Policy.
	responder geminitest.Responder
}

func (f *inProcess) HasKey() bool { return f.key }

func (f *inProcess) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *inProcess) Post(ctx context.Context, _ string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return 0, nil, ctx.Err()
	}
	if f.fail != nil {
		return 0, nil, f.fail
	}
	if f.status != 0 {
		return f.status, []byte(`{"error": {"code": 403, "message": "API key not valid. Please pass a valid API key."}}`), nil
	}
	v, err := pyjson.Decode(string(body))
	if err != nil {
		return 400, nil, nil
	}
	payload, _ := v.(*pyjson.Object)
	responder := f.responder
	if responder == nil {
		responder = geminitest.Policy()
	}
	reply := responder.Reply(geminitest.Request{Method: "POST", Body: body, Payload: payload})
	status := reply.Status
	if status == 0 {
		status = 200
	}
	return status, reply.Body, ctx.Err()
}

func mustManifest(t *testing.T, text string) *corpus.Manifest {
	t.Helper()
	m, err := corpus.ParseManifest([]byte(text))
	require.NoError(t, err)
	return m
}

func task(t *testing.T, e *engine.Engine, caseID string, mode agent.Mode) agent.Task {
	t.Helper()
	cases, err := e.PackCases("")
	require.NoError(t, err)
	var c *evaluate.Case
	for i := range cases {
		if cases[i].ID == caseID {
			c = &cases[i]
		}
	}
	ok := c != nil
	require.True(t, ok)
	return agent.Task{Question: c.Question, Version: c.Version, Mode: mode, Limits: agent.DefaultLimits()}
}

func TestInfoCarriesTheConstantsFrontEndsUse(t *testing.T) {
	prices, err := engine.PriceTable("change it here", "")
	require.NoError(t, err)
	e, err := engine.Open(engine.Options{Prices: &prices})
	require.NoError(t, err)
	defer e.Close()
	info := e.Info()
	c := info.Constants
	assert.Equal(t, gemini.Model, c.Model)
	assert.Equal(t, gemini.Endpoint, c.Endpoint)
	assert.Equal(t, reranklab.ListwiseModel, c.ListwiseModel)
	assert.Equal(t, gemini.ModelEndpoint(reranklab.ListwiseModel), c.ListwiseEndpoint)
	assert.Equal(t, "3.12", c.DefaultVersion)
	assert.Equal(t, agent.SearchK, c.SearchK)
	assert.Equal(t, 512, c.MaxQuestionChars)
	assert.Equal(t, 64<<20, c.MaxInputBytes)
	assert.Equal(t, engine.Caps{RequestBytes: 30000, ResponseBytes: 262144, CallTimeoutSeconds: 45, AllowanceMax: 200,
		Retries: 0, Redirects: "refused"}, c.Caps)
	require.Len(t, c.Prices, 2)
	for _, r := range c.Prices {
		assert.True(t, strings.HasSuffix(r.Source, "; change it here"), r.Source)
	}
	assert.Len(t, info.Passages, 4, "the seed's four passages")
	assert.Equal(t, []string{"3.12", "3.13"}, info.Versions)
	assert.Len(t, info.Limits.Fields, 5)
	assert.Equal(t, agent.DefaultLimits(), info.Limits.Defaults)
}

func TestPriceTableRefusesABadOverride(t *testing.T) {
	_, err := engine.PriceTable("", "gemini-3.8-flash=1")
	assert.Error(t, err)
	// Finite prices whose worst-case estimate overflows to +Inf are
	// refused: a plan would show $+Inf and its JSON could not be written.
	for _, spec := range []string{"gemini-3.8-flash=1e308/1e308", "gemini-3.1-flash-lite=1/1e306", "other=1e304/0"} {
		_, err = engine.PriceTable("", spec)
		assert.ErrorContains(t, err, "not finite", spec)
	}
	got, err := engine.PriceTable("hint", "gemini-3.8-flash=1/2")
	require.NoError(t, err)
	r, ok := got.Rate(gemini.Model)
	require.True(t, ok)
	assert.Equal(t, price.Rate{Model: gemini.Model, InputPerMTok: 1, OutputPerMTok: 2, Source: "given on the command line"}, r)
}

func TestReplayTheBundledComparison(t *testing.T) {
	e := open(t, 0)
	var progress []string
	res, err := e.Replay(context.Background(), engine.ReplayRequest{OnTrial: func(done, total int, id string) {
		assert.Equal(t, 16, total)
		progress = append(progress, id)
		assert.Len(t, progress, done)
	}})
	require.NoError(t, err)
	assert.Equal(t, "bundled", res.Source)
	assert.Len(t, res.Trials, 16)
	assert.Len(t, progress, 16)
	assert.Equal(t, 40, res.Exchanges)
	assert.Equal(t, res.Exchanges, res.ExchangesUsed)
	assert.Equal(t, evaluate.Tally{Pass: 4, Fail: 2, Incomplete: 2}, res.Summary.Fixed)
	assert.Equal(t, evaluate.Tally{Pass: 4, Fail: 3, Incomplete: 1}, res.Summary.Agent)
}

func TestReplayCaseFilter(t *testing.T) {
	e := open(t, 0)
	res, err := e.Replay(context.Background(), engine.ReplayRequest{Case: "overwrite"})
	require.NoError(t, err)
	require.Len(t, res.Trials, 4)
	for _, tr := range res.Trials {
		assert.Equal(t, "overwrite", tr.CaseID)
	}
	_, err = e.Replay(context.Background(), engine.ReplayRequest{Case: "nope"})
	var noCase *engine.NoCaseError
	require.ErrorAs(t, err, &noCase)
	assert.Equal(t, []string{"newline-version", "overwrite", "serialize-and-save", "unsupported"}, noCase.Known)
	assert.ErrorContains(t, err, `no trial has case "nope"`)
}

func TestOfflineRunIsGradedNotRecorded(t *testing.T) {
	e := open(t, 10)
	var steps []agent.Step
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Scripted,
		OnStep: func(st agent.Step, _ *agent.Observation) { steps = append(steps, st) }})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, "run-1-agent", tr.ID)
	assert.Equal(t, "overwrite", tr.CaseID)
	assert.Len(t, steps, len(tr.Result.Steps), "every step is reported as it happens")
	require.NotNil(t, tr.Checks, "an authored case's question is graded")
	assert.Equal(t, evaluate.Pass, tr.Checks.Outcome)
	assert.Zero(t, tr.Exchanges)
	assert.Empty(t, e.Recording().Trials, "offline runs send and record nothing")
	assert.Zero(t, e.Allowance().Used())

	other := task(t, e, "overwrite", agent.Agent)
	other.Question = "What does Path.read_text return?"
	tr, err = e.Run(context.Background(), engine.RunRequest{Task: other, Policy: engine.Scripted})
	require.NoError(t, err)
	assert.Nil(t, tr.Checks, "no case asks this question")
	assert.Equal(t, "run-2-agent", tr.ID)
	assert.Equal(t, 1, tr.Repeat)
}

func TestLiveRunRecordsEveryAttemptAndReplays(t *testing.T) {
	e := open(t, 20)
	transport := &inProcess{key: true}
	want := task(t, e, "serialize-and-save", agent.Agent)
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Gemini, Transport: transport})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, transport.calls(), tr.Exchanges)
	assert.Equal(t, tr.Result.Usage.ModelCalls, transport.calls())
	assert.Equal(t, transport.calls(), e.Allowance().Used())

	fixed := task(t, e, "serialize-and-save", agent.Fixed)
	_, err = e.Run(context.Background(), engine.RunRequest{Task: fixed, Policy: engine.Gemini, Transport: transport})
	require.NoError(t, err)

	file := e.Recording()
	require.Len(t, file.Trials, 2)
	assert.Equal(t, gemini.Model, file.Model)
	assert.Equal(t, gemini.Endpoint, file.Endpoint)
	assert.Equal(t, "2026-11-29T12:00:00Z", file.RecordedAt)
	data, err := file.Bytes()
	require.NoError(t, err)
	parsed, err := recording.Parse(data)
	require.NoError(t, err)
	rep, err := e.Replay(context.Background(), engine.ReplayRequest{File: parsed})
	require.NoError(t, err)
	require.Len(t, rep.Trials, 2)
	assert.Equal(t, tr.Result.Reason, rep.Trials[0].Result.Reason)
	assert.Equal(t, tr.Result.Answer, rep.Trials[0].Result.Answer)
	assert.Equal(t, tr.Checks.Outcome, rep.Trials[0].Checks.Outcome)
	assert.Equal(t, rep.Trials[0].Exchanges, rep.Trials[0].ExchangesUsed)

	// The same trial replayed as a single run answers the same.
	again, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Replay, Trial: &parsed.Trials[0]})
	require.NoError(t, err)
	assert.Equal(t, tr.Result.Answer, again.Result.Answer)
	assert.Equal(t, again.Exchanges, again.ExchangesUsed)
}

func TestLiveRunSavedToItsOwnFile(t *testing.T) {
	e := open(t, 20)
	var saves [][]byte
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: &inProcess{key: true}, Save: func(b []byte) error { saves = append(saves, b); return nil }})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	// Saved at the start, when the trial begins, before and after each
	// attempt and at the end.
	assert.Len(t, saves, 3+2*tr.Exchanges)
	f, err := recording.Parse(saves[len(saves)-1])
	require.NoError(t, err)
	require.Len(t, f.Trials, 1)
	assert.Equal(t, tr.ID, f.Trials[0].ID)
	assert.Equal(t, "overwrite", f.Trials[0].CaseID)
	assert.NotNil(t, f.Trials[0].ElapsedSeconds)
	assert.Empty(t, e.Recording().Trials, "a run saved to its own file is not also kept in the session's")
}

func TestLiveRunRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allowance int
		transport *inProcess
		cancel    bool
		want      reason.Code
		attempts  int
	}{
		{"allowance spent mid-run", 1, &inProcess{key: true}, false, reason.BatchRequestLimit, 1},
		{"transport failure is recorded", 5, &inProcess{key: true, fail: &gemini.TransportError{Kind: "URLError", Err: errors.New("refused")}}, false, "model_transport_failed:URLError", 1},
		{"stopped before sending", 5, &inProcess{key: true}, true, reason.Cancelled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t, tc.allowance)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			tr, err := e.Run(ctx, engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini, Transport: tc.transport})
			require.NoError(t, err)
			require.NotNil(t, tr.Result)
			assert.Equal(t, tc.want, tr.Result.Reason)
			assert.Equal(t, tc.attempts, tc.transport.calls())
			assert.Equal(t, tc.attempts, tr.Exchanges)
			require.Len(t, e.Recording().Trials, 1)
			assert.Len(t, e.Recording().Trials[0].Exchanges, tc.attempts)
		})
	}
}

// TestLiveRunWithoutAKeyRecordsNothing: a live run without a key is
// refused before it starts, like an invalid task: nothing is sent, nothing
// recorded, nothing graded (it used to be recorded as a failed trial whose
// recording then replayed as replay_exhausted).
func TestLiveRunWithoutAKeyRecordsNothing(t *testing.T) {
	e := open(t, 5)
	transport := &inProcess{}
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini, Transport: transport})
	require.NoError(t, err)
	require.NotNil(t, tr.Error)
	assert.Equal(t, reason.MissingAPIKey, *tr.Error)
	assert.Nil(t, tr.Result)
	assert.Nil(t, tr.Checks)
	assert.Zero(t, transport.calls())
	assert.Empty(t, e.Recording().Trials)
	assert.Equal(t, 0, e.Allowance().Used())
}

// TestRefusedKeyIsAKeyProblem: an HTTP 400, 401 or 403 is the API refusing
// the key; the run is reported with the status and detail and is not
// graded as a fixture failure. Other HTTP errors are graded as before.
func TestRefusedKeyIsAKeyProblem(t *testing.T) {
	for _, tc := range []struct {
		status int
		key    bool
	}{{400, true}, {401, true}, {403, true}, {429, false}, {500, false}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			e := open(t, 5)
			tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
				Transport: &inProcess{key: true, status: tc.status}})
			require.NoError(t, err)
			require.NotNil(t, tr.Result)
			assert.Equal(t, reason.Transport(gemini.HTTPError), tr.Result.Reason)
			assert.Len(t, e.Recording().Trials, 1, "the attempt was sent, so it is recorded")
			if !tc.key {
				assert.Nil(t, tr.KeyRefused)
				require.NotNil(t, tr.Checks)
				assert.Equal(t, evaluate.Fail, tr.Checks.Outcome)
				return
			}
			require.NotNil(t, tr.KeyRefused)
			assert.Equal(t, tc.status, tr.KeyRefused.HTTPStatus)
			assert.Contains(t, tr.KeyRefused.Detail, "API key not valid")
			assert.Nil(t, tr.Checks, "a key problem is not a fixture failure")
		})
	}
}

// TestRunReportsWhoDecidedTimingAndCost: a run made now carries its model
// and config, its measured timing and its estimated cost.
func TestRunReportsWhoDecidedTimingAndCost(t *testing.T) {
	e := open(t, 5)
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: &inProcess{key: true}})
	require.NoError(t, err)
	assert.Equal(t, gemini.Model, tr.Model)
	assert.Equal(t, gemini.Config(), tr.Config)
	require.NotNil(t, tr.Timing)
	assert.Equal(t, report.Measured, tr.Timing.Source)
	assert.Len(t, tr.Timing.Steps, len(tr.Result.Steps))
	require.NotNil(t, tr.Cost)
	assert.Len(t, tr.Cost.StepsUSD, len(tr.Result.Steps))

	s, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Scripted})
	require.NoError(t, err)
	assert.Equal(t, "scripted", s.Model)
	assert.Nil(t, s.Cost, "the scripted policy is free")
	require.NotNil(t, s.Timing)
}

func TestExchangesOfEachSource(t *testing.T) {
	e := open(t, 5)
	got, err := e.Exchanges(engine.ExchangesRequest{Source: engine.SourceBundled, Trial: "serialize-and-save-agent-1"})
	require.NoError(t, err)
	require.Len(t, got.Exchanges, 6)
	trial := e.Bundled().Trials[3]
	require.Equal(t, "serialize-and-save-agent-1", trial.ID)
	assert.Equal(t, string(gemini.Body(trial.Exchanges[0].Request)), got.Exchanges[0].Request, "the exact body")
	assert.Equal(t, 1, got.Exchanges[0].Call)
	assert.Contains(t, got.Exchanges[5].Response, `"usageMetadata"`)
	assert.Equal(t, "gemini-3.8-flash", got.Model)

	_, err = e.Exchanges(engine.ExchangesRequest{Source: engine.SourceLoaded, Trial: "x"})
	assert.ErrorContains(t, err, "no recording has been loaded")
	_, err = e.Replay(context.Background(), engine.ReplayRequest{File: e.Bundled(), Case: "overwrite"})
	require.NoError(t, err)
	got, err = e.Exchanges(engine.ExchangesRequest{Source: engine.SourceLoaded, Trial: "overwrite-agent-2"})
	require.NoError(t, err)
	assert.Len(t, got.Exchanges, 3)

	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: &inProcess{key: true, status: 403}})
	require.NoError(t, err)
	got, err = e.Exchanges(engine.ExchangesRequest{Source: engine.SourceSession, Trial: tr.ID})
	require.NoError(t, err)
	require.Len(t, got.Exchanges, 1)
	assert.Equal(t, "HTTPError", got.Exchanges[0].Error)
	assert.Equal(t, 403, got.Exchanges[0].HTTPStatus)
	assert.Empty(t, got.Exchanges[0].Response)

	_, err = e.Exchanges(engine.ExchangesRequest{Source: engine.SourceBundled, Trial: "nope"})
	assert.ErrorContains(t, err, `no trial "nope"`)
	_, err = e.Exchanges(engine.ExchangesRequest{Source: "elsewhere"})
	assert.ErrorContains(t, err, "is not bundled, loaded or session")
}

func TestExportOTLP(t *testing.T) {
	e := open(t, 5)
	one, err := e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceBundled, Trial: "overwrite-agent-1"})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(one), `"stringValue": "AGENT"`))
	assert.Equal(t, 3, strings.Count(string(one), `"stringValue": "LLM"`))
	assert.Contains(t, string(one), `"key": "retrieval.documents.0.document.score"`, "the candidates carry their bm25 score")
	all, err := e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceBundled})
	require.NoError(t, err)
	assert.Equal(t, 16, strings.Count(string(all), `"stringValue": "AGENT"`))
	_, err = e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceBundled, Trial: "nope"})
	assert.ErrorContains(t, err, `no trial "nope"`)

	// Annotations of the one trial exported need not name it; of a whole
	// recording, they must.
	note := otlp.Annotation{Author: "user", Verdict: "correct", Time: "2026-12-07T02:10:00Z"}
	annotated, err := e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceBundled, Trial: "overwrite-agent-1", Annotations: []otlp.Annotation{note}})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(annotated), `"name": "ragagent.annotation"`))
	assert.Contains(t, string(annotated), `"stringValue": "correct"`)
	_, err = e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceBundled, Annotations: []otlp.Annotation{note}})
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidAnnotation, code, "%v", err)
}

func TestRunRefusesBeforeStarting(t *testing.T) {
	e := open(t, 5)
	bad := task(t, e, "overwrite", agent.Agent)
	bad.Question = " "
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: bad, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	require.NotNil(t, tr.Error)
	assert.Equal(t, reason.InvalidQuestion, *tr.Error)
	assert.Empty(t, e.Recording().Trials)

	_, err = e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: &inProcess{key: true}, Endpoint: "https://example.com/v1"})
	assert.ErrorContains(t, err, "refused")
	_, err = e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini})
	assert.ErrorContains(t, err, "needs a transport")
	_, err = e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Replay})
	assert.ErrorContains(t, err, "needs a recorded trial")
	_, err = e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: "oracle"})
	assert.ErrorContains(t, err, "not scripted, gemini or replay")

	_, err = engine.Open(engine.Options{Allowance: 201})
	assert.Error(t, err, "an allowance over the cap is refused")
}

func TestPlanRun(t *testing.T) {
	e := open(t, 6)
	tk := task(t, e, "overwrite", agent.Agent)
	tk.Limits.ModelCalls = 8
	plan, err := e.PlanRun(engine.RunRequest{Task: tk, Policy: engine.Scripted})
	require.NoError(t, err)
	assert.Equal(t, 8, plan.ModelCallsAtMost)
	assert.Zero(t, plan.WorstCaseRequests, "the scripted policy sends nothing")
	assert.Nil(t, plan.Caps)

	plan, err = e.PlanRun(engine.RunRequest{Task: tk, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	assert.Equal(t, gemini.Endpoint, plan.Endpoint)
	assert.Equal(t, 6, plan.WorstCaseRequests, "bounded by the allowance left")
	require.NotNil(t, plan.Caps)
	assert.Equal(t, tk.Limits.Seconds, plan.Caps.RunSeconds)
	assert.Equal(t, &engine.AllowanceState{Limit: 6, Used: 0, Remaining: 6}, plan.Allowance)
	require.NotNil(t, plan.WorstCaseUSD)
	assert.InDelta(t, 6*plan.Rate.Cost(30000, 1024), *plan.WorstCaseUSD, 1e-12)
	assert.Nil(t, plan.Refusal)

	plan, err = e.PlanRun(engine.RunRequest{Task: tk, Policy: engine.Gemini, Transport: &inProcess{}})
	require.NoError(t, err)
	require.NotNil(t, plan.Refusal)
	assert.Equal(t, reason.MissingAPIKey, plan.Refusal.Code)

	tk.Mode = agent.Fixed
	plan, err = e.PlanRun(engine.RunRequest{Task: tk, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	assert.Equal(t, 1, plan.WorstCaseRequests, "a fixed run makes one call")

	tk.Limits.Reads = 0
	_, err = e.PlanRun(engine.RunRequest{Task: tk, Policy: engine.Gemini})
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidLimits, code)
}

// TestRunParser: one row per refusal in the order Parse checks them, for
// a person's front end (the endpoint admitted, hasKey its own field) and
// for a server (neither).
func TestRunParser(t *testing.T) {
	e := open(t, 0)
	person, server := e.RunParser("hasKey"), engine.RunParser{Own: []string{"stream"}}
	q := `"question": "Which method writes text?", "version": "3.12", "mode": "agent"`
	for _, tc := range []struct {
		name   string
		parser engine.RunParser
		spec   string
		code   reason.Code
		err    string
	}{
		{"not JSON", person, `{`, "", "not JSON"},
		{"not an object", person, `[]`, "", "not an object"},
		{"unknown field first", person, `{"limits": 5, "priority": 1}`, engine.UnknownField, `unknown field "priority"`},
		{"a server takes no endpoint", server, `{` + q + `, "endpoint": "http://127.0.0.1:9/x"}`, engine.UnknownField, `"endpoint"`},
		{"no trial without a recording", person, `{` + q + `, "trial": "t"}`, engine.UnknownField, `"trial"`},
		{"another front end's field", server, `{` + q + `, "hasKey": true}`, engine.UnknownField, `"hasKey"`},
		{"limits first", person, `{"limits": {"reads": 99}, "question": 5, "policy": "scripted"}`, reason.InvalidLimits, ""},
		{"question type", person, `{"question": 5, "version": "3.12", "mode": "agent", "policy": "scripted"}`, reason.InvalidQuestion, ""},
		{"no question", person, `{"policy": "scripted"}`, reason.InvalidQuestion, ""},
		{"version", person, `{"question": "q", "version": "twelve", "mode": "agent", "policy": "scripted"}`, reason.InvalidVersion, ""},
		{"mode", person, `{"question": "q", "version": "3.12", "mode": "both", "policy": "scripted"}`, reason.InvalidMode, ""},
		{"policy", person, `{` + q + `, "policy": "oracle", "corpus": 1}`, engine.InvalidPolicy, `policy "oracle" is not one of scripted, gemini`},
		{"replay needs a recording", server, `{` + q + `, "policy": "replay"}`, engine.InvalidPolicy, "is not one of scripted, gemini"},
		{"policy null", person, `{` + q + `, "policy": null}`, engine.InvalidPolicy, "policy null"},
		{"corpus type", person, `{` + q + `, "corpus": 1}`, engine.InvalidField, "corpus must be a string"},
		{"corpus unknown", person, `{` + q + `, "corpus": "python-3.12"}`, engine.UnknownCorpus, `no corpus pack "python-3.12"; the packs are seed`},
		{"endpoint type", person, `{` + q + `, "endpoint": 5}`, engine.InvalidField, "endpoint must be a string"},
		{"endpoint not loopback", person, `{` + q + `, "policy": "gemini", "endpoint": "https://example.com/v1"}`, "", "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.parser.ParseText(tc.spec)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, tc.code, code)
			assert.ErrorContains(t, err, tc.err)
		})
	}

	req, err := person.ParseText(`{` + q + `, "policy": "gemini", "endpoint": "http://127.0.0.1:9/x", "hasKey": true}`)
	require.NoError(t, err)
	assert.Equal(t, engine.Gemini, req.Policy)
	assert.Equal(t, "http://127.0.0.1:9/x", req.Endpoint)
	assert.Equal(t, agent.DefaultLimits(), req.Task.Limits)

	req, err = server.ParseText(`{"question": "Which method writes text?"}`)
	require.NoError(t, err)
	assert.Equal(t, engine.RunRequest{Corpus: "seed", Policy: engine.Scripted,
		Task: agent.Task{Question: "Which method writes text?", Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()}}, req,
		"the defaults: the seed, its default version, the agent path, the default limits, the scripted policy")
	again, err := server.ParseText(pyjson.Dumps(req.Spec(), pyjson.Options{}))
	require.NoError(t, err)
	assert.Equal(t, req, again, "a spec reads back as the request it was written from")
}

// TestRunParserTakesThePacksDefaultVersion: a request over a pack that
// names no version asks about the pack's own default one.
func TestRunParserTakesThePacksDefaultVersion(t *testing.T) {
	m, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "packs", "python-3.11", "manifest.json"))
	require.NoError(t, err)
	parser := engine.RunParser{Packs: []engine.PackSummary{{Manifest: mustManifest(t, string(m))}}}
	req, err := parser.ParseText(`{"question": "q", "corpus": "python-3.11"}`)
	require.NoError(t, err)
	assert.Equal(t, "3.11", req.Task.Version)
	_, err = parser.ParseText(`{"question": "q"}`)
	code, _ := reason.Of(err)
	assert.Equal(t, engine.UnknownCorpus, code, "a parser given its packs offers those alone")
}

// TestRunParserPicksAReplayedTrial: with a recording, replay picks a trial
// by id or by the question, version and mode given, and the trial fills in
// what was left out; limits given replace the trial's.
func TestRunParserPicksAReplayedTrial(t *testing.T) {
	e := open(t, 0)
	p := e.RunParser()
	p.Recording = e.Bundled()
	req, err := p.ParseText(`{"policy": "replay", "trial": "serialize-and-save-agent-1"}`)
	require.NoError(t, err)
	assert.Equal(t, "serialize-and-save-agent-1", req.Trial.ID)
	assert.Equal(t, req.Trial.Question, req.Task.Question)
	assert.Equal(t, agent.Agent, req.Task.Mode)

	req, err = p.ParseText(`{"policy": "replay", "question": ` + strconv.Quote(req.Task.Question) + `, "mode": "fixed", "limits": {"model_calls": 8}}`)
	require.NoError(t, err)
	assert.Equal(t, "serialize-and-save-fixed-1", req.Trial.ID, "the first trial with that question and mode")
	assert.Equal(t, 8, req.Task.Limits.ModelCalls, "the limits given")

	_, err = p.ParseText(`{"policy": "replay", "trial": "nope"}`)
	assert.ErrorContains(t, err, `has no trial "nope"`)
	_, err = p.ParseText(`{"policy": "replay", "question": "never asked"}`)
	assert.ErrorContains(t, err, "no trial with that question, version and mode")
	_, err = p.ParseText(`{"question": "q", "trial": "serialize-and-save-agent-1"}`)
	code, _ := reason.Of(err)
	assert.Equal(t, engine.InvalidField, code, "a trial goes with the replay policy")
}

func TestSearch(t *testing.T) {
	e := open(t, 0)
	res, err := e.Search(engine.SearchRequest{Query: "write_text encoding utf-8", Version: "3.12", K: 4})
	require.NoError(t, err)
	assert.Equal(t, `"write" OR "text" OR "encoding" OR "utf" OR "8"`, res.Terms)
	seed, err := engine.LabOf(e, "")
	require.NoError(t, err)
	want, err := seed.Library.Explain("write_text encoding utf-8", 4, "3.12")
	require.NoError(t, err)
	require.Len(t, res.Hits, len(want))
	for i, h := range res.Hits {
		assert.Equal(t, want[i].Handle, tools.Handle{SourceID: h.SourceID, Rank: h.Rank, Version: h.Version, Bytes: h.Bytes, TextSHA256: h.TextSHA256},
			"the agent's hits, in its order")
		assert.Equal(t, want[i].Score, h.Score)
		p, _ := seed.Snapshot.Passage(h.SourceID)
		assert.Equal(t, p.URL, h.URL)
		assert.Contains(t, h.Snippet, store.MarkOpen, "the snippet marks the matched terms")
		plain := strings.NewReplacer(store.MarkOpen, "", store.MarkClose, "", store.Ellipsis, "").Replace(h.Snippet)
		assert.Contains(t, p.Text, plain, "without its marks the snippet is the passage's own text")
	}
	assert.Equal(t, "seed", res.Corpus)

	for _, spec := range []string{`{"query": "x", "k": 11}`, `{"query": "x", "k": 0}`, `{"query": "x", "k": 2.5}`, `{`} {
		_, err := engine.ParseSearchSpec(spec)
		assert.Error(t, err, spec)
	}
	req, err := engine.ParseSearchSpec(`{"query": "newline", "version": ""}`)
	require.NoError(t, err)
	res, err = e.Search(req)
	require.NoError(t, err)
	assert.Equal(t, agent.SearchK, res.K, "an absent k is the agent's")
	_, err = e.Search(engine.SearchRequest{Query: "?!", Version: "3.12"})
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidQuery, code)
}

func TestBatchPlanAndRun(t *testing.T) {
	e := open(t, 200)
	plan, err := e.PlanBatch(engine.BatchRequest{Cases: []string{"overwrite"}, Repeats: 1, Modes: []agent.Mode{agent.Agent, agent.Fixed},
		Limits: agent.DefaultLimits(), Transport: &inProcess{key: true}, KeySource: "GOOGLE_API_KEY"})
	require.NoError(t, err)
	assert.Equal(t, []string{"fixed", "agent"}, plan.Modes)
	assert.Equal(t, 2, plan.Trials)
	assert.Equal(t, 1+9, plan.WorstCaseRequests)
	require.NotNil(t, plan.KeyVariable)
	assert.Equal(t, "GOOGLE_API_KEY", *plan.KeyVariable)
	assert.NoError(t, plan.Refusal())

	var saved []byte
	var trials []string
	br, rep, err := e.RunBatch(context.Background(), plan, engine.BatchRun{Save: func(b []byte) error { saved = b; return nil },
		OnTrial: func(tr report.Trial) { trials = append(trials, tr.ID) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"overwrite-fixed-1", "overwrite-agent-1"}, trials)
	require.Len(t, rep.Trials, 2)
	assert.Equal(t, e.Allowance().Used(), br.ActualAPIRequests)
	file, err := recording.Parse(saved)
	require.NoError(t, err)
	require.Len(t, file.Trials, 2)
	replayed, err := e.Replay(context.Background(), engine.ReplayRequest{File: file})
	require.NoError(t, err)
	for i := range rep.Trials {
		assert.Equal(t, rep.Trials[i].Result.Reason, replayed.Trials[i].Result.Reason)
	}

	_, err = e.PlanBatch(engine.BatchRequest{Cases: []string{"nope"}, Repeats: 1, Modes: []agent.Mode{agent.Agent}, Limits: agent.DefaultLimits()})
	assert.ErrorContains(t, err, `no case "nope"`)
	noKey, err := e.PlanBatch(engine.BatchRequest{Repeats: 1, Modes: []agent.Mode{agent.Agent}, Limits: agent.DefaultLimits()})
	require.NoError(t, err)
	assert.Nil(t, noKey.KeyVariable)
	code, _ := reason.Of(noKey.Refusal())
	assert.Equal(t, reason.MissingAPIKey, code)
	_, _, err = e.RunBatch(context.Background(), noKey, engine.BatchRun{Save: func([]byte) error { return nil }})
	code, _ = reason.Of(err)
	assert.Equal(t, reason.MissingAPIKey, code, "a batch without a key sends nothing")
}

func TestRerankReplaysThePublishedRecords(t *testing.T) {
	e := open(t, 0)
	res, err := e.Rerank(context.Background(), engine.RerankRequest{})
	require.NoError(t, err)
	assert.Equal(t, engine.RerankSources{Gemini: "bundled", CrossEncoder: "bundled"}, res.Sources)
	assert.Zero(t, res.GeminiUnused)
	assert.Empty(t, res.Gemini.Failed())
	assert.Len(t, res.Coverage.DevelopmentCases, 4)
	assert.Len(t, res.CrossEncoder.Expanded, 12)
	assert.Equal(t, reranklab.ListwiseModel, res.Rate.Model)
}

func TestRerankRefusalsInOrder(t *testing.T) {
	withBudget := func(usd float64) *budget.Memory {
		s := budget.NewMemory(nil)
		l, err := budget.Open(s, func() time.Time { return now })
		require.NoError(t, err)
		require.NoError(t, l.SetBudget(usd))
		return s
	}
	for _, tc := range []struct {
		name      string
		key       bool
		allowance int
		store     *budget.Memory
		code      reason.Code
		message   string
	}{
		{"no key first", false, 1, budget.NewMemory(nil), reason.MissingAPIKey, "no Gemini API key"},
		{"then the allowance", true, 3, budget.NewMemory(nil), reason.BatchRequestLimit, "4 requests are needed and 3"},
		{"then a budget", true, 4, budget.NewMemory(nil), "", "set a budget first"},
		{"then the whole run within it", true, 4, withBudget(0.005), reason.BudgetExceeded, "over the budget of $0.00500000; nothing was sent"},
		{"allowed", true, 4, withBudget(0.05), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t, tc.allowance)
			req := engine.LiveRerankRequest{HasKey: tc.key, Ledger: tc.store}
			plan, err := e.PlanRerank(req)
			require.NoError(t, err)
			if tc.message == "" {
				assert.Nil(t, plan.Refusal)
				return
			}
			require.NotNil(t, plan.Refusal)
			assert.Equal(t, tc.code, plan.Refusal.Code)
			assert.Contains(t, plan.Refusal.Message, tc.message)

			transport := &inProcess{key: tc.key}
			req.Transport = transport
			_, err = e.RerankLive(context.Background(), req)
			assert.ErrorContains(t, err, tc.message)
			assert.Zero(t, transport.calls(), "a refused rerank sends nothing")
			state, err := e.Ledger(tc.store)
			require.NoError(t, err)
			assert.Empty(t, state.Entries, "and reserves nothing")
		})
	}
}

func TestRerankLiveReservesRecordsAndReplays(t *testing.T) {
	e := open(t, 10)
	store := budget.NewMemory(nil)
	_, err := e.SetBudget(store, 0.05)
	require.NoError(t, err)
	transport := &inProcess{key: true}
	var cases []int
	res, err := e.RerankLive(context.Background(), engine.LiveRerankRequest{Transport: transport, Ledger: store,
		OnCase: func(done, total int) { assert.Equal(t, 4, total); cases = append(cases, done) }})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, cases)
	assert.Equal(t, 4, transport.calls())
	assert.Equal(t, 4, res.Exchanges)
	assert.Empty(t, res.Gemini.Failed())
	require.Len(t, res.Ledger.Entries, 4)
	for _, en := range res.Ledger.Entries {
		assert.Equal(t, budget.Completed, en.Outcome)
	}

	rec := e.RerankRecording()
	require.NotNil(t, rec)
	assert.Equal(t, reranklab.ListwiseModel, rec.Model)
	assert.Equal(t, "2026-11-29T12:00:00Z", rec.RecordedAt)
	require.Len(t, rec.Trials, 1)
	assert.Equal(t, reranklab.LiveTrialID, rec.Trials[0].ID)
	replayed, err := e.Rerank(context.Background(), engine.RerankRequest{Gemini: rec})
	require.NoError(t, err)
	assert.Equal(t, "loaded", replayed.Sources.Gemini)
	for i, c := range replayed.Gemini.Cases {
		assert.Equal(t, rerank.Sources(res.Gemini.Cases[i].Gemini), rerank.Sources(c.Gemini), c.CaseID)
	}
}

func TestCancelStopsALiveRerankAndABudgetChangeWaits(t *testing.T) {
	e := open(t, 10)
	store := budget.NewMemory(nil)
	_, err := e.SetBudget(store, 0.05)
	require.NoError(t, err)
	transport := &inProcess{key: true, block: true}
	job := engine.Start(e, func(ctx context.Context) (*engine.LiveRerankResult, error) {
		return e.RerankLive(ctx, engine.LiveRerankRequest{Transport: transport, Ledger: store})
	})
	require.Eventually(t, func() bool { return transport.calls() == 1 }, 5*time.Second, time.Millisecond)
	_, err = e.SetBudget(store, 1)
	assert.ErrorContains(t, err, "is spending from the ledger")
	_, err = e.RerankLive(context.Background(), engine.LiveRerankRequest{Transport: transport, Ledger: store})
	assert.ErrorIs(t, err, engine.ErrRerankRunning)
	assert.True(t, e.Cancel(job.ID))
	res, err := job.Wait()
	if err == nil {
		for _, c := range res.Gemini.Cases {
			assert.NotNil(t, c.Error, "every case after the stop is refused: %s", c.CaseID)
		}
	}
	assert.False(t, e.Cancel(job.ID), "a finished job is not running")
	_, err = e.SetBudget(store, 1)
	assert.NoError(t, err)
}

func TestCancelEndsARunAsCancelled(t *testing.T) {
	e := open(t, 10)
	transport := &inProcess{key: true, block: true}
	job := engine.Start(e, func(ctx context.Context) (report.Trial, error) {
		return e.Run(ctx, engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini, Transport: transport})
	})
	require.Eventually(t, func() bool { return transport.calls() == 1 }, 5*time.Second, time.Millisecond)
	require.True(t, e.Cancel(job.ID))
	tr, err := job.Wait()
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, agent.Incomplete, tr.Result.Status)
	assert.Equal(t, reason.Cancelled, tr.Result.Reason)
}

func TestParseLiveRerankSpec(t *testing.T) {
	e := open(t, 0)
	req, err := e.ParseLiveRerankSpec(`{"hasKey": true, "endpoint": "http://127.0.0.1:9/x"}`, "given here")
	require.NoError(t, err)
	assert.True(t, req.HasKey)
	assert.Nil(t, req.Rate, "no price: the table's")
	shipped, _ := e.Rate(reranklab.ListwiseModel)
	req, err = e.ParseLiveRerankSpec(`{"price": {"input_usd_per_mtok": 0.25, "output_usd_per_mtok": 1.5}}`, "given here")
	require.NoError(t, err)
	require.Equal(t, 0.25, shipped.InputPerMTok)
	assert.Nil(t, req.Rate, "the shipped price sent back keeps its source")
	req, err = e.ParseLiveRerankSpec(`{"price": {"input_usd_per_mtok": 1, "output_usd_per_mtok": 2}}`, "given here")
	require.NoError(t, err)
	assert.Equal(t, &price.Rate{Model: reranklab.ListwiseModel, InputPerMTok: 1, OutputPerMTok: 2, Source: "given here"}, req.Rate)
	for _, spec := range []string{`{`, `{"price": {"input_usd_per_mtok": -1, "output_usd_per_mtok": 2}}`,
		`{"price": {"input_usd_per_mtok": 1}}`, `{"endpoint": "https://example.com"}`} {
		_, err := e.ParseLiveRerankSpec(spec, "x")
		assert.Error(t, err, spec)
	}
}

// The session's recording, as the page keeps it in memory (never through
// its bytes), replays and exports as it does once saved and read back: a
// trial's limits kept by trialRecord are Go ints, not parsed numbers, and
// were refused as invalid_limits, so every exported session trial read
// "refused before it started".
func TestSessionRecordingReplaysAndExportsFromMemory(t *testing.T) {
	e := open(t, 20)
	want := task(t, e, "serialize-and-save", agent.Agent)
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)

	rep, err := e.Replay(context.Background(), engine.ReplayRequest{File: e.Recording()})
	require.NoError(t, err)
	require.Len(t, rep.Trials, 1)
	require.NotNil(t, rep.Trials[0].Result, "refused: %+v", rep.Trials[0])
	assert.Equal(t, tr.Result.Reason, rep.Trials[0].Result.Reason)
	assert.Equal(t, tr.Result.Answer, rep.Trials[0].Result.Answer)

	out, err := e.ExportOTLP(context.Background(), engine.ExportRequest{Source: "session"})
	require.NoError(t, err)
	assert.NotContains(t, string(out), "ragagent.refused")
	assert.NotContains(t, string(out), "invalid_limits")
	assert.Contains(t, string(out), string(tr.Result.Reason))
}

// A run kept outside the engine exports as OTLP: a scripted one made
// again (the same steps, not counted among the session's runs), a live
// one replayed from its own recording; a live run without its recording
// is refused.
func TestExportRunKeptOutside(t *testing.T) {
	e := open(t, 20)
	want := task(t, e, "serialize-and-save", agent.Agent)
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Scripted})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	out, err := e.ExportRun(context.Background(), engine.RunExport{Run: engine.RunRequest{Task: want, Policy: engine.Scripted}, ID: tr.ID, Repeat: tr.Repeat, RecordedAt: "2026-12-02T10:00:00Z"})
	require.NoError(t, err)
	text := string(out)
	assert.Equal(t, 1, strings.Count(text, `"stringValue": "AGENT"`))
	assert.Equal(t, tr.Result.Usage.ModelCalls, strings.Count(text, `"stringValue": "LLM"`), "a span per scripted decision")
	assert.Equal(t, tr.Result.Usage.Searches, strings.Count(text, `"stringValue": "RETRIEVER"`))
	assert.Contains(t, text, `"key": "retrieval.documents.0.document.score"`)
	assert.Contains(t, text, `"stringValue": "ragagent"`, "the scripted rules are the provider")
	assert.Contains(t, text, tr.ID)
	assert.Contains(t, text, string(tr.Result.Reason))
	// The page's annotation of the kept run is an event on its run span.
	note := otlp.Annotation{Author: "user", Verdict: "wrong", Note: "read the wrong page", Time: "2026-12-07T02:10:00Z"}
	annotated, err := e.ExportRun(context.Background(), engine.RunExport{Run: engine.RunRequest{Task: want, Policy: engine.Scripted}, ID: tr.ID, Repeat: tr.Repeat, RecordedAt: "2026-12-02T10:00:00Z",
		Annotations: []otlp.Annotation{note}})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(annotated), `"name": "ragagent.annotation"`))
	assert.Contains(t, string(annotated), `"stringValue": "read the wrong page"`)
	again, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Scripted})
	require.NoError(t, err)
	assert.Equal(t, tr.Repeat+1, again.Repeat, "the export is not counted as a run")

	live, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	out, err = e.ExportRun(context.Background(), engine.RunExport{Run: engine.RunRequest{Task: want, Policy: engine.Gemini}, File: e.Recording()})
	require.NoError(t, err)
	assert.Equal(t, live.Result.Usage.ModelCalls, strings.Count(string(out), `"stringValue": "LLM"`))
	annotated, err = e.ExportRun(context.Background(), engine.RunExport{Run: engine.RunRequest{Task: want, Policy: engine.Gemini}, File: e.Recording(), Annotations: []otlp.Annotation{note}})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(annotated), `"name": "ragagent.annotation"`), "a live run's too")
	assert.NotContains(t, string(out), "ragagent.refused")

	_, err = e.ExportRun(context.Background(), engine.RunExport{Run: engine.RunRequest{Task: want, Policy: engine.Gemini}})
	assert.ErrorContains(t, err, "from its recording")
}

// A trace's candidates carry the scores the pack's ranking gave them,
// the same as a diagnostic search of the query (the model never saw
// them); a read has none.
func TestCandidateScores(t *testing.T) {
	e := open(t, 5)
	want := task(t, e, "serialize-and-save", agent.Agent)
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: want, Policy: engine.Scripted})
	require.NoError(t, err)
	require.Nil(t, tr.Scores, "a run has no scores until asked")
	trials := []report.Trial{tr}
	require.NoError(t, e.CandidateScores("", trials))
	got := trials[0]
	require.Len(t, got.Scores, len(got.Result.Observations))
	assert.Equal(t, engine.BM25Kind, got.ScoreKind)
	searches := 0
	for i, o := range got.Result.Observations {
		sr, ok := o.Search()
		if !ok {
			assert.Nil(t, got.Scores[i], "a read has no scores")
			continue
		}
		searches++
		res, err := e.Search(engine.SearchRequest{Query: sr.Query, Version: got.Result.Version})
		require.NoError(t, err)
		require.Len(t, got.Scores[i], len(sr.Candidates))
		for j, c := range sr.Candidates {
			require.NotNil(t, got.Scores[i][j], c.SourceID)
			assert.Equal(t, res.Hits[j].SourceID, c.SourceID)
			assert.Equal(t, res.Hits[j].Score, *got.Scores[i][j])
		}
	}
	assert.Positive(t, searches)
}

// BenchmarkRunParser is what every run request costs a server before its
// run: a streamed scripted run's fields, read and checked.
func BenchmarkRunParser(b *testing.B) {
	e, err := engine.Open(engine.Options{})
	require.NoError(b, err)
	defer e.Close()
	parser := engine.RunParser{Packs: e.Packs(), Own: []string{"stream", "strategy"}}
	for b.Loop() {
		if _, err := parser.ParseText(`{"question": "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "version": "3.12", "stream": true, "strategy": "enqueue"}`); err != nil {
			b.Fatal(err)
		}
	}
}
