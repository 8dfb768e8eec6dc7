//go:build js && wasm

package main

import (
	"context"
	"errors"
	"syscall/js"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// fetchTransport is the page's gemini.Transport: it hands the request body
// to a JS function the shell provides, which adds the x-goog-api-key header
// and fetches. The key stays in the shell; this side only learns whether
// there is one.
//
// post(endpoint, body, {signal, timeoutMs}) must return a Promise that
// resolves to {status, body} (body a Uint8Array, ArrayBuffer or string,
// at most gemini.MaxResponseBytes+1 bytes) or rejects with an object whose
// kind is "URLError" or "TimeoutError" (anything else counts as URLError).
// It must settle once signal aborts.
type fetchTransport struct {
	post   js.Value
	hasKey bool
}

var _ gemini.Transport = (*fetchTransport)(nil)

// HasKey reports what the shell said about its key field.
func (t *fetchTransport) HasKey() bool { return t.hasKey }

type posted struct {
	status int
	body   []byte
	err    error
}

// Post calls the shell's post and waits for it without blocking the event
// loop (the goroutine parks; JS runs). Cancelling ctx aborts the fetch.
func (t *fetchTransport) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, ctxError(err)
	}
	abort := js.Global().Get("AbortController").New()
	opts := js.Global().Get("Object").New()
	opts.Set("signal", abort.Get("signal"))
	if deadline, ok := ctx.Deadline(); ok {
		opts.Set("timeoutMs", max(0, time.Until(deadline).Milliseconds()))
	}
	// A late settle after an abort finds nobody waiting; await's handlers
	// release themselves then.
	v, rejected, err := await(ctx, t.post, endpoint, string(body), opts)
	switch {
	case err != nil && ctx.Err() != nil:
		abort.Call("abort")
		return 0, nil, ctxError(ctx.Err())
	case err != nil:
		return 0, nil, &gemini.TransportError{Kind: "URLError", Err: err}
	case rejected:
		return 0, nil, &gemini.TransportError{Kind: errorKind(v), Err: errors.New(errorMessage(v))}
	}
	p := response(v)
	return p.status, p.body, p.err
}

// ctxError is the transport error for a stopped context: the deadline is a
// TimeoutError; a cancellation is reported as one too (the run then sees
// its own context and ends as cancelled).
func ctxError(err error) error {
	return &gemini.TransportError{Kind: "TimeoutError", Err: err}
}

func response(v js.Value) posted {
	if v.Type() != js.TypeObject {
		return posted{err: &gemini.TransportError{Kind: "URLError", Err: errors.New("fetch resolved to no response")}}
	}
	status := field(v, "status")
	if status.Type() != js.TypeNumber {
		return posted{err: &gemini.TransportError{Kind: "URLError", Err: errors.New("fetch response has no status")}}
	}
	return posted{status: status.Int(), body: bytesOf(field(v, "body"))}
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

func errorKind(v js.Value) string {
	if k := field(v, "kind"); k.Type() == js.TypeString && k.String() == "TimeoutError" {
		return "TimeoutError"
	}
	if n := field(v, "name"); n.Type() == js.TypeString && (n.String() == "TimeoutError") {
		return "TimeoutError"
	}
	return "URLError"
}

func errorMessage(v js.Value) string {
	if m := field(v, "message"); m.Type() == js.TypeString {
		return m.String()
	}
	if v.Type() == js.TypeString {
		return v.String()
	}
	return "fetch failed"
}
