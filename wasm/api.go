//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// engine is the state behind the exported API object: the session (after
// load) and the runs in progress, each cancellable by id.
type engine struct {
	mu      sync.Mutex
	session *lab.Session
	bundled *recording.File // parsed once, at load
	runs    map[int]context.CancelFunc
	nextRun int
	funcs   []js.Func
	exit    chan struct{}
	clock   func() time.Time
	rr      reranks // the Rerank view's lab, ledger and live recording
}

func newEngine() *engine {
	return &engine{runs: map[int]context.CancelFunc{}, exit: make(chan struct{}), clock: time.Now}
}

// object builds the API object; its functions live until exit().
func (e *engine) object() js.Value {
	api := js.Global().Get("Object").New()
	export := func(name string, f func(args []js.Value) any) {
		fn := js.FuncOf(func(_ js.Value, args []js.Value) any { return f(args) })
		e.funcs = append(e.funcs, fn)
		api.Set(name, fn)
	}
	api.Set("version", apiVersion)
	e.exportRerank(export) // the Rerank view's methods (rerank.go)
	export("load", func([]js.Value) any { return promise(e.load) })
	export("corpus", func([]js.Value) any { return promise(e.corpus) })
	export("search", func(args []js.Value) any {
		opts := fromJS(arg(args, 0))
		return promise(func() (any, error) { return e.search(opts) })
	})
	export("replay", func(args []js.Value) any {
		opts := arg(args, 0)
		text, caseID := field(opts, "recording"), field(opts, "caseId")
		onTrial, _ := callback(args, 1)
		var data []byte
		if text.Type() == js.TypeString {
			data = []byte(text.String())
		}
		id := ""
		if caseID.Type() == js.TypeString {
			id = caseID.String()
		}
		return promise(func() (any, error) { return e.replay(data, id, onTrial) })
	})
	export("policies", func([]js.Value) any { return promise(func() (any, error) { return policyInfo(), nil }) })
	export("plan", func(args []js.Value) any {
		spec := fromJS(arg(args, 0))
		return promise(func() (any, error) { return e.plan(spec) })
	})
	export("run", func(args []js.Value) any { return e.run(arg(args, 0), arg(args, 1)) })
	export("cancel", func(args []js.Value) any {
		id := arg(args, 0)
		if id.Type() != js.TypeNumber {
			return false
		}
		return e.cancel(id.Int())
	})
	export("recording", func([]js.Value) any { return promise(e.recording) })
	export("warm", func(args []js.Value) any {
		rounds, round := arg(args, 0), arg(args, 1)
		n, from := 0, 0
		if rounds.Type() == js.TypeNumber {
			n = rounds.Int()
		}
		if round.Type() == js.TypeNumber {
			from = round.Int()
		}
		return promise(func() (any, error) { return e.warm(n, from) })
	})
	export("exit", func([]js.Value) any {
		e.mu.Lock()
		defer e.mu.Unlock()
		select {
		case <-e.exit:
		default:
			close(e.exit)
		}
		return nil
	})
	return api
}

// apiVersion names the API's shape; the shell checks it.
const apiVersion = "ragagent-wasm/1"

// release frees the API's functions once the module is done.
func (e *engine) release() {
	for _, f := range e.funcs {
		f.Release()
	}
	e.funcs = nil
}

func (e *engine) loaded() (*lab.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == nil {
		return nil, fmt.Errorf("the engine is not loaded: call load() first")
	}
	return e.session, nil
}

// load validates the corpus and cases and builds the FTS5 index, once.
func (e *engine) load() (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	started := time.Now()
	if e.session == nil {
		l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
		if err != nil {
			return nil, err
		}
		file, err := recording.Parse(recordings.AgentComparison)
		if err != nil {
			return nil, fmt.Errorf("the bundled recording: %w", err)
		}
		session, err := lab.NewSession(l, gemini.MaxAllowance, e.clock)
		if err != nil {
			return nil, err
		}
		e.session, e.bundled = session, file
	}
	l := e.session.Lab()
	versions := map[string]bool{}
	for _, p := range l.Snapshot.Passages {
		versions[p.Version] = true
	}
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	limits := []any{}
	for _, f := range agent.LimitFields() {
		limits = append(limits, map[string]any{"name": f.Name, "max": f.Max})
	}
	return map[string]any{
		"api":      apiVersion,
		"passages": passages(l.Snapshot),
		"cases":    l.Cases.Cases,
		"versions": vs,
		"limits":   map[string]any{"fields": limits, "defaults": agent.DefaultLimits()},
		"modes":    []string{string(agent.Agent), string(agent.Fixed)},
		"policies": policyInfo(),
		"constants": map[string]any{
			"model": gemini.Model, "endpoint": gemini.Endpoint,
			"listwise_model": reranklab.ListwiseModel, "listwise_endpoint": gemini.ModelEndpoint(reranklab.ListwiseModel),
			"default_version": "3.12", "search_k": agent.SearchK, "max_question_chars": 512,
			"caps": map[string]any{"request_bytes": gemini.MaxRequestBytes, "response_bytes": gemini.MaxResponseBytes,
				"call_timeout_seconds": int(gemini.MaxCallTimeout.Seconds()), "allowance_max": gemini.MaxAllowance,
				"retries": 0, "redirects": "refused"},
			"prices":        pagePrices(defaultListwiseRate()),
			"estimate_note": lab.EstimateNote,
		},
		"open_ms": float64(time.Since(started).Microseconds()) / 1000,
	}, nil
}

