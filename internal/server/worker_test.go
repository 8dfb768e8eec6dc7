package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
	"github.com/ragagentlab/ragagent/core/secret"
	"github.com/ragagentlab/ragagent/fixtures/packs"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
	"github.com/ragagentlab/ragagent/internal/testlog"
)

// localWorker is the Worker (worker/, built by make worker) under
// wrangler dev --local: offline, a fresh local D1, its Gemini endpoint a
// loopback fake whose behaviour each test sets.
type localWorker struct {
	base  string
	dir   string // config, secrets, state
	log   *testlog.Buffer
	fake  *switchFake
	toks  map[string]string
	cmd   *exec.Cmd
	ready time.Duration // from starting wrangler to the first answered request

	// What launch needs to start (or start again) the same Worker.
	via, root, logLevel string
	port                int
	environ             []string
	stop                func() // stops the running launch's process group
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

// workerToken is a token made before the Worker starts: tokens reach a
// Worker's D1 from outside it, as the SQL `ragagent tokens add --sql`
// writes, run with wrangler d1 execute.
type workerToken struct {
	name   string
	scopes []string
}

// workerTokens are TestWorker's.
var workerTokens = []workerToken{{"alice", []string{"read", "run", "live"}}, {"bob", []string{"read", "run"}}, {"reader", []string{"read"}}}

// startWorker starts the local Worker with these caps and tokens, or skips
// when wrangler (npm ci) or the built Worker (make worker) is missing.
// Wrangler and the workerd it starts are stopped when the test ends, and
// by a watchdog if this process ends first (see supervise).
// logLevel is wrangler's: "log" shows the Worker's own lines (the Go
// program's log, workerd's warnings), which the tests read; the benchmarks
// use "warn", since every line crosses from workerd to wrangler's node
// process (as much CPU as the Worker's own under load, measured).
func startWorker(t testing.TB, caps store.Caps, tokens []workerToken, logLevel string) *localWorker {
	t.Helper()
	return startWorkerVia(t, viaWrangler, caps, tokens, logLevel)
}

// How the local Worker is run: under wrangler dev (the README's way, and
// TestWorker's), or in workerd alone through Miniflare's API
// (scripts/worker-workerd.mjs): the same workerd, Worker and local
// storage without wrangler's proxy worker in front and without the
// debugger session wrangler dev attaches to the Worker (docs/worker.md,
// "Where workerd's CPU goes").
const (
	viaWrangler = "wrangler dev"
	viaWorkerd  = "workerd"
)

// startWorkerVia is startWorker run the way via says; more are more of
// the Worker's variables (NAME="value" lines of .dev.vars).
func startWorkerVia(t testing.TB, via string, caps store.Caps, tokens []workerToken, logLevel string, more ...string) *localWorker {
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
	w := &localWorker{dir: t.TempDir(), log: &testlog.Buffer{}, toks: map[string]string{}}
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
	devVars := fmt.Sprintf("RAGAGENT_TOKEN_PEPPER=%q\nGEMINI_API_KEY=%q\nGEMINI_ENDPOINT=%q\nRAGAGENT_MAX_RUNNING=\"%d\"\nRAGAGENT_MAX_RUNNING_PER_TOKEN=\"%d\"\nRAGAGENT_QUEUE=\"%d\"\nRAGAGENT_QUEUE_PER_TOKEN=\"%d\"\nRAGAGENT_LOG=%q\nRAGAGENT_D1_CALLS=\"1\"\n",
		string(pepper), dummyKey, w.fake.srv.URL, caps.Running, caps.RunningPerToken, caps.Queue, caps.QueuePerToken, map[bool]string{true: "info", false: "warn"}[logLevel == "log"])
	for _, v := range more {
		devVars += v + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, ".dev.vars"), []byte(devVars), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "node_modules", ".mf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "node_modules", ".mf", "cf.json"), []byte("{}"), 0o644))
	environ := wranglerOffline(t, w.dir)

	// The schema and the tokens, in one wrangler d1 execute.
	schema, err := os.ReadFile(filepath.Join(root, "worker", "migrations", "0001_schema.sql"))
	require.NoError(t, err)
	sql := string(schema)
	for _, tk := range tokens {
		plain, tok, err := server.NewToken(pepper, tk.name, tk.scopes, 10000, 1000, time.Now())
		require.NoError(t, err)
		w.toks[tk.name] = plain
		sql += store.TokenSQL(tok)
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "setup.sql"), []byte(sql), 0o600))
	state := filepath.Join(w.dir, "state")
	exe := exec.Command(wrangler, "d1", "execute", "DB", "--local", "--persist-to", state, "--file", "setup.sql")
	exe.Dir, exe.Env = w.dir, environ
	var out bytes.Buffer
	exe.Stdout, exe.Stderr = &out, &out
	stop := supervise(t, exe)
	err = exe.Wait()
	stop()
	require.NoError(t, err, "wrangler d1 execute: %s", out.String())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	w.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	w.via, w.root, w.logLevel, w.environ = via, root, logLevel, environ
	w.base = fmt.Sprintf("http://127.0.0.1:%d", w.port)
	w.launch(t)
	return w
}

