// Package server is the lab as an authenticated HTTP service (the server
// edition, api/openapi.json): bearer tokens with scopes and daily
// allowances, runs admitted atomically under a global and a per-token cap
// with a bounded FIFO queue, cancellation, Server-Sent Events resumable
// with Last-Event-ID, and every run, event and recording kept in a
// store.Store. Each run is core/engine's Run, so validation, the
// controller, recording and grading are exactly the command line's and the
// page's. The Gemini key stays in the transport the command gives it.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/api"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// Config is what a server is made of.
type Config struct {
	Engine *engine.Engine
	// OpenEngine, when Engine is nil, opens the engine when the first run
	// starts (a Worker isolate that only serves reads never opens it).
	OpenEngine func() (*engine.Engine, error)
	Store      store.Store
	// Transport carries Gemini runs' requests and holds the key (nil: no
	// key; gemini runs are refused with missing_api_key).
	Transport gemini.Transport
	// Endpoint is "" for the real API or a loopback fake.
	Endpoint string
	// Pepper keys the HMAC of token secrets (CheckPepper must accept it).
	Pepper []byte
	Caps   store.Caps
	// Clock is the time source; nil means time.Now.
	Clock func() time.Time
	// Log gets one line per request and per run ending (never a header, a
	// body or a key); nil discards.
	Log *slog.Logger
	// CancelWait is how long a cancel request waits for the run to end
	// before answering 202 (default 5 s).
	CancelWait time.Duration
	// Heartbeat is the interval of an event stream's keep-alive comments
	// (default 15 s); Poll is how often a stream rereads the store when no
	// run of this process wakes it (default 5 s: in one process every event
	// wakes its streams; the poll is for events other processes write).
	Heartbeat, Poll time.Duration
	// GoneHeartbeat, when set, is the keep-alive interval of a stream
	// served to a Dispatch's caller for a run that cancels when its client
	// goes (on_disconnect "cancel"): a Worker's run object learns that the
	// client of a relayed stream went only when a write to it fails, so
	// these streams write more often than Heartbeat. Natively the
	// request's context says so at once.
	GoneHeartbeat time.Duration
	// Go starts a run's goroutine; nil means the go statement. A Worker
	// keeps its isolate alive until every run it started has ended.
	Go func(run func())
	// UsageFlush is how often the requests counted against the tokens'
	// daily allowances are written (requestMeter); 0 writes each one as it
	// is counted, as a Worker must (its program ends with its request).
	UsageFlush time.Duration
	// FlushInRequests writes the counts in the request that finds them
	// UsageFlush old or more, not on a timer of the server's: a Worker's
	// front has no turn of its own to write them in (a timer would run in
	// some request's, and keep it).
	FlushInRequests bool
	// Dispatch, when set, executes the runs it does not call Local
	// elsewhere (a Worker's Durable Objects); nil executes every run here.
	Dispatch Dispatch
	// Corpora, when set, is the folder uploaded packs are kept in
	// (POST /v1/corpora); "" offers no uploads. It needs Engine, in which
	// every kept pack is opened at Start.
	Corpora string
	// Packs, when set instead, keeps uploaded packs elsewhere (a Worker's
	// R2 bucket): a pack is then opened by the program whose run names it,
	// not at Start, and an upload is verified in an engine of its own.
	Packs PackStore
	// CorpusQuota bounds each token's uploads (DefaultQuota when zero);
	// MaxUpload caps an upload's body and MaxPackBytes a pack's passages
	// uncompressed (DefaultMaxUpload, DefaultMaxPackBytes when 0).
	CorpusQuota  Quota
	MaxUpload    int64
	MaxPackBytes int64
	// Experiments bound experiments (POST /v1/experiments): per token
	// queued and running, running at once, and a request's body, cases
	// and configurations (the Default* constants where zero). The store
	// must keep experiments (store.Experiments) for them to be offered.
	Experiments ExperimentCaps
	// ExperimentPiece bounds a piece of an experiment where they run in
	// pieces: with a Dispatch, at their owners' calls (a Worker's alarms),
	// never on goroutines of their own (DefaultPieceUnits and
	// DefaultPieceTime where zero).
	ExperimentPiece ExperimentPiece
	// Results, if set, keeps the results of experiments longer than
	// InlineResult bytes (DefaultInlineResult when zero) outside the
	// store's row: a Worker's R2, where D1 keeps 2,000,000 bytes a row.
	// Nil (natively): every result is kept in the store.
	Results      ResultStore
	InlineResult int
	// StreamsPerToken caps a token's open event streams in this process
	// (default 8); one more is 429 too_many_streams.
	StreamsPerToken int
	// AllowOrigins are the origins (CheckOrigin's form) whose pages may
	// call the API from a browser (CORS); none: no browser page may.
	AllowOrigins []string
}

