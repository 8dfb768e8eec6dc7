package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server"
)

// TestCORSAllowsOnlyTheConfiguredOrigins holds the page's "On the server"
// to the server's CORS: a configured origin's preflight is answered before
// authentication and its requests carry Access-Control-Allow-Origin (its
// own origin, never "*"); another origin, or a server configured with
// none, gets no CORS header, so a browser keeps the answer from its page.
func TestCORSAllowsOnlyTheConfiguredOrigins(t *testing.T) {
	page := "http://127.0.0.1:8123"
	e := newEnv(t, options{allowOrigins: []string{page, "https://Lab.Example.org"}})
	none := newEnv(t, options{})
	tok := e.token("page", []string{"read", "run"}, 100, 1)
	rows := []struct {
		name            string
		env             *env
		method, origin  string
		preflight, auth bool
		status          int
		allow           string
	}{
		{"preflight of the page", e, http.MethodOptions, page, true, false, http.StatusNoContent, page},
		{"preflight of another origin case", e, http.MethodOptions, "https://lab.example.org", true, false, http.StatusNoContent, "https://lab.example.org"},
		{"a request of the page", e, http.MethodGet, page, false, true, http.StatusOK, page},
		{"the page without its token", e, http.MethodGet, page, false, false, http.StatusUnauthorized, page},
		{"another origin's preflight", e, http.MethodOptions, "http://127.0.0.1:9999", true, false, http.StatusMethodNotAllowed, ""},
		{"another origin's request", e, http.MethodGet, "https://evil.example", false, true, http.StatusOK, ""},
		{"no origin (the command line)", e, http.MethodGet, "", false, true, http.StatusOK, ""},
		{"a server with no origin configured", none, http.MethodOptions, page, true, false, http.StatusMethodNotAllowed, ""},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			req, err := http.NewRequest(row.method, row.env.base+"/v1/corpora", nil)
			require.NoError(t, err)
			if row.origin != "" {
				req.Header.Set("Origin", row.origin)
			}
			if row.preflight {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
			}
			if row.auth {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			assert.Equal(t, row.status, res.StatusCode)
			assert.Equal(t, row.allow, res.Header.Get("Access-Control-Allow-Origin"))
			assert.Empty(t, res.Header.Get("Access-Control-Allow-Credentials"), "the token is a header, never a cookie")
			if row.preflight && row.allow != "" {
				for _, h := range []string{"authorization", "content-type", "last-event-id"} {
					assert.Contains(t, strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")), h)
				}
				assert.Contains(t, res.Header.Get("Access-Control-Allow-Methods"), "POST")
			}
		})
	}
}

// TestCheckOrigin holds what --allow-origin accepts: an origin as a
// browser sends it, nothing more.
func TestCheckOrigin(t *testing.T) {
	rows := []struct {
		in, want string
		ok       bool
	}{
		{"http://127.0.0.1:8123", "http://127.0.0.1:8123", true},
		{"https://Lab.Example.org", "https://lab.example.org", true},
		{"https://lab.example.org/", "https://lab.example.org", true},
		{"https://lab.example.org/page", "", false},
		{"https://lab.example.org?x=1", "", false},
		{"https://user@lab.example.org", "", false},
		{"ftp://lab.example.org", "", false},
		{"lab.example.org", "", false},
		{"*", "", false},
	}
	for _, row := range rows {
		got, err := server.CheckOrigin(row.in)
		if !row.ok {
			assert.Error(t, err, row.in)
			continue
		}
		require.NoError(t, err, row.in)
		assert.Equal(t, row.want, got)
	}
}