// wranglerOffline is the environment wrangler runs in under dir with no
// network: metrics off and its update check's cache fresh (in dir/tmp,
// its TMPDIR), else it would reach out for both.
func wranglerOffline(t testing.TB, dir string) []string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp", "update-check"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp", "update-check", "wrangler-latest.json"),
		[]byte(fmt.Sprintf(`{"latest": "3.114.17", "lastUpdate": %d}`, time.Now().UnixMilli())), 0o644))
	return append(os.Environ(), "WRANGLER_SEND_METRICS=false", "TMPDIR="+filepath.Join(dir, "tmp"), "NO_COLOR=1")
}

// launch starts the Worker's process (wrangler dev, or workerd through
// scripts/worker-workerd.mjs) on the Worker's port and state, and waits
// until it answers.
func (w *localWorker) launch(t testing.TB) {
	t.Helper()
	state := filepath.Join(w.dir, "state")
	began := time.Now()
	via, root, logLevel, port := w.via, w.root, w.logLevel, w.port
	wrangler := filepath.Join(root, "node_modules", ".bin", "wrangler")
	if via == viaWorkerd {
		w.cmd = exec.Command("node", filepath.Join(root, "scripts", "worker-workerd.mjs"), "--config", "wrangler.toml", "--vars", ".dev.vars",
			"--state", state, "--port", fmt.Sprint(port), "--log", logLevel)
		// A DevTools port on the Worker, for profiling a benchmark
		// (docs/worker.md, "Where workerd's CPU goes"); never set by make.
		if ip := os.Getenv("RAGAGENT_INSPECTOR_PORT"); ip != "" {
			w.cmd.Args = append(w.cmd.Args, "--inspector-port", ip)
		}
	} else {
		w.cmd = exec.Command(wrangler, "dev", "--local", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
			"--persist-to", state, "--show-interactive-dev-session=false", "--log-level", logLevel)
	}
	w.cmd.Dir, w.cmd.Env = w.dir, w.environ
	pr, pw := io.Pipe()
	w.cmd.Stdout, w.cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			w.log.Write([]byte(sc.Text() + "\n"))
		}
	}()
	stop := supervise(t, w.cmd)
	cmd := w.cmd
	w.stop = func() {
		stop()
		_ = cmd.Wait()
		pw.Close()
	}
	t.Cleanup(w.stop)
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
	t.Logf("the local Worker answered %.1f s after %s started", w.ready.Seconds(), via)
}

// hangingRun starts a Gemini run whose model never answers and waits
// until its request is in flight: the fake it waits on, and the run.
func (w *localWorker) hangingRun(t *testing.T, e *env, tok string) (*fake, string) {
	t.Helper()
	f := newFake(t, hanging())
	w.fake.use(f)
	id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "the request is in flight")
	return f, id
}

// kill9 kills the Worker's processes (workerd with them) with SIGKILL, as
// a machine's loss would: its run objects' memory is gone, its storage
// (the local D1, the objects' storage and alarms) stays.
func (w *localWorker) kill9(t testing.TB) {
	t.Helper()
	require.NoError(t, syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL))
	w.stop()
	// The connections kept alive to the killed process are dead: a POST
	// sent on one would fail (Go resends only idempotent requests).
	harnessClient.CloseIdleConnections()
}

