//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// apiVersion names the API's shape; the shell checks it.
const apiVersion = "ragagent-wasm/1"

// priceHint tells people how the page changes a shipped price.
const priceHint = "change it in the price fields"

// adapter is the state behind the exported API object: the engine (after
// load) and the API's functions, released at exit.
type adapter struct {
	mu     sync.Mutex
	engine *engine.Engine
	funcs  []js.Func
	exit   chan struct{}
}

func newAdapter() *adapter { return &adapter{exit: make(chan struct{})} }

// object builds the API object; its functions live until exit(). Each
// decodes its arguments, calls the engine and returns its typed result.
func (a *adapter) object() js.Value {
	api := js.Global().Get("Object").New()
	export := exporter(func(name string, f func(args []js.Value) any) {
		fn := js.FuncOf(func(_ js.Value, args []js.Value) any { return f(args) })
		a.funcs = append(a.funcs, fn)
		api.Set(name, fn)
	})
	withEngine := a.withEngine
	api.Set("version", apiVersion)
	export("load", func(args []js.Value) any {
		hint := stringField(arg(args, 0), "priceHint")
		return promise(func() (any, error) { return a.load(hint) })
	})
	export("corpus", func([]js.Value) any {
		return withEngine(func(e *engine.Engine) (any, error) { return e.Passages(), nil })
	})
	export("search", func(args []js.Value) any {
		text := fromJS(arg(args, 0))
		return withEngine(func(e *engine.Engine) (any, error) {
			req, err := engine.ParseSearchSpec(text)
			if err != nil {
				return nil, err
			}
			return e.Search(req)
		})
	})
	export("replay", func(args []js.Value) any {
		opts, onTrial := arg(args, 0), arg(args, 1)
		text, caseID := stringField(opts, "recording"), stringField(opts, "caseId")
		return withEngine(func(e *engine.Engine) (any, error) {
			req := engine.ReplayRequest{OnTrial: func(done, total int, id string) { notify(onTrial, done, total, id) }}
			if caseID != nil {
				req.Case = *caseID
			}
			var err error
			if req.File, err = parseRecording(text); err != nil {
				return nil, err
			}
			return e.Replay(context.Background(), req)
		})
	})
	export("packs", func([]js.Value) any {
		return withEngine(func(e *engine.Engine) (any, error) { return e.Packs(), nil })
	})
	export("packInfo", func(args []js.Value) any {
		id := arg(args, 0)
		return withEngine(func(e *engine.Engine) (any, error) {
			if id.Type() != js.TypeString {
				return nil, errors.New("packInfo: give a pack id")
			}
			return e.PackInfo(id.String())
		})
	})
	export("loadPack", func(args []js.Value) any {
		manifest, passages := arg(args, 0), arg(args, 1)
		return withEngine(func(e *engine.Engine) (any, error) {
			m, err := fileBytes(manifest)
			if err != nil {
				return nil, fmt.Errorf("loadPack: the manifest: %w", err)
			}
			p, err := fileBytes(passages)
			if err != nil {
				return nil, fmt.Errorf("loadPack: the passages: %w", err)
			}
			return e.LoadPack(m, p)
		})
	})
	a.exportPacks(export, withEngine)
	export("policies", func([]js.Value) any { return promise(func() (any, error) { return engine.Policies(), nil }) })
	export("plan", func(args []js.Value) any {
		spec := arg(args, 0)
		text, hasKey := fromJS(spec), boolField(spec, "hasKey")
		return withEngine(func(e *engine.Engine) (any, error) {
			req, err := e.RunParser("hasKey").ParseText(text)
			if err != nil {
				return nil, err
			}
			// The plan says whether the key the shell holds lets it send.
			req.Transport = &fetchTransport{hasKey: hasKey}
			return e.PlanRun(req)
		})
	})
	export("run", func(args []js.Value) any { return a.run(arg(args, 0), arg(args, 1), nil) })
	export("runOutput", func(args []js.Value) any { return a.run(arg(args, 0), arg(args, 1), runOutput) })
	export("cancel", func(args []js.Value) any {
		id := arg(args, 0)
		e, err := a.loaded()
		if err != nil || id.Type() != js.TypeNumber {
			return false
		}
		return e.Cancel(id.Int())
	})
	export("exchanges", func(args []js.Value) any {
		opts := arg(args, 0)
		req := engine.ExchangesRequest{Source: str(stringField(opts, "source")), Trial: str(stringField(opts, "trial"))}
		return withEngine(func(e *engine.Engine) (any, error) { return e.Exchanges(req) })
	})
	export("exportOTLP", func(args []js.Value) any {
		opts := arg(args, 0)
		req := engine.ExportRequest{Source: str(stringField(opts, "source")), Trial: str(stringField(opts, "trial")), Corpus: str(stringField(opts, "corpus"))}
		return withEngine(func(e *engine.Engine) (any, error) {
			data, err := e.ExportOTLP(context.Background(), req)
			return string(data), err
		})
	})
	export("recording", func([]js.Value) any {
		return withEngine(func(e *engine.Engine) (any, error) { return engine.TextOf(e.Recording()) })
	})
	a.exportRerank(export, withEngine)
	export("warm", func(args []js.Value) any {
		rounds, round := intArg(args, 0), intArg(args, 1)
		return withEngine(func(*engine.Engine) (any, error) { return warm(rounds, round) })
	})
	export("exit", func([]js.Value) any {
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-a.exit:
		default:
			close(a.exit)
		}
		return nil
	})
	return api
}

