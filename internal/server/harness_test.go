package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/api"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/fixtures/packs"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
	"github.com/ragagentlab/ragagent/internal/testlog"
)

// dummyKey is the Gemini key every test server holds; no output may carry it.
const dummyKey = "AIzaDUMMY-test-key-0123456789abcdef"

// pepper is the tests' token pepper, as openssl rand -hex 32 makes one.
var pepper = []byte("5d1c8e0f7a2b49e3a6f0c4d1b8e27f9a03c6e5b4d2f1a0987e6c5b4a3d2e1f0c")

// contract is the OpenAPI document every request and response of the
// tests is checked against.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	codes  []string // ErrorBody's codes
}

var (
	contractOnce sync.Once
	theContract  contract
	contractErr  error
)

func loadContract(t testing.TB) contract {
	t.Helper()
	contractOnce.Do(func() {
		// An event stream is validated as its sequence of events
		// (EventStream): id, event and data, the data decoded as JSON.
		openapi3filter.RegisterBodyDecoder("text/event-stream", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			evs, err := readSSE(r, func(sse) bool { return false })
			if err != nil {
				return nil, err
			}
			out := make([]any, 0, len(evs))
			for _, ev := range evs {
				var data any
				if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
					return nil, fmt.Errorf("event %s: data is not JSON: %w", ev.id, err)
				}
				out = append(out, map[string]any{"id": ev.id, "event": ev.event, "data": data})
			}
			return out, nil
		})
		doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
		if err != nil {
			contractErr = err
			return
		}
		if err = doc.Validate(context.Background(), openapi3.IsOpenAPI31OrLater()); err != nil {
			contractErr = err
			return
		}
		// Routes match any host: the servers are the default addresses,
		// the tests' servers listen on free ports.
		routed := *doc
		routed.Servers = nil
		router, err := gorillamux.NewRouter(&routed)
		var codes []string
		for _, c := range doc.Components.Schemas["ErrorBody"].Value.Properties["code"].Value.Enum {
			codes = append(codes, c.(string))
		}
		theContract, contractErr = contract{doc: doc, router: router, codes: codes}, err
	})
	require.NoError(t, contractErr)
	return theContract
}

// schema checks a JSON value against a named component schema.
func (c contract) schema(t testing.TB, name string, data []byte) {
	t.Helper()
	ref, ok := c.doc.Components.Schemas[name]
	require.True(t, ok, name)
	var v any
	require.NoError(t, json.Unmarshal(data, &v), string(data))
	assert.NoError(t, ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()), "%s: %s", name, data)
}

// env is a server under test with its fake Gemini.
type env struct {
	t        testing.TB
	srv      *server.Server
	owner    *server.Server // the runs' owner, with options.owner
	ownerURL string         // where the owner's RunnerHandler is served
	http     *httptest.Server
	base     string // the API's URL: the httptest server's, or a Worker's
	store    *store.SQL
	engine   *engine.Engine
	dbPath   string
	log      *testlog.Buffer
	clock    *clock
	c        contract
	tokens   map[string]string // name -> bearer token
	closeFn  []func()
}

type options struct {
	caps     store.Caps
	endpoint string // the fake's; "" leaves the real endpoint (never called)
	noKey    bool
	dbPath   string
	packs    bool // the shipped packs besides the seed (python-3.11)
	// wrap, if set, is the store the server gets, around the env's.
	wrap func(store.Store) store.Store
	// results and inlineResult are the servers' Config.Results and
	// InlineResult.
	results      server.ResultStore
	inlineResult int
	// usageFlush is the server's UsageFlush (default 20 ms; -1: 0, each
	// request written as it is counted).
	usageFlush time.Duration
	// flushInRequests: the counts are written by the request that finds
	// them usageFlush old (a Worker's front), not on a timer.
	flushInRequests bool
	streams         int // StreamsPerToken (0: the default)
	// owner: the server hands every run to a second one over HTTP, as a
	// Worker's front hands its runs to their Durable Object (ownerDispatch),
	// both reading the store once an hour: only calls move runs, streams
	// and cancels between them.
	owner bool
	// corpora is the server's folder of uploaded packs ("" offers no
	// uploads), with its quota and caps (zero: the defaults).
	corpora      string
	quota        server.Quota
	maxUpload    int64
	maxPackBytes int64
	// experiments are the server's experiment caps (zero: the defaults).
	experiments server.ExperimentCaps
	// piece bounds the pieces experiments run in at the owner (with
	// owner; zero: the defaults).
	piece server.ExperimentPiece
	// allowOrigins are the origins whose pages may call the API (CORS).
	allowOrigins []string
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func newEnv(t testing.TB, o options) *env {
	t.Helper()
	e := &env{t: t, c: loadContract(t), log: &testlog.Buffer{}, tokens: map[string]string{},
		clock: &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
	e.dbPath = o.dbPath
	if e.dbPath == "" {
		e.dbPath = filepath.Join(t.TempDir(), "api.db")
	}
	var err error
	var sources []engine.PackSource
	if o.packs {
		sources, err = packs.Sources()
		require.NoError(t, err)
	}
	e.engine, err = engine.Open(engine.Options{Packs: sources})
	require.NoError(t, err)
	e.store, err = store.OpenFile(context.Background(), e.dbPath)
	require.NoError(t, err)
	var transport gemini.Transport
	if !o.noKey {
		transport = httptransport.New(dummyKey)
	}
	caps := o.caps
	if caps == (store.Caps{}) {
		caps = store.Caps{Running: 4, RunningPerToken: 2, Queue: 8, QueuePerToken: 4}
	}
	var st store.Store = e.store
	if o.wrap != nil {
		st = o.wrap(e.store)
	}
	flush := o.usageFlush
	switch flush {
	case 0:
		flush = 20 * time.Millisecond
	case -1:
		flush = 0
	}
	poll := 20 * time.Millisecond
	var dispatch server.Dispatch
	if o.owner {
		poll = time.Hour
		e.owner, err = server.New(server.Config{Engine: e.engine, Store: st, Transport: transport, Endpoint: o.endpoint,
			StreamsPerToken: o.streams, Pepper: pepper, Caps: caps, Clock: e.clock.Now, CancelWait: 3 * time.Second,
			Dispatch: ownsAll{}, Experiments: o.experiments, ExperimentPiece: o.piece, Results: o.results, InlineResult: o.inlineResult,
			Heartbeat: 50 * time.Millisecond, Poll: poll, Log: slog.New(slog.NewTextHandler(e.log, nil))})
		require.NoError(t, err)
		owner := httptest.NewServer(e.owner.RunnerHandler())
		e.closeFn = append(e.closeFn, func() {
			owner.CloseClientConnections()
			owner.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.owner.Shutdown(ctx)
		})
		dispatch = &ownerDispatch{base: owner.URL}
		e.ownerURL = owner.URL
	}
	e.srv, err = server.New(server.Config{Engine: e.engine, Store: st, Transport: transport, Endpoint: o.endpoint,
		UsageFlush: flush, FlushInRequests: o.flushInRequests, StreamsPerToken: o.streams, Dispatch: dispatch,
		Corpora: o.corpora, CorpusQuota: o.quota, MaxUpload: o.maxUpload, MaxPackBytes: o.maxPackBytes,
		Experiments: o.experiments, ExperimentPiece: o.piece, Results: o.results, InlineResult: o.inlineResult, AllowOrigins: o.allowOrigins, Pepper: pepper, Caps: caps, Clock: e.clock.Now, CancelWait: 3 * time.Second,
		Heartbeat: 50 * time.Millisecond, Poll: poll,
		Log: slog.New(slog.NewTextHandler(e.log, nil))})
	require.NoError(t, err)
	require.NoError(t, e.srv.Start(context.Background()))
	// As serve-api serves it: Go's own refusals made the API's errors,
	// headers capped at 16 KiB.
	e.http = httptest.NewUnstartedServer(e.srv.Handler())
	e.http.Listener = server.GuardListener(e.http.Listener)
	e.http.Config.MaxHeaderBytes = 16 << 10
	e.http.Start()
	e.base = e.http.URL
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	if e.http == nil {
		return
	}
	e.http.CloseClientConnections()
	e.http.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	for _, f := range e.closeFn {
		f()
	}
	_ = e.store.Close()
	_ = e.engine.Close()
	e.http = nil
}

// token makes a token with the given scopes (and allowances) and keeps it
// under name.
func (e *env) token(name string, scopes []string, dailyRequests, dailyLive int) string {
	e.t.Helper()
	plain, tok, err := server.NewToken(pepper, name, scopes, dailyRequests, dailyLive, e.clock.Now())
	require.NoError(e.t, err)
	require.NoError(e.t, e.store.AddToken(context.Background(), tok))
	e.tokens[name] = plain
	return plain
}

// response is what a request got.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

func (r response) code(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// req describes a request.
type req struct {
	method, path, token string
	body                string
	header              map[string]string
	// valid: the request itself must pass the contract (a refusal test
	// sends invalid ones on purpose; its response is still checked).
	valid bool
}

// harnessClient bounds every request a test sends, stream reads
// included (every stream a test reads belongs to a run that ends within
// seconds): a server that never answers fails the test in a minute,
// naming the request, instead of hanging the package until go test's
// ten-minute timeout with only a goroutine dump to go on (seen once on
// the local Worker: a GET of a run in "replies echoing the key").
var harnessClient = &http.Client{Timeout: time.Minute}

// do sends a request and checks the response against the contract (and
// the request too when it is meant to be valid).
func (e *env) do(r req) response {
	e.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, e.base+r.path, body)
	require.NoError(e.t, err)
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	resp, err := harnessClient.Do(hr)
	require.NoError(e.t, err, "%s %s", r.method, r.path)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err, "%s %s", r.method, r.path)
	out := response{status: resp.StatusCode, header: resp.Header, body: data}
	e.check(hr, r, out)
	return out
}

// check validates a request and its response against the contract.
func (e *env) check(hr *http.Request, r req, out response) {
	e.t.Helper()
	ctx := context.Background()
	vreq, _ := http.NewRequest(r.method, e.base+r.path, strings.NewReader(r.body))
	vreq.Header = hr.Header.Clone()
	route, params, err := e.c.router.FindRoute(vreq)
	if errors.Is(err, routers.ErrMethodNotAllowed) {
		// Another method than the path offers: the path's operations
		// declare the 405 (method_not_allowed, with Allow).
		assert.Equal(e.t, http.StatusMethodNotAllowed, out.status, "%s %s", r.method, r.path)
		allowed := strings.Split(out.header.Get("Allow"), ", ")
		vreq.Method = allowed[0]
		route, params, err = e.c.router.FindRoute(vreq)
		require.NoError(e.t, err, "Allow names a method of the path: %v", allowed)
		r.valid = false
	}
	if err != nil {
		// No such path in the document: the API's 404.
		assert.Equal(e.t, http.StatusNotFound, out.status, "%s %s", r.method, r.path)
		e.c.schema(e.t, "Error", out.body)
		assert.Equal(e.t, "not_found", out.code(e.t))
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, SkipSettingDefaults: true}}
	if r.valid {
		assert.NoError(e.t, openapi3filter.ValidateRequest(ctx, in), "request %s %s %s", r.method, r.path, r.body)
	}
	rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: out.status, Header: out.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	rin.SetBodyBytes(out.body)
	assert.NoError(e.t, openapi3filter.ValidateResponse(ctx, rin), "response to %s %s: %d %s", r.method, r.path, out.status, out.body)
	if out.status >= 400 {
		assert.Contains(e.t, e.c.codes, out.code(e.t), "the error code is declared")
	}
}

type sse struct {
	id    string
	event string
	data  string
}

// parseSSE reads a whole event stream; a line that is not an id, event,
// data or comment line fails the test.
func parseSSE(t testing.TB, body []byte) []sse {
	t.Helper()
	out, err := readSSE(bytes.NewReader(body), func(sse) bool { return false })
	require.NoError(t, err)
	return out
}

// readSSE reads events until stop says so or the stream ends; the events
// read so far are returned with any error.
func readSSE(r io.Reader, stop func(sse) bool) ([]sse, error) {
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
				if stop(cur) {
					return out, nil
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		default:
			return out, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
	return out, sc.Err()
}

// sampler reads the running counts until stopped: the most runs seen
// running at once, in all and for one token, and how many samples.
type sampler struct {
	stop              atomic.Bool
	all, one, samples atomic.Int64
	done              chan struct{}
}

func sample(s store.Store) *sampler { return sampleCounts(s.Counts) }

// sampleCounts samples counts read by counts.
func sampleCounts(counts func(context.Context) (store.Counts, error)) *sampler {
	sm := &sampler{done: make(chan struct{})}
	go func() {
		defer close(sm.done)
		for !sm.stop.Load() {
			c, err := counts(context.Background())
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			sm.samples.Add(1)
			if int64(c.Running) > sm.all.Load() {
				sm.all.Store(int64(c.Running))
			}
			if int64(c.MostRunningPerToken) > sm.one.Load() {
				sm.one.Store(int64(c.MostRunningPerToken))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return sm
}

// halt stops the sampler and waits for it.
func (sm *sampler) halt() {
	sm.stop.Store(true)
	<-sm.done
}

// start posts a run and returns its id.
func (e *env) start(token, body string) string {
	e.t.Helper()
	r := e.do(req{method: "POST", path: "/v1/runs", token: token, body: body, valid: true})
	require.Equal(e.t, http.StatusAccepted, r.status, string(r.body))
	id, _ := r.json(e.t)["id"].(string)
	require.NotEmpty(e.t, id)
	return id
}

// run reads a run.
func (e *env) run(token, id string) map[string]any {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/runs/" + id, token: token, valid: true})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	return r.json(e.t)
}

// await polls a run until it has finished.
func (e *env) await(token, id string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		run := e.run(token, id)
		if s := run["status"]; s != "queued" && s != "running" {
			return run
		}
		require.True(e.t, time.Now().Before(deadline), "run %s did not finish", id)
		time.Sleep(10 * time.Millisecond)
	}
}

// events reads a run's whole event stream (the run must end).
func (e *env) events(token, id string, header map[string]string) []sse {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/runs/" + id + "/events", token: token, header: header, valid: true})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	return parseSSE(e.t, r.body)
}

func types(evs []sse) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.event
	}
	return out
}

func storeCaps(running, perToken, queue, queuePerToken int) store.Caps {
	return store.Caps{Running: running, RunningPerToken: perToken, Queue: queue, QueuePerToken: queuePerToken}
}