// supervise starts cmd in a process group of its own (wrangler starts
// workerd, which must stop with it) and returns the function that stops
// the group: SIGTERM to cmd, SIGKILL to the group after 5 s, then it waits until no process
// of the group is alive and fails the test if one still is. A watchdog (a
// shell in a group of its own, reading a pipe from this process) kills
// the group if this process ends without calling stop: a -timeout panic,
// a failed require in another goroutine, a signal. Cleanups run only when
// a test ends normally.
func supervise(t testing.TB, cmd *exec.Cmd) (stop func()) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	dog := exec.Command("/bin/sh", "-c", `read -r said; [ "$said" = stopped ] || kill -KILL "-$1" 2>/dev/null`, "watchdog", fmt.Sprint(pgid))
	dog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	told, err := dog.StdinPipe()
	if err == nil {
		err = dog.Start()
	}
	if err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		require.NoError(t, err, "starting the watchdog")
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// wrangler stops (and reaps) its workerd on SIGTERM.
			_ = syscall.Kill(pgid, syscall.SIGTERM)
			deadline := time.Now().Add(5 * time.Second)
			for len(groupAlive(pgid)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(groupAlive(pgid)) > 0 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				deadline = time.Now().Add(5 * time.Second)
				for len(groupAlive(pgid)) > 0 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			_, _ = io.WriteString(told, "stopped\n")
			told.Close()
			_ = dog.Wait()
			if left := groupAlive(pgid); len(left) > 0 {
				t.Errorf("processes of %s still alive after SIGKILL: %v", filepath.Base(cmd.Path), left)
			}
		})
	}
}

