//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server"
)

// serveRunner builds a run object's server: it executes the runs its
// object owns (promoted ones it does not own it hands to their object),
// serves their streams from the events it writes (woken in process, the
// store read once a second for what other objects and a revoke write) and
// answers the front's calls (server.Server.RunnerHandler). worker.mjs
// reaches it through two entry points on the binding, both taking the
// request as plain values (serveOne's):
//
//   - call(request): a promise of the whole answer ({status, headers,
//     body}), for every call but a stream;
//   - stream(request, sink): a promise of the answer's head ({status,
//     headers}) once the handler has written it; the body goes to
//     sink.push(Uint8Array) as the handler writes it, and sink.close()
//     when the handler returns.
//
// They replace syumai/workers' handleRequest, which answered every call,
// a start's three-byte JSON included, through an io.Pipe read into a
// ReadableStream by promises, one pull at a time: under the 200-client
// scenario that conversion was a tenth of workerd's CPU (docs/worker.md).
func serveRunner() error {
	cfg, err := config(context.Background())
	if err != nil {
		return err
	}
	n, err := runners()
	if err != nil {
		return err
	}
	cfg.Dispatch = &objects{n: n, self: jsContext.Get("shard").Int()}
	cfg.Poll = 5 * time.Second
	// A stream whose run cancels when its client goes writes a keep-alive
	// every second: workerd notices a closed connection only at a write
	// (the second after the close), and worker.mjs then tells this
	// program (/runner/gone).
	cfg.GoneHeartbeat = time.Second
	cfg.UsageFlush = 0
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	h := srv.RunnerHandler()
	b := jsContext.Get("binding")
	b.Set("call", js.FuncOf(func(_ js.Value, args []js.Value) any {
		in := args[0]
		return jsbridge.Promise(func() (any, error) { return serveOne(h, in) })
	}))
	b.Set("stream", js.FuncOf(func(_ js.Value, args []js.Value) any {
		in, sink := args[0], args[1]
		return jsbridge.Promise(func() (any, error) { return serveStreamed(h, in, sink) })
	}))
	return nil
}

// serveStreamed runs the handler on its own goroutine and answers with
// the head once it is written (or the handler has returned); the body
// follows through sink.
func serveStreamed(h http.Handler, in, sink js.Value) (js.Value, error) {
	req, err := requestOf(in)
	if err != nil {
		return js.Value{}, err
	}
	w := &pushed{header: http.Header{}, status: http.StatusOK, sink: sink, head: make(chan struct{})}
	go func() {
		defer sink.Call("close")
		defer w.WriteHeader(http.StatusOK) // the head, if the handler wrote nothing
		defer func() {
			// A panic ends this stream, not the object's program and every
			// run it holds.
			if r := recover(); r != nil {
				println("ragagent: internal error in a stream:", fmt.Sprint(r), "\n"+string(debug.Stack()))
			}
		}()
		h.ServeHTTP(w, req)
	}()
	<-w.head
	return headOf(w.status, w.header), nil
}

// pushed is a streamed response: its head is sent once, at WriteHeader
// (or the first Write), and each Write goes to the sink as one chunk.
// The server writes an event stream a store read at a time, so a chunk
// is already what the client should get together.
type pushed struct {
	header http.Header
	status int
	sink   js.Value
	once   sync.Once
	head   chan struct{}
}

func (p *pushed) Header() http.Header { return p.header }

func (p *pushed) WriteHeader(code int) {
	p.once.Do(func() {
		p.status = code
		close(p.head)
	})
}

func (p *pushed) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	chunk := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(chunk, b)
	p.sink.Call("push", chunk)
	return len(b), nil
}

// Flush has nothing to do: every Write is pushed at once.
func (p *pushed) Flush() {}
