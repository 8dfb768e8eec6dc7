package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCorporaListWhatRuns: GET /v1/corpora lists the packs a run may name,
// the seed first, with each one's versions and default version, and a run
// on a listed pack with no version searches that pack's default.
func TestCorporaListWhatRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		packs bool
		ids   []string
	}{
		{"seed alone", false, []string{"seed"}},
		{"the shipped packs", true, []string{"seed", "python-3.11", "sqlite-3.40"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, options{packs: tc.packs})
			runOnly := e.token("bob", []string{"run"}, 100, 1)
			r := e.do(req{method: "GET", path: "/v1/corpora", token: runOnly, valid: true})
			require.Equal(t, http.StatusOK, r.status, "a token that may only run lists what it may run: %s", r.body)
			tok := e.token("alice", []string{"read", "run"}, 100, 1)
			r = e.do(req{method: "GET", path: "/v1/corpora", token: tok, valid: true})
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			var got struct {
				Corpora []struct {
					ID             string   `json:"id"`
					Title          string   `json:"title"`
					Versions       []string `json:"versions"`
					DefaultVersion string   `json:"default_version"`
				} `json:"corpora"`
			}
			require.NoError(t, json.Unmarshal(r.body, &got))
			var ids []string
			for _, c := range got.Corpora {
				ids = append(ids, c.ID)
				assert.Contains(t, c.Versions, c.DefaultVersion, c.ID)
				assert.NotEmpty(t, c.Title, c.ID)
			}
			assert.Equal(t, tc.ids, ids)
			last := got.Corpora[len(got.Corpora)-1]
			id := e.start(tok, `{"question": "What does it say about transactions?", "corpus": "`+last.ID+`"}`)
			run := e.await(tok, id)
			request, _ := run["request"].(map[string]any)
			assert.Equal(t, last.DefaultVersion, request["version"], "a run on %s without a version: %v", last.ID, run)
		})
	}
}

// TestCorporaRefusals: the list takes a token and no parameters, GET and
// POST alone, and an upload the corpora scope (each refusal is the document's).
func TestCorporaRefusals(t *testing.T) {
	e := newEnv(t, options{})
	tok := e.token("alice", []string{"read"}, 100, 1)
	for _, tc := range []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"no token", req{method: "GET", path: "/v1/corpora"}, http.StatusUnauthorized, "unauthorized"},
		{"a parameter", req{method: "GET", path: "/v1/corpora?all=1", token: tok}, http.StatusBadRequest, "unknown_parameter"},
		{"a PUT", req{method: "PUT", path: "/v1/corpora", token: tok}, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"an upload without the corpora scope", req{method: "POST", path: "/v1/corpora", token: tok}, http.StatusForbidden, "missing_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.r)
			assert.Equal(t, tc.status, r.status)
			assert.Equal(t, tc.code, r.code(t))
		})
	}
}