// groupAlive lists the live (not zombie) processes of a process group,
// from /proc.
func groupAlive(pgid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// d1File is the local D1's SQLite file (miniflare keeps one per database
// under the state directory).
func (w *localWorker) d1File(t testing.TB) string {
	files, err := filepath.Glob(filepath.Join(w.dir, "state", "v3", "d1", "miniflare-D1DatabaseObject", "*.sqlite"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one local D1 database")
	return files[0]
}

// env is a test environment over the Worker's API (no server or store in
// this process: everything goes through HTTP).
func (w *localWorker) env(t *testing.T) *env {
	return &env{t: t, c: loadContract(t), base: w.base, tokens: w.toks}
}

// The API tests that hold the Worker edition, against one local Worker
// (wrangler's start-up is paid once): authorization, a scripted run end
// to end with its events, the embedded search index giving the native
// bytes, a Gemini run recorded and replayed, the key in no output (nor
// where the model's replies echo it, in any form),
// cancel of an in-flight request, admission at the cap.
func TestWorker(t *testing.T) {
	t.Parallel() // with TestWorkerRecoversTheRunsOfAKilledProcess, which mostly waits
	w := startWorker(t, workerCaps, workerTokens, "log")
	// The front's start (the harness's first GET) wakes the run object,
	// which starts its program then, before any run is handed to it and
	// before its alarm (15 s on, which would start it too) has fired.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.log.String(), "run object 0: program started in") {
		require.True(t, time.Now().Before(deadline), "the wake started no run object's program:\n%s", w.log.String())
		time.Sleep(50 * time.Millisecond)
	}
	require.NotContains(t, w.log.String(), "runs held", "the program was started by the alarm, not the wake")
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
			{"a pack the Worker does not bundle", req{method: "POST", path: "/v1/runs", token: w.toks["bob"], body: `{` + overwrite + `, "corpus": "sqlite-3.40"}`}, 400, "unknown_corpus"},
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
		res, err := native.Replay(context.Background(), engine.ReplayRequest{File: file})
		require.NoError(t, err, "the Worker's recording replays natively: every request byte for byte")
		replayed := res.Trials[0]
		require.NotNil(t, replayed.Result)
		assert.Equal(t, run["reason"], string(replayed.Result.Reason))
	})

	t.Run("cancel aborts the request in flight", func(t *testing.T) {
		e := w.env(t)
		tok := w.toks["alice"]
		f, id := w.hangingRun(t, e, tok)
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

	t.Run("replies echoing the key", func(t *testing.T) {
		// Gemini can echo the key in any reply: a 200 whose text spells it
		// in JSON escapes, a 500 whose message spells it URL-encoded. The
		// Worker's transport redacts every form, whatever the status,
		// before the run, its events or its recording see the body.
		var escaped, encoded strings.Builder
		for _, c := range []byte(dummyKey) {
			fmt.Fprintf(&escaped, `\u%04x`, c)
			fmt.Fprintf(&encoded, "%%%02X", c)
		}
		escapedEcho := geminitest.Raw(200, `{"candidates": [{"content": {"parts": [{"text": "my key is `+escaped.String()+`"}], "role": "model"}, "finishReason": "STOP"}]}`)
		encodedEcho := geminitest.Raw(500, `{"error": {"code": 500, "message": "bad request from key=`+encoded.String()+`"}}`)
		e := w.env(t)
		f := newFake(t, geminitest.Sequence(geminitest.Sequence(nil, encodedEcho), escapedEcho))
		w.fake.use(f)
		tok := w.toks["alice"]
		for i := range 2 {
			id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
			e.await(tok, id)
			keep(e.do(req{method: "GET", path: "/v1/runs/" + id, token: tok, valid: true}))
			keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: tok, valid: true}))
			rec := keep(e.do(req{method: "GET", path: "/v1/runs/" + id + "/recording", token: tok, valid: true}))
			require.Equal(t, http.StatusOK, rec.status, string(rec.body))
			if i == 0 {
				assert.True(t, strings.Contains(string(rec.body), secret.Mark), "the 200's echo is recorded, redacted")
			}
		}
		got, _ := f.counts()
		require.GreaterOrEqual(t, got, 2, "both echoes were served")
	})

	t.Run("the bundled pack", func(t *testing.T) {
		e := w.env(t)
		tok := w.toks["bob"]
		r := keep(e.do(req{method: "GET", path: "/v1/corpora", token: tok, valid: true}))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var got struct {
			Corpora []struct {
				ID             string   `json:"id"`
				Versions       []string `json:"versions"`
				DefaultVersion string   `json:"default_version"`
			} `json:"corpora"`
		}
		require.NoError(t, json.Unmarshal(r.body, &got))
		require.Len(t, got.Corpora, 2)
		assert.Equal(t, "seed", got.Corpora[0].ID)
		assert.Equal(t, "python-3.11", got.Corpora[1].ID)
		assert.Equal(t, []string{"3.11"}, got.Corpora[1].Versions)
		assert.Equal(t, "3.11", got.Corpora[1].DefaultVersion)

		// No version: the pack's default; the same steps and answer as the
		// native engine's over the same pack.
		question := "How do I read a file line by line?"
		id := e.start(tok, `{"question": "`+question+`", "mode": "fixed", "corpus": "python-3.11"}`)
		run := e.await(tok, id)
		assert.Equal(t, "3.11", run["request"].(map[string]any)["version"])
		got2 := run["report"].(map[string]any)["result"].(map[string]any)
		sources, err := packs.Sources()
		require.NoError(t, err)
		native, err := engine.Open(engine.Options{Packs: sources})
		require.NoError(t, err)
		defer native.Close()
		task, err := agent.TaskFromJSON(question, "3.11", "fixed", nil)
		require.NoError(t, err)
		tr, err := native.Run(context.Background(), engine.RunRequest{Task: task, Policy: engine.Scripted, Corpus: "python-3.11"})
		require.NoError(t, err)
		data, err := json.Marshal(tr.Result)
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(data, &want))
		for _, k := range []string{"steps", "observations", "answer", "citations", "status", "reason"} {
			assert.Equal(t, want[k], got2[k], "result.%s is the native engine's", k)
		}
		// One run more, for the memory the object reports once the pack is
		// open (the README's figure), and how long its program took to
		// start (at the front's wake, before its first run).
		e.await(tok, e.start(tok, `{`+overwrite+`, "mode": "fixed"}`))
		for _, line := range strings.Split(w.log.String(), "\n") {
			if strings.Contains(line, "run object memory") || strings.Contains(line, "program started in") {
				t.Log(strings.TrimSpace(line))
			}
		}
	})

	t.Run("a run outlives its request's 30 s", func(t *testing.T) {
		// The model's first answer takes 35 s: longer than waitUntil keeps
		// a Worker's request after its response. The run was posted
		// without a stream (its request ended with the 202) and nobody is
		// connected while it waits; its object carries it to its end.
		e := w.env(t)
		slow := geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
			return geminitest.Slow(35*time.Second, geminitest.Policy().Reply(r))
		})
		f := newFake(t, geminitest.Steps(geminitest.Policy(), slow))
		w.fake.use(f)
		tok := w.toks["alice"]
		began := time.Now()
		id := e.start(tok, `{`+overwrite+`, "policy": "gemini"}`)
		deadline := time.Now().Add(90 * time.Second)
		var run map[string]any
		for {
			run = e.run(tok, id)
			if run["status"] != "running" || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		assert.Equal(t, "answered", run["status"], "%v", run["reason"])
		assert.Greater(t, time.Since(began), 35*time.Second)
		evs := e.events(tok, id, nil)
		require.NotEmpty(t, evs)
		assert.Equal(t, "end", evs[len(evs)-1].event)
	})

	t.Run("a client gone cancels the run that asked", func(t *testing.T) { workerClientGone(t, w) })

	t.Run("no request's I/O lost to another", func(t *testing.T) {
		// One program serves every request of the isolate: workerd says so
		// when a request's promise, timer or fetch outlives it or is used
		// from another request's turn.
		log := w.log.String()
		for _, bad := range []string{"Cannot perform I/O on behalf of a different request", "hanging Promise", "will never complete",
			"different request context", "never generate a response", "Uncaught", "server fault", "panic:", "exit code"} {
			assert.NotContains(t, log, bad)
		}
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
			assert.False(t, secret.Contains(out, dummyKey), "output %d carries the key (in some form)", i)
		}
	})
}