// exporter adds a function to the API object.
type exporter func(name string, f func(args []js.Value) any)

// withEngine runs work with the loaded engine in a Promise.
func (a *adapter) withEngine(work func(e *engine.Engine) (any, error)) js.Value {
	return promise(func() (any, error) {
		e, err := a.loaded()
		if err != nil {
			return nil, err
		}
		return work(e)
	})
}

// exportRerank adds the Rerank view's functions: the replay of the three
// runs, a fresh cross-encoder scoring's plan (crossEncoderPlan(manifest
// text?): the published model, or a test host's) and its acceptance
// (acceptCrossEncoder(payload object)), the live listwise rerank's plan,
// run and recording, and the ledger.
func (a *adapter) exportRerank(export exporter, withEngine func(func(*engine.Engine) (any, error)) js.Value) {
	export("rerank", func(args []js.Value) any {
		opts := arg(args, 0)
		g, c := stringField(opts, "gemini"), stringField(opts, "crossEncoder")
		return withEngine(func(e *engine.Engine) (any, error) {
			var req engine.RerankRequest
			var err error
			if req.Gemini, err = parseRecording(g); err != nil {
				return nil, err
			}
			if req.CrossEncoder, err = parseRecording(c); err != nil {
				return nil, err
			}
			return e.Rerank(context.Background(), req)
		})
	})
	export("rerankPlan", func(args []js.Value) any {
		text, hooks := fromJS(arg(args, 0)), arg(args, 1)
		return withEngine(func(e *engine.Engine) (any, error) {
			req, err := a.liveRerank(e, text, hooks)
			if err != nil {
				return nil, err
			}
			return e.PlanRerank(req)
		})
	})
	export("crossEncoderPlan", func(args []js.Value) any {
		manifest := arg(args, 0)
		return withEngine(func(e *engine.Engine) (any, error) {
			if manifest.Type() != js.TypeString {
				return e.CrossEncoderPlan(nil)
			}
			return e.CrossEncoderPlan([]byte(manifest.String()))
		})
	})
	export("acceptCrossEncoder", func(args []js.Value) any {
		payload := fromJS(arg(args, 0))
		return withEngine(func(e *engine.Engine) (any, error) { return e.AcceptCrossEncoder(context.Background(), payload) })
	})
	export("rerankLive", func(args []js.Value) any { return a.rerankLive(arg(args, 0), arg(args, 1)) })
	export("rerankRecording", func([]js.Value) any {
		return withEngine(func(e *engine.Engine) (any, error) {
			f := e.RerankRecording()
			if f == nil {
				return nil, nil
			}
			return engine.TextOf(f)
		})
	})
	export("ledger", func(args []js.Value) any {
		hooks := arg(args, 0)
		return withEngine(func(e *engine.Engine) (any, error) {
			st, err := storeOf(hooks)
			if err != nil {
				return nil, err
			}
			return e.Ledger(st)
		})
	})
	export("setBudget", func(args []js.Value) any {
		usd, hooks := arg(args, 0), arg(args, 1)
		return withEngine(func(e *engine.Engine) (any, error) {
			if usd.Type() != js.TypeNumber {
				return nil, errors.New("setBudget: the budget must be a number of US dollars")
			}
			st, err := storeOf(hooks)
			if err != nil {
				return nil, err
			}
			return e.SetBudget(st, usd.Float())
		})
	})
}

// release frees the API's functions once the module is done.
func (a *adapter) release() {
	for _, f := range a.funcs {
		f.Release()
	}
	a.funcs = nil
}

func (a *adapter) loaded() (*engine.Engine, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.engine == nil {
		return nil, errors.New("the engine is not loaded: call load() first")
	}
	return a.engine, nil
}

// loadResult is load()'s value: the engine's description, the API's
// version and how long opening took.
type loadResult struct {
	API string `json:"api"`
	engine.Info
	OpenMS float64 `json:"open_ms"`
}

// load validates the corpus and cases and builds the FTS5 index, once.
// hint, if given, is how this front end changes a shipped price (the node
// module's differs from the page's); it is fixed by the first load.
func (a *adapter) load(hint *string) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	started := time.Now()
	if a.engine == nil {
		h := priceHint
		if hint != nil {
			h = *hint
		}
		prices, err := engine.PriceTable(h, "")
		if err != nil {
			return nil, err
		}
		e, err := engine.Open(engine.Options{Prices: &prices, SHA256: platformSHA256})
		if err != nil {
			return nil, err
		}
		a.engine = e
	}
	return loadResult{API: apiVersion, Info: a.engine.Info(), OpenMS: float64(time.Since(started).Microseconds()) / 1000}, nil
}

