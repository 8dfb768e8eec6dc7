package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// Experiment kinds: a retrieval comparison (ragagent retrieval) and an
// agent experiment (ragagent eval --cases with the scripted policy).
const (
	KindRetrieval = "retrieval"
	KindAgent     = "agent"
)

// EventProgress is an experiment's event for each ranking or trial kept.
const EventProgress = "progress"

// The refusals of experiments, beside the core's invalid_cases,
// invalid_config and unknown_config.
const (
	CodeExperimentQuota = reason.Code("experiment_quota")
	CodeTooManyCases    = reason.Code("too_many_cases")
	CodeTooManyConfigs  = reason.Code("too_many_configs")
	CodeUnsupportedKind = reason.Code("unsupported_kind")
	// CodeUnsupportedPolicy refuses an agent experiment under a policy
	// other than scripted: gemini would spend through the ledger, which
	// experiments do not hold, and replay needs a recording.
	CodeUnsupportedPolicy = reason.Code("unsupported_policy")
	CodeNoResult          = reason.Code("no_result")
)

// The defaults of experiments' admission caps (Config's Experiment*).
const (
	DefaultExperimentsPerToken  = 4
	DefaultExperimentsRunning   = 1
	DefaultMaxExperimentCases   = 2000
	DefaultMaxExperimentConfigs = 16
	DefaultMaxExperimentBody    = 4 << 20
)

// ExperimentCaps bound experiments: how many a token may have queued or
// running, how many run at once in the server, and an experiment
// request's body, cases and configurations.
type ExperimentCaps struct {
	PerToken int
	Running  int
	Cases    int
	Configs  int
	Body     int64
}

func (c ExperimentCaps) withDefaults() ExperimentCaps {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.PerToken, DefaultExperimentsPerToken)
	def(&c.Running, DefaultExperimentsRunning)
	def(&c.Cases, DefaultMaxExperimentCases)
	def(&c.Configs, DefaultMaxExperimentConfigs)
	if c.Body <= 0 {
		c.Body = DefaultMaxExperimentBody
	}
	return c
}

// experimentSpec is an experiment's request as stored: what it starts
// from, and what a restarted server resumes it from. Cases is the
// ragagent-cases/1 object as sent (null: the pack's own cases); Configs
// the configurations as sent (each a name or a spec) and K a retrieval
// experiment's; Config (null: the pack's default) and Policy (always
// scripted) an agent experiment's.
type experimentSpec struct {
	Kind    string             `json:"kind"`
	Corpus  string             `json:"corpus"`
	Cases   json.RawMessage    `json:"cases"`
	Configs []engine.ConfigRef `json:"configs,omitempty"`
	K       int                `json:"k,omitempty"`
	Config  *engine.ConfigRef  `json:"config,omitempty"`
	Policy  string             `json:"policy,omitempty"`
}

// MarshalJSON keeps each kind's stored request to its own fields: a
// retrieval experiment's configs (null when absent) and k, an agent
// experiment's config (null: the pack's default) and policy.
func (sp experimentSpec) MarshalJSON() ([]byte, error) {
	if sp.Kind == KindAgent {
		return marshal(struct {
			Kind   string            `json:"kind"`
			Corpus string            `json:"corpus"`
			Cases  json.RawMessage   `json:"cases"`
			Config *engine.ConfigRef `json:"config"`
			Policy string            `json:"policy"`
		}{sp.Kind, sp.Corpus, rawOrNull(string(sp.Cases)), sp.Config, sp.Policy})
	}
	return marshal(struct {
		Kind    string             `json:"kind"`
		Corpus  string             `json:"corpus"`
		Cases   json.RawMessage    `json:"cases"`
		Configs []engine.ConfigRef `json:"configs"`
		K       int                `json:"k"`
	}{sp.Kind, sp.Corpus, rawOrNull(string(sp.Cases)), sp.Configs, sp.K})
}

// evalRequest is the engine's scripted eval for an agent spec: the same
// one at admission and at every start, so a resumed experiment runs the
// trials the first start planned.
func (sp experimentSpec) evalRequest() engine.EvalRequest {
	req := engine.EvalRequest{Corpus: sp.Corpus, Policy: engine.Scripted}
	if sp.Config != nil {
		req.Config = sp.Config.Name
		if sp.Config.Spec != nil {
			req.Config = string(sp.Config.Spec)
		}
	}
	if len(sp.Cases) > 0 && string(sp.Cases) != "null" {
		req.Cases = []byte(sp.Cases)
	}
	return req
}

// request is the engine's retrieval request for the spec: the same one
// at admission and at every start, so a resumed experiment ranks what the
// first start ranked.
func (sp experimentSpec) request() engine.RetrievalRequest {
	req := engine.RetrievalRequest{Corpus: sp.Corpus, Configs: sp.Configs, K: sp.K}
	if len(sp.Cases) > 0 && string(sp.Cases) != "null" {
		req.Cases = string(sp.Cases)
	}
	return req
}

// progressJSON is {"done", "total"}: rankings kept of those to make.
type progressJSON struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// experimentLinks are an experiment's URLs.
type experimentLinks struct {
	Self   string `json:"self"`
	Events string `json:"events"`
	Cancel string `json:"cancel"`
	Result string `json:"result"`
}

func experimentLinksOf(id string) experimentLinks {
	base := "/v1/experiments/" + id
	return experimentLinks{Self: base, Events: base + "/events", Cancel: base + "/cancel", Result: base + "/result"}
}

