//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"errors"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// transport is gemini.Transport over the Workers fetch (worker.mjs's
// gemini helper): the key only in x-goog-api-key, no redirect followed, no
// retry, at most gemini.MaxResponseBytes+1 bytes read, and ctx's end
// aborts the request in flight.
type transport struct{ key string }

func newTransport(key string) *transport { return &transport{key: key} }

// HasKey reports whether the Worker has a key secret.
func (t *transport) HasKey() bool { return t.key != "" }

// Post sends body; an error is a *gemini.TransportError (TimeoutError for
// ctx's end, URLError for anything else), never carrying the key.
func (t *transport) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, &gemini.TransportError{Kind: gemini.TimeoutError, Err: err}
	}
	abort := js.Global().Get("AbortController").New()
	stop := context.AfterFunc(ctx, func() { abort.Call("abort") })
	defer stop()
	data := js.Global().Get("Uint8Array").New(len(body))
	js.CopyBytesToJS(data, body)
	v, err := await(ctx, jsContext.Call("gemini", endpoint, t.key, data, gemini.MaxResponseBytes, abort.Get("signal")))
	if err != nil {
		kind := gemini.URLError
		if ctx.Err() != nil {
			kind = gemini.TimeoutError
		}
		return 0, nil, &gemini.TransportError{Kind: kind, Err: errors.New(string(t.redact([]byte(err.Error()))))}
	}
	status := v.Get("status").Int()
	out := make([]byte, v.Get("body").Length())
	js.CopyBytesToGo(out, v.Get("body"))
	if status < 200 || status > 299 {
		out = t.redact(out)
	}
	return status, out, nil
}

func (t *transport) redact(b []byte) []byte {
	if t.key == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(t.key), []byte("[key]"))
}
