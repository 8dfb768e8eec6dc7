package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/apiclient"
)

// checkedDoer is the generated client's HTTP client: each request is sent
// and its response checked against the contract, as e.do checks them.
type checkedDoer struct{ e *env }

func (d checkedDoer) Do(hr *http.Request) (*http.Response, error) {
	var body []byte
	if hr.Body != nil {
		body, _ = io.ReadAll(hr.Body)
		hr.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	d.e.check(hr, req{method: hr.Method, path: strings.TrimPrefix(hr.URL.String(), d.e.base), body: string(body), valid: true},
		response{status: resp.StatusCode, header: resp.Header, body: data})
	return resp, nil
}

// The client generated from api/openapi.json (internal/apiclient,
// oapi-codegen) drives a scripted run end to end through its typed
// methods, every response checked against the document: create it, read
// it until it ends, stream its events, find it in the list; its refusals
// decode as the declared errors.
func TestGeneratedClientDrivesARun(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	ctx := context.Background()
	bearer := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	c, err := apiclient.NewClientWithResponses(e.base, apiclient.WithHTTPClient(checkedDoer{e}), apiclient.WithRequestEditorFn(bearer))
	require.NoError(t, err)

	health, err := c.GetHealthWithResponse(ctx)
	require.NoError(t, err)
	require.NotNil(t, health.JSON200)

	version, mode := "3.12", apiclient.RunCreateModeFixed
	created, err := c.CreateRunWithResponse(ctx, apiclient.RunCreate{
		Question: "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", Version: &version, Mode: &mode})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, created.StatusCode(), string(created.Body))
	require.NotNil(t, created.JSON202)
	id := created.JSON202.Id

	var run *apiclient.Run
	for deadline := time.Now().Add(20 * time.Second); ; {
		got, err := c.GetRunWithResponse(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, got.JSON200, string(got.Body))
		run = got.JSON200
		if run.Status != apiclient.RunStatusQueued && run.Status != apiclient.RunStatusRunning {
			break
		}
		require.True(t, time.Now().Before(deadline), "the run did not end")
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, apiclient.RunStatusAnswered, run.Status)
	require.NotNil(t, run.Reason)
	assert.Equal(t, "citation_contract_passed", *run.Reason)
	require.NotNil(t, run.Report)

	events, err := c.StreamRunEventsWithResponse(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, events.StatusCode())
	evs := parseSSE(t, events.Body)
	assert.Equal(t, "started", evs[0].event)
	assert.Equal(t, "end", evs[len(evs)-1].event)

	one := 1
	list, err := c.ListRunsWithResponse(ctx, &apiclient.ListRunsParams{Limit: &one})
	require.NoError(t, err)
	require.NotNil(t, list.JSON200)
	require.Len(t, list.JSON200.Runs, 1)
	assert.Equal(t, id, list.JSON200.Runs[0].Id)

	rec, err := c.GetRunRecordingWithResponse(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, rec.JSON404, "a scripted run has no recording")
	assert.Equal(t, apiclient.ErrorBodyCodeNoRecording, rec.JSON404.Error.Code)
	again, err := c.CancelRunWithResponse(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, again.JSON409)
	assert.Equal(t, apiclient.ErrorBodyCodeAlreadyFinished, again.JSON409.Error.Code)
}

// The generated client drives a retrieval experiment through its typed
// methods: create it, read it until it succeeds, fetch its result's
// bytes, list it, and decode its refusals as the declared errors; and an
// agent experiment, read as an eval result.
func TestGeneratedClientDrivesAnExperiment(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	ctx := context.Background()
	bearer := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	c, err := apiclient.NewClientWithResponses(e.base, apiclient.WithHTTPClient(checkedDoer{e}), apiclient.WithRequestEditorFn(bearer))
	require.NoError(t, err)
	created, err := c.CreateExperimentWithResponse(ctx, apiclient.ExperimentCreate{Kind: apiclient.ExperimentCreateKindRetrieval, Corpus: "seed"})
	require.NoError(t, err)
	require.NotNil(t, created.JSON202, string(created.Body))
	id := created.JSON202.Id
	var x *apiclient.Experiment
	for deadline := time.Now().Add(20 * time.Second); ; {
		got, err := c.GetExperimentWithResponse(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, got.JSON200, string(got.Body))
		x = got.JSON200
		if x.State != apiclient.ExperimentStateQueued && x.State != apiclient.ExperimentStateRunning {
			break
		}
		require.True(t, time.Now().Before(deadline), "the experiment did not end")
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, apiclient.ExperimentStateSucceeded, x.State)
	assert.Equal(t, x.Progress.Total, x.Progress.Done)
	require.NotNil(t, x.Result)
	retrieval, err := x.Result.AsRetrievalResult()
	require.NoError(t, err)
	assert.Equal(t, "seed", retrieval.Corpus)
	res, err := c.GetExperimentResultWithResponse(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, res.JSON200)
	assert.True(t, strings.HasSuffix(string(res.Body), "}\n"), "the command's bytes end with a newline")
	list, err := c.ListExperimentsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.NotNil(t, list.JSON200)
	require.Len(t, list.JSON200.Experiments, 1)
	assert.Equal(t, id, list.JSON200.Experiments[0].Id)
	var nope apiclient.ExperimentCreate_Config
	require.NoError(t, nope.FromExperimentCreateConfig0("nope"))
	refused, err := c.CreateExperimentWithResponse(ctx, apiclient.ExperimentCreate{Kind: apiclient.ExperimentCreateKindAgent, Corpus: "seed", Config: &nope})
	require.NoError(t, err)
	require.NotNil(t, refused.JSON400, string(refused.Body))
	assert.Equal(t, apiclient.ErrorBodyCodeUnknownConfig, refused.JSON400.Error.Code)
	scripted := apiclient.ExperimentCreatePolicyScripted
	agent, err := c.CreateExperimentWithResponse(ctx, apiclient.ExperimentCreate{Kind: apiclient.ExperimentCreateKindAgent, Corpus: "seed", Policy: &scripted})
	require.NoError(t, err)
	require.NotNil(t, agent.JSON202, string(agent.Body))
	for deadline := time.Now().Add(20 * time.Second); ; {
		got, err := c.GetExperimentWithResponse(ctx, agent.JSON202.Id)
		require.NoError(t, err)
		require.NotNil(t, got.JSON200, string(got.Body))
		x = got.JSON200
		if x.State != apiclient.ExperimentStateQueued && x.State != apiclient.ExperimentStateRunning {
			break
		}
		require.True(t, time.Now().Before(deadline), "the agent experiment did not end")
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, apiclient.ExperimentStateSucceeded, x.State)
	require.NotNil(t, x.Result)
	eval, err := x.Result.AsEvalResult()
	require.NoError(t, err)
	assert.Equal(t, "seed", eval.Corpus)
	assert.Equal(t, x.Progress.Total, eval.Summary.Trials, "progress counts the trials")
	again, err := c.CancelExperimentWithResponse(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, again.JSON409)
	assert.Equal(t, apiclient.ErrorBodyCodeAlreadyFinished, again.JSON409.Error.Code)
}
