package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// pepperVariable names the environment variable holding the token pepper:
// the HMAC key of stored token secrets, which never goes in the database.
const pepperVariable = "RAGAGENT_TOKEN_PEPPER"

// pepperFromEnv reads the pepper, refused unless it looks random
// (server.CheckPepper), with how to make one.
func pepperFromEnv() ([]byte, error) {
	p := os.Getenv(pepperVariable)
	if p == "" {
		return nil, fmt.Errorf("set %s to a random secret of at least %d bytes, made with: %s (it keys the hashes of stored tokens; keep it out of the database)", pepperVariable, server.MinPepper, server.MakePepper)
	}
	if err := server.CheckPepper([]byte(p)); err != nil {
		return nil, fmt.Errorf("%s: %w", pepperVariable, err)
	}
	return []byte(p), nil
}

func cmdServeAPI(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveAPI(ctx, args, stdout, stderr)
}

// serveAPI serves the API until ctx ends, then shuts down in order: no new
// connections, running runs given a grace period (a run still running when
// the process exits is marked interrupted at the next start).
func serveAPI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve-api", "--db FILE [--addr HOST:PORT] [--pack DIR]... [--max-running N] [--max-running-per-token N] [--queue N] [--queue-per-token N] [--endpoint URL] [--corpora DIR] [--corpus-quota-packs N] [--corpus-quota-bytes N] [--max-upload-bytes N] [--experiments-per-token N] [--experiments-running N] [--max-experiment-cases N] [--max-experiment-configs N] [--max-experiment-bytes N] [--allow-origin ORIGIN]...", stderr)
	db := fs.String("db", "", "the SQLite `file` keeping tokens, runs, events and recordings (created when missing)")
	addr := fs.String("addr", "127.0.0.1:8090", "`host:port` to listen on (port 0 picks a free one)")
	caps := server.DefaultCaps()
	fs.IntVar(&caps.Running, "max-running", caps.Running, "runs running at once, in all")
	fs.IntVar(&caps.RunningPerToken, "max-running-per-token", caps.RunningPerToken, "runs running at once per token")
	fs.IntVar(&caps.Queue, "queue", caps.Queue, "runs waiting in the queue, in all")
	fs.IntVar(&caps.QueuePerToken, "queue-per-token", caps.QueuePerToken, "runs waiting in the queue per token")
	endpoint := fs.String("endpoint", "", "a loopback fake Gemini `URL` for testing (default: the real API)")
	grace := fs.Duration("grace", 20*time.Second, "how long a shutdown waits for running runs")
	streamsPerToken := fs.Int("streams-per-token", server.DefaultStreamsPerToken, "event streams a token may hold open at once")
	corporaDir := fs.String("corpora", "", "the `folder` keeping the packs tokens upload (POST /v1/corpora; default: the --db file's name with .corpora)")
	quota := server.DefaultQuota()
	fs.IntVar(&quota.Packs, "corpus-quota-packs", quota.Packs, "uploaded packs a token may keep")
	fs.Int64Var(&quota.Bytes, "corpus-quota-bytes", quota.Bytes, "bytes of uploaded packs (as uploaded) a token may keep")
	maxUpload := fs.Int64("max-upload-bytes", server.DefaultMaxUpload, "the cap on one upload's body (the gzip'd tar)")
	xcaps := server.ExperimentCaps{PerToken: server.DefaultExperimentsPerToken, Running: server.DefaultExperimentsRunning,
		Cases: server.DefaultMaxExperimentCases, Configs: server.DefaultMaxExperimentConfigs, Body: server.DefaultMaxExperimentBody}
	fs.IntVar(&xcaps.PerToken, "experiments-per-token", xcaps.PerToken, "experiments a token may have queued or running (POST /v1/experiments)")
	fs.IntVar(&xcaps.Running, "experiments-running", xcaps.Running, "experiments running at once, in all (the rest wait, oldest first)")
	fs.IntVar(&xcaps.Cases, "max-experiment-cases", xcaps.Cases, "cases an experiment's question set may hold")
	fs.IntVar(&xcaps.Configs, "max-experiment-configs", xcaps.Configs, "configurations an experiment may compare")
	fs.Int64Var(&xcaps.Body, "max-experiment-bytes", xcaps.Body, "the cap on an experiment request's body")
	var origins []string
	fs.Func("allow-origin", "let the page served at this `origin` (scheme://host:port) call the API from a browser (CORS; repeatable)", func(o string) error {
		if _, err := server.CheckOrigin(o); err != nil {
			return err
		}
		origins = append(origins, o)
		return nil
	})
	var packDirs []string
	fs.Func("pack", "offer this pack `folder` (or its manifest.json) besides the shipped ones (repeatable)", func(dir string) error {
		packDirs = append(packDirs, dir)
		return nil
	})
	in := addInputFlag(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent serve-api: %s\n", oneLine(fmt.Errorf(format, a...)))
		return code
	}
	if *db == "" {
		return fail(exitUsage, "--db FILE is required")
	}
	if *corporaDir == "" {
		*corporaDir = *db + ".corpora"
	}
	if quota.Packs < 1 || quota.Bytes < 1 || *maxUpload < 1 {
		return fail(exitUsage, "--corpus-quota-packs, --corpus-quota-bytes and --max-upload-bytes must be at least 1")
	}
	if xcaps.PerToken < 1 || xcaps.Running < 1 || xcaps.Cases < 1 || xcaps.Configs < 1 || xcaps.Body < 1 {
		return fail(exitUsage, "--experiments-per-token, --experiments-running, --max-experiment-cases, --max-experiment-configs and --max-experiment-bytes must be at least 1")
	}
	if err := in.check(); err != nil {
		return fail(exitUsage, "%v", err)
	}
	pepper, err := pepperFromEnv()
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	// The corpora runs may name: the seed and the packs the command ships.
	e, err := engine.Open(engine.Options{Packs: knownPacks()})
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer e.Close()
	// The operator's packs, each read, checked and opened before the
	// database is touched: a broken pack stops the start, not a run, and
	// leaves nothing behind.
	for _, dir := range packDirs {
		id, err := openCorpus(e, in, dir)
		if err != nil {
			return fail(exitUsage, "--pack %s: %v", dir, err)
		}
		if err := e.VerifyPack(id); err != nil {
			return fail(exitUsage, "--pack %s: %v", dir, err)
		}
	}
	// One server at a time: a second one's recovery would end the first's
	// running runs as interrupted while the first went on with them.
	release, locked, err := store.LockForServing(*db)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer release()
	if !locked {
		fmt.Fprintf(stderr, "ragagent serve-api: warning: this platform has no advisory file lock; make sure no other serve-api serves %s\n", *db)
	}
	st, err := store.OpenFile(ctx, *db)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer st.Close()
	key, variable := httptransport.KeyFromEnv(os.Getenv)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := server.New(server.Config{Engine: e, Store: st, Transport: httptransport.New(key), Endpoint: *endpoint,
		Pepper: pepper, Caps: caps, Log: log, UsageFlush: time.Second, StreamsPerToken: *streamsPerToken,
		Corpora: *corporaDir, CorpusQuota: quota, MaxUpload: *maxUpload, MaxPackBytes: *in.max, Experiments: xcaps, AllowOrigins: origins})
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if err := srv.Start(ctx); err != nil {
		ln.Close()
		return fail(exitError, "%v", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	keyNote := "no Gemini key (gemini runs are refused with missing_api_key)"
	if key != "" {
		keyNote = "Gemini key from " + variable + " (never printed, logged, streamed or recorded)"
	}
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	fmt.Fprintf(stderr, "ragagent serve-api: serving http://%s with %s; caps %d running (%d per token), queue %d (%d per token); state in %s\n",
		ln.Addr(), keyNote, caps.Running, caps.RunningPerToken, caps.Queue, caps.QueuePerToken, *db)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(server.GuardListener(ln)) }()
	select {
	case err := <-served:
		return fail(exitError, "%v", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "ragagent serve-api: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	// Streams never go idle: close the listener, let runs finish within the
	// grace period, then drop what is still open.
	_ = srv.Shutdown(sctx)
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(exitError, "%v", err)
	}
	// The requests answered since Shutdown's flush.
	if err := srv.Flush(context.Background()); err != nil {
		return fail(exitError, "%v", err)
	}
	return exitOK
}

func cmdTokens(args []string, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: ragagent tokens add|list|revoke --db FILE ... (ragagent tokens <action> -h for flags)")
		return exitUsage
	}
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "add":
		return tokensAdd(args[1:], stdout, stderr)
	case "list":
		return tokensList(args[1:], stdout, stderr)
	case "revoke":
		return tokensRevoke(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		usage()
		return exitOK
	}
	fmt.Fprintf(stderr, "ragagent tokens: unknown action %q\n", args[0])
	return usage()
}

