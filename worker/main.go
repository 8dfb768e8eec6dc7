//go:build js && wasm

// Command worker is the server edition on Cloudflare Workers: the same
// handler as ragagent serve-api (internal/server), built for js/wasm with
// github.com/syumai/workers, its state in D1 (store.D1, the same schema),
// Gemini requests over the Workers fetch, the key and the token pepper
// Worker secrets. worker.mjs starts this program in one of two roles:
//
//   - front: one program per isolate, shared by the isolate's requests
//     (its start-up paid once): authentication, admission, reads; each
//     request's I/O is kept in that request (see worker.mjs). It hands
//     every run to the Durable Object that owns it (server.Dispatch).
//   - runner: one program per run object (a Durable Object, class Runner):
//     it executes the runs it owns past any request's end, serves their
//     event streams, takes their cancels as calls and, on its alarm, ends
//     the runs an evicted object lost (server.Server.Recover) and runs a
//     round of its experiments' pieces (server.ExperimentPiece), each from
//     what D1 kept.
//
// Bindings and variables (wrangler.toml): DB (D1); RUNNER (the Runner
// class); CORPORA (R2: the tokens' uploaded packs, r2Packs; without it
// uploads answer 503), capped by RAGAGENT_MAX_UPLOAD and
// RAGAGENT_MAX_PACK_BYTES (bytes; defaults workerMaxUpload and
// workerMaxPackBytes) and each token's RAGAGENT_CORPUS_PACKS and
// RAGAGENT_CORPUS_BYTES (server.DefaultQuota); the same bucket keeps the
// experiments' results longer than RAGAGENT_EXPERIMENT_INLINE_BYTES
// (r2Results; default server.DefaultInlineResult), which D1's
// 2,000,000-byte row would not; secrets RAGAGENT_TOKEN_PEPPER and GEMINI_API_KEY (or
// GOOGLE_API_KEY); caps RAGAGENT_MAX_RUNNING,
// RAGAGENT_MAX_RUNNING_PER_TOKEN, RAGAGENT_QUEUE, RAGAGENT_QUEUE_PER_TOKEN;
// RAGAGENT_RUNNERS (how many run objects share the runs, default 1);
// RAGAGENT_EXPERIMENT_PIECE (rankings or trials a piece of an experiment
// keeps at most, default server.DefaultPieceUnits) and
// RAGAGENT_EXPERIMENT_PAUSE_MS (worker.mjs: the wait between two rounds,
// default 0);
// RAGAGENT_LOG (warn, the default: faults only; info: a line per request);
// GEMINI_ENDPOINT only in tests (a loopback fake: the server refuses any
// other override).
package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strconv"
	"syscall/js"
	"time"

	"github.com/syumai/workers"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// The caps on an upload to a Worker when none are configured: lower than
// the native server's, since the program that runs on a pack holds it in
// its isolate's 128 MB (docs/worker.md, "Packs": a pack takes about 2.7
// times its passages_bytes once open).
const (
	workerMaxUpload    = 16 << 20
	workerMaxPackBytes = 20 << 20
)

// jsContext is the object worker.mjs passes to go.run, which this
// program sees as its global context (syumai/workers' wasm_exec.js gives
// each program its own): role ("front" or "runner"), shard (a runner's
// index), env (the bindings and secrets), binding (where this program
// sets its entry points), packs (the bundled packs' manifests and gzip
// passages), d1, r2, gemini and runner (the helpers the store, the transport
// and the dispatch await), and isolate (state the isolate's programs
// share: schemaReady).
var jsContext = js.Global().Get("context")

