//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/internal/jsbridge"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// d1 is store.Batcher over the D1 binding, through worker.mjs's d1 helper.
type d1 struct{ db js.Value }

func (d d1) Batch(ctx context.Context, stmts []store.Statement) ([]store.Rows, error) {
	list := make([]any, len(stmts))
	for i, s := range stmts {
		list[i] = []any{s.SQL, s.Args}
	}
	v, err := jsbridge.Await(ctx, jsContext.Get("d1"), d.db, list)
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