// updateMigration rewrites the Worker's D1 migrations from the store's
// schema (make migrations).
var updateMigration = flag.Bool("update", false, "rewrite worker/migrations/0001_schema.sql and 0002_experiments.sql from store/schema.sql")

// migrationHeader opens the generated migrations: schema.sql is the one
// source, the migrations its copies for wrangler.
const migrationHeader = "-- Generated by make migrations from internal/server/store/schema.sql:\n-- edit that file and run make migrations, never this one.\n"

// schemaChunks are schema.sql's statements, each with the comment lines
// before it, and whether it makes an experiment's table or an index on
// one (what 0002_experiments.sql holds).
func schemaChunks(t testing.TB) (chunks []string, experiments []bool) {
	t.Helper()
	schema, err := os.ReadFile("store/schema.sql")
	require.NoError(t, err)
	target := regexp.MustCompile(`(?m)^CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)(?: ON (\w+))?`)
	for _, c := range strings.SplitAfter(string(schema), ";\n") {
		if strings.TrimSpace(c) == "" {
			continue
		}
		m := target.FindStringSubmatch(c)
		require.NotNil(t, m, "a schema statement that creates no table or index: %s", c)
		chunks = append(chunks, c)
		experiments = append(experiments, strings.HasPrefix(m[1], "experiment") || strings.HasPrefix(m[2], "experiment"))
	}
	return chunks, experiments
}

// The Worker's D1 migrations are the store's schema, generated from it by
// make migrations (go test -run TestWorkerMigrationIsTheSchema -update):
// 0001 the whole schema, which makes a new D1 database (wrangler d1
// migrations apply, or d1 execute as TestWorker and the README do), and
// 0002 the experiments' tables and indexes, which wrangler d1 migrations
// apply brings to a database that applied 0001 before the schema had
// them (wrangler applies a migration once, by its name). The Worker also
// runs the schema's CREATE ... IF NOT EXISTS on each isolate's first
// request (store.NewD1), so a new table or index reaches a database made
// before; a change to an existing table needs a migration of its own,
// written by hand.
func TestWorkerMigrationIsTheSchema(t *testing.T) {
	const first, second = "../../worker/migrations/0001_schema.sql", "../../worker/migrations/0002_experiments.sql"
	schema, err := os.ReadFile("store/schema.sql")
	require.NoError(t, err)
	chunks, isExperiment := schemaChunks(t)
	var older, added strings.Builder
	for i, c := range chunks {
		if isExperiment[i] {
			added.WriteString(c)
		} else {
			older.WriteString(c)
		}
	}
	want := migrationHeader + string(schema)
	want2 := migrationHeader + "-- The experiments' tables, for a database whose 0001 came before them.\n" + added.String()
	if *updateMigration {
		require.NoError(t, os.WriteFile(first, []byte(want), 0o644))
		require.NoError(t, os.WriteFile(second, []byte(want2), 0o644))
	}
	migration, err := os.ReadFile(first)
	require.NoError(t, err)
	assert.Equal(t, want, string(migration), "worker/migrations/0001_schema.sql is not store/schema.sql: run make migrations")
	migration2, err := os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, want2, string(migration2), "worker/migrations/0002_experiments.sql is not store/schema.sql's experiments: run make migrations")

	// A database made by a 0001 without the experiments (the schema's
	// other statements), then 0002 applied as wrangler applies it: the
	// D1 store keeps an experiment there, without its own schema batch.
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "d1.sqlite"))
	require.NoError(t, err)
	defer b.Close()
	apply := func(sql string) {
		var stmts []store.Statement
		for _, q := range strings.SplitAfter(sql, ";\n") {
			if strings.TrimSpace(stripSQLComments(q)) != "" {
				stmts = append(stmts, store.Statement{SQL: q})
			}
		}
		_, err := b.Batch(ctx, stmts)
		require.NoError(t, err)
	}
	apply(older.String())
	d := store.OpenD1(b, 0)
	add := func() error {
		_, err := d.AddExperiment(ctx, store.NewExperiment{ID: "exp_1", TokenID: "tok_1", Kind: "retrieval", Spec: `{}`, Total: 1, At: time.Now()}, 1,
			func(store.Experiment) store.NewEvent {
				return store.NewEvent{Type: "queued", Data: `{}`, At: time.Now()}
			})
		return err
	}
	require.Error(t, add(), "the older database has no experiments table")
	apply(string(migration2))
	require.NoError(t, add(), "0002 made the experiments' tables")
}