// experimentSummary is an experiment in a list (api: ExperimentSummary).
type experimentSummary struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	State      string          `json:"state"`
	Corpus     string          `json:"corpus"`
	Progress   progressJSON    `json:"progress"`
	Headline   json.RawMessage `json:"headline"`
	CreatedAt  string          `json:"created_at"`
	StartedAt  *string         `json:"started_at"`
	FinishedAt *string         `json:"finished_at"`
	Links      experimentLinks `json:"links"`
}

// experimentJSON is an experiment (api: Experiment): the summary, its
// request, and once succeeded the result `ragagent retrieval --json`
// prints for it, or the fault that ended it.
type experimentJSON struct {
	experimentSummary
	Request json.RawMessage `json:"request"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func experimentSummaryOf(x store.Experiment) experimentSummary {
	var sp experimentSpec
	_ = json.Unmarshal([]byte(x.Spec), &sp)
	return experimentSummary{ID: x.ID, Kind: x.Kind, State: x.State, Corpus: sp.Corpus,
		Progress: progressJSON{x.Done, x.Total}, Headline: rawOrNull(x.Headline),
		CreatedAt: x.CreatedAt.UTC().Format(time.RFC3339Nano), StartedAt: timeOrNil(x.StartedAt),
		FinishedAt: timeOrNil(x.FinishedAt), Links: experimentLinksOf(x.ID)}
}

func experimentOf(x store.Experiment) experimentJSON {
	return experimentJSON{experimentSummary: experimentSummaryOf(x), Request: json.RawMessage(x.Spec),
		Result: rawOrNull(x.Result), Error: rawOrNull(x.Error)}
}

// experimentEvent is an experiment's event data: its state and progress
// (and on a failed end its error; on progress the configuration and the
// answerable case, 0-based, just ranked).
func experimentEvent(typ string, x store.Experiment, at time.Time) store.NewEvent {
	data := struct {
		State    string          `json:"state"`
		Progress progressJSON    `json:"progress"`
		Error    json.RawMessage `json:"error,omitempty"`
	}{State: x.State, Progress: progressJSON{x.Done, x.Total}}
	if x.Error != "" {
		data.Error = json.RawMessage(x.Error)
	}
	b, _ := marshal(data)
	return store.NewEvent{Type: typ, Data: string(b), At: at}
}

// rankingJSON is a ranking as the store keeps it.
type rankingJSON struct {
	Rank    int   `json:"rank"`
	Matches []int `json:"matches"`
	Ideal   int   `json:"ideal"`
}

// experiments runs the experiments of this process, each on its own
// goroutine under a context its cancel or the server's shutdown ends;
// with a Dispatch (a Worker), in pieces at their owners (pieces.go).
type experiments struct {
	s      *Server
	st     store.Experiments // nil: the store keeps no experiments
	trials store.AgentTrials // nil: the store keeps no agent trials
	caps   ExperimentCaps
	mu     sync.Mutex
	active map[string]context.CancelCauseFunc
	wg     sync.WaitGroup
	start  sync.Mutex // one start loop at a time

	// pieces: experiments run in pieces of piece at their owners, when
	// the owner's runner calls (RunnerHandler's /runner/experiments/piece),
	// never on a goroutine of their own.
	pieces  bool
	piece   ExperimentPiece
	running sync.Mutex // one round of pieces at a time

	results ResultStore // nil: results are kept in the store's row
	inline  int         // the longest result kept there when results is set
}

// errShutdown stops an experiment for the server's shutdown: it stays
// running in the store, and the next Start resumes it.
var errShutdown = errors.New("the server is shutting down")

// errCancelled stops an experiment cancelled through the API.
var errCancelled = errors.New("cancelled")

// errPiece stops an experiment whose piece has done what it may: it
// stays running in the store, and its owner's next piece goes on.
var errPiece = errors.New("the piece is over")

func (xs *experiments) now() time.Time { return xs.s.clock() }

// admittedEvent is the queued event AddExperiment appends.
func (xs *experiments) admittedEvent(x store.Experiment) store.NewEvent {
	return experimentEvent(EventQueued, x, xs.now())
}

// resume relaunches the experiments a dead process left running (they
// hold their slots), then starts queued ones as the cap allows.
func (xs *experiments) resume(ctx context.Context) error {
	if xs.st == nil || xs.pieces {
		return nil // pieces: the owners' runners resume them
	}
	left, err := xs.st.RunningExperiments(ctx)
	if err != nil {
		return err
	}
	for _, x := range left {
		xs.s.log.Info("experiment resumed after a restart", "experiment", x.ID, "done", x.Done, "total", x.Total)
		xs.launch(x)
	}
	xs.startQueued()
	return nil
}

// startQueued starts queued experiments while fewer than the cap run.
func (xs *experiments) startQueued() {
	if xs.pieces {
		xs.startPieces()
		return
	}
	xs.start.Lock()
	defer xs.start.Unlock()
	for !xs.s.isClosing() {
		x, ok, err := xs.st.StartExperiment(context.Background(), xs.caps.Running, xs.now(), func(x store.Experiment) store.NewEvent {
			return experimentEvent(EventStarted, x, xs.now())
		})
		if err != nil {
			xs.s.log.Error("server fault", "during", "starting a queued experiment", "error", err.Error())
			return
		}
		if !ok {
			return
		}
		xs.s.hub.notify(x.ID)
		xs.launch(x)
	}
}

// launch runs a running experiment: the engine's Retrieval over its
// stored request, given the rankings kept before (a resumed experiment
// ranks only the rest), keeping each ranking with its progress event as
// it is made; then it ends succeeded with the command line's bytes,
// failed with the refusal, or cancelled. A shutdown leaves it running.
func (xs *experiments) launch(x store.Experiment) {
	ctx, stop := context.WithCancelCause(context.Background())
	xs.mu.Lock()
	xs.active[x.ID] = stop
	xs.mu.Unlock()
	xs.wg.Add(1)
	xs.s.goRun(func() {
		defer xs.wg.Done()
		defer func() {
			xs.mu.Lock()
			delete(xs.active, x.ID)
			xs.mu.Unlock()
			stop(nil)
			xs.s.hub.notify(x.ID)
			xs.startQueued()
		}()
		if o, ok := xs.execute(ctx, x, nil); ok {
			xs.finish(x.ID, o)
		}
	})
}

// finish ends an experiment with its outcome, appending end.
func (xs *experiments) finish(id string, o store.ExperimentOutcome) {
	o.At = xs.now()
	aside := "" // the key of a result kept aside
	if xs.results != nil && len(o.Result) > xs.inline {
		key := resultKeyPrefix + id
		if err := xs.results.PutResult(context.Background(), key, []byte(o.Result)); err != nil {
			xs.s.log.Error("server fault", "during", "keeping an experiment's result aside", "experiment", id, "error", err.Error())
			b, _ := marshal(errorBody{Code: CodeInternal, Message: "the server failed while keeping the result"})
			o = store.ExperimentOutcome{State: store.ExperimentFailed, Error: string(b), At: o.At}
		} else {
			xs.s.log.Info("experiment result kept aside", "experiment", id, "bytes", len(o.Result))
			o.Result, aside = strconv.Quote(key), key
		}
	}
	end := func(e store.Experiment) store.NewEvent { return experimentEvent(EventEnd, e, xs.now()) }
	ended, done, err := xs.st.FinishExperiment(context.Background(), id, o, end)
	var tooLarge *store.TooLargeError
	if errors.As(err, &tooLarge) {
		// A result the store cannot keep (D1's row) ends the experiment
		// failed, saying why, rather than running to no end.
		b, _ := marshal(errorBody{Code: CodeTooManyCases, Message: fmt.Sprintf(
			"the result is %d bytes with its request, more than this server's store keeps in a row (%d): rank fewer cases or configurations", tooLarge.Bytes, tooLarge.Max)})
		ended, done, err = xs.st.FinishExperiment(context.Background(), id, store.ExperimentOutcome{State: store.ExperimentFailed, Error: string(b), At: o.At}, end)
	}
	if aside != "" && (err != nil || !done) {
		// The experiment ended otherwise meanwhile (a cancel): the result
		// kept aside is no one's.
		if derr := xs.results.DeleteResult(context.Background(), aside); derr != nil {
			xs.s.log.Error("server fault", "during", "removing a result kept aside", "experiment", id, "error", derr.Error())
		}
	}
	switch {
	case err != nil:
		xs.s.log.Error("server fault", "during", "finishing an experiment", "experiment", id, "error", err.Error())
	case done:
		xs.s.log.Info("experiment finished", "experiment", id, "state", ended.State)
	}
}

// execute runs the experiment and says how it ended; ok is false when
// it is left as the store has it (shut down, cancelled meanwhile, or its
// piece b over: nil, natively, bounds nothing).
func (xs *experiments) execute(ctx context.Context, x store.Experiment, b *budget) (store.ExperimentOutcome, bool) {
	failed := func(code reason.Code, message string) (store.ExperimentOutcome, bool) {
		b, _ := marshal(errorBody{Code: code, Message: message})
		return store.ExperimentOutcome{State: store.ExperimentFailed, Error: string(b)}, true
	}
	var sp experimentSpec
	if err := json.Unmarshal([]byte(x.Spec), &sp); err != nil || (sp.Kind != KindRetrieval && sp.Kind != KindAgent) {
		return failed(CodeInternal, "the stored request could not be read")
	}
	eng, err := xs.s.engine.get()
	if err != nil {
		return failed(CodeInternal, "the engine could not be opened")
	}
	if err := xs.s.openUpload(ctx, x.TokenID, sp.Corpus); err != nil {
		xs.s.log.Error("server fault", "during", "opening an experiment's uploaded corpus", "experiment", x.ID, "error", err.Error())
		return failed(CodeInternal, "the server failed while opening the uploaded corpus")
	}
	if sp.Kind == KindAgent {
		return xs.executeAgent(ctx, x, sp, eng, b, failed)
	}
	kept, err := xs.st.Rankings(ctx, x.ID)
	if err != nil {
		xs.s.log.Error("server fault", "during", "reading an experiment's rankings", "experiment", x.ID, "error", err.Error())
		return failed(CodeInternal, "the server failed while reading the rankings kept")
	}
	req := sp.request()
	req.Done = make(map[engine.RankedCase]experiment.Ranking, len(kept))
	for _, k := range kept {
		var r rankingJSON
		if err := json.Unmarshal([]byte(k.Data), &r); err != nil {
			return failed(CodeInternal, "a ranking kept could not be read")
		}
		req.Done[engine.RankedCase{C: k.C, A: k.A}] = experiment.Ranking{Rank: r.Rank, Matches: r.Matches, Ideal: r.Ideal}
	}
	done := len(kept)
	var keepErr error
	req.OnRanked = func(c, a int, r experiment.Ranking) error {
		data, _ := marshal(rankingJSON{Rank: r.Rank, Matches: r.Matches, Ideal: r.Ideal})
		done++
		ev := experimentEvent(EventProgress, store.Experiment{State: store.ExperimentRunning, Done: done, Total: x.Total}, xs.now())
		if _, err := xs.st.KeepRanking(context.Background(), x.ID, store.Ranked{C: c, A: a, Data: string(data)}, done, ev); err != nil {
			keepErr = err
			return err
		}
		xs.s.hub.notify(x.ID)
		b.spend(done < x.Total)
		return nil
	}
	res, err := eng.Retrieval(ctx, req)
	if o, ended := xs.stopped(ctx, x.ID, "ranking", "ranked", keepErr, err, failed); ended {
		return o, o.State != ""
	}
	data, err := res.JSON()
	if err != nil {
		return failed(CodeInternal, "the result could not be encoded")
	}
	return store.ExperimentOutcome{State: store.ExperimentSucceeded, Result: string(data), Headline: headline(res)}, true
}

// stopped says how an experiment whose engine returned err ended, when it
// did not succeed (ended true): left as the store has it (a zero outcome:
// cancelled, or shut down to resume), failed for a revoked token or a
// fault keeping a unit of work (what: "ranking" or "trial"), or failed
// with the engine's refusal.
func (xs *experiments) stopped(ctx context.Context, id, what, done string, keepErr, err error,
	failed func(reason.Code, string) (store.ExperimentOutcome, bool)) (store.ExperimentOutcome, bool) {
	switch cause := context.Cause(ctx); {
	case errors.Is(keepErr, store.ErrNotRunning), errors.Is(cause, errCancelled):
		return store.ExperimentOutcome{}, true // the cancel ended it in the store
	case errors.Is(cause, errShutdown):
		return store.ExperimentOutcome{}, true // the next Start resumes it
	case errors.Is(cause, errPiece):
		return store.ExperimentOutcome{}, true // the owner's next piece goes on
	case errors.Is(keepErr, store.ErrRevoked):
		o, _ := failed(store.TokenRevoked, "the experiment's token was revoked; nothing was "+done+" after")
		return o, true
	case keepErr != nil:
		xs.s.log.Error("server fault", "during", "keeping a "+what, "experiment", id, "error", keepErr.Error())
		o, _ := failed(CodeInternal, "the server failed while keeping a "+what)
		return o, true
	case err != nil:
		if message, ok := unknownPack(err); ok {
			o, _ := failed(CodeUnknownCorpus, message)
			return o, true
		}
		code, ok := reason.Of(err)
		if !ok {
			o, _ := failed(CodeInternal, err.Error())
			return o, true
		}
		o, _ := failed(code, reason.DetailOf(err))
		return o, true
	}
	return store.ExperimentOutcome{}, false
}

// executeAgent runs an agent experiment: the engine's scripted Eval over
// its stored request, given the trials kept before (a resumed experiment
// runs only the rest), keeping each graded trial with its progress event
// as it ends; it succeeds with `ragagent eval --json`'s object.
func (xs *experiments) executeAgent(ctx context.Context, x store.Experiment, sp experimentSpec, eng *engine.Engine, b *budget,
	failed func(reason.Code, string) (store.ExperimentOutcome, bool)) (store.ExperimentOutcome, bool) {
	if xs.trials == nil {
		return failed(CodeUnsupportedKind, "this server's store keeps no agent trials")
	}
	kept, err := xs.trials.Trials(ctx, x.ID)
	if err != nil {
		xs.s.log.Error("server fault", "during", "reading an experiment's trials", "experiment", x.ID, "error", err.Error())
		return failed(CodeInternal, "the server failed while reading the trials kept")
	}
	req := sp.evalRequest()
	req.Done = make(map[int]report.Trial, len(kept))
	for _, k := range kept {
		var tr report.Trial
		if err := json.Unmarshal([]byte(k.Data), &tr); err != nil || tr.ID != k.ID {
			return failed(CodeInternal, "a trial kept could not be read")
		}
		req.Done[k.Index] = tr
	}
	done := len(kept)
	var keepErr error
	req.OnGraded = func(i int, tr report.Trial) error {
		data, err := marshal(tr)
		if err != nil {
			keepErr = err
			return err
		}
		done++
		ev := experimentEvent(EventProgress, store.Experiment{State: store.ExperimentRunning, Done: done, Total: x.Total}, xs.now())
		if _, err := xs.trials.KeepTrial(context.Background(), x.ID, store.Trial{Index: i, ID: tr.ID, Data: string(data)}, done, ev); err != nil {
			keepErr = err
			return err
		}
		xs.s.hub.notify(x.ID)
		b.spend(done < x.Total)
		return nil
	}
	res, err := eng.Eval(ctx, req)
	if o, ended := xs.stopped(ctx, x.ID, "trial", "run", keepErr, err, failed); ended {
		return o, o.State != ""
	}
	data, err := res.JSON()
	if err != nil {
		return failed(CodeInternal, "the result could not be encoded")
	}
	return store.ExperimentOutcome{State: store.ExperimentSucceeded, Result: string(data), Headline: agentHeadline(res)}, true
}

// agentHeadline is what a list shows of a finished agent experiment: the
// agent path's pass rate (null when it had no trial).
func agentHeadline(res *engine.EvalResult) string {
	var value *float64
	for _, p := range res.Experiment.Paths {
		if p.Path != "agent" {
			continue
		}
		for _, r := range p.Rates {
			if r.Name == engine.RatePass {
				value = r.Value
			}
		}
	}
	b, _ := marshal(struct {
		Metric string   `json:"metric"`
		Path   string   `json:"path"`
		Value  *float64 `json:"value"`
	}{engine.RatePass, "agent", value})
	return string(b)
}

// headline is what a list shows of a finished retrieval experiment: the
// configuration with the best mrr@10 (the first of equals) and its value.
func headline(res *engine.RetrievalResult) string {
	best := 0
	for i, c := range res.Configs {
		if c.Metrics.MRR10.Value > res.Configs[best].Metrics.MRR10.Value {
			best = i
		}
	}
	b, _ := marshal(struct {
		Metric string  `json:"metric"`
		Config string  `json:"config"`
		Value  float64 `json:"value"`
	}{engine.MRR10, res.Configs[best].Name, res.Configs[best].Metrics.MRR10.Value})
	return string(b)
}

// stopAll stops every experiment of this process for a shutdown.
func (xs *experiments) stopAll() {
	xs.mu.Lock()
	defer xs.mu.Unlock()
	for _, stop := range xs.active {
		stop(errShutdown)
	}
}

func (xs *experiments) cancel(id string) {
	xs.mu.Lock()
	defer xs.mu.Unlock()
	if stop, ok := xs.active[id]; ok {
		stop(errCancelled)
	}
}

func (xs *experiments) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { xs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Routes.

func (s *Server) experimentsRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.authed(s.listExperiments, ScopeRead)(w, r)
	case http.MethodPost:
		s.authed(s.createExperiment, ScopeRun)(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or POST").write(w)
	}
}

var noExperiments = refuse(http.StatusServiceUnavailable, CodeUnavailable, "this server's store keeps no experiments")

// createExperiment checks the request (its shape, kind, corpus, caps and,
// by the engine's plan, its configurations and question set) before
// anything is stored, then admits it queued under the token's cap: 202.
func (s *Server) createExperiment(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	xs := &s.experiments
	if xs.st == nil {
		return noExperiments
	}
	if s.isClosing() {
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	data, aerr := readBodyUpTo(w, r, xs.caps.Body)
	if aerr != nil {
		return aerr
	}
	t := tokenOf(r)
	sp, aerr := s.parseExperiment(data, t.ID)
	if aerr != nil {
		return aerr
	}
	hex, err := randomHex(10)
	if err != nil {
		return s.internal("naming the experiment", err)
	}
	id := "exp_" + hex
	sp, total, aerr := s.checkExperiment(r.Context(), id, t.ID, sp)
	if aerr != nil {
		return aerr
	}
	spec, err := marshal(sp)
	if err != nil {
		return s.internal("encoding the experiment", err)
	}
	var tooLarge *store.TooLargeError
	x, err := xs.st.AddExperiment(r.Context(), store.NewExperiment{ID: id, TokenID: t.ID, Kind: sp.Kind,
		Spec: string(spec), Total: total, At: s.clock()}, xs.caps.PerToken, xs.admittedEvent)
	switch {
	case errors.Is(err, store.ErrExperimentQuota):
		e := refuse(http.StatusTooManyRequests, CodeExperimentQuota, fmt.Sprintf(
			"the token has %d experiments queued or running, its cap; wait for one to end or cancel one", xs.caps.PerToken))
		e.retryAfter = 1
		return e
	case errors.Is(err, store.ErrRevoked):
		return unauthorized
	case errors.As(err, &tooLarge):
		return refuse(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf(
			"the experiment's request is %d bytes as stored, more than this server's store keeps in a row (%d): send fewer or shorter cases", tooLarge.Bytes, tooLarge.Max))
	case err != nil:
		return s.internal("admitting the experiment", err)
	}
	xs.startQueued()
	if now, found, err := xs.st.Experiment(r.Context(), x.ID); err == nil && found {
		x = now
	}
	w.Header().Set("Location", experimentLinksOf(x.ID).Self)
	writeJSON(w, http.StatusAccepted, experimentOf(x))
	return nil
}

// planExperiment checks tenant's experiment by the engine's plan (its
// configurations, its question set against the pack, opened first when
// it is the tenant's upload, the caps): its spec
// with k set, and what progress counts (an agent experiment's trials,
// each case on both paths; a retrieval one's rankings), or the refusal.
func (s *Server) planExperiment(ctx context.Context, tenant string, sp experimentSpec) (experimentSpec, int, *apiError) {
	xs := &s.experiments
	eng, err := s.engine.get()
	if err != nil {
		return sp, 0, s.internal("opening the engine", err)
	}
	if err := s.openUpload(ctx, tenant, sp.Corpus); err != nil {
		return sp, 0, s.internal("opening the uploaded corpus", err)
	}
	refused := func(err error) *apiError {
		if message, ok := unknownPack(err); ok {
			return refuse(http.StatusBadRequest, CodeUnknownCorpus, message)
		}
		code, ok := reason.Of(err)
		if !ok {
			return refuse(http.StatusBadRequest, CodeInvalidField, err.Error())
		}
		return refuse(http.StatusBadRequest, code, reason.DetailOf(err))
	}
	tooMany := func(cases int) *apiError {
		if cases > xs.caps.Cases {
			return refuse(http.StatusBadRequest, CodeTooManyCases, fmt.Sprintf("the question set has %d cases; this server takes at most %d in an experiment", cases, xs.caps.Cases))
		}
		return nil
	}
	// total counts what progress counts: an agent experiment's trials
	// (each case on both paths), a retrieval one's rankings.
	var total int
	switch sp.Kind {
	case KindAgent:
		plan, err := eng.PlanEval(sp.evalRequest())
		if err != nil {
			return sp, 0, refused(err)
		}
		if aerr := tooMany(plan.Cases); aerr != nil {
			return sp, 0, aerr
		}
		total = len(plan.Trials)
	default:
		plan, err := eng.PlanRetrieval(sp.request())
		if err != nil {
			return sp, 0, refused(err)
		}
		if aerr := tooMany(plan.Cases); aerr != nil {
			return sp, 0, aerr
		}
		if len(plan.Configs) > xs.caps.Configs {
			return sp, 0, refuse(http.StatusBadRequest, CodeTooManyConfigs, fmt.Sprintf("the experiment compares %d configurations; this server takes at most %d", len(plan.Configs), xs.caps.Configs))
		}
		sp.K, total = plan.K, plan.Total()
	}
	return sp, total, nil
}

// checkExperiment plans the experiment here, or, where another process
// owns it (a Worker's front: its run object), has the owner plan it
// (Dispatch.Plan): the plan opens the pack, which the owner holds open
// to run it, and a front that opened it too would hold it beside the
// owner's in the isolate they may share.
func (s *Server) checkExperiment(ctx context.Context, id, tenant string, sp experimentSpec) (experimentSpec, int, *apiError) {
	if s.dispatch == nil || s.dispatch.Local(id) {
		return s.planExperiment(ctx, tenant, sp)
	}
	spec, err := marshal(sp)
	if err != nil {
		return sp, 0, s.internal("encoding the experiment", err)
	}
	status, body, err := s.dispatch.Plan(ctx, id, tenant, spec)
	if err != nil {
		return sp, 0, s.internal("checking the experiment at its runner", err)
	}
	if status != http.StatusOK {
		var refusal struct {
			Error errorBody `json:"error"`
		}
		if err := json.Unmarshal(body, &refusal); err != nil || refusal.Error.Code == "" {
			return sp, 0, s.internal("checking the experiment at its runner", fmt.Errorf("%d %s", status, body))
		}
		return sp, 0, refuse(status, refusal.Error.Code, refusal.Error.Message)
	}
	var planned struct{ Total, K int }
	if err := json.Unmarshal(body, &planned); err != nil {
		return sp, 0, s.internal("checking the experiment at its runner", err)
	}
	sp.K = planned.K
	return sp, planned.Total, nil
}

// ResultStore keeps experiments' results outside the store's row
// (Config.Results: a Worker's R2). The row then holds the result's key
// as a JSON string, which no result is (each is an object).
type ResultStore interface {
	// PutResult keeps data under key, replacing what was there.
	PutResult(ctx context.Context, key string, data []byte) error
	// Result is what PutResult kept under key.
	Result(ctx context.Context, key string) ([]byte, error)
	// DeleteResult removes what PutResult kept under key, if anything.
	DeleteResult(ctx context.Context, key string) error
}

// DefaultInlineResult is the longest result kept in the store's row
// when a ResultStore is set: well inside D1's 2,000,000 bytes, with the
// request beside it.
const DefaultInlineResult = 256 << 10

// resultKeyPrefix names a result kept aside: results/<experiment id>.
const resultKeyPrefix = "results/"

// withResult is x with its result as the client gets it: a result kept
// aside (the row holds its key, a JSON string) read back.
func (xs *experiments) withResult(ctx context.Context, x store.Experiment) (store.Experiment, error) {
	if !strings.HasPrefix(x.Result, `"`) {
		return x, nil
	}
	var key string
	if err := json.Unmarshal([]byte(x.Result), &key); err != nil || xs.results == nil {
		return x, fmt.Errorf("experiment %s: its result is kept aside (%s) and this server keeps none", x.ID, x.Result)
	}
	data, err := xs.results.Result(ctx, key)
	if err != nil {
		return x, fmt.Errorf("experiment %s: reading its result: %w", x.ID, err)
	}
	x.Result = string(data)
	return x, nil
}