func getenv(name string) string {
	v := jsContext.Get("env").Get(name)
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

func main() {
	var err error
	switch role := jsContext.Get("role").String(); role {
	case "front":
		err = serveFront()
	case "runner":
		err = serveRunner()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		// The misconfiguration is every request's answer (worker.mjs).
		jsContext.Get("binding").Set("error", err.Error())
	}
	workers.Ready()
	select {} // the program lives as long as its isolate (or object)
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

// runners is how many run objects share the runs (RAGAGENT_RUNNERS).
func runners() (int, error) {
	n, err := capVar("RAGAGENT_RUNNERS", 1)
	if err == nil && n < 1 {
		err = errors.New("RAGAGENT_RUNNERS must be at least 1")
	}
	return n, err
}

// shardOf is the run object that owns a run: its id's FNV-1a hash modulo
// the number of objects (the front and every runner agree on it).
func shardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// config is what both roles build from the env: the store, the engine's
// packs, the caps, the key and the pepper.
func config(ctx context.Context) (server.Config, error) {
	db := jsContext.Get("env").Get("DB")
	if db.IsUndefined() {
		return server.Config{}, errors.New("no D1 binding DB")
	}
	// The isolate's first program sees to the schema; the others find it
	// made.
	isolate := jsContext.Get("isolate")
	var st *store.D1
	var err error
	if isolate.Get("schemaReady").Truthy() {
		st = store.OpenD1(d1{db: db}, stale())
	} else {
		if st, err = store.NewD1(ctx, d1{db: db}, stale()); err != nil {
			return server.Config{}, err
		}
		isolate.Set("schemaReady", true)
	}
	pepper := getenv("RAGAGENT_TOKEN_PEPPER")
	if err := server.CheckPepper([]byte(pepper)); err != nil {
		return server.Config{}, fmt.Errorf("the secret RAGAGENT_TOKEN_PEPPER: %w", err)
	}
	caps := server.DefaultCaps()
	for _, c := range []struct {
		name string
		to   *int
	}{{"RAGAGENT_MAX_RUNNING", &caps.Running}, {"RAGAGENT_MAX_RUNNING_PER_TOKEN", &caps.RunningPerToken},
		{"RAGAGENT_QUEUE", &caps.Queue}, {"RAGAGENT_QUEUE_PER_TOKEN", &caps.QueuePerToken}} {
		if *c.to, err = capVar(c.name, *c.to); err != nil {
			return server.Config{}, err
		}
	}
	if err := httptransport.CheckKeyFromEnv(getenv); err != nil {
		return server.Config{}, err
	}
	key, _ := httptransport.KeyFromEnv(getenv)
	// Every line the program writes is a console message workerd hands to
	// its log (under wrangler dev, over the inspector to node, measured at
	// as much CPU as the Worker's own under load): faults only, unless
	// RAGAGENT_LOG is "info" (a line per request and per run ending).
	level := slog.LevelWarn
	switch v := getenv("RAGAGENT_LOG"); v {
	case "", "warn":
	case "info":
		level = slog.LevelInfo
	default:
		return server.Config{}, fmt.Errorf("RAGAGENT_LOG is %q: use warn or info", v)
	}
	sources, err := packSources()
	if err != nil {
		return server.Config{}, err
	}
	eng, err := engine.Open(engine.Options{Packs: sources})
	if err != nil {
		return server.Config{}, err
	}
	units, err := capVar("RAGAGENT_EXPERIMENT_PIECE", server.DefaultPieceUnits)
	if err != nil {
		return server.Config{}, err
	}
	if units < 1 {
		return server.Config{}, errors.New("RAGAGENT_EXPERIMENT_PIECE must be at least 1")
	}
	cfg := server.Config{
		Engine: eng, Store: st, Transport: newTransport(key), Endpoint: getenv("GEMINI_ENDPOINT"),
		Pepper: []byte(pepper), Caps: caps, ExperimentPiece: server.ExperimentPiece{Units: units},
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if bucket := jsContext.Get("env").Get("CORPORA"); !bucket.IsUndefined() {
		cfg.Packs = r2Packs{bucket: bucket}
		cfg.Results = r2Results{r2Packs{bucket: bucket}}
		if cfg.InlineResult, err = capVar("RAGAGENT_EXPERIMENT_INLINE_BYTES", server.DefaultInlineResult); err != nil {
			return server.Config{}, err
		}
		cfg.CorpusQuota = server.DefaultQuota()
		for _, c := range []struct {
			name string
			def  int64
			to   *int64
		}{{"RAGAGENT_MAX_UPLOAD", workerMaxUpload, &cfg.MaxUpload}, {"RAGAGENT_MAX_PACK_BYTES", workerMaxPackBytes, &cfg.MaxPackBytes},
			{"RAGAGENT_CORPUS_BYTES", cfg.CorpusQuota.Bytes, &cfg.CorpusQuota.Bytes}} {
			n, err := capVar(c.name, int(c.def))
			if err != nil {
				return server.Config{}, err
			}
			*c.to = int64(n)
		}
		if cfg.CorpusQuota.Packs, err = capVar("RAGAGENT_CORPUS_PACKS", cfg.CorpusQuota.Packs); err != nil {
			return server.Config{}, err
		}
	}
	return cfg, nil
}