// openTokenStore parses a tokens action's flags (with --db) and opens the
// database.
func openTokenStore(fs *flag.FlagSet, db *string, args []string, stderr io.Writer) (*store.SQL, int, bool) {
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if *db == "" {
		fmt.Fprintf(stderr, "ragagent %s: --db FILE is required\n", fs.Name())
		return nil, exitUsage, false
	}
	st, err := store.OpenFile(context.Background(), *db)
	if err != nil {
		fmt.Fprintf(stderr, "ragagent %s: %s\n", fs.Name(), oneLine(err))
		return nil, exitError, false
	}
	return st, exitOK, true
}

func tokensAdd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tokens add", "--db FILE|--sql FILE --name NAME --scopes read,run,live,corpora [--daily-requests N] [--daily-live-calls N] [--json]", stderr)
	db := fs.String("db", "", "the server's SQLite `file`")
	sqlOut := fs.String("sql", "", "instead of --db, write the token's INSERT statement to `file`, for a Worker's D1: wrangler d1 execute DB --file FILE")
	name := fs.String("name", "", "who or what holds the token")
	scopes := fs.String("scopes", "read,run", "comma-separated scopes: read (see own runs), run (scripted runs, cancel), live (Gemini runs on the server's key), corpora (upload and delete own corpora)")
	requests := fs.Int("daily-requests", 10000, "API requests allowed per UTC day")
	live := fs.Int("daily-live-calls", 100, "Gemini attempts allowed per UTC day")
	asJSON := fs.Bool("json", false, "print {id, token, ...} as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case *db != "" && *sqlOut != "":
		fmt.Fprintln(stderr, "ragagent tokens add: give --db or --sql, not both")
		return exitUsage
	case *db == "" && *sqlOut == "":
		fmt.Fprintln(stderr, "ragagent tokens add: --db FILE is required (or --sql FILE for a Worker's D1)")
		return exitUsage
	}
	// Everything is checked before anything is created: the pepper, then
	// the token's fields.
	pepper, err := pepperFromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "ragagent tokens add: %s\n", oneLine(err))
		return exitUsage
	}
	plain, t, err := server.NewToken(pepper, *name, splitList(*scopes), *requests, *live, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "ragagent tokens add: %s\n", oneLine(err))
		return exitUsage
	}
	var st *store.SQL
	if *db != "" {
		if st, err = store.OpenFile(context.Background(), *db); err != nil {
			fmt.Fprintf(stderr, "ragagent tokens add: %s\n", oneLine(err))
			return exitError
		}
		defer st.Close()
	}
	if st == nil {
		if err := os.WriteFile(*sqlOut, []byte(store.TokenSQL(t)), 0o600); err != nil {
			fmt.Fprintf(stderr, "ragagent tokens add: %s\n", oneLine(err))
			return exitError
		}
	} else if err := st.AddToken(context.Background(), t); err != nil {
		fmt.Fprintf(stderr, "ragagent tokens add: %s\n", oneLine(err))
		return exitError
	}
	if *asJSON {
		return writeJSON(stdout, stderr, "tokens add", map[string]any{"id": t.ID, "name": t.Name, "scopes": t.Scopes,
			"daily_requests": t.DailyRequests, "daily_live_calls": t.DailyLiveCalls, "token": plain})
	}
	fmt.Fprintln(stdout, plain)
	fmt.Fprintf(stderr, "token %s (%s) with scopes %s: shown once, only its hash is stored\n", t.ID, t.Name, strings.Join(t.Scopes, ","))
	return exitOK
}