// unknownPack is the client's message for an engine that holds no pack
// of the corpus asked for: the corpus alone, as parseExperiment names
// it. The engine's own message lists every pack it holds, other tenants'
// uploads among them.
func unknownPack(err error) (string, bool) {
	var unknown *engine.UnknownPackError
	if !errors.As(err, &unknown) {
		return "", false
	}
	return fmt.Sprintf("no corpus %q among this token's corpora", unknown.ID), true
}

// PlanPath is RunnerHandler's path that plans experiment id of tenant
// (the token's ID, whose upload it may name) at its owner.
func PlanPath(id, tenant string) string {
	return "/runner/plan?" + url.Values{"id": {id}, "token": {tenant}}.Encode()
}

// planAtOwner is RunnerHandler's POST /runner/plan: the experiment's
// spec (as stored) planned here for its tenant (PlanPath), {"total",
// "k"} or the refusal.
func (s *Server) planAtOwner(w http.ResponseWriter, r *http.Request) {
	var sp experimentSpec
	if err := json.NewDecoder(r.Body).Decode(&sp); err != nil || (sp.Kind != KindRetrieval && sp.Kind != KindAgent) {
		refuse(http.StatusBadRequest, CodeMalformedRequest, "the body is not an experiment to plan").write(w)
		return
	}
	if sp.Kind == KindAgent && s.experiments.trials == nil {
		refuse(http.StatusBadRequest, CodeUnsupportedKind, "this server's store keeps no agent trials; send kind \"retrieval\"").write(w)
		return
	}
	sp, total, aerr := s.planExperiment(r.Context(), r.URL.Query().Get("token"), sp)
	if aerr != nil {
		aerr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"total": total, "k": sp.K})
}

