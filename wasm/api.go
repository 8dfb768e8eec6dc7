//go:build js && wasm

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/jsbridge"
)

// apiVersion names the API's shape; the shell checks it.
const apiVersion = "ragagent-wasm/1"

// priceHint tells people how the page changes a shipped price.
const priceHint = "change it in the price fields"

// exports is the API, one row an export: its name, what a wrong first
// argument is told, and its call. answer and job decode the first
// argument as JSON into the call's typed request, given as a pointer
// (none, a string id, a struct, a spec the engine parses itself, or an
// optional text as **string) and give the call the
// loaded engine; what cannot cross as JSON (a progress callback, the
// shell's fetch, the ledger's store, file bytes) the call reads from the
// other arguments.
func exports() []export {
	return []export{
		{name: "load", do: func(a *adapter, x *export, args jsbridge.Args) any {
			// load({priceHint}?): the hint is how this front end changes a
			// shipped price (the node module's differs from the page's).
			o := &struct {
				PriceHint *string `json:"priceHint"`
			}{}
			var bad error
			if t := args.At(0).Type(); t != js.TypeUndefined && t != js.TypeNull {
				bad = x.decode(args, o)
			}
			return jsbridge.Promise(func() (any, error) {
				if bad != nil {
					return nil, bad
				}
				return a.load(o.PriceHint)
			})
		}},
		{name: "corpus", do: answer(func(c call, _ *none) (any, error) { return c.Passages(), nil })},
		{name: "search", do: answer(func(c call, s *spec) (any, error) {
			req, err := engine.ParseSearchSpec(s.text)
			if err != nil {
				return nil, err
			}
			return c.Search(req)
		})},
		{name: "replay", do: answer(func(c call, o *struct {
			Recording *string `json:"recording"`
			Case      string  `json:"caseId"`
			// Scores: each candidate's score for a trace viewer (the page);
			// without it the value is what ragagent replay --json prints.
			Scores bool `json:"scores"`
		}) (any, error) {
			file, err := parseRecording(o.Recording)
			if err != nil {
				return nil, err
			}
			rep, err := c.Replay(context.Background(), engine.ReplayRequest{File: file, Case: o.Case,
				OnTrial: func(done, total int, id string) { jsbridge.Notify(c.args.At(1), done, total, id) }})
			if err != nil || !o.Scores {
				return rep, err
			}
			return rep, c.CandidateScores("", rep.Trials)
		})},
		{name: "packs", do: answer(func(c call, _ *none) (any, error) { return c.Packs(), nil })},
		{name: "packInfo", usage: "give a pack id", do: answer(func(c call, id *string) (any, error) { return c.PackInfo(*id) })},
		{name: "loadPack", do: answer(func(c call, _ *none) (any, error) {
			m, err := jsbridge.Bytes(c.args.At(0))
			if err != nil {
				return nil, fmt.Errorf("loadPack: the manifest: %w", err)
			}
			p, err := jsbridge.Bytes(c.args.At(1))
			if err != nil {
				return nil, fmt.Errorf("loadPack: the passages: %w", err)
			}
			return c.LoadPack(m, p)
		})},
		{name: "buildPack", do: answer(func(c call, _ *none) (any, error) {
			docs, err := documents(c.args.At(0))
			if err != nil {
				return nil, err
			}
			return c.BuildPack(engine.BuildRequest{Documents: docs,
				OnDocument: func(done, total int) { jsbridge.Notify(c.args.At(1), done, total) }})
		})},
		{name: "removePack", usage: "give a pack id", do: answer(func(c call, id *string) (any, error) { return nil, c.RemovePack(*id) })},
		{name: "passage", usage: "give {corpus, source_id}", do: answer(func(c call, p *struct {
			Corpus *string `json:"corpus"`
			ID     *string `json:"source_id"`
		}) (any, error) {
			if p.Corpus == nil || p.ID == nil {
				return nil, errors.New("passage: give {corpus, source_id}")
			}
			return c.Passage(*p.Corpus, *p.ID)
		})},
		{name: "packCases", usage: "give a pack id", do: answer(func(c call, id *string) (any, error) { return c.PackCases(*id) })},
		{name: "policies", do: func(*adapter, *export, jsbridge.Args) any {
			return jsbridge.Promise(func() (any, error) { return engine.Policies(), nil })
		}},
		{name: "plan", do: answer(func(c call, s *spec) (any, error) {
			req, err := c.RunParser("hasKey").ParseText(s.text)
			if err != nil {
				return nil, err
			}
			// The plan says whether the key the shell holds lets it send.
			req.Transport = &jsbridge.Fetch{Keyed: s.hasKey}
			return c.PlanRun(req)
		})},
		{name: "run", do: job(func(ctx context.Context, c call, s *spec) (any, error) {
			req, tr, err := runTrial(ctx, c, s)
			if err != nil {
				return nil, err
			}
			// The trace shows each candidate's score.
			trials := []report.Trial{tr}
			return trials[0], c.CandidateScores(req.Corpus, trials)
		})},
		// runOutput: run, its value what `ragagent run --json` prints
		// (engine.RunOutput, the node module's run); a refused task rejects.
		{name: "runOutput", do: job(func(ctx context.Context, c call, s *spec) (any, error) {
			req, tr, err := runTrial(ctx, c, s)
			if err = cmp.Or(err, tr.Refused()); err != nil {
				return nil, err
			}
			return c.Output(string(req.Policy), nil, tr), nil
		})},
		{name: "eval", do: answer(func(c call, s *spec) (any, error) {
			req, err := engine.ParseEvalRequest(s.text)
			if err != nil {
				return nil, err
			}
			req.OnTrial = func(done, total int, id string) { jsbridge.Notify(c.args.At(1), done, total, id) }
			return c.Eval(context.Background(), req)
		})},
		// evalReport: eval as a job (cancel(id) stops it between trials),
		// its value {json: the bytes ragagent eval --json prints, trials:
		// the graded trials with their candidates' scores} (the page's
		// agent experiment: its download and each case's trace).
		{name: "evalReport", do: job(func(ctx context.Context, c call, s *spec) (any, error) {
			req, err := engine.ParseEvalRequest(s.text)
			if err != nil {
				return nil, err
			}
			req.OnTrial = func(done, total int, id string) {
				jsbridge.Notify(c.args.At(1), done, total, id)
				time.Sleep(time.Millisecond) // lets the worker take a cancel(id), as retrievalJob does
			}
			res, err := c.Eval(ctx, req)
			if ctx.Err() != nil { // the batch's trials after the cancel end cancelled: none is kept
				return nil, reason.New(reason.Cancelled, "the agent experiment was stopped")
			}
			if err != nil {
				return nil, err
			}
			data, err := res.JSON()
			if err != nil {
				return nil, err
			}
			trials := res.Trials
			if err := c.CandidateScores(req.Corpus, trials); err != nil {
				return nil, err
			}
			return map[string]any{"json": string(data), "trials": trials}, nil
		})},
		// evalPlan(spec, store): a Gemini eval's plan with the worst case
		// checked against the page's ledger (the refusal says why not).
		{name: "evalPlan", do: answer(func(c call, s *spec) (any, error) {
			req, hasKey, err := engine.ParseLiveEvalRequest(s.text)
			if err != nil {
				return nil, err
			}
			req.Transport = &jsbridge.Fetch{Keyed: hasKey}
			if req.Ledger, err = jsbridge.StoreOf(c.args.At(1)); err != nil {
				return nil, err
			}
			return c.PlanLiveEval(req)
		})},
		{name: "evalLive", do: job(evalLive)},
		{name: "cancel", do: func(a *adapter, _ *export, args jsbridge.Args) any {
			e, err := a.loaded()
			id := args.At(0)
			return err == nil && id.Type() == js.TypeNumber && e.Cancel(id.Int())
		}},
		{name: "exchanges", do: answer(func(c call, r *engine.ExchangesRequest) (any, error) { return c.Exchanges(*r) })},
		{name: "exportOTLP", do: answer(func(c call, r *engine.ExportRequest) (any, error) {
			data, err := c.ExportOTLP(context.Background(), *r)
			return string(data), err
		})},
		{name: "exportRunOTLP", do: answer(func(c call, s *spec) (any, error) {
			x, err := c.RunParser("hasKey").ParseExport(s.text)
			if err != nil {
				return nil, err
			}
			data, err := c.ExportRun(context.Background(), x)
			return string(data), err
		})},
		{name: "recording", do: answer(func(c call, _ *none) (any, error) { return engine.TextOf(c.Recording()) })},
		{name: "rerank", do: answer(func(c call, o *struct {
			Gemini       *string `json:"gemini"`
			CrossEncoder *string `json:"crossEncoder"`
		}) (any, error) {
			g, err1 := parseRecording(o.Gemini)
			x, err2 := parseRecording(o.CrossEncoder)
			if err := cmp.Or(err1, err2); err != nil {
				return nil, err
			}
			return c.Rerank(context.Background(), engine.RerankRequest{Gemini: g, CrossEncoder: x})
		})},
		{name: "rerankPlan", do: answer(func(c call, s *spec) (any, error) {
			req, err := liveRerank(c, s, c.args.At(1))
			if err != nil {
				return nil, err
			}
			return c.PlanRerank(req)
		})},
		{name: "crossEncoderPlan", do: answer(func(c call, manifest **string) (any, error) {
			if *manifest == nil {
				return c.CrossEncoderPlan(nil)
			}
			return c.CrossEncoderPlan([]byte(**manifest))
		})},
		{name: "acceptCrossEncoder", do: answer(func(c call, s *spec) (any, error) {
			return c.AcceptCrossEncoder(context.Background(), s.text)
		})},
		{name: "rerankLive", do: job(rerankLive)},
		{name: "retrievalConfigs", do: answer(func(c call, _ *none) (any, error) { return engine.RetrievalConfigs(), nil })},
		{name: "retrieval", do: job(retrievalJob)},
		{name: "tune", do: job(tuneJob)},
		// applyDefault({corpus, config}) makes a built-in's name or a
		// spec the open pack's default for the session (Engine.ApplyDefault).
		{name: "applyDefault", do: answer(func(c call, r *struct {
			Corpus string           `json:"corpus"`
			Config engine.ConfigRef `json:"config"`
		}) (any, error) {
			config := r.Config.Name
			if r.Config.Spec != nil {
				config = string(r.Config.Spec)
			}
			return c.ApplyDefault(r.Corpus, config)
		})},
		// compareExperiments({a, b, pairs}): two kept `ragagent retrieval
		// --json` results on the same cases, configuration pairs compared
		// question by question (engine.CompareExperiments).
		{name: "compareExperiments", usage: "give {a, b, pairs}", do: answer(func(_ call, r *engine.CompareExperimentsRequest) (any, error) {
			return engine.CompareExperiments(*r)
		})},
		// specDigests([name or spec, ...]): each configuration's spec sha256.
		{name: "specDigests", usage: "give a list of configuration names or specs", do: answer(func(_ call, r *[]engine.ConfigRef) (any, error) {
			return engine.SpecDigests(*r)
		})},
		{name: "questionSet", usage: "give {corpus, text}", do: answer(func(c call, q *struct {
			Corpus string `json:"corpus"`
			Text   string `json:"text"`
		}) (any, error) {
			return c.ParseQuestionSet(q.Corpus, q.Text)
		})},
		// casesJSON(text): a question set's text (ragagent-cases/1 JSON or
		// the TSV) read and checked as the command line reads --cases, with
		// no pack's defaults filled in, as ragagent-cases/1 JSON text (a
		// JSON set as written, a TSV as the object its rows mean): what the
		// node module sends a server's experiment, converted as `ragagent
		// retrieval --server` converts it (engine.QuestionSetObject).
		{name: "casesJSON", usage: "give the question set's text", do: answer(func(_ call, text *string) (any, error) {
			data, err := engine.QuestionSetObject(*text)
			return string(data), err
		})},
		{name: "rerankRecording", do: answer(func(c call, _ *none) (any, error) {
			if f := c.RerankRecording(); f != nil {
				return engine.TextOf(f)
			}
			return nil, nil
		})},
		{name: "ledger", do: answer(func(c call, _ *none) (any, error) {
			st, err := jsbridge.StoreOf(c.args.At(0))
			if err != nil {
				return nil, err
			}
			return c.Ledger(st)
		})},
		{name: "setBudget", usage: "the budget must be a number of US dollars", do: answer(func(c call, usd *float64) (any, error) {
			st, err := jsbridge.StoreOf(c.args.At(1))
			if err != nil {
				return nil, err
			}
			return c.SetBudget(st, *usd)
		})},
		{name: "warm", usage: fmt.Sprintf("rounds must be from 1 to %d", engine.MaxWarmRounds), do: answer(func(c call, rounds *int) (any, error) {
			return engine.Warm(*rounds, c.args.Int(1))
		})},
		{name: "exit", do: func(a *adapter, _ *export, _ jsbridge.Args) any { a.stop.Do(func() { close(a.exit) }); return nil }},
	}
}