// DefaultStreamsPerToken is a token's cap on open event streams when none
// is configured.
const DefaultStreamsPerToken = 8

// DefaultCaps are the caps when none are configured.
func DefaultCaps() store.Caps {
	return store.Caps{Running: 8, RunningPerToken: 2, Queue: 64, QueuePerToken: 16}
}

// Server serves the API. Start it before serving requests.
type Server struct {
	engine     engineOnce
	runs       engine.RunParser // the run requests this server reads: its engine's packs, no endpoint
	goRun      func(func())
	dispatch   Dispatch
	store      store.Store
	transport  gemini.Transport
	endpoint   string
	pepper     []byte
	caps       store.Caps
	clock      func() time.Time
	log        *slog.Logger
	cancelWait time.Duration
	heartbeat  time.Duration
	goneBeat   time.Duration
	poll       time.Duration

	hub    hub
	runner runner
	logs   eventLogs

	usageFlush      time.Duration
	flushInRequests bool
	meter           requestMeter
	stopFlush       chan struct{}
	streamsPerToken int
	streams         streams
	relayed         relayedStreams

	shelf *shelf // uploaded packs; nil when none are kept

	experiments experiments

	origins map[string]bool // AllowOrigins, as compared

	mu      sync.Mutex
	closing bool
}

