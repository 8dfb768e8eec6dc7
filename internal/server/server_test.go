package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/api"
)

// The first authored case's question: graded, so its report has checks.
const overwrite = `"question": "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "version": "3.12"`

func TestScriptedRunEndToEnd(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	r := e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `}`, valid: true})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	created := r.json(t)
	id := created["id"].(string)
	assert.Equal(t, "/v1/runs/"+id, r.header.Get("Location"))
	assert.Equal(t, "running", created["status"])
	assert.Equal(t, map[string]any{"question": "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "version": "3.12",
		"mode": "agent", "limits": map[string]any{"model_calls": 9.0, "searches": 3.0, "reads": 4.0, "source_bytes": 4096.0, "seconds": 180.0},
		"policy": "scripted", "corpus": "seed", "strategy": "reject", "stream": false, "on_disconnect": "continue"}, created["request"],
		"every default filled in")

	run := e.await(tok, id)
	assert.Equal(t, "answered", run["status"])
	assert.Equal(t, "citation_contract_passed", run["reason"])
	report := run["report"].(map[string]any)
	result := report["result"].(map[string]any)
	assert.NotEmpty(t, result["citations"])
	require.NotNil(t, report["checks"], "an authored case's question is graded")
	assert.Equal(t, "pass", report["checks"].(map[string]any)["outcome"])

	evs := e.events(tok, id, nil)
	steps := result["steps"].([]any)
	want := []string{"started"}
	for range steps {
		want = append(want, "step")
	}
	want = append(want, "end")
	assert.Equal(t, want, types(evs), "one event per step, between started and end")
	for i, ev := range evs {
		assert.Equal(t, fmt.Sprint(i+1), ev.id)
	}
	var end map[string]any
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].data), &end))
	assert.Equal(t, run["report"], end["report"], "the end event carries the run's report")

	rec := e.do(req{method: "GET", path: "/v1/runs/" + id + "/recording", token: tok, valid: true})
	assert.Equal(t, http.StatusNotFound, rec.status)
	assert.Equal(t, "no_recording", rec.code(t), "a scripted run sends nothing")
}

func TestStreamedRunSendsEveryEventThenEnds(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	r := e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "mode": "fixed", "stream": true}`, valid: true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	assert.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
	evs := parseSSE(t, r.body)
	require.GreaterOrEqual(t, len(evs), 3)
	assert.Equal(t, "started", evs[0].event)
	assert.Equal(t, "end", evs[len(evs)-1].event)
	id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
	assert.Equal(t, evs, e.events(tok, id, nil), "the stream is the stored events")
}

// A client that reconnects with Last-Event-ID gets exactly the events
// after it; one that already has the end event gets an empty, ended
// stream.
func TestEventStreamResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	id := e.start(tok, `{`+overwrite+`}`)
	e.await(tok, id)
	all := e.events(tok, id, nil)
	require.Greater(t, len(all), 3)
	for _, after := range []int{1, 2, len(all) - 1, len(all)} {
		got := e.events(tok, id, map[string]string{"Last-Event-ID": fmt.Sprint(after)})
		assert.Equal(t, types(all[after:]), types(got), "after %d", after)
		if len(got) > 0 {
			assert.Equal(t, all[after:], got, "after %d", after)
		}
	}
	bad := e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: tok, header: map[string]string{"Last-Event-ID": "two"}})
	assert.Equal(t, http.StatusBadRequest, bad.status)
	assert.Equal(t, "invalid_parameter", bad.code(t))
}

func TestOpenAPIDocumentAndHealthAreServed(t *testing.T) {
	e := newEnv(t, options{})
	r := e.do(req{method: "GET", path: "/openapi.json", valid: true})
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, api.OpenAPI, r.body)
	r = e.do(req{method: "GET", path: "/healthz", valid: true})
	require.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status": "ok"}`, string(r.body))
}

func TestListPagesThroughOwnRunsOnly(t *testing.T) {
	e := newEnv(t, options{})
	alice := e.token("alice", []string{"read", "run"}, 100, 1)
	bob := e.token("bob", []string{"read", "run"}, 100, 1)
	var ids []string
	for range 5 {
		id := e.start(alice, `{`+overwrite+`}`)
		e.await(alice, id)
		ids = append(ids, id)
	}
	e.await(bob, e.start(bob, `{`+overwrite+`}`))
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/v1/runs?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := e.do(req{method: "GET", path: path, token: alice, valid: true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var list struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
			NextCursor *string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(r.body, &list))
		assert.LessOrEqual(t, len(list.Runs), 2)
		for _, run := range list.Runs {
			seen = append(seen, run.ID)
		}
		if list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
		require.Less(t, page, 5)
	}
	want := make([]string, len(ids))
	for i, id := range ids {
		want[len(ids)-1-i] = id
	}
	assert.Equal(t, want, seen, "newest first, every one of alice's, none of bob's")
}

// keep context imported for later tests.
var _ = context.Background

// A server whose engine has the Python pack offers it as a corpus: a run
// over it searches the pack (its passages' URLs are the documentation's)
// and asks about its default version when none is given, and one without
// it refuses the same request with unknown_corpus.
func TestCorpusPackRunsWhereTheEngineHasIt(t *testing.T) {
	body := `{"question": "How do I read a file line by line?", "version": "3.11", "mode": "fixed", "corpus": "python-3.11"}`
	e := newEnv(t, options{packs: true})
	tok := e.token("alice", []string{"read", "run"}, 100, 1)
	id := e.start(tok, body)
	run := e.await(tok, id)
	assert.Equal(t, "python-3.11", run["request"].(map[string]any)["corpus"])
	report := run["report"].(map[string]any)
	result := report["result"].(map[string]any)
	steps, _ := json.Marshal(result["steps"])
	assert.Contains(t, string(steps), `"tutorial.inputoutput.methods-of-file-objects"`, "the run read the pack's passages")

	// Without a version the run asks about the corpus's own default one.
	id = e.start(tok, `{"question": "How do I read a file line by line?", "mode": "fixed", "corpus": "python-3.11"}`)
	assert.Equal(t, "3.11", e.await(tok, id)["request"].(map[string]any)["version"], "the pack's default version")

	seedOnly := newEnv(t, options{})
	tok = seedOnly.token("alice", []string{"read", "run"}, 100, 1)
	r := seedOnly.do(req{method: "POST", path: "/v1/runs", token: tok, body: body, valid: true})
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "unknown_corpus", r.code(t))
}