// runTrial is run(spec, {onStep, post}): hooks.onStep sees each step as it
// is final; hooks.post is the shell's fetch for live policies; spec.hasKey
// says whether the shell holds a key.
func runTrial(ctx context.Context, c call, s *spec) (engine.RunRequest, report.Trial, error) {
	req, err := c.RunParser("hasKey").ParseText(s.text)
	if err != nil {
		return req, report.Trial{}, err
	}
	hooks := c.args.At(1)
	// A throwing onStep must not end the run: progress is a courtesy.
	req.OnStep = func(st agent.Step, obs *agent.Observation) {
		sv, err1 := jsbridge.ToJS(st)
		ov, err2 := jsbridge.ToJS(obs)
		if err1 == nil && err2 == nil {
			jsbridge.Notify(jsbridge.Field(hooks, "onStep"), sv, ov)
		}
	}
	if req.Policy == engine.Gemini {
		post := jsbridge.Field(hooks, "post")
		if !jsbridge.IsFunc(post) {
			return req, report.Trial{}, fmt.Errorf("run: policy %s calls the network and needs hooks.post", req.Policy)
		}
		req.Transport = &jsbridge.Fetch{Call: post, Keyed: s.hasKey}
	}
	tr, err := c.Run(ctx, req)
	return req, tr, err
}