// New checks a configuration and makes a server.
func New(c Config) (*Server, error) {
	if (c.Engine == nil && c.OpenEngine == nil) || c.Store == nil {
		return nil, errors.New("server: an engine (or a way to open one) and a store are required")
	}
	if err := CheckPepper(c.Pepper); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if c.Caps == (store.Caps{}) {
		c.Caps = DefaultCaps()
	}
	if c.Caps.Running < 1 || c.Caps.RunningPerToken < 1 || c.Caps.Queue < 0 || c.Caps.QueuePerToken < 0 {
		return nil, errors.New("server: running caps must be at least 1 and queue caps at least 0")
	}
	if _, err := gemini.ResolveEndpoint(c.Endpoint); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{engine: engineOnce{e: c.Engine, open: c.OpenEngine}, goRun: c.Go, store: c.Store, transport: c.Transport, endpoint: c.Endpoint, pepper: c.Pepper,
		caps: c.Caps, clock: c.Clock, log: c.Log, cancelWait: c.CancelWait, heartbeat: c.Heartbeat, goneBeat: c.GoneHeartbeat, poll: c.Poll}
	if s.clock == nil {
		s.clock = time.Now
	}
	// A run may name the engine's packs, or the seed alone when the engine
	// opens only once a run starts.
	if c.Engine != nil {
		s.runs.Packs = c.Engine.Packs()
	}
	if c.Corpora != "" && c.Packs != nil {
		return nil, errors.New("server: uploaded corpora are kept in a folder or a store, not both")
	}
	if c.Corpora != "" || c.Packs != nil {
		sh := &shelf{store: c.Packs, quota: c.CorpusQuota, maxBody: c.MaxUpload, maxBytes: c.MaxPackBytes}
		if c.Corpora != "" {
			if c.Engine == nil {
				return nil, errors.New("server: uploaded corpora need an engine opened at the start")
			}
			eng := c.Engine
			sh.store, sh.resident = newDirPacks(c.Corpora), true
			sh.served = func(m *corpus.Manifest) bool {
				p, err := eng.Pack(m.ID)
				return err == nil && sameContent(p.Manifest, m)
			}
		}
		if sh.quota == (Quota{}) {
			sh.quota = DefaultQuota()
		}
		if sh.maxBody <= 0 {
			sh.maxBody = DefaultMaxUpload
		}
		if sh.maxBytes <= 0 {
			sh.maxBytes = DefaultMaxPackBytes
		}
		if sh.quota.Packs < 1 || sh.quota.Bytes < 1 {
			return nil, errors.New("server: a corpus quota must allow at least one pack and one byte")
		}
		s.shelf = sh
	}
	if s.goRun == nil {
		s.goRun = func(run func()) { go run() }
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.cancelWait <= 0 {
		s.cancelWait = 5 * time.Second
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 15 * time.Second
	}
	if s.goneBeat <= 0 {
		s.goneBeat = s.heartbeat
	}
	if s.poll <= 0 {
		s.poll = 5 * time.Second
	}
	s.usageFlush, s.streamsPerToken, s.dispatch = c.UsageFlush, c.StreamsPerToken, c.Dispatch
	s.flushInRequests = c.FlushInRequests
	if s.streamsPerToken <= 0 {
		s.streamsPerToken = DefaultStreamsPerToken
	}
	s.stopFlush = make(chan struct{})
	s.hub.waits = map[string]*waiters{}
	// A Worker's run object serves the streams of the runs it holds from
	// the events it wrote (each one after it was stored): D1 is a network
	// hop away, and a stream read it once per event.
	s.logs.on = c.Dispatch != nil
	s.runner = runner{s: s, active: map[string]*active{}}
	s.experiments = experiments{s: s, caps: c.Experiments.withDefaults(), active: map[string]context.CancelCauseFunc{}}
	s.experiments.st, _ = c.Store.(store.Experiments)
	if s.experiments.st != nil {
		s.experiments.trials, _ = c.Store.(store.AgentTrials)
	}
	s.experiments.pieces, s.experiments.piece = c.Dispatch != nil, c.ExperimentPiece.withDefaults()
	s.experiments.results, s.experiments.inline = c.Results, c.InlineResult
	if s.experiments.inline <= 0 {
		s.experiments.inline = DefaultInlineResult
	}
	for _, o := range c.AllowOrigins {
		origin, err := CheckOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if s.origins == nil {
			s.origins = map[string]bool{}
		}
		s.origins[origin] = true
	}
	return s, nil
}

// Start recovers from whatever the last process left: runs it left
// running end incomplete with reason interrupted (their process, model
// calls and context are gone), then queued runs start as the caps allow;
// experiments it left running resume from the rankings they kept.
func (s *Server) Start(ctx context.Context) error {
	if err := s.loadShelf(); err != nil {
		return fmt.Errorf("server: opening the uploaded corpora: %w", err)
	}
	ended, err := s.store.Interrupt(ctx, s.clock(), s.endEvent)
	if err != nil {
		return fmt.Errorf("server: recovering runs: %w", err)
	}
	for _, r := range ended {
		s.log.Info("run interrupted by a restart", "run", r.ID)
	}
	s.runner.promote()
	if err := s.experiments.resume(ctx); err != nil {
		return fmt.Errorf("server: resuming experiments: %w", err)
	}
	if s.usageFlush > 0 && !s.flushInRequests {
		go s.flushLoop(s.stopFlush)
	}
	return nil
}

// Shutdown stops starting runs and waits, until ctx ends, for the running
// ones to finish; running experiments stop where they are, left running
// for the next Start to resume. Runs still running when the process exits are marked
// interrupted by the next Start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if first {
		close(s.stopFlush)
	}
	s.experiments.stopAll()
	return errors.Join(s.runner.wait(ctx), s.experiments.wait(ctx), s.Flush(ctx))
}

// engineOnce is the engine, or how to open it on first use.
type engineOnce struct {
	mu   sync.Mutex
	e    *engine.Engine
	open func() (*engine.Engine, error)
}

func (o *engineOnce) get() (*engine.Engine, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.e == nil {
		e, err := o.open()
		if err != nil {
			return nil, err
		}
		o.e = e
	}
	return o.e, nil
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Handler is the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", s.only("GET", s.healthz))
	mux.HandleFunc("/openapi.json", s.only("GET", s.openapi))
	mux.HandleFunc("/v1/corpora", s.corporaRoute)
	mux.HandleFunc("/v1/corpora/{id}", s.corpusRoute)
	mux.HandleFunc("/v1/experiments", s.experimentsRoute)
	mux.HandleFunc("/v1/experiments/{id}", s.only("GET", s.authed(s.getExperiment, ScopeRead)))
	mux.HandleFunc("/v1/experiments/{id}/events", s.only("GET", s.authed(s.experimentEvents, ScopeRead)))
	mux.HandleFunc("/v1/experiments/{id}/result", s.only("GET", s.authed(s.experimentResult, ScopeRead)))
	mux.HandleFunc("/v1/experiments/{id}/cancel", s.only("POST", s.authed(s.cancelExperiment, ScopeRun)))
	mux.HandleFunc("/v1/runs", s.runsRoute)
	mux.HandleFunc("/v1/runs/{id}", s.only("GET", s.authed(s.getRun, ScopeRead)))
	mux.HandleFunc("/v1/runs/{id}/events", s.only("GET", s.authed(s.events, ScopeRead)))
	mux.HandleFunc("/v1/runs/{id}/cancel", s.only("POST", s.authed(s.cancel, ScopeRun, ScopeLive)))
	mux.HandleFunc("/v1/runs/{id}/recording", s.only("GET", s.authed(s.recording, ScopeRead)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		refuse(http.StatusNotFound, CodeNotFound, "no such resource").write(w)
	})
	return s.logged(cors(s.origins, strictQuery(mux)))
}