// stripSQLComments drops a statement's comment lines.
func stripSQLComments(q string) string {
	var b strings.Builder
	for _, line := range strings.Split(q, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// supervise leaves nothing behind: stop ends the whole group (a child's
// own child included), and so does the watchdog when the test process is
// killed before it can stop anything (here a copy of this test binary,
// killed with SIGKILL, which runs no cleanup).
func TestSuperviseLeavesNoProcess(t *testing.T) {
	// A stand-in for wrangler: a shell that stops its child on SIGTERM.
	group := func() *exec.Cmd {
		return exec.Command("/bin/sh", "-c", `sleep 300 & trap 'kill $!; exit' TERM; wait`)
	}
	if os.Getenv("RAGAGENT_SUPERVISE_CHILD") != "" {
		cmd := group()
		supervise(t, cmd)
		fmt.Println(cmd.Process.Pid)
		for len(groupAlive(cmd.Process.Pid)) < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("both running")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	waitGone := func(pgid int) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if len(groupAlive(pgid)) == 0 {
				return true
			}
		}
		return false
	}

	t.Run("stop", func(t *testing.T) {
		cmd := group()
		stop := supervise(t, cmd)
		waitFor(t, func() bool { return len(groupAlive(cmd.Process.Pid)) == 2 }, "sh and its sleep")
		stop()
		_ = cmd.Wait()
		assert.Empty(t, groupAlive(cmd.Process.Pid))
	})

	t.Run("the test process killed", func(t *testing.T) {
		child := exec.Command(os.Args[0], "-test.run", "^TestSuperviseLeavesNoProcess$")
		child.Env = append(os.Environ(), "RAGAGENT_SUPERVISE_CHILD=1")
		out, err := child.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, child.Start())
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan())
		pgid, err := strconv.Atoi(sc.Text())
		require.NoError(t, err, sc.Text())
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		require.True(t, sc.Scan())
		require.Equal(t, "both running", sc.Text())
		_ = child.Wait()
		assert.True(t, waitGone(pgid), "the group outlived the test process: %v", groupAlive(pgid))
	})
}

// workerClientGone is TestDisconnectCancelsOnlyWhenAsked on the Worker: a
// streamed Gemini run (its model never answers) whose client closes the
// connection after the first event ends incomplete, cancelled, its model
// request aborted, when it asked for on_disconnect "cancel", and goes on
// when it asked for "continue" (the default). The caps allow the token one
// running run, so the two go one after the other. The run object's
// program must live through it: TestWorker's "no request's I/O lost to
// another" fails on a panic in the log.
func workerClientGone(t *testing.T, w *localWorker) {
	e := w.env(t)
	f := newFake(t, hanging())
	w.fake.use(f)
	tok := w.toks["alice"]
	open := func(onDisconnect string) (string, time.Time) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body := `{` + overwrite + `, "policy": "gemini", "stream": true, "on_disconnect": "` + onDisconnect + `"}`
		hr, err := http.NewRequestWithContext(ctx, "POST", w.base+"/v1/runs", strings.NewReader(body))
		require.NoError(t, err)
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Authorization", "Bearer "+tok)
		// A connection of its own, closed with the response.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Do(hr)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		buf := make([]byte, 1)
		_, err = resp.Body.Read(buf) // the first event has begun
		require.NoError(t, err)
		id := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
		cancel()
		resp.Body.Close()
		return id, time.Now()
	}
	cancelled, closed := open("cancel")
	waitFor(t, func() bool { got, _ := f.counts(); return got == 1 }, "its model request is in flight")
	run := e.await(tok, cancelled)
	assert.Equal(t, "incomplete", run["status"])
	assert.Equal(t, "cancelled", run["reason"])
	t.Logf("the run ended %s, %s %.1f s after its client closed", run["status"], run["reason"], time.Since(closed).Seconds())
	waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 1 }, "its in-flight model request was aborted")

	kept, _ := open("continue")
	time.Sleep(5 * time.Second) // longer than the cancelled run took to end
	assert.Equal(t, "running", e.run(tok, kept)["status"], "a run that asked to continue goes on")
	r := e.do(req{method: "POST", path: "/v1/runs/" + kept + "/cancel", token: tok, valid: true})
	assert.Equal(t, http.StatusOK, r.status)
}