// retrievalJob is retrieval({corpus, cases, configs, k}, {onProgress,
// vectors, embedder}) (the last two a vector branch's: jsbridge.Models):
// `ragagent retrieval --json`, its value the command's bytes as text
// (RetrievalResult.JSON), so the page's download is byte for byte what
// the command prints (the node module parses it); onProgress(done, total,
// config) sees each question ranked. cancel(id) stops it (reason
// cancelled).
func retrievalJob(ctx context.Context, c call, s *spec) (any, error) {
	req, err := engine.ParseRetrievalRequest(s.text)
	if err != nil {
		return nil, err
	}
	on := jsbridge.Field(c.args.At(1), "onProgress")
	if m := jsbridge.ModelsOf(c.args.At(1)); m != nil {
		req.Models = m
	}
	// Ranking never waits on JS, so Go would not hand the worker's event
	// loop back until it ends: every 50 ms it sleeps a millisecond, which
	// lets the worker take a cancel(id) meanwhile.
	last := time.Now()
	req.OnCase = func(done, total int, config string) {
		jsbridge.Notify(on, done, total, config)
		if time.Since(last) > 50*time.Millisecond {
			time.Sleep(time.Millisecond)
			last = time.Now()
		}
	}
	res, err := c.Retrieval(ctx, req)
	if err != nil {
		return nil, err
	}
	data, err := res.JSON()
	return string(data), err
}

