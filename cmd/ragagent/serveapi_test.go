package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// testPepper is the command tests' pepper, as openssl rand -hex 32 makes one.
const testPepper = "9b3e71c05fa24d8e6b1c0f92a7d3e854c1f06b2a9d8e7c3f5a4b6d0e2c1f3a5b"

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
		{[]string{"tokens", "add", "--db", db, "--name", "x", "--scopes", "admin"}, `scope "admin" is not one of read, run, live, corpora`},
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

// tokens add checks the pepper before anything else: without one, or with
// one that does not look random, it refuses with how to make one and
// creates no database (it created the file, then refused).
func TestTokensAddRefusesABadPepperBeforeCreatingAnything(t *testing.T) {
	for _, p := range []string{"", strings.Repeat("a", 16), "a pepper for the command tests, long enough"} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			t.Setenv(pepperVariable, p)
			dir := t.TempDir()
			for _, out := range [][]string{{"--db", filepath.Join(dir, "api.db")}, {"--sql", filepath.Join(dir, "token.sql")}} {
				code, stdout, errOut := ragagent(append(append([]string{"tokens", "add"}, out...), "--name", "x")...)
				assert.Equal(t, exitUsage, code)
				assert.Empty(t, stdout)
				assert.Contains(t, errOut, pepperVariable)
				assert.Contains(t, errOut, "openssl rand -hex 32")
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				assert.Empty(t, entries, "nothing created")
			}
			code, _, errOut := ragagent("serve-api", "--db", filepath.Join(dir, "api.db"))
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, "openssl rand -hex 32")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "serve-api created nothing either")
		})
	}
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

// startServeAPI runs serve-api as its own process on db and returns it with
// the URL it printed (the process is killed when the test ends).
func startServeAPI(t *testing.T, db string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := child(append([]string{"serve-api", "--db", db, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, pepperVariable+"="+testPepper)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "serve-api printed no URL: %s", stderr.String())
	return cmd, strings.TrimSpace(line), &stderr
}

// apiCall sends one request with the token and decodes its JSON answer.
func apiCall(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &out), string(data))
	return resp.StatusCode, out
}

// A second serve-api on a database another one serves refuses to start,
// in one line and with a non-zero exit, and touches nothing: the first
// one's running Gemini run goes on running (it was marked interrupted by
// the second's recovery, while the first kept sending and charging its
// calls), and its cancel ends it as cancelled (it answered 409).
func TestSecondServerOnOneDatabaseRefusesAndTouchesNothing(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(t.TempDir(), "api.db")
	code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci", "--scopes", "read,run,live")
	require.Equal(t, exitOK, code, errOut)
	token = strings.TrimSpace(token)
	fake := geminitest.NewServer(geminitest.ResponderFunc(func(geminitest.Request) geminitest.Reply {
		return geminitest.Slow(time.Minute, geminitest.Status(500))
	}))
	defer fake.Close()

	_, base, _ := startServeAPI(t, db, "--endpoint", fake.URL())
	status, run := apiCall(t, "POST", base+"/v1/runs", token, `{"question": "Does Path.write_text overwrite?", "policy": "gemini"}`)
	require.Equal(t, http.StatusAccepted, status, run)
	id := run["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for len(fake.Generations()) == 0 {
		require.True(t, time.Now().Before(deadline), "the run's first call never reached the fake")
		time.Sleep(10 * time.Millisecond)
	}

	second := child("serve-api", "--db", db, "--addr", "127.0.0.1:0", "--endpoint", fake.URL())
	second.Env = append(second.Env, pepperVariable+"="+testPepper)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	require.NoError(t, second.Start())
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the second server exits non-zero")
		assert.Equal(t, exitError, ee.ExitCode())
	case <-time.After(20 * time.Second):
		_ = second.Process.Kill()
		<-exited
		t.Fatalf("the second serve-api did not refuse to start: %s", stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	assert.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %q", msg)
	assert.Contains(t, msg, "another ragagent serve-api is serving "+db)

	status, run = apiCall(t, "GET", base+"/v1/runs/"+id, token, "")
	require.Equal(t, http.StatusOK, status, run)
	assert.Equal(t, "running", run["status"], "the first server's run is untouched")
	status, run = apiCall(t, "POST", base+"/v1/runs/"+id+"/cancel", token, "")
	require.Equal(t, http.StatusOK, status, run)
	assert.Equal(t, "incomplete", run["status"])
	assert.Equal(t, "cancelled", run["reason"])
	assert.Len(t, fake.Generations(), 1, "one call sent in all")
}

// kitchenPack builds a two-passage pack with corpus build and returns its folder.
func kitchenPack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.md"), []byte("# Kettles\n\nA kettle boils water in about three minutes.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "b.txt"), []byte("Teapots keep tea warm.\n"), 0o644))
	out := filepath.Join(dir, "pack")
	code, _, stderr := ragagent("corpus", "build", "--from", docs, "--out", out, "--id", "kitchen", "--title", "Kitchen notes",
		"--version", "1.0", "--base-url", "https://notes.example.org/", "--licence", "CC0", "--attribution", "me")
	require.Equal(t, exitOK, code, stderr)
	return out
}