// The Worker's process killed (kill -9: its run objects' memory gone,
// their storage and alarms kept, as when a machine is lost) and started
// again on the same state: the run that was waiting on the model ends
// incomplete, interrupted, with its end event, once the alarm of its
// object's fresh instance finds it lost past its grace (RecoverGrace):
// what TestRecoverEndsTheRunsItsOwnerLost holds natively, staged here
// in workerd.
func TestWorkerRecoversTheRunsOfAKilledProcess(t *testing.T) {
	t.Parallel()
	w := startWorkerVia(t, viaWorkerd, workerCaps, workerTokens[:1], "log")
	e := w.env(t)
	tok := w.toks["alice"]
	_, id := w.hangingRun(t, e, tok)
	w.kill9(t)
	killed := time.Now()
	w.launch(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		run := e.run(tok, id)
		if run["status"] != "running" {
			assert.Equal(t, "incomplete", run["status"])
			assert.Equal(t, "interrupted", run["reason"])
			t.Logf("ended %s %.1f s after the kill", run["reason"], time.Since(killed).Seconds())
			break
		}
		require.True(t, time.Now().Before(deadline), "the run still shows running 60 s after its process was killed:\n%s", w.log.String())
		time.Sleep(250 * time.Millisecond)
	}
	evs := e.events(tok, id, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, "end", evs[len(evs)-1].event)
}

// workerPiece is the size of an experiment's pieces on the Worker in
// TestWorkerRunsExperiments (rankings or trials kept per round of its run
// object), small so that each experiment spans rounds.
const workerPiece = 8