// tuneJob is tune({corpus, cases, folds}, {onProgress}): `ragagent tune
// --json`, its value the command's bytes as text (TuneResult.JSON);
// onProgress(done, total, config) sees each question ranked under each
// configuration. cancel(id) stops it (reason cancelled).
func tuneJob(ctx context.Context, c call, s *spec) (any, error) {
	req, err := engine.ParseTuneRequest(s.text)
	if err != nil {
		return nil, err
	}
	on := jsbridge.Field(c.args.At(1), "onProgress")
	last := time.Now()
	req.OnCase = func(done, total int, config string) {
		jsbridge.Notify(on, done, total, config)
		if time.Since(last) > 50*time.Millisecond {
			time.Sleep(time.Millisecond) // lets the worker take a cancel(id), as retrievalJob does
			last = time.Now()
		}
	}
	res, err := c.Tune(ctx, req)
	if err != nil {
		return nil, err
	}
	data, err := res.JSON()
	return string(data), err
}

// evalLive is evalLive(spec, {post, store, save, onTrial}): a Gemini eval
// over the question set through the shell's fetch, each request reserved
// in the page's ledger, the recording handed to save(text) after every
// attempt; onTrial(done, total, id) reports each trial. cancel(id) stops
// it before the next trial; the value then covers what ran.
func evalLive(ctx context.Context, c call, s *spec) (any, error) {
	hooks := c.args.At(1)
	req, hasKey, err := engine.ParseLiveEvalRequest(s.text)
	if err != nil {
		return nil, err
	}
	post, save := jsbridge.Field(hooks, "post"), jsbridge.Field(hooks, "save")
	if !jsbridge.IsFunc(post) || !jsbridge.IsFunc(save) {
		return nil, errors.New("eval: a live eval calls the network and needs hooks.post and hooks.save")
	}
	req.Transport = &jsbridge.Fetch{Call: post, Keyed: hasKey}
	if req.Ledger, err = jsbridge.StoreOf(jsbridge.Field(hooks, "store")); err != nil {
		return nil, err
	}
	// A save that throws stops the eval: nothing more is sent unrecorded.
	req.Save = func(data []byte) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the recording could not be saved: %v", r)
			}
		}()
		save.Invoke(string(data))
		return nil
	}
	req.OnTrial = func(done, total int, id string) { jsbridge.Notify(jsbridge.Field(hooks, "onTrial"), done, total, id) }
	return c.EvalLive(ctx, req)
}

