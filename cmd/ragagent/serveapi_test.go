package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testPepper = "a pepper for the command tests"

func TestTokensAddListRevoke(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(t.TempDir(), "api.db")
	code, out, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci", "--scopes", "read,run", "--json")
	require.Equal(t, exitOK, code, errOut)
	var added map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	token := added["token"].(string)
	assert.True(t, strings.HasPrefix(token, "rag_"+added["id"].(string)+"_"))

	code, out, _ = ragagent("tokens", "list", "--db", db, "--json")
	require.Equal(t, exitOK, code)
	assert.NotContains(t, out, strings.Split(token, "_")[2], "the secret is never listed")
	var listed struct {
		Tokens []tokenRow `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	require.Len(t, listed.Tokens, 1)
	assert.Equal(t, []string{"read", "run"}, listed.Tokens[0].Scopes)
	assert.Nil(t, listed.Tokens[0].RevokedAt)

	code, _, _ = ragagent("tokens", "revoke", "--db", db, "--id", listed.Tokens[0].ID)
	require.Equal(t, exitOK, code)
	code, _, errOut = ragagent("tokens", "revoke", "--db", db, "--id", listed.Tokens[0].ID)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no valid token")
	code, out, _ = ragagent("tokens", "list", "--db", db)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "ci")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tokens", "add", "--name", "x"}, "--db FILE is required"},
		{[]string{"tokens", "add", "--db", db, "--name", "x", "--scopes", "admin"}, `scope "admin" is not one of read, run, live`},
		{[]string{"tokens", "add", "--db", db, "--name", "x", "--daily-requests", "0"}, "at least 1"},
		{[]string{"tokens", "rotate"}, `unknown action "rotate"`},
	} {
		code, _, errOut := ragagent(c.args...)
		assert.Equal(t, exitUsage, code, c.args)
		assert.Contains(t, errOut, c.want)
	}
	t.Setenv(pepperVariable, "short")
	code, _, errOut = ragagent("tokens", "add", "--db", db, "--name", "x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, pepperVariable)
}

// lineWriter hands the first line written to it on a channel.
type lineWriter struct {
	w     *io.PipeWriter
	lines chan string
}

func newLineWriter() *lineWriter {
	r, w := io.Pipe()
	lw := &lineWriter{w: w, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lw.lines <- sc.Text()
		}
	}()
	return lw
}

func (l *lineWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

// serve-api serves on a free port, runs a scripted run for a token made
// with tokens add, and stops cleanly when its context ends.
func TestServeAPIStartsRunsAndStops(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	db := filepath.Join(t.TempDir(), "api.db")
	code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci")
	require.Equal(t, exitOK, code, errOut)
	token = strings.TrimSpace(token)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := newLineWriter()
	done := make(chan int, 1)
	go func() { done <- serveAPI(ctx, []string{"--db", db, "--addr", "127.0.0.1:0"}, stdout, io.Discard) }()
	var base string
	select {
	case base = <-stdout.lines:
	case code := <-done:
		t.Fatalf("serve-api exited with %d", code)
	case <-time.After(20 * time.Second):
		t.Fatal("serve-api did not start")
	}
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)
	hr, err := http.NewRequest("POST", base+"/v1/runs", strings.NewReader(`{"question": "Does Path.write_text overwrite?", "stream": true}`))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "event: end\n")
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(20 * time.Second):
		t.Fatal("serve-api did not stop")
	}
}

func TestServeAPIRefusesWithoutPepperOrDB(t *testing.T) {
	t.Setenv(pepperVariable, "")
	code, _, errOut := ragagent("serve-api", "--db", filepath.Join(t.TempDir(), "x.db"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, pepperVariable)
	t.Setenv(pepperVariable, testPepper)
	code, _, errOut = ragagent("serve-api")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--db FILE is required")
}
