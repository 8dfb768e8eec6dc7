//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// Fetch is gemini.Transport over a JS function that fetches: the page's
// shell (which adds the x-goog-api-key header, so the key never crosses
// into Go) or the Worker's fetch helper (worker/).
//
// Call(endpoint, body, opts) is called with the body as a string and opts
// {signal, timeoutMs} (timeoutMs when the context has a deadline) plus
// Options; it must return a Promise that resolves to {status, body} (body a
// Uint8Array, ArrayBuffer or string; at most gemini.MaxResponseBytes+1
// bytes of it are read) or rejects with an object whose kind or name is
// "TimeoutError" for a timeout (anything else counts as URLError). It must
// settle once signal aborts.
type Fetch struct {
	Call js.Value
	// Keyed is whether the other side holds a key (HasKey).
	Keyed bool
	// Options are added to every call's opts.
	Options map[string]any
}

var _ gemini.Transport = (*Fetch)(nil)

// HasKey reports whether the other side holds a key.
func (f *Fetch) HasKey() bool { return f.Keyed }

// Post sends body and waits without blocking the event loop (the goroutine
// parks; JS runs). Cancelling ctx aborts the fetch. Every error is a
// *gemini.TransportError; a stopped context's wraps ctx's error.
func (f *Fetch) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, ctxError(err)
	}
	abort := js.Global().Get("AbortController").New()
	opts := js.Global().Get("Object").New()
	for k, v := range f.Options {
		opts.Set(k, v)
	}
	opts.Set("signal", abort.Get("signal"))
	if deadline, ok := ctx.Deadline(); ok {
		opts.Set("timeoutMs", max(0, time.Until(deadline).Milliseconds()))
	}
	// A late settle after an abort finds nobody waiting; Await's handlers
	// release themselves then.
	v, err := Await(ctx, f.Call, endpoint, string(body), opts)
	var rej *Rejection
	switch {
	case err != nil && ctx.Err() != nil:
		abort.Call("abort")
		return 0, nil, ctxError(ctx.Err())
	case errors.As(err, &rej):
		return 0, nil, &gemini.TransportError{Kind: kindOf(rej), Err: errors.New(messageOf(rej))}
	case err != nil:
		return 0, nil, &gemini.TransportError{Kind: gemini.URLError, Err: err}
	}
	status := Field(v, "status")
	if status.Type() != js.TypeNumber {
		return 0, nil, &gemini.TransportError{Kind: gemini.URLError, Err: errors.New("fetch resolved to no response with a status")}
	}
	return status.Int(), bytesOf(Field(v, "body")), nil
}

// ctxError is the transport error for a stopped context: the deadline is a
// TimeoutError; a cancellation is reported as one too (the run then sees
// its own context and ends as cancelled).
func ctxError(err error) error {
	return &gemini.TransportError{Kind: gemini.TimeoutError, Err: err}
}

// bytesOf copies a body of at most MaxResponseBytes+1 bytes, as a reader
// with that cap would.
func bytesOf(v js.Value) []byte {
	limit := gemini.MaxResponseBytes + 1
	switch {
	case v.Type() == js.TypeString:
		s := v.String()
		return []byte(s[:min(len(s), limit)])
	case v.InstanceOf(js.Global().Get("ArrayBuffer")):
		v = js.Global().Get("Uint8Array").New(v)
		fallthrough
	case v.InstanceOf(js.Global().Get("Uint8Array")):
		n := min(v.Get("byteLength").Int(), limit)
		b := make([]byte, n)
		js.CopyBytesToGo(b, v.Call("subarray", 0, n))
		return b
	}
	return nil
}

func kindOf(r *Rejection) string {
	if r.Kind == gemini.TimeoutError || r.Name == gemini.TimeoutError {
		return gemini.TimeoutError
	}
	return gemini.URLError
}

func messageOf(r *Rejection) string {
	if r.Message == "" {
		return "fetch failed"
	}
	return r.Message
}