// experimentFields are an experiment request's keys, by kind.
var experimentFields = map[string]map[string]bool{
	KindRetrieval: {"kind": true, "corpus": true, "cases": true, "configs": true, "k": true},
	KindAgent:     {"kind": true, "corpus": true, "cases": true, "config": true, "policy": true},
}

// parseExperiment reads an experiment request strictly: one JSON object
// with no repeated key, only its kind's experimentFields, kind
// "retrieval" or "agent" (unsupported_kind when the store keeps no agent
// trials), a corpus the token may name (a built-in pack or its own
// upload; another token's is unknown_corpus), cases a ragagent-cases/1
// object (or absent: the pack's own); for retrieval configs names or
// specs (absent: all) and k a whole number, for agent config a name or a
// spec (absent: the pack's default) and policy "scripted" (absent: the
// same; gemini and replay are unsupported_policy).
func (s *Server) parseExperiment(data []byte, tenant string) (experimentSpec, *apiError) {
	var sp experimentSpec
	if _, aerr := decodeObject(data); aerr != nil {
		return sp, aerr
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return sp, refuse(http.StatusBadRequest, CodeMalformedJSON, "the body is not a JSON object")
	}
	for k := range fields {
		if !experimentFields[KindRetrieval][k] && !experimentFields[KindAgent][k] {
			return sp, refuse(http.StatusBadRequest, CodeUnknownField, fmt.Sprintf("unknown field %q (kind, corpus, cases; configs and k for retrieval, config and policy for agent)", k))
		}
	}
	invalid := func(format string, a ...any) (experimentSpec, *apiError) {
		return experimentSpec{}, refuse(http.StatusBadRequest, CodeInvalidField, fmt.Sprintf(format, a...))
	}
	if err := json.Unmarshal(fields["kind"], &sp.Kind); err != nil || fields["kind"] == nil {
		return invalid("kind must be \"retrieval\" or \"agent\"")
	}
	switch sp.Kind {
	case KindRetrieval:
	case KindAgent:
		if s.experiments.trials == nil {
			return sp, refuse(http.StatusBadRequest, CodeUnsupportedKind, "this server's store keeps no agent trials; send kind \"retrieval\"")
		}
	default:
		return invalid("kind must be \"retrieval\" or \"agent\", not %q", sp.Kind)
	}
	for k := range fields {
		if !experimentFields[sp.Kind][k] {
			return sp, refuse(http.StatusBadRequest, CodeUnknownField, fmt.Sprintf("field %q is not a %s experiment's", k, sp.Kind))
		}
	}
	if err := json.Unmarshal(fields["corpus"], &sp.Corpus); err != nil || fields["corpus"] == nil || sp.Corpus == "" {
		return invalid("corpus must name a pack: a built-in one or this token's upload")
	}
	if !s.mayName(tenant, sp.Corpus) {
		return sp, refuse(http.StatusBadRequest, CodeUnknownCorpus, fmt.Sprintf("no corpus %q among this token's corpora", sp.Corpus))
	}
	if c, ok := fields["cases"]; ok {
		if len(c) == 0 || c[0] != '{' {
			return invalid("cases must be a ragagent-cases/1 object")
		}
		// Counted before the set is parsed and checked against the pack:
		// a huge set is refused without that work.
		var set struct{ Cases []json.RawMessage }
		if err := json.Unmarshal(c, &set); err == nil && len(set.Cases) > s.experiments.caps.Cases {
			return sp, refuse(http.StatusBadRequest, CodeTooManyCases, fmt.Sprintf("the question set has %d cases; this server takes at most %d in an experiment", len(set.Cases), s.experiments.caps.Cases))
		}
		sp.Cases = c
	}
	if c, ok := fields["configs"]; ok {
		var refs []json.RawMessage
		if err := json.Unmarshal(c, &refs); err != nil || len(refs) == 0 {
			return invalid("configs must be a list of configurations' names (or \"all\") and specs")
		}
		if len(refs) > s.experiments.caps.Configs {
			return sp, refuse(http.StatusBadRequest, CodeTooManyConfigs, fmt.Sprintf("configs names %d configurations; this server takes at most %d", len(refs), s.experiments.caps.Configs))
		}
		for _, ref := range refs {
			var cr engine.ConfigRef
			if err := cr.UnmarshalJSON(ref); err != nil {
				code, _ := reason.Of(err)
				return sp, refuse(http.StatusBadRequest, code, reason.DetailOf(err))
			}
			sp.Configs = append(sp.Configs, cr)
		}
	}
	if c, ok := fields["config"]; ok {
		var cr engine.ConfigRef
		if err := cr.UnmarshalJSON(c); err != nil {
			code, _ := reason.Of(err)
			return sp, refuse(http.StatusBadRequest, code, reason.DetailOf(err))
		}
		sp.Config = &cr
	}
	if sp.Kind == KindAgent {
		sp.Policy = string(engine.Scripted)
		if p, ok := fields["policy"]; ok {
			var name string
			if err := json.Unmarshal(p, &name); err != nil {
				return sp, refuse(http.StatusBadRequest, CodeInvalidPolicy, "policy must be \"scripted\"")
			}
			switch engine.PolicyName(name) {
			case engine.Scripted:
			case engine.Gemini, engine.Replay:
				return sp, refuse(http.StatusBadRequest, CodeUnsupportedPolicy, fmt.Sprintf(
					"this server runs agent experiments with the scripted policy only, not %q (a gemini experiment would spend through the ledger; run it with ragagent eval --policy gemini)", name))
			default:
				return sp, refuse(http.StatusBadRequest, CodeInvalidPolicy, fmt.Sprintf("policy %q is not scripted", name))
			}
		}
	}
	if k, ok := fields["k"]; ok {
		n, err := strconv.Atoi(string(k))
		if err != nil {
			return invalid("k must be a whole number from 1 to %d", engine.MaxRetrievalK)
		}
		if n < 1 || n > engine.MaxRetrievalK {
			return invalid("k must be from 1 to %d, got %d", engine.MaxRetrievalK, n)
		}
		sp.K = n
	}
	return sp, nil
}