// strictQuery refuses a malformed query string (?limit=%zz, a ; separator)
// before routing: url.Values would drop the pair without a word, and the
// request would be served as if it had not been sent.
func strictQuery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			refuse(http.StatusBadRequest, CodeInvalidParameter, "the query string is malformed: "+err.Error()).write(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// only refuses every method but m (HEAD is not offered: a stream has no
// length to announce).
func (s *Server) only(m string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			w.Header().Set("Allow", m)
			refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed here; use %s", r.Method, m)).write(w)
			return
		}
		h(w, r)
	}
}

func (s *Server) runsRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.authed(s.listRuns, ScopeRead)(w, r)
	case http.MethodPost:
		s.authed(s.createRun, ScopeRun, ScopeLive)(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or POST").write(w)
	}
}

// tokenKey carries the authenticated token in a request's context.
type tokenKey struct{}

func tokenOf(r *http.Request) store.Token {
	t, _ := r.Context().Value(tokenKey{}).(store.Token)
	return t
}

// authed authenticates the request (401), checks that the token has one
// of scopes (403), and counts the request against its daily allowance
// (429 request_limit) before the handler sees the request.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request) *apiError, scopes ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		t, aerr := s.authenticate(ctx, r)
		if aerr == nil && !hasScope(t, scopes...) {
			aerr = missingScope(scopes...)
		}
		if aerr == nil {
			aerr = s.chargeRequest(ctx, t)
		}
		if aerr == nil {
			if lw, ok := w.(*logWriter); ok {
				lw.token = t.ID
			}
			aerr = h(w, r.WithContext(context.WithValue(ctx, tokenKey{}, t)))
		}
		if aerr != nil {
			aerr.write(w)
		}
	}
}

func (s *Server) chargeRequest(ctx context.Context, t store.Token) *apiError {
	now := s.clock()
	var ok bool
	var err error
	if s.usageFlush > 0 {
		ok, err = s.meter.charge(ctx, s.store, t, day(now))
		if err == nil && s.flushInRequests && s.meter.due(now, s.usageFlush) {
			if ferr := s.meter.flush(ctx, s.store, day(now), now, false); ferr != nil {
				s.log.Error("server fault", "during", "writing request counts", "error", ferr.Error())
			}
		}
	} else {
		ok, err = s.store.Charge(ctx, t.ID, day(now), store.Requests, t.DailyRequests)
	}
	if err != nil {
		return s.internal("charging a request", err)
	}
	if !ok {
		e := refuse(http.StatusTooManyRequests, CodeRequestLimit,
			fmt.Sprintf("the token's %d requests for today (UTC) are used", t.DailyRequests))
		e.retryAfter = untilTomorrow(now)
		return e
	}
	return nil
}

// internal logs a fault and refuses with internal_error (the message
// names what failed, never the error's text, which may quote a path).
func (s *Server) internal(what string, err error) *apiError {
	s.log.Error("server fault", "during", what, "error", err.Error())
	return refuse(http.StatusInternalServerError, CodeInternal, "the server failed while "+what)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if aerr := noQuery(r); aerr != nil {
		aerr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	if aerr := noQuery(r); aerr != nil {
		aerr.write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(api.OpenAPI)
}

// logged writes one line per request: method, path, status, duration and
// the token's id (never a header, a query or a body).
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		lw := &logWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(lw, r)
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", lw.status,
			"ms", float64(time.Since(started).Microseconds())/1000, "token", lw.token)
	})
}

type logWriter struct {
	http.ResponseWriter
	status int
	token  string
}

func (l *logWriter) WriteHeader(code int) {
	l.status = code
	l.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }
