//go:build js && wasm

package main

import (
	"context"
	"errors"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/secret"
)

// transport is gemini.Transport over the Workers fetch (worker.mjs's
// gemini helper): the key only in x-goog-api-key, no redirect followed, no
// retry, at most gemini.MaxResponseBytes+1 bytes read, and ctx's end
// aborts the request in flight; every body and error text it hands back
// has the key redacted by secret.Redact, as the gemini.Transport contract
// asks.
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
		return 0, nil, &gemini.TransportError{Kind: kind, Err: errors.New(string(secret.Redact([]byte(err.Error()), t.key)))}
	}
	status := v.Get("status").Int()
	out := make([]byte, v.Get("body").Length())
	js.CopyBytesToGo(out, v.Get("body"))
	// Whatever the status, the body may echo the key (an error message, a
	// model repeating its request), verbatim, JSON-escaped or URL-encoded.
	return status, secret.Redact(out, t.key), nil
}