// mayName reports whether the tenant's requests may name the corpus: a
// built-in pack or its own upload.
func (s *Server) mayName(tenant, id string) bool {
	for _, p := range s.runs.Corpora() {
		if p.Manifest.ID == id {
			return true
		}
	}
	if s.shelf != nil {
		_, ok := s.shelf.find(tenant, id)
		return ok
	}
	return false
}

// ownExperiment is the token's experiment the path names; another
// token's is not found, exactly like one that does not exist.
func (s *Server) ownExperiment(r *http.Request) (store.Experiment, *apiError) {
	if s.experiments.st == nil {
		return store.Experiment{}, noExperiments
	}
	id := r.PathValue("id")
	x, found, err := s.experiments.st.Experiment(r.Context(), id)
	if err != nil {
		return store.Experiment{}, s.internal("reading the experiment", err)
	}
	if !found || x.TokenID != tokenOf(r).ID {
		return store.Experiment{}, refuse(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no experiment %q among this token's experiments", id))
	}
	return x, nil
}

func (s *Server) getExperiment(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	x, aerr := s.ownExperiment(r)
	if aerr != nil {
		return aerr
	}
	x, err := s.experiments.withResult(r.Context(), x)
	if err != nil {
		return s.internal("reading the experiment's result", err)
	}
	writeJSON(w, http.StatusOK, experimentOf(x))
	return nil
}

// experimentResult sends a succeeded experiment's result with exactly
// the bytes `ragagent retrieval --json` prints for the same inputs.
func (s *Server) experimentResult(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	x, aerr := s.ownExperiment(r)
	if aerr != nil {
		return aerr
	}
	if x.State != store.ExperimentSucceeded {
		return refuse(http.StatusConflict, CodeNoResult, fmt.Sprintf("the experiment is %s: only a succeeded one has a result", x.State))
	}
	x, err := s.experiments.withResult(r.Context(), x)
	if err != nil {
		return s.internal("reading the experiment's result", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(x.Result))
	return nil
}

// listExperiments pages through the token's experiments, newest first,
// with their state, progress and headline (not their results).
func (s *Server) listExperiments(w http.ResponseWriter, r *http.Request) *apiError {
	if s.experiments.st == nil {
		return noExperiments
	}
	limit, before, aerr := pageOf(r)
	if aerr != nil {
		return aerr
	}
	xs, err := s.experiments.st.ExperimentsOf(r.Context(), tokenOf(r).ID, before, limit+1)
	if err != nil {
		return s.internal("listing experiments", err)
	}
	out := struct {
		Experiments []experimentSummary `json:"experiments"`
		NextCursor  *string             `json:"next_cursor"`
	}{Experiments: []experimentSummary{}}
	for i, x := range xs {
		if i == limit {
			next := strconv.FormatInt(xs[i-1].Seq, 10)
			out.NextCursor = &next
			break
		}
		out.Experiments = append(out.Experiments, experimentSummaryOf(x))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// cancelExperiment ends a queued or running experiment as cancelled (in
// the store at once: a ranking made after it is not kept) and stops its
// ranking: 200 with the experiment.
func (s *Server) cancelExperiment(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	x, aerr := s.ownExperiment(r)
	if aerr != nil {
		return aerr
	}
	if !x.Active() {
		return refuse(http.StatusConflict, CodeAlreadyFinished, fmt.Sprintf("the experiment already ended (%s)", x.State))
	}
	xs := &s.experiments
	ended, ok, err := xs.st.FinishExperiment(r.Context(), x.ID, store.ExperimentOutcome{State: store.ExperimentCancelled, At: s.clock()},
		func(e store.Experiment) store.NewEvent { return experimentEvent(EventEnd, e, s.clock()) })
	if err != nil {
		return s.internal("cancelling the experiment", err)
	}
	if !ok {
		now, _, err := xs.st.Experiment(r.Context(), x.ID)
		if err != nil {
			return s.internal("reading the experiment", err)
		}
		return refuse(http.StatusConflict, CodeAlreadyFinished, fmt.Sprintf("the experiment already ended (%s)", now.State))
	}
	xs.cancel(x.ID)
	s.hub.notify(x.ID)
	if xs.pieces {
		// A Worker's front: nothing of this request's may outlive it.
		xs.startQueued()
	} else {
		go xs.startQueued()
	}
	writeJSON(w, http.StatusOK, experimentOf(ended))
	return nil
}

// experimentEvents streams an experiment's events (queued, started, one
// progress per ranking kept, end), resumable with Last-Event-ID.
func (s *Server) experimentEvents(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	after, aerr := lastEventID(r)
	if aerr != nil {
		return aerr
	}
	x, aerr := s.ownExperiment(r)
	if aerr != nil {
		return aerr
	}
	if s.dispatch != nil && !s.dispatch.Local(x.ID) {
		// Its owner serves the stream (woken as it keeps each ranking)
		// and counts it.
		s.dispatch.Stream(w, r, StreamRequest{ID: x.ID, TokenID: x.TokenID, After: after, Capped: true, Experiment: true})
		return nil
	}
	release, aerr := s.acquireStream(x.TokenID)
	if aerr != nil {
		return aerr
	}
	defer release()
	s.streamOf(w, r, x.ID, after, s.heartbeat, nil, s.experimentTail)
	return nil
}

// experimentTail is an experiment's tail: its events and whether it left
// the queued and running states.
func (s *Server) experimentTail(ctx context.Context, id string, after int64, limit int) ([]store.Event, bool, bool, error) {
	st := s.experiments.st
	if st == nil {
		return nil, false, false, nil
	}
	state, evs, found, err := st.ExperimentTail(ctx, id, after, limit)
	return evs, state != store.ExperimentQueued && state != store.ExperimentRunning, found, err
}
