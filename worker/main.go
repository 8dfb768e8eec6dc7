//go:build js && wasm

// Command worker is the server edition on Cloudflare Workers: the same
// handler as ragagent serve-api (internal/server), built for js/wasm with
// github.com/syumai/workers, its state in D1 (store.D1, the same schema),
// Gemini requests over the Workers fetch, the key and the token pepper
// Worker secrets. Each request has its own Go program (see worker.mjs),
// which opens the engine only if a run starts in it, and ends once the
// response is sent and its runs have ended; runs, streams and cancels in
// other programs meet in D1 (the store is read every Poll).
//
// Bindings and variables (wrangler.toml): DB (D1); secrets
// RAGAGENT_TOKEN_PEPPER and GEMINI_API_KEY (or GOOGLE_API_KEY); caps
// RAGAGENT_MAX_RUNNING, RAGAGENT_MAX_RUNNING_PER_TOKEN, RAGAGENT_QUEUE,
// RAGAGENT_QUEUE_PER_TOKEN; GEMINI_ENDPOINT only in tests (a loopback fake:
// the server refuses any other override).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall/js"
	"time"

	"github.com/syumai/workers"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// jsContext is the object worker.mjs passes to go.run, which this
// program sees as its global context (syumai/workers' wasm_exec.js gives
// each program its own): env (the bindings and secrets), binding (where
// syumai/workers sets handleRequest and this program sets settled), d1
// and gemini (the helpers the store and the transport await through
// internal/jsbridge), and isolate (state the isolate's programs share:
// schemaReady).
var jsContext = js.Global().Get("context")

func getenv(name string) string {
	v := jsContext.Get("env").Get(name)
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

func main() {
	a := &app{}
	workers.ServeNonBlock(a)
	jsContext.Get("binding").Set("settled", js.FuncOf(func(js.Value, []js.Value) any { return a.settled() }))
	workers.Ready()
	<-workers.Done()
	// The response is sent; the runs this program started end first.
	for a.busy() {
		time.Sleep(50 * time.Millisecond)
	}
}

func (a *app) busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running > 0
}

// app builds the server on its first request (the env is the isolate's)
// and counts the runs under way, for settled.
type app struct {
	once    sync.Once
	handler http.Handler
	err     error

	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to 0
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.once.Do(func() { a.handler, a.err = a.build() })
	if a.err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "unavailable", "message": "the Worker is misconfigured: " + a.err.Error()}})
		w.Write(body)
		return
	}
	a.handler.ServeHTTP(w, r)
}

// goRun runs a run, counted until it ends.
func (a *app) goRun(run func()) {
	a.mu.Lock()
	if a.running == 0 {
		a.idle = make(chan struct{})
	}
	a.running++
	a.mu.Unlock()
	go func() {
		defer a.done()
		run()
	}()
}

func (a *app) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running--; a.running == 0 {
		close(a.idle)
	}
}

// settled is a promise that resolves when no run is under way.
func (a *app) settled() js.Value {
	a.mu.Lock()
	idle := a.idle
	if a.running == 0 {
		idle = nil
	}
	a.mu.Unlock()
	return jsbridge.Promise(func() (any, error) {
		if idle != nil {
			<-idle
		}
		return nil, nil
	})
}

// stale is how long a run may be running before a Worker takes the
// isolate running it for gone: the longest run (the seconds limit's cap)
// and a minute.
func stale() time.Duration {
	most := 0
	for _, f := range agent.LimitFields() {
		if f.Name == "seconds" {
			most = f.Max
		}
	}
	return time.Duration(most)*time.Second + time.Minute
}

func capVar(name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s is not a whole number", name)
	}
	return n, nil
}

func (a *app) build() (http.Handler, error) {
	ctx := context.Background()
	db := jsContext.Get("env").Get("DB")
	if db.IsUndefined() {
		return nil, errors.New("no D1 binding DB")
	}
	// The isolate's first program sees to the schema; the others (one per
	// request) find it made.
	isolate := jsContext.Get("isolate")
	var st *store.D1
	var err error
	if isolate.Get("schemaReady").Truthy() {
		st = store.OpenD1(d1{db: db}, stale())
	} else {
		if st, err = store.NewD1(ctx, d1{db: db}, stale()); err != nil {
			return nil, err
		}
		isolate.Set("schemaReady", true)
	}
	pepper := getenv("RAGAGENT_TOKEN_PEPPER")
	if err := server.CheckPepper([]byte(pepper)); err != nil {
		return nil, fmt.Errorf("the secret RAGAGENT_TOKEN_PEPPER: %w", err)
	}
	caps := server.DefaultCaps()
	for _, c := range []struct {
		name string
		to   *int
	}{{"RAGAGENT_MAX_RUNNING", &caps.Running}, {"RAGAGENT_MAX_RUNNING_PER_TOKEN", &caps.RunningPerToken},
		{"RAGAGENT_QUEUE", &caps.Queue}, {"RAGAGENT_QUEUE_PER_TOKEN", &caps.QueuePerToken}} {
		if *c.to, err = capVar(c.name, *c.to); err != nil {
			return nil, err
		}
	}
	if err := httptransport.CheckKeyFromEnv(getenv); err != nil {
		return nil, err
	}
	key, _ := httptransport.KeyFromEnv(getenv)
	srv, err := server.New(server.Config{
		OpenEngine: func() (*engine.Engine, error) { return engine.Open(engine.Options{}) },
		Store:      st, Transport: newTransport(key), Endpoint: getenv("GEMINI_ENDPOINT"),
		Pepper: []byte(pepper), Caps: caps, Go: a.goRun,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		// Other isolates write events and cancel requests: read the store
		// often.
		Poll: 100 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	// Runs left running by an isolate that is gone end interrupted; queued
	// runs start as the caps allow.
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return srv.Handler(), nil
}