// rerankLive is rerankLive(spec, {post, store, onCase}): the development
// cases reranked live through the shell's fetch, each request reserved in
// the page's ledger; onCase(done, total) reports each case.
func rerankLive(ctx context.Context, c call, s *spec) (any, error) {
	hooks := c.args.At(1)
	req, err := liveRerank(c, s, hooks)
	if err != nil {
		return nil, err
	}
	post := jsbridge.Field(hooks, "post")
	if !jsbridge.IsFunc(post) {
		return nil, errors.New("rerank: a live rerank calls the network and needs hooks.post")
	}
	req.Transport = &jsbridge.Fetch{Call: post, Keyed: req.HasKey}
	req.OnCase = func(done, total int) { jsbridge.Notify(jsbridge.Field(hooks, "onCase"), done, total) }
	return c.RerankLive(ctx, req)
}

// liveRerank reads a live rerank's spec ({price?, endpoint?, hasKey})
// with the page's ledger store (hooks.store, or hooks itself for a plan).
func liveRerank(c call, s *spec, hooks js.Value) (engine.LiveRerankRequest, error) {
	req, err := c.ParseLiveRerankSpec(s.text, "given in the page")
	if err != nil {
		return req, err
	}
	if st := jsbridge.Field(hooks, "store"); st.Type() == js.TypeObject {
		hooks = st
	}
	req.Ledger, err = jsbridge.StoreOf(hooks)
	return req, err
}

// documents reads [{path, bytes}] (bytes a Uint8Array) as the builder's
// documents.
func documents(files js.Value) ([]builder.Document, error) {
	if files.Type() != js.TypeObject || !js.Global().Get("Array").Call("isArray", files).Bool() {
		return nil, errors.New("buildPack: give an array of {path, bytes}")
	}
	docs := make([]builder.Document, files.Length())
	for i := range docs {
		f := files.Index(i)
		path := jsbridge.Field(f, "path")
		if path.Type() != js.TypeString || path.String() == "" {
			return nil, fmt.Errorf("buildPack: file %d has no path", i+1)
		}
		data, err := jsbridge.Bytes(jsbridge.Field(f, "bytes"))
		if err != nil {
			return nil, fmt.Errorf("buildPack: %s: %w", path.String(), err)
		}
		docs[i] = builder.Document{Path: path.String(), Data: data}
	}
	return docs, nil
}

// parseRecording parses ragagent-recording/1 text (capped, strict:
// engine.ParseRecording); nil is none.
func parseRecording(text *string) (*recording.File, error) {
	if text == nil {
		return nil, nil
	}
	return engine.ParseRecording([]byte(*text))
}

// export is one function of the API object (a row of exports).
type export struct {
	name string
	// usage is what a first argument that does not decode is told ("" for
	// the decoder's own words).
	usage string
	do    func(a *adapter, x *export, args jsbridge.Args) any
}

