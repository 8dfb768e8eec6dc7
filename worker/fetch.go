//go:build js && wasm

package main

import (
	"context"
	"errors"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/secret"
	"github.com/ragagentlab/ragagent/internal/jsbridge"
)

// transport is gemini.Transport over the Workers fetch: jsbridge.Fetch
// calling worker.mjs's gemini helper (the key only in x-goog-api-key, no
// redirect followed, no retry, at most gemini.MaxResponseBytes+1 bytes
// read, ctx's end aborting the request in flight), with every body and
// error text it hands back redacted of the key by secret.Redact, as the
// gemini.Transport contract asks.
type transport struct {
	fetch jsbridge.Fetch
	key   string
}

func newTransport(key string) *transport {
	return &transport{key: key, fetch: jsbridge.Fetch{Call: jsContext.Get("gemini"), Keyed: key != "",
		Options: map[string]any{"key": key, "cap": gemini.MaxResponseBytes}}}
}

// HasKey reports whether the Worker has a key secret.
func (t *transport) HasKey() bool { return t.key != "" }

// Post sends body; an error is a *gemini.TransportError (TimeoutError for
// ctx's end, URLError for anything else), never carrying the key.
func (t *transport) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	status, out, err := t.fetch.Post(ctx, endpoint, body)
	var te *gemini.TransportError
	if errors.As(err, &te) && secret.Contains([]byte(te.Err.Error()), t.key) {
		te.Err = errors.New(string(secret.Redact([]byte(te.Err.Error()), t.key)))
	}
	// Whatever the status, the body may echo the key (an error message, a
	// model repeating its request), verbatim, JSON-escaped or URL-encoded.
	return status, secret.Redact(out, t.key), err
}