// Experiments on the Worker: admitted by the front, run by their run
// object in pieces (workerPiece units a round, each round an alarm,
// 250 ms apart), each from what D1 kept. A retrieval experiment returns
// the bytes `ragagent retrieval --json` prints for the same inputs, its
// events streamed live from the admission to the end with progress
// 1..total; an agent experiment (scripted) ends with the command's object
// (its measured seconds aside); a cancelled one keeps nothing after the
// cancel; and one whose Worker is killed (SIGKILL) mid-experiment and
// started again on the same state resumes, when the fresh front wakes
// its object, from the rankings D1 kept: the same bytes, progress
// 1..total once each, nothing lost or ranked twice.
func TestWorkerRunsExperiments(t *testing.T) {
	t.Parallel()
	w := startWorkerVia(t, viaWorkerd, workerCaps, workerTokens[:1], "log",
		fmt.Sprintf(`RAGAGENT_EXPERIMENT_PIECE="%d"`, workerPiece), `RAGAGENT_EXPERIMENT_PAUSE_MS="250"`)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Worker's log:\n%s", w.log.String())
		}
	})
	tok := w.toks["alice"]
	top := t
	wantBytes := wantRetrieval(t, "seed", "general")
	const rankings = 68
	body := experimentBody(t, `["seed", "general"]`)
	cancelledAt := 0 // what the cancelled experiment kept
	result := func(e *env, id string) []byte {
		r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.body
	}

	t.Run("retrieval: the command's bytes", func(t *testing.T) {
		e := w.env(t)
		began := time.Now()
		posted := e.postExperiment(tok, body)
		id := idOf(t, posted)
		assert.Equal(t, "running", posted.json(t)["state"], "the front started it")
		evs := e.experimentEvents(tok, id, nil) // from the admission, live, to the end
		t.Logf("%d rankings in pieces of %d: %s from the post to the end event", rankings, workerPiece, time.Since(began).Round(time.Millisecond))
		checkProgress(t, evs, rankings)
		x := e.experiment(tok, id)
		require.Equal(t, "succeeded", x["state"], x["error"])
		assert.Equal(t, map[string]any{"done": float64(rankings), "total": float64(rankings)}, x["progress"])
		assert.Equal(t, string(wantBytes), string(result(e, id)), "the command's bytes")
		assert.Equal(t, evs[10:], e.experimentEvents(tok, id, map[string]string{"Last-Event-ID": "10"}), "resumed after event 10")
		list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
		assert.Equal(t, id, list["experiments"].([]any)[0].(map[string]any)["id"])
	})

	t.Run("agent: the command's object", func(t *testing.T) {
		e := w.env(t)
		want := wantEval(t, "")
		began := time.Now()
		id := idOf(t, e.postExperiment(tok, agentBody(t, "")))
		evs := e.experimentEvents(tok, id, nil)
		t.Logf("%d trials in pieces of %d: %s from the post to the end event", pythonTrials, workerPiece, time.Since(began).Round(time.Millisecond))
		checkProgress(t, evs, pythonTrials)
		x := e.experiment(tok, id)
		require.Equal(t, "succeeded", x["state"], x["error"])
		assert.Equal(t, want, unmeasured(t, result(e, id)), "the command's object, measured seconds aside")
	})

	t.Run("cancel", func(t *testing.T) {
		e := w.env(t)
		id := idOf(t, e.postExperiment(tok, body))
		waitFor(t, func() bool { return e.experiment(tok, id)["progress"].(map[string]any)["done"].(float64) > 0 }, "a ranking is kept")
		r := e.do(req{method: "POST", path: "/v1/experiments/" + id + "/cancel", token: tok, valid: true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		x := r.json(t)
		assert.Equal(t, "cancelled", x["state"])
		done := x["progress"].(map[string]any)["done"].(float64)
		cancelledAt = int(done)
		time.Sleep(time.Second) // rounds 250 ms apart: any after the cancel has come
		assert.Equal(t, done, e.experiment(tok, id)["progress"].(map[string]any)["done"], "nothing kept after the cancel")
		evs := e.experimentEvents(tok, id, nil)
		state, _, _ := progressOf(t, evs[len(evs)-1])
		assert.Equal(t, "end", evs[len(evs)-1].event)
		assert.Equal(t, "cancelled", state)
		assert.Equal(t, http.StatusConflict, e.do(req{method: "POST", path: "/v1/experiments/" + id + "/cancel", token: tok, valid: true}).status)
		assert.Equal(t, http.StatusConflict, e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true}).status)
	})

	t.Run("the front holds no pack", func(t *testing.T) {
		// A run's start logs the run object's memory and the front's
		// (each program's memory only grows): after three experiments on
		// python-3.11 the front has not opened it, as each experiment's
		// plan ran at its object (Dispatch.Plan).
		e := w.env(t)
		e.await(tok, e.start(tok, `{`+overwrite+`, "mode": "fixed"}`))
		var line string
		waitFor(t, func() bool {
			lines := regexp.MustCompile(`run object memory: (\d+) bytes; front program (\d+) bytes`).FindAllString(w.log.String(), -1)
			if len(lines) > 0 {
				line = lines[len(lines)-1]
			}
			return line != ""
		}, "the run's start logged the memory")
		t.Log(line)
		m := regexp.MustCompile(`front program (\d+) bytes`).FindStringSubmatch(line)
		front, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		assert.Less(t, front, 32<<20, "the front opened no pack (python-3.11's index is some 45 MB)")
	})

	t.Run("a restart mid-experiment", func(t *testing.T) {
		e := w.env(t)
		id := idOf(t, e.postExperiment(tok, body))
		var done float64
		waitFor(t, func() bool {
			done = e.experiment(tok, id)["progress"].(map[string]any)["done"].(float64)
			return done >= 2*workerPiece
		}, "two rounds kept")
		require.Less(t, done, float64(rankings), "the experiment is not over before the kill")
		// The Worker's whole test's: launch stops the process it starts
		// when the test it is given ends.
		w.kill9(top)
		killed := time.Now()
		w.launch(top)
		x := e.awaitExperiment(tok, id)
		t.Logf("killed at %v of %d kept; ended %s %.1f s after the kill", done, rankings, x["state"], time.Since(killed).Seconds())
		require.Equal(t, "succeeded", x["state"], x["error"])
		assert.Equal(t, string(wantBytes), string(result(e, id)), "the command's bytes")
		checkProgress(t, e.experimentEvents(tok, id, nil), rankings)
	})

	t.Run("in pieces, without a fault", func(t *testing.T) {
		// The run object logs each round of its alarm: what it kept.
		log := w.log.String()
		rounds := regexp.MustCompile(`experiments running \((\d+) kept this round\)`).FindAllStringSubmatch(log, -1)
		most, kept := 0, 0
		for _, m := range rounds {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			most, kept = max(most, n), kept+n
		}
		assert.Equal(t, workerPiece, most, "no round kept more than a piece")
		// Each unit is kept once: the rounds logged kept at most every
		// experiment's units (the cancelled one's up to its cancel), and
		// at least those less what the kill cut short (the round it
		// stopped, and a line it may have caught on its way to the log).
		all := rankings + pythonTrials + cancelledAt + rankings
		assert.LessOrEqual(t, kept, all, "nothing kept twice")
		assert.GreaterOrEqual(t, kept, all-2*workerPiece, "every round logged but those the kill cut short")
		last := ""
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "kept this round") {
				last = strings.TrimSpace(line)
			}
		}
		t.Logf("%d rounds; the last: %s", len(rounds), last)
		for _, bad := range []string{"Uncaught", "server fault", "panic:", "exit code", "hanging Promise", "will never complete"} {
			assert.NotContains(t, log, bad)
		}
	})
}