// call is an export's call: the loaded engine and the arguments as given.
type call struct {
	*engine.Engine
	args jsbridge.Args
}

// spec is a request the engine parses itself (its JSON text, "null" when
// left out) and the hasKey the shell adds to it.
type spec struct {
	text   string
	hasKey bool
}

func (s *spec) UnmarshalJSON(b []byte) error {
	var k struct {
		HasKey any `json:"hasKey"`
	}
	_ = json.Unmarshal(b, &k)
	s.text, s.hasKey = string(b), k.HasKey == true
	return nil
}

// none is the request of an export that reads no JSON: it takes nothing,
// or only what cannot cross as JSON (file bytes, the ledger's store).
type none struct{}

// decode reads the call's first argument into the export's request.
func (x *export) decode(args jsbridge.Args, into any) error {
	if _, skip := into.(*none); skip {
		return nil
	}
	err := jsbridge.Decode(args.At(0), into)
	switch {
	case err == nil:
		return nil
	case x.usage != "":
		return fmt.Errorf("%s: %s", x.name, x.usage)
	}
	return fmt.Errorf("%s: %v", x.name, err)
}

// newRequest makes a request R, a pointer type, pointing at its zero
// value. Every R being a pointer, answer and job have one instantiation
// each (Go shares generic code across pointer types), which keeps
// main.wasm from growing with each request type.
func newRequest[R any]() R {
	return reflect.New(reflect.TypeFor[R]().Elem()).Interface().(R)
}

// answer is an export that answers a Promise: the call with the loaded
// engine and its first argument decoded into R, a pointer to the request.
// (Not inlined: every row then shares its closures.)
//
//go:noinline
func answer[R any](fn func(c call, r R) (any, error)) func(*adapter, *export, jsbridge.Args) any {
	return func(a *adapter, x *export, args jsbridge.Args) any {
		r := newRequest[R]()
		bad := x.decode(args, r)
		return jsbridge.Promise(func() (any, error) {
			e, err := a.loaded()
			if err = cmp.Or(err, bad); err != nil {
				return nil, err
			}
			return fn(call{e, args}, r)
		})
	}
}

// job is an export that starts an engine job: it returns {id, result},
// result a Promise of the call's value; cancel(id) cancels its context.
//
//go:noinline
func job[R any](fn func(ctx context.Context, c call, r R) (any, error)) func(*adapter, *export, jsbridge.Args) any {
	return func(a *adapter, x *export, args jsbridge.Args) any {
		r := newRequest[R]()
		bad := x.decode(args, r)
		out := js.Global().Get("Object").New()
		e, err := a.loaded()
		if err = cmp.Or(err, bad); err != nil {
			out.Set("id", 0)
			out.Set("result", jsbridge.Promise(func() (any, error) { return nil, err }))
			return out
		}
		j := engine.Start(e, func(ctx context.Context) (any, error) { return fn(ctx, call{e, args}, r) })
		out.Set("id", j.ID)
		out.Set("result", jsbridge.Promise(j.Wait))
		return out
	}
}

// adapter is the state behind the exported API object: the engine (after
// load) and the API's functions, released at exit.
type adapter struct {
	mu     sync.Mutex
	engine *engine.Engine
	funcs  []js.Func
	exit   chan struct{}
	stop   sync.Once
}

func newAdapter() *adapter { return &adapter{exit: make(chan struct{})} }

// object builds the API object from exports; its functions live until
// exit().
func (a *adapter) object() js.Value {
	api := js.Global().Get("Object").New()
	api.Set("version", apiVersion)
	for _, x := range exports() {
		fn := js.FuncOf(func(_ js.Value, args []js.Value) any { return x.do(a, &x, args) })
		a.funcs = append(a.funcs, fn)
		api.Set(x.name, fn)
	}
	return api
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
// hint, if given, is how this front end changes a shipped price; the
// first load fixes it.
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
		e, err := engine.Open(engine.Options{Prices: &prices, SHA256: jsbridge.SHA256})
		if err != nil {
			return nil, err
		}
		a.engine = e
	}
	return loadResult{API: apiVersion, Info: a.engine.Info(), OpenMS: float64(time.Since(started).Microseconds()) / 1000}, nil
}
