package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// localWorker is the Worker (worker/, built by make worker) under
// wrangler dev --local: offline, a fresh local D1, its Gemini endpoint a
// loopback fake whose behaviour each test sets.
type localWorker struct {
	base  string
	dir   string // config, secrets, state
	log   *syncBuffer
	fake  *switchFake
	toks  map[string]string
	cmd   *exec.Cmd
	ready time.Duration // from starting wrangler to the first answered request
}

// switchFake is one loopback endpoint for the Worker's whole life that
// hands each request to the fake a test set.
type switchFake struct {
	mu  sync.Mutex
	cur *fake
	srv *httptest.Server
}

func (s *switchFake) use(f *fake) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = f
}

// workerCaps are the Worker's caps in these tests.
var workerCaps = storeCaps(4, 1, 4, 2)

// workerTokens are made before the Worker starts (tokens reach a Worker's
// D1 from outside it, with wrangler d1 execute).
var workerTokens = []struct {
	name   string
	scopes []string
}{{"alice", []string{"read", "run", "live"}}, {"bob", []string{"read", "run"}}, {"reader", []string{"read"}}}

// startWorker starts the local Worker, or skips when wrangler (npm ci) or
// the built Worker (make worker) is missing.
func startWorker(t *testing.T) *localWorker {
	t.Helper()
	if testing.Short() {
		t.Skip("the local Worker takes seconds to start: not in -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	wrangler := filepath.Join(root, "node_modules", ".bin", "wrangler")
	if _, err := os.Stat(wrangler); err != nil {
		t.Skip("the Worker tests need wrangler: npm ci installs it (package-lock.json pins wrangler and workerd)")
	}
	if _, err := os.Stat(filepath.Join(root, "worker", "build", "app.wasm")); err != nil {
		t.Skip("the Worker tests need the built Worker: make worker")
	}
	w := &localWorker{dir: t.TempDir(), log: &syncBuffer{}, toks: map[string]string{}}
	w.fake = &switchFake{}
	w.fake.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.fake.mu.Lock()
		f := w.fake.cur
		w.fake.mu.Unlock()
		if f == nil {
			http.Error(rw, "no fake set", http.StatusServiceUnavailable)
			return
		}
		f.srv.Config.Handler.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.fake.srv.Close)

	// The configuration: wrangler.toml with absolute paths, the secrets
	// in .dev.vars (wrangler shows them as hidden), the caps; no network:
	// metrics off, the update check's cache fresh, Request.cf's cache
	// present (else wrangler fetches both).
	conf, err := os.ReadFile(filepath.Join(root, "worker", "wrangler.toml"))
	require.NoError(t, err)
	c := strings.ReplaceAll(string(conf), `"./build/`, `"`+filepath.Join(root, "worker", "build")+`/`)
	c = strings.ReplaceAll(c, `migrations_dir = "migrations"`, `migrations_dir = "`+filepath.Join(root, "worker", "migrations")+`"`)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "wrangler.toml"), []byte(c), 0o644))
	vars := fmt.Sprintf("RAGAGENT_TOKEN_PEPPER=%q\nGEMINI_API_KEY=%q\nGEMINI_ENDPOINT=%q\nRAGAGENT_MAX_RUNNING=\"%d\"\nRAGAGENT_MAX_RUNNING_PER_TOKEN=\"%d\"\nRAGAGENT_QUEUE=\"%d\"\nRAGAGENT_QUEUE_PER_TOKEN=\"%d\"\n",
		string(pepper), dummyKey, w.fake.srv.URL, workerCaps.Running, workerCaps.RunningPerToken, workerCaps.Queue, workerCaps.QueuePerToken)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, ".dev.vars"), []byte(vars), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "node_modules", ".mf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "node_modules", ".mf", "cf.json"), []byte("{}"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "tmp", "update-check"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "tmp", "update-check", "wrangler-latest.json"),
		[]byte(fmt.Sprintf(`{"latest": "3.114.17", "lastUpdate": %d}`, time.Now().UnixMilli())), 0o644))
	environ := append(os.Environ(), "WRANGLER_SEND_METRICS=false", "TMPDIR="+filepath.Join(w.dir, "tmp"), "NO_COLOR=1")

	// The schema and the tokens, in one wrangler d1 execute.
	schema, err := os.ReadFile(filepath.Join(root, "worker", "migrations", "0001_schema.sql"))
	require.NoError(t, err)
	sql := string(schema)
	for _, tk := range workerTokens {
		plain, tok, err := server.NewToken(pepper, tk.name, tk.scopes, 10000, 1000, time.Now())
		require.NoError(t, err)
		w.toks[tk.name] = plain
		sql += store.TokenSQL(tok)
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "setup.sql"), []byte(sql), 0o600))
	state := filepath.Join(w.dir, "state")
	exe := exec.Command(wrangler, "d1", "execute", "DB", "--local", "--persist-to", state, "--file", "setup.sql")
	exe.Dir, exe.Env = w.dir, environ
	out, err := exe.CombinedOutput()
	require.NoError(t, err, "wrangler d1 execute: %s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	began := time.Now()
	w.cmd = exec.Command(wrangler, "dev", "--local", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--persist-to", state, "--show-interactive-dev-session=false", "--log-level", "info")
	w.cmd.Dir, w.cmd.Env = w.dir, environ
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // wrangler starts workerd: stop both
	pr, pw := io.Pipe()
	w.cmd.Stdout, w.cmd.Stderr = pw, pw
	require.NoError(t, w.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			w.log.Write([]byte(sc.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		pw.Close()
	})
	w.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(w.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "the Worker did not answer in 90 s:\n%s", w.log.String())
		time.Sleep(100 * time.Millisecond)
	}
	w.ready = time.Since(began)
	t.Logf("the local Worker answered %.1f s after wrangler dev started", w.ready.Seconds())
	return w
}

// env is a test environment over the Worker's API (no server or store in
// this process: everything goes through HTTP).
func (w *localWorker) env(t *testing.T) *env {
	return &env{t: t, c: loadContract(t), base: w.base, tokens: w.toks}
}

// The API tests that hold the Worker edition, against one local Worker
// (wrangler's start-up is paid once): authorization, a scripted run end
// to end with its events, the embedded search index giving the native
// bytes, a Gemini run recorded and replayed with the key in no output,
// cancel of an in-flight request, admission at the cap.
func TestWorker(t *testing.T) {
	w := startWorker(t)
	var outputs [][]byte
	keep := func(r response) response {
		hdr, _ := json.Marshal(r.header)
		outputs = append(outputs, r.body, hdr)
		return r
	}

	t.Run("authorization", func(t *testing.T) {
		e := w.env(t)
		id := e.start(w.toks["bob"], `{`+overwrite+`, "mode": "fixed"}`)
		e.await(w.toks["bob"], id)
		rows := []struct {
			name   string
			r      req
			status int
			code   string
		}{
			{"no token", req{method: "POST", path: "/v1/runs", body: `{` + overwrite + `}`}, 401, "unauthorized"},
			{"forged secret", req{method: "GET", path: "/v1/runs", token: w.toks["bob"][:len(w.toks["bob"])-4] + "0000"}, 401, "unauthorized"},
			{"read cannot run", req{method: "POST", path: "/v1/runs", token: w.toks["reader"], body: `{` + overwrite + `}`}, 403, "missing_scope"},
			{"run cannot go live", req{method: "POST", path: "/v1/runs", token: w.toks["bob"], body: `{` + overwrite + `, "policy": "gemini"}`}, 403, "missing_scope"},
			{"another token's run", req{method: "GET", path: "/v1/runs/" + id, token: w.toks["alice"]}, 404, "not_found"},
			{"another token's cancel", req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: w.toks["alice"]}, 404, "not_found"},
			{"unknown field", req{method: "POST", path: "/v1/runs", token: w.toks["bob"], body: `{` + overwrite + `, "priority": 1}`}, 400, "unknown_field"},
			{"no python pack on the Worker", req{method: "POST", path: "/v1/runs", token: w.toks["bob"], body: `{` + overwrite + `, "corpus": "python-3.11"}`}, 400, "unknown_corpus"},
		}
		for _, row := range rows {
			r := keep(e.do(row.r))
			assert.Equal(t, row.status, r.status, row.name)
			assert.Equal(t, row.code, r.code(t), row.name)
		}
	})

	t.Run("scripted run end to end", func(t *testing.T) {
		e := w.env(t)
		tok := w.toks["bob"]
		r := keep(e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "stream": true}`, valid: true}))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		streamed := parseSSE(t, r.body)
		require.GreaterOrEqual(t, len(streamed), 3)
		id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
		run := e.await(tok, id)
		assert.Equal(t, "answered", run["status"])
		assert.Equal(t, "citation_contract_passed", run["reason"])
		report := run["report"].(map[string]any)
		assert.Equal(t, "pass", report["checks"].(map[string]any)["outcome"])
		evs := e.events(tok, id, nil)
		assert.Equal(t, streamed, evs, "the stream is the stored events")
		want := []string{"started"}
		for range report["result"].(map[string]any)["steps"].([]any) {
			want = append(want, "step")
		}
		assert.Equal(t, append(want, "end"), types(evs))
		for i, ev := range evs {
			assert.Equal(t, fmt.Sprint(i+1), ev.id)
		}
		assert.Equal(t, types(evs[2:]), types(e.events(tok, id, map[string]string{"Last-Event-ID": "2"})), "resumed after 2")

		// The Worker searches with the embedded go-sqlite3 FTS5 index: the
		// same steps, observations and answer as the native engine's.
		native, err := engine.Open(engine.Options{})
		require.NoError(t, err)
		defer native.Close()
		task, err := agent.TaskFromJSON("In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "3.12", "agent", nil)
		require.NoError(t, err)
		tr, err := native.Run(context.Background(), engine.RunRequest{Task: task, Policy: engine.Scripted})
		require.NoError(t, err)
		nativeResult, err := json.Marshal(tr.Result)
		require.NoError(t, err)
		var want2 map[string]any
		require.NoError(t, json.Unmarshal(nativeResult, &want2))
		got := report["result"].(map[string]any)
		for _, k := range []string{"steps", "observations", "answer", "citations", "status", "reason", "usage"} {
			assert.Equal(t, want2[k], got[k], "result.%s is the native engine's", k)
		}
	})

	t.Run("gemini run recorded and replayed", func(t *testing.T) {
		e := w.env(t)
		f := newFake(t, geminitest.Policy())
		w.fake.use(f)
		tok := w.toks["alice"]
		r := keep(e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "policy": "gemini", "stream": true}`, valid: true}))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		id := strings.TrimPrefix(r.header.Get("Content-Location"), "/v1/runs/")
		run := e.await(tok, id)
		assert.Equal(t, "answered", run["status"])
		keep(e.do(req{method: "GET", path: "/v1/runs/" + id, token: tok, valid: true}))
		keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: tok, valid: true}))
		rec := keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/recording", token: tok, valid: true}))
		require.Equal(t, http.StatusOK, rec.status, string(rec.body))
		calls := int(run["report"].(map[string]any)["result"].(map[string]any)["usage"].(map[string]any)["model_calls"].(float64))
		got, _ := f.counts()
		assert.Equal(t, calls, got, "one request per model call, nothing retried")
		for _, gr := range f.Requests() {
			assert.Equal(t, []string{dummyKey}, gr.Header.Values("X-Goog-Api-Key"), "the key travels only in its header")
			assert.NotContains(t, string(gr.Body), dummyKey)
		}
		file, err := recording.Parse(rec.body)
		require.NoError(t, err)
		require.Len(t, file.Trials, 1)
		assert.Len(t, file.Trials[0].Exchanges, calls, "every attempt recorded")
		native, err := engine.Open(engine.Options{})
		require.NoError(t, err)
		defer native.Close()
		replayed, err := native.Lab().ReplayTrial(context.Background(), file.Trials[0])
		require.NoError(t, err, "the Worker's recording replays natively: every request byte for byte")
		require.NotNil(t, replayed.Result)
		assert.Equal(t, run["reason"], string(replayed.Result.Reason))
	})

	t.Run("cancel aborts the request in flight", func(t *testing.T) {
		e := w.env(t)
		f := newFake(t, hanging())
		w.fake.use(f)
		tok := w.toks["alice"]
		id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
		waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")
		r := keep(e.do(req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: tok, valid: true}))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		assert.Equal(t, "incomplete", r.json(t)["status"])
		assert.Equal(t, "cancelled", r.json(t)["reason"])
		waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 1 }, "the in-flight request was aborted")
		evs := e.events(tok, id, nil)
		assert.Equal(t, "end", evs[len(evs)-1].event)
		r = e.do(req{method: "POST", path: "/v1/runs/" + id + "/cancel", token: tok, valid: true})
		assert.Equal(t, http.StatusConflict, r.status)
		assert.Equal(t, "already_finished", r.code(t))
	})

	t.Run("admission at the cap", func(t *testing.T) {
		e := w.env(t)
		f := newFake(t, hanging())
		w.fake.use(f)
		tok := w.toks["alice"]
		running := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
		waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")
		r := keep(e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `}`, valid: true}))
		assert.Equal(t, http.StatusTooManyRequests, r.status, "the token is at its cap of %d", workerCaps.RunningPerToken)
		assert.Equal(t, "at_capacity", r.code(t))
		assert.Equal(t, "1", r.header.Get("Retry-After"))
		queued := e.start(tok, `{`+overwrite+`, "strategy": "enqueue"}`)
		q := e.run(tok, queued)
		assert.Equal(t, "queued", q["status"])
		assert.Equal(t, 0.0, q["queue_position"])
		e.start(tok, `{`+overwrite+`, "strategy": "enqueue"}`)
		r = e.do(req{method: "POST", path: "/v1/runs", token: tok, body: `{` + overwrite + `, "strategy": "enqueue"}`, valid: true})
		assert.Equal(t, http.StatusTooManyRequests, r.status, "the token's queue holds %d", workerCaps.QueuePerToken)
		assert.Equal(t, "queue_full", r.code(t))
		r = e.do(req{method: "POST", path: "/v1/runs/" + queued + "/cancel", token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		assert.Equal(t, "cancelled", r.json(t)["reason"])
		assert.Equal(t, []string{"queued", "end"}, types(e.events(tok, queued, nil)))
		r = e.do(req{method: "POST", path: "/v1/runs/" + running + "/cancel", token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		assert.Equal(t, "cancelled", r.json(t)["reason"])
	})

	t.Run("the key in no output", func(t *testing.T) {
		outputs = append(outputs, []byte(w.log.String()))
		// D1's local state: every database page the Worker wrote.
		require.NoError(t, filepath.WalkDir(filepath.Join(w.dir, "state"), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			outputs = append(outputs, data)
			return err
		}))
		require.Greater(t, len(outputs), 20)
		for i, out := range outputs {
			assert.False(t, bytes.Contains(out, []byte(dummyKey)), "output %d carries the key", i)
		}
	})
}

// The Worker's D1 migration is the store's schema: a change to schema.sql
// needs a new migration (wrangler d1 migrations apply runs each once).
func TestWorkerMigrationIsTheSchema(t *testing.T) {
	migration, err := os.ReadFile("../../worker/migrations/0001_schema.sql")
	require.NoError(t, err)
	schema, err := os.ReadFile("store/schema.sql")
	require.NoError(t, err)
	assert.Equal(t, string(schema), string(migration), "schema.sql changed: add worker/migrations/0002_*.sql with the change")
}
