package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server"
)

// Every refusal, in the order the server checks (credentials, scope,
// allowance, media type, size, JSON, fields, then the task in the core's
// order, then the service's fields): each answered with its status and
// code, and nothing stored for the caller.
func TestRefusalsStoreNothing(t *testing.T) {
	e := newEnv(t, options{})
	full := e.token("full", []string{"read", "run", "live"}, 1000, 10)
	reader := e.token("reader", []string{"read"}, 1000, 10)
	runner := e.token("runner", []string{"run"}, 1000, 10)
	revoked := e.token("revoked", []string{"read", "run"}, 1000, 10)
	other := e.token("other", []string{"read", "run"}, 1000, 10)
	othersRun := e.start(other, `{`+overwrite+`}`)
	e.await(other, othersRun)
	ids := map[string]string{}
	for name, tok := range e.tokens {
		ids[name] = strings.Split(tok, "_")[1]
	}
	_, _, err := server.RevokeToken(context.Background(), e.store, ids["revoked"], e.clock.Now())
	require.NoError(t, err)
	forged := full[:len(full)-4] + "0000"
	if forged == full {
		forged = full[:len(full)-4] + "1111"
	}

	q := func(extra string) string { return `{` + overwrite + extra + `}` }
	rows := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"no token", req{method: "POST", path: "/v1/runs", body: q("")}, 401, "unauthorized"},
		{"not a bearer", req{method: "POST", path: "/v1/runs", body: q(""), header: map[string]string{"Authorization": "Basic " + full}}, 401, "unauthorized"},
		{"malformed token", req{method: "POST", path: "/v1/runs", token: "rag_xyz", body: q("")}, 401, "unauthorized"},
		{"forged secret", req{method: "POST", path: "/v1/runs", token: forged, body: q("")}, 401, "unauthorized"},
		{"unknown id", req{method: "POST", path: "/v1/runs", token: "rag_0123456789abcdef_" + strings.Repeat("ab", 32), body: q("")}, 401, "unauthorized"},
		{"revoked", req{method: "POST", path: "/v1/runs", token: revoked, body: q("")}, 401, "unauthorized"},
		{"read cannot run", req{method: "POST", path: "/v1/runs", token: reader, body: q("")}, 403, "missing_scope"},
		{"run cannot read", req{method: "GET", path: "/v1/runs", token: runner}, 403, "missing_scope"},
		{"media type", req{method: "POST", path: "/v1/runs", token: full, body: q(""), header: map[string]string{"Content-Type": "text/plain"}}, 415, "unsupported_media_type"},
		{"charset", req{method: "POST", path: "/v1/runs", token: full, body: q(""), header: map[string]string{"Content-Type": "application/json; charset=latin1"}}, 415, "unsupported_media_type"},
		{"oversized body", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": null` + strings.Repeat(" ", 17<<10))}, 413, "body_too_large"},
		{"not JSON", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": `}, 400, "malformed_json"},
		{"trailing data", req{method: "POST", path: "/v1/runs", token: full, body: q("") + ` {}`}, 400, "malformed_json"},
		{"repeated key", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "version": "3.11"`)}, 400, "malformed_json"},
		{"repeated nested key", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"reads": 2, "reads": 6}`)}, 400, "malformed_json"},
		{"NaN", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"reads": NaN}`)}, 400, "malformed_json"},
		{"invalid UTF-8", req{method: "POST", path: "/v1/runs", token: full, body: "{\"question\": \"caf\xe9\"}"}, 400, "malformed_json"},
		{"not an object", req{method: "POST", path: "/v1/runs", token: full, body: `["question"]`}, 400, "malformed_json"},
		{"unknown field", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "priority": 1`)}, 400, "unknown_field"},
		{"field names are exact", req{method: "POST", path: "/v1/runs", token: full, body: `{"Question": "x"}`}, 400, "unknown_field"},
		{"unknown field before bad limits", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": 5, "extra": 1`)}, 400, "unknown_field"},
		{"limits before question", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "", "limits": {"reads": 0}}`}, 400, "invalid_limits"},
		{"limits wrong type", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": "many"`)}, 400, "invalid_limits"},
		{"limits 1.0", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"reads": 1.0}`)}, 400, "invalid_limits"},
		{"limits true", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"reads": true}`)}, 400, "invalid_limits"},
		{"limits over cap", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"model_calls": 13}`)}, 400, "invalid_limits"},
		{"limits unknown key", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "limits": {"calls": 2}`)}, 400, "invalid_limits"},
		{"question missing", req{method: "POST", path: "/v1/runs", token: full, body: `{"version": "3.12"}`}, 400, "invalid_question"},
		{"question wrong type", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": 42}`}, 400, "invalid_question"},
		{"question blank", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": " \u3000\t"}`}, 400, "invalid_question"},
		{"huge question", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "` + strings.Repeat("é", 513) + `"}`}, 400, "invalid_question"},
		{"question before version", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "", "version": "x"}`}, 400, "invalid_question"},
		{"version", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "q", "version": "3.12\n"}`}, 400, "invalid_version"},
		{"version null", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "q", "version": null}`}, 400, "invalid_version"},
		{"mode", req{method: "POST", path: "/v1/runs", token: full, body: `{"question": "q", "mode": "free"}`}, 400, "invalid_mode"},
		{"policy", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "policy": "replay"`)}, 400, "invalid_policy"},
		{"corpus unknown", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "corpus": "python-3.12"`)}, 400, "unknown_corpus"},
		{"corpus wrong type", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "corpus": 1`)}, 400, "invalid_field"},
		{"strategy", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "strategy": "wait"`)}, 400, "invalid_field"},
		{"stream wrong type", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "stream": "yes"`)}, 400, "invalid_field"},
		{"on_disconnect", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "on_disconnect": "stop"`)}, 400, "invalid_field"},
		{"cancel on disconnect needs a stream", req{method: "POST", path: "/v1/runs", token: full, body: q(`, "on_disconnect": "cancel"`)}, 400, "invalid_field"},
		{"gemini needs live", req{method: "POST", path: "/v1/runs", token: runner, body: q(`, "policy": "gemini"`)}, 403, "missing_scope"},
		{"a stream needs read", req{method: "POST", path: "/v1/runs", token: runner, body: q(`, "stream": true`)}, 403, "missing_scope"},
		{"query on POST", req{method: "POST", path: "/v1/runs?wait=1", token: full, body: q("")}, 400, "unknown_parameter"},
		{"list limit", req{method: "GET", path: "/v1/runs?limit=0", token: full}, 400, "invalid_parameter"},
		{"list limit not a number", req{method: "GET", path: "/v1/runs?limit=ten", token: full}, 400, "invalid_parameter"},
		{"list cursor", req{method: "GET", path: "/v1/runs?cursor=abc", token: full}, 400, "invalid_parameter"},
		{"list unknown parameter", req{method: "GET", path: "/v1/runs?status=running", token: full}, 400, "unknown_parameter"},
		{"another's run", req{method: "GET", path: "/v1/runs/" + othersRun, token: full}, 404, "not_found"},
		{"another's events", req{method: "GET", path: "/v1/runs/" + othersRun + "/events", token: full}, 404, "not_found"},
		{"another's recording", req{method: "GET", path: "/v1/runs/" + othersRun + "/recording", token: full}, 404, "not_found"},
		{"another's cancel", req{method: "POST", path: "/v1/runs/" + othersRun + "/cancel", token: full}, 404, "not_found"},
		{"no such run", req{method: "GET", path: "/v1/runs/run_00000000000000000000", token: full}, 404, "not_found"},
		{"no such path", req{method: "GET", path: "/v2/runs", token: full}, 404, "not_found"},
		{"method", req{method: "DELETE", path: "/v1/runs", token: full}, 405, "method_not_allowed"},
		{"method on a run", req{method: "DELETE", path: "/v1/runs/" + othersRun, token: full}, 405, "method_not_allowed"},
		{"method on events", req{method: "POST", path: "/v1/runs/" + othersRun + "/events", token: full}, 405, "method_not_allowed"},
		{"method on cancel", req{method: "GET", path: "/v1/runs/" + othersRun + "/cancel", token: full}, 405, "method_not_allowed"},
		{"method on a recording", req{method: "PUT", path: "/v1/runs/" + othersRun + "/recording", token: full}, 405, "method_not_allowed"},
		{"method on health", req{method: "POST", path: "/healthz"}, 405, "method_not_allowed"},
		{"method on the document", req{method: "DELETE", path: "/openapi.json"}, 405, "method_not_allowed"},
		{"query on a run", req{method: "GET", path: "/v1/runs/" + othersRun + "?verbose=1", token: full}, 400, "unknown_parameter"},
		{"query on events", req{method: "GET", path: "/v1/runs/" + othersRun + "/events?from=3", token: full}, 400, "unknown_parameter"},
		{"query on cancel", req{method: "POST", path: "/v1/runs/" + othersRun + "/cancel?force=1", token: full}, 400, "unknown_parameter"},
		{"query on a recording", req{method: "GET", path: "/v1/runs/" + othersRun + "/recording?format=x", token: full}, 400, "unknown_parameter"},
		{"query on health", req{method: "GET", path: "/healthz?deep=1"}, 400, "unknown_parameter"},
		{"query on the document", req{method: "GET", path: "/openapi.json?v=2"}, 400, "unknown_parameter"},
		{"malformed query on the list", req{method: "GET", path: "/v1/runs?limit=%zz", token: full}, 400, "invalid_parameter"},
		{"malformed query on a run", req{method: "GET", path: "/v1/runs/" + othersRun + "?%zz", token: full}, 400, "invalid_parameter"},
		{"a ; in the query", req{method: "GET", path: "/v1/runs?limit=2;cursor=1", token: full}, 400, "invalid_parameter"},
		{"malformed query before credentials", req{method: "POST", path: "/v1/runs?%", body: q("")}, 400, "invalid_parameter"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := e.do(row.r)
			assert.Equal(t, row.status, r.status, string(r.body))
			assert.Equal(t, row.code, r.code(t), string(r.body))
			if row.status == 401 {
				assert.NotEmpty(t, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	for _, name := range []string{"full", "reader", "runner", "revoked"} {
		runs, err := e.store.Runs(context.Background(), ids[name], 0, 100)
		require.NoError(t, err)
		assert.Empty(t, runs, "%s: no refused request stored a run", name)
	}
	runs, err := e.store.Runs(context.Background(), ids["other"], 0, 100)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "answered", runs[0].Status, "another token's requests did not touch its run")
	evs, err := e.store.Events(context.Background(), othersRun, 0, 100)
	require.NoError(t, err)
	assert.Equal(t, "end", evs[len(evs)-1].Type)
}

// A gemini run on a server without a key is refused before anything is
// stored or sent.
func TestGeminiWithoutKeyIsRefused(t *testing.T) {
	e := newEnv(t, options{noKey: true})
	tok := e.token("alice", []string{"read", "run", "live"}, 100, 5)
	r := e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "policy": "gemini"}`, valid: true})
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "missing_api_key", r.code(t))
	c, err := e.store.Counts(context.Background())
	require.NoError(t, err)
	assert.Zero(t, c)
}

// The daily request allowance: the request past it is refused with
// Retry-After until the next UTC day, and counts again then.
func TestDailyRequestAllowance(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read", "run"}, 3, 1)
	for range 3 {
		r := e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status)
	}
	r := e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true})
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "request_limit", r.code(t))
	assert.Equal(t, "43200", r.header.Get("Retry-After"), "noon to midnight UTC")
	e.clock.Set(e.clock.Now().Add(12 * 3600e9))
	r = e.do(req{method: "GET", path: "/v1/runs", token: tok, valid: true})
	assert.Equal(t, http.StatusOK, r.status, "a new day")
}

// Refusals Go's HTTP layer makes before any handler (a request line or a
// header it cannot parse, headers over MaxHeaderBytes, a transfer coding
// it does not know) are the API's JSON errors, declared in the document,
// on a connection then closed; they were plain text.
func TestGoRefusalsAreTheAPIsErrors(t *testing.T) {
	e := newEnv(t, options{})
	big := strings.Repeat("x", 20<<10)
	for _, row := range []struct {
		name, raw    string
		status       int
		code         string
		method, path string // what the answer is checked as
	}{
		{"a request line that is not one", "GARBAGE\r\n\r\n", 400, "malformed_request", "GET", "/healthz"},
		{"a malformed header", "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400, "malformed_request", "GET", "/healthz"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "malformed_request", "GET", "/healthz"},
		{"headers over 16 KiB", "GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Big: " + big + "\r\n\r\n", 431, "headers_too_large", "GET", "/v1/runs"},
		{"an unknown transfer coding", "POST /v1/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "malformed_request", "POST", "/v1/runs"},
	} {
		t.Run(row.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", e.http.Listener.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			_, err = io.WriteString(conn, row.raw)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			out := response{status: resp.StatusCode, header: resp.Header, body: body}
			assert.Equal(t, row.status, out.status, string(body))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Equal(t, row.code, out.code(t), string(body))
			assert.True(t, resp.Close, "the connection is closed")
			hr, err := http.NewRequest(row.method, e.base+row.path, nil)
			require.NoError(t, err)
			e.check(hr, req{method: row.method, path: row.path}, out)
		})
	}
}