type passageInfo struct {
	corpus.Passage
	Bytes int `json:"bytes"`
}

func passages(s *corpus.Snapshot) []passageInfo {
	out := make([]passageInfo, len(s.Passages))
	for i, p := range s.Passages {
		out[i] = passageInfo{Passage: p, Bytes: p.Bytes()}
	}
	return out
}

func (e *engine) corpus() (any, error) {
	s, err := e.loaded()
	if err != nil {
		return nil, err
	}
	return passages(s.Lab().Snapshot), nil
}

// maxSearchK bounds a diagnostic search's page.
const maxSearchK = 10

// search runs the FTS5 query with scores, for the Corpus view. version ""
// searches every version.
func (e *engine) search(opts string) (any, error) {
	s, err := e.loaded()
	if err != nil {
		return nil, err
	}
	v, err := pyjson.Decode(opts)
	if err != nil {
		return nil, fmt.Errorf("search: options are not JSON: %v", err)
	}
	o, _ := v.(*pyjson.Object)
	query, _ := get(o, "query").(string)
	version, _ := get(o, "version").(string)
	k := agent.SearchK
	if n, ok := get(o, "k").(pyjson.Number); ok {
		if i, whole := n.Int(); whole {
			k = i
		}
	}
	if k < 1 || k > maxSearchK {
		return nil, fmt.Errorf("search: k must be from 1 to %d", maxSearchK)
	}
	started := time.Now()
	hits, err := s.Lab().Explain(query, k, version)
	if err != nil {
		return nil, err
	}
	return map[string]any{"query": query, "version": version, "k": k, "hits": hits,
		"terms": termsOf(query), "elapsed_ms": float64(time.Since(started).Microseconds()) / 1000}, nil
}

func get(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

// replay replays a recording (the bundled comparison when data is nil),
// optionally only one case's trials, reporting each trial as it is done.
func (e *engine) replay(data []byte, caseID string, onTrial js.Value) (any, error) {
	s, err := e.loaded()
	if err != nil {
		return nil, err
	}
	started := time.Now()
	source, file := "bundled", e.bundled
	if data != nil {
		source = "loaded"
		if file, err = recording.Parse(data); err != nil {
			return nil, err
		}
	}
	if caseID != "" {
		kept := *file
		kept.Trials = nil
		for _, t := range file.Trials {
			if t.CaseID == caseID {
				kept.Trials = append(kept.Trials, t)
			}
		}
		file = &kept
	}
	total := len(file.Trials)
	done := 0
	report, err := s.Lab().Replay(context.Background(), file, func(tr lab.TrialReport) {
		done++
		notify(onTrial, done, total, tr.ID)
	})
	if err != nil {
		return nil, err
	}
	used, exchanges := 0, 0
	for _, t := range report.Trials {
		used += t.ExchangesUsed
		exchanges += t.Exchanges
	}
	return map[string]any{"source": source, "model": file.Model, "endpoint": file.Endpoint,
		"recorded_at": file.RecordedAt, "trials": report.Trials, "summary": report.Summary,
		"exchanges": exchanges, "exchanges_used": used,
		"elapsed_ms": float64(time.Since(started).Microseconds()) / 1000}, nil
}

// recording is the session's recording as ragagent-recording/1 text.
func (e *engine) recording() (any, error) {
	s, err := e.loaded()
	if err != nil {
		return nil, err
	}
	f := s.Recording()
	text, err := writeRecording(f)
	if err != nil {
		return nil, err
	}
	return map[string]any{"trials": len(f.Trials), "text": string(text)}, nil
}

// writeRecording is a recording as ragagent-recording/1 text.
func writeRecording(f *recording.File) ([]byte, error) {
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (e *engine) cancel(id int) bool {
	e.mu.Lock()
	stop, ok := e.runs[id]
	e.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}

// termsOf is the FTS5 expression a query becomes, for showing people.
func termsOf(query string) string {
	return store.MatchExpression(store.Terms(query))
}
