//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// The headers a front's answer carries when the run's object must answer
// instead (an event stream): worker.mjs forwards the request to that
// object's path and never sends these on.
const (
	forwardPath  = "X-Ragagent-Forward"
	forwardShard = "X-Ragagent-Runner"
)

// serveFront builds the front's server and sets binding.serve: a request
// as plain values (method, url, headers, body bytes: worker.mjs reads the
// body in the request's own context) to a promise of the answer as plain
// values. No I/O object of a request is touched by this program, which
// serves every request of its isolate.
func serveFront() error {
	cfg, err := config(context.Background())
	if err != nil {
		return err
	}
	n, err := runners()
	if err != nil {
		return err
	}
	cfg.Dispatch = &objects{n: n, self: -1}
	// Requests are counted in memory and written every second, by the
	// request that finds them that old (requestMeter): an isolate that
	// goes loses at most the counts of its last second.
	cfg.UsageFlush, cfg.FlushInRequests = time.Second, true
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	h := srv.Handler()
	// How many run objects there are: worker.mjs wakes each when the
	// isolate's front starts (see Runner's wake).
	jsContext.Get("binding").Set("runners", n)
	jsContext.Get("binding").Set("serve", js.FuncOf(func(_ js.Value, args []js.Value) any {
		in := args[0]
		return jsbridge.Promise(func() (any, error) { return serveOne(h, in) })
	}))
	return nil
}

// serveOne serves one request given as plain values ({method, url,
// headers: [name, value] pairs, body: Uint8Array or null}) and answers
// with the whole response as plain values ({status, headers, body}).
func serveOne(h http.Handler, in js.Value) (js.Value, error) {
	req, err := requestOf(in)
	if err != nil {
		return js.Value{}, err
	}
	w := &answer{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	out := headOf(w.status, w.header)
	data := js.Global().Get("Uint8Array").New(w.body.Len())
	js.CopyBytesToJS(data, w.body.Bytes())
	out.Set("body", data)
	return out, nil
}

// requestOf is the request worker.mjs gives as plain values.
func requestOf(in js.Value) (*http.Request, error) {
	var body []byte
	if b := in.Get("body"); !b.IsNull() && !b.IsUndefined() {
		body = make([]byte, b.Length())
		js.CopyBytesToGo(body, b)
	}
	req, err := http.NewRequest(in.Get("method").String(), in.Get("url").String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	if hs := in.Get("headers"); !hs.IsUndefined() {
		for i := range hs.Length() {
			kv := hs.Index(i)
			req.Header.Add(kv.Index(0).String(), kv.Index(1).String())
		}
	}
	req.Host = req.URL.Host
	return req, nil
}

// headOf is a response's status and headers as plain values ({status,
// headers: [name, value] pairs}).
func headOf(status int, header http.Header) js.Value {
	out := js.Global().Get("Object").New()
	out.Set("status", status)
	headers := js.Global().Get("Array").New()
	for k, vs := range header {
		for _, v := range vs {
			headers.Call("push", js.ValueOf([]any{k, v}))
		}
	}
	out.Set("headers", headers)
	return out
}

// answer is a whole response, buffered: the front streams nothing itself
// (a run's events come from its object).
type answer struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(code int) {
	if !a.wrote {
		a.status, a.wrote = code, true
	}
}
func (a *answer) Write(p []byte) (int, error) { a.WriteHeader(http.StatusOK); return a.body.Write(p) }
func (a *answer) Flush()                      {}

// objects is server.Dispatch over the RUNNER namespace: run id → its
// object (shardOf), each call one stub fetch through worker.mjs's runner
// helper. self is this program's own object (-1 in the front).
type objects struct{ n, self int }

func (o *objects) Local(id string) bool { return shardOf(id, o.n) == o.self }

func (o *objects) call(ctx context.Context, id, path string, body []byte) error {
	v, err := jsbridge.Await(ctx, jsContext.Get("runner"), shardOf(id, o.n), "POST", path, string(body))
	if err != nil {
		return err
	}
	if status := v.Get("status").Int(); status != http.StatusOK {
		return fmt.Errorf("%s: %d %s", path, status, v.Get("body").String())
	}
	return nil
}

func (o *objects) Start(ctx context.Context, run store.Run) error {
	body, err := json.Marshal(run)
	if err != nil {
		return err
	}
	return o.call(ctx, run.ID, "/runner/start?id="+url.QueryEscape(run.ID), body)
}

func (o *objects) Cancel(ctx context.Context, id string) error {
	return o.call(ctx, id, "/runner/cancel?id="+url.QueryEscape(id), nil)
}

// Experiment tells the experiment's object that it runs: the object
// answers with how many it runs, and worker.mjs sets its alarm soon,
// whose rounds run them in pieces.
func (o *objects) Experiment(ctx context.Context, id string) error {
	return o.call(ctx, id, "/runner/experiments?id="+url.QueryEscape(id), nil)
}

// Plan has the experiment's object check it (its program has the pack
// open, or opens it, an upload from R2, to run the experiment): the
// object's answer.
func (o *objects) Plan(ctx context.Context, id, tenant string, spec []byte) (int, []byte, error) {
	v, err := jsbridge.Await(ctx, jsContext.Get("runner"), shardOf(id, o.n), "POST", server.PlanPath(id, tenant), string(spec))
	if err != nil {
		return 0, nil, err
	}
	return v.Get("status").Int(), []byte(v.Get("body").String()), nil
}

func (o *objects) Stream(w http.ResponseWriter, r *http.Request, q server.StreamRequest) {
	w.Header().Set(forwardPath, q.Path())
	w.Header().Set(forwardShard, strconv.Itoa(shardOf(q.ID, o.n)))
	w.WriteHeader(http.StatusOK)
}

var _ io.Writer = (*answer)(nil)
