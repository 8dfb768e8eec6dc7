//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// d1 is store.Batcher over the D1 binding, through worker.mjs's d1 helper:
// the batch and its results cross as one buffer each (store.AppendBatch,
// store.DecodeResults; worker/d1wire.mjs is the JS half).
type d1 struct{ db js.Value }

func (d d1) Batch(ctx context.Context, stmts []store.Statement) ([]store.Rows, error) {
	batch, err := store.AppendBatch(nil, stmts)
	if err != nil {
		return nil, err
	}
	arg := js.Global().Get("Uint8Array").New(len(batch))
	js.CopyBytesToJS(arg, batch)
	v, err := jsbridge.Await(ctx, jsContext.Get("d1"), d.db, arg)
	if err != nil {
		return nil, fmt.Errorf("d1: %w", err)
	}
	out, err := jsbridge.Bytes(v)
	if err != nil {
		return nil, fmt.Errorf("d1: %w", err)
	}
	return store.DecodeResults(out)
}