// run starts a run and returns {id, result}: result is a Promise of the
// trial report (or, with shape, of shape's value); cancel(id) stops it.
// hooks.onStep sees each step as it is final; hooks.post is the shell's
// fetch for live policies; spec.hasKey says whether the shell holds a key.
func (a *adapter) run(spec, hooks js.Value, shape func(*engine.Engine, engine.RunRequest, report.Trial) (any, error)) any {
	text := fromJS(spec)
	hasKey := boolField(spec, "hasKey")
	onStep, post := field(hooks, "onStep"), field(hooks, "post")
	return a.start(func(ctx context.Context, e *engine.Engine) (any, error) {
		req, err := e.RunParser("hasKey").ParseText(text)
		if err != nil {
			return nil, err
		}
		// A throwing onStep must not end the run: progress is a courtesy.
		req.OnStep = func(st agent.Step, obs *agent.Observation) {
			sv, err1 := toJS(st)
			ov, err2 := toJS(obs)
			if err1 == nil && err2 == nil {
				notify(onStep, sv, ov)
			}
		}
		if req.Policy == engine.Gemini {
			if post.Type() != js.TypeFunction {
				return nil, fmt.Errorf("run: policy %s calls the network and needs hooks.post", req.Policy)
			}
			req.Transport = &fetchTransport{post: post, hasKey: hasKey}
		}
		tr, err := e.Run(ctx, req)
		if err != nil || shape == nil {
			return tr, err
		}
		return shape(e, req, tr)
	})
}

// runOutput is runOutput()'s value: what `ragagent run --json` prints
// (engine.RunOutput, the node module's run), or, as there, an error
// with the reason code when the task was refused before it started.
func runOutput(e *engine.Engine, req engine.RunRequest, tr report.Trial) (any, error) {
	if tr.Result == nil {
		return nil, reason.New(*tr.Error, "%s", tr.ErrorDetail)
	}
	return e.Output(string(req.Policy), nil, tr), nil
}

// liveRerank decodes a live rerank's spec ({price?, endpoint?, hasKey})
// with the page's ledger store (hooks.store, or hooks itself for a plan).
func (a *adapter) liveRerank(e *engine.Engine, text string, hooks js.Value) (engine.LiveRerankRequest, error) {
	req, err := e.ParseLiveRerankSpec(text, "given in the page")
	if err != nil {
		return req, err
	}
	store := hooks
	if s := field(hooks, "store"); s.Type() == js.TypeObject {
		store = s
	}
	st, err := storeOf(store)
	if err != nil {
		return req, err
	}
	req.Ledger = st
	return req, nil
}

// rerankLive reranks the development cases live through the shell's fetch
// (hooks.post), reserving each request in the page's ledger (hooks.store);
// hooks.onCase(done, total) reports each case. It returns {id, result}.
func (a *adapter) rerankLive(spec, hooks js.Value) any {
	text := fromJS(spec)
	post, onCase := field(hooks, "post"), field(hooks, "onCase")
	return a.start(func(ctx context.Context, e *engine.Engine) (any, error) {
		req, err := a.liveRerank(e, text, hooks)
		if err != nil {
			return nil, err
		}
		if post.Type() != js.TypeFunction {
			return nil, errors.New("rerank: a live rerank calls the network and needs hooks.post")
		}
		req.Transport = &fetchTransport{post: post, hasKey: req.HasKey}
		req.OnCase = func(done, total int) { notify(onCase, done, total) }
		return e.RerankLive(ctx, req)
	})
}

// start runs work as an engine job: it returns {id, result}, result a
// Promise of work's value; cancel(id) cancels work's context.
func (a *adapter) start(work func(ctx context.Context, e *engine.Engine) (any, error)) js.Value {
	out := js.Global().Get("Object").New()
	e, err := a.loaded()
	if err != nil {
		out.Set("id", 0)
		out.Set("result", promise(func() (any, error) { return nil, err }))
		return out
	}
	job := engine.Start(e, func(ctx context.Context) (any, error) { return work(ctx, e) })
	out.Set("id", job.ID)
	out.Set("result", promise(job.Wait))
	return out
}

// parseRecording parses ragagent-recording/1 text (capped, strict:
// engine.ParseRecording); nil is none.
func parseRecording(text *string) (*recording.File, error) {
	if text == nil {
		return nil, nil
	}
	return engine.ParseRecording([]byte(*text))
}

// warmed is warm()'s value.
type warmed struct {
	Rounds    int     `json:"rounds"`
	ElapsedMS float64 `json:"elapsed_ms"`
}
