//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// d1 is store.Batcher over the D1 binding, through worker.mjs's d1 helper.
type d1 struct{ db js.Value }

func (d d1) Batch(ctx context.Context, stmts []store.Statement) ([]store.Rows, error) {
	list := make([]any, len(stmts))
	for i, s := range stmts {
		list[i] = []any{s.SQL, s.Args}
	}
	v, err := await(ctx, jsContext.Call("d1", d.db, list))
	if err != nil {
		return nil, fmt.Errorf("d1: %w", err)
	}
	out := make([]store.Rows, v.Length())
	for i := range out {
		rows := v.Index(i)
		out[i] = make(store.Rows, rows.Length())
		for j := range out[i] {
			row := rows.Index(j)
			vals := make([]any, row.Length())
			for k := range vals {
				switch c := row.Index(k); c.Type() {
				case js.TypeNumber:
					vals[k] = c.Float()
				case js.TypeString:
					vals[k] = c.String()
				case js.TypeNull, js.TypeUndefined:
					vals[k] = nil
				default:
					return nil, errors.New("d1: a column value that is not a number, text or null")
				}
			}
			out[i][j] = vals
		}
	}
	return out, nil
}

// await waits for a promise: its value, or its rejection as an error
// (the JavaScript error's name and message).
func await(ctx context.Context, p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	var then, catch js.Func
	then = js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- result{v: args[0]}
		return nil
	})
	catch = js.FuncOf(func(_ js.Value, args []js.Value) any {
		e := args[0]
		ch <- result{err: &jsError{name: e.Get("name").String(), message: e.Get("message").String()}}
		return nil
	})
	p.Call("then", then, catch)
	release := func() { then.Release(); catch.Release() }
	select {
	case r := <-ch:
		release()
		return r.v, r.err
	case <-ctx.Done():
		// The promise settles later (an aborted fetch rejects): release
		// its callbacks only then.
		go func() { <-ch; release() }()
		return js.Undefined(), ctx.Err()
	}
}

type jsError struct{ name, message string }

func (e *jsError) Error() string { return e.name + ": " + e.message }