// serve-api --pack offers the operator's pack: GET /v1/corpora lists it with
// its versions, and a run on it searches its default version; a folder
// that is not a pack stops the start with one line naming it.
func TestServeAPIOffersTheOperatorsPacks(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(t.TempDir(), "api.db")
	code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci")
	require.Equal(t, exitOK, code, errOut)
	token = strings.TrimSpace(token)
	pack := kitchenPack(t)

	_, base, stderr := startServeAPI(t, db, "--pack", pack)
	status, list := apiCall(t, "GET", base+"/v1/corpora", token, "")
	require.Equal(t, http.StatusOK, status, stderr.String())
	var ids []any
	for _, c := range list["corpora"].([]any) {
		ids = append(ids, c.(map[string]any)["id"])
	}
	assert.Equal(t, []any{"seed", "kitchen", "python-3.11", "sqlite-3.40"}, ids)
	status, run := apiCall(t, "POST", base+"/v1/runs", token, `{"question": "How long does a kettle take to boil?", "corpus": "kitchen", "mode": "fixed"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", run)
	assert.Equal(t, "1.0", run["request"].(map[string]any)["version"])

	other := filepath.Join(t.TempDir(), "other.db")
	code, _, errOut = ragagent("serve-api", "--db", other, "--addr", "127.0.0.1:0", "--pack", filepath.Dir(pack))
	assert.Equal(t, exitUsage, code)
	assert.NoFileExists(t, other, "a broken pack is refused before the database is made")
	assert.Contains(t, errOut, "--pack "+filepath.Dir(pack)+":")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
}

// serve-api's experiment caps reach the server: over
// --max-experiment-configs is refused with too_many_configs, within it
// the experiment is admitted; a cap below 1 is a usage error.
func TestServeAPIExperimentCaps(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(t.TempDir(), "api.db")
	code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci", "--scopes", "read,run")
	require.Equal(t, exitOK, code, errOut)
	token = strings.TrimSpace(token)
	_, base, stderr := startServeAPI(t, db, "--max-experiment-configs", "1")
	status, out := apiCall(t, "POST", base+"/v1/experiments", token, `{"kind": "retrieval", "corpus": "seed", "configs": ["seed", "general"]}`)
	assert.Equal(t, http.StatusBadRequest, status, stderr.String())
	assert.Equal(t, "too_many_configs", out["error"].(map[string]any)["code"])
	status, out = apiCall(t, "POST", base+"/v1/experiments", token, `{"kind": "retrieval", "corpus": "seed", "configs": ["seed"]}`)
	assert.Equal(t, http.StatusAccepted, status, out)
	code, _, errOut = ragagent("serve-api", "--db", db, "--experiments-per-token", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--experiments-per-token")
}

// serve-api --allow-origin reaches the server: the named page's preflight
// is answered with its origin, another origin's is not; an origin with a
// path is a usage error before the database is made.
func TestServeAPIAllowOrigin(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(t.TempDir(), "api.db")
	page := "http://127.0.0.1:8123"
	_, base, stderr := startServeAPI(t, db, "--allow-origin", page)
	for _, row := range []struct{ origin, want string }{{page, page}, {"http://127.0.0.1:9", ""}} {
		req, err := http.NewRequest(http.MethodOptions, base+"/v1/experiments", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", row.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err, stderr.String())
		res.Body.Close()
		assert.Equal(t, row.want, res.Header.Get("Access-Control-Allow-Origin"), row.origin)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	code, _, errOut := ragagent("serve-api", "--db", other, "--addr", "127.0.0.1:0", "--allow-origin", page+"/index.html")
	assert.Equal(t, exitUsage, code)
	assert.NoFileExists(t, other)
	assert.Contains(t, errOut, "--allow-origin")
}