// tokenRow is a token as listed: never its hash.
type tokenRow struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Scopes         []string `json:"scopes"`
	DailyRequests  int      `json:"daily_requests"`
	DailyLiveCalls int      `json:"daily_live_calls"`
	CreatedAt      string   `json:"created_at"`
	RevokedAt      *string  `json:"revoked_at"`
}

func tokensList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tokens list", "--db FILE [--json]", stderr)
	db := fs.String("db", "", "the server's SQLite `file`")
	asJSON := fs.Bool("json", false, "print {\"tokens\": [...]} as JSON")
	st, code, ok := openTokenStore(fs, db, args, stderr)
	if !ok {
		return code
	}
	defer st.Close()
	ts, err := st.Tokens(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "ragagent tokens list: %s\n", oneLine(err))
		return exitError
	}
	rows := []tokenRow{}
	for _, t := range ts {
		r := tokenRow{ID: t.ID, Name: t.Name, Scopes: t.Scopes, DailyRequests: t.DailyRequests, DailyLiveCalls: t.DailyLiveCalls,
			CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339)}
		if !t.RevokedAt.IsZero() {
			s := t.RevokedAt.UTC().Format(time.RFC3339)
			r.RevokedAt = &s
		}
		rows = append(rows, r)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, "tokens list", map[string]any{"tokens": rows})
	}
	fmt.Fprintf(stdout, "%-16s  %-20s  %-13s  %8s  %6s  %-20s  %s\n", "id", "name", "scopes", "requests", "live", "created", "revoked")
	for _, r := range rows {
		revoked := "-"
		if r.RevokedAt != nil {
			revoked = *r.RevokedAt
		}
		fmt.Fprintf(stdout, "%-16s  %-20s  %-13s  %8d  %6d  %-20s  %s\n", r.ID, r.Name, strings.Join(r.Scopes, ","), r.DailyRequests, r.DailyLiveCalls, r.CreatedAt, revoked)
	}
	return exitOK
}

func tokensRevoke(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tokens revoke", "--db FILE --id ID", stderr)
	db := fs.String("db", "", "the server's SQLite `file`")
	id := fs.String("id", "", "the token's `id` (as tokens list shows it)")
	st, code, ok := openTokenStore(fs, db, args, stderr)
	if !ok {
		return code
	}
	defer st.Close()
	revoked, ok, err := server.RevokeToken(context.Background(), st, *id, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "ragagent tokens revoke: %s\n", oneLine(err))
		return exitError
	}
	if !ok {
		fmt.Fprintf(stderr, "ragagent tokens revoke: no valid token %q\n", *id)
		return exitError
	}
	fmt.Fprintf(stdout, "revoked %s: %d queued runs ended, %d running runs stopping (token_revoked)\n", *id, len(revoked.Dropped), len(revoked.Stopping))
	return exitOK
}
