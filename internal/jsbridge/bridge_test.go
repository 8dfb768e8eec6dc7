//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
)

// jsValue evaluates a JS expression.
func jsValue(expr string) js.Value { return js.Global().Get("Function").New("return " + expr).Invoke() }

// Decode reads JSON into typed requests: a left-out object is its zero
// value, a left-out or mistyped scalar is an error.
func TestDecode(t *testing.T) {
	type opts struct {
		Source string  `json:"source"`
		Text   *string `json:"text"`
	}
	var o opts
	require.NoError(t, Decode(jsValue(`({source: "bundled", text: "x", extra: () => 1})`), &o))
	assert.Equal(t, "bundled", o.Source)
	require.NotNil(t, o.Text)
	assert.Equal(t, "x", *o.Text)

	o = opts{}
	require.NoError(t, Decode(jsValue(`({Source: "x", text: null})`), &o))
	assert.Equal(t, opts{}, o, "names are exact and null is none")
	err := Decode(jsValue(`({source: 3})`), &o)
	assert.ErrorContains(t, err, "source: ", "the wrong field is named")
	assert.Error(t, Decode(jsValue(`[1, 2]`), &o), "an array is not an object")

	o = opts{}
	require.NoError(t, Decode(js.Undefined(), &o), "an object may be left out")
	assert.Equal(t, opts{}, o)

	var id string
	require.NoError(t, Decode(js.ValueOf("seed"), &id))
	assert.Equal(t, "seed", id)
	assert.Error(t, Decode(js.Undefined(), &id), "a scalar is required")
	assert.Error(t, Decode(js.Null(), &id))
	assert.Error(t, Decode(js.ValueOf(3), &id), "a number is not an id")

	var usd float64
	assert.Error(t, Decode(js.ValueOf("ten"), &usd))
	require.NoError(t, Decode(js.ValueOf(2.5), &usd))
	assert.Equal(t, 2.5, usd)
}

// Await settles with the value, a Rejection (name, message, kind), or an
// error for a function that throws or returns no Promise, and returns at
// once when its context ends.
func TestAwait(t *testing.T) {
	fn := func(body string) js.Value { return js.Global().Get("Function").New("a", body) }
	v, err := Await(context.Background(), fn(`return Promise.resolve(a + 1)`), 41)
	require.NoError(t, err)
	assert.Equal(t, 42, v.Int())

	for _, tc := range []struct {
		body string
		want Rejection
	}{
		{`return Promise.reject(new TypeError("fetch failed"))`, Rejection{Name: "TypeError", Message: "fetch failed"}},
		{`return Promise.reject({kind: "TimeoutError", message: "slow"})`, Rejection{Message: "slow", Kind: "TimeoutError"}},
		{`return Promise.reject("plain")`, Rejection{Message: "plain"}},
	} {
		_, err := Await(context.Background(), fn(tc.body))
		var rej *Rejection
		require.True(t, errors.As(err, &rej), "%s: %v", tc.body, err)
		assert.Equal(t, tc.want, *rej)
	}

	_, err = Await(context.Background(), fn(`throw new Error("sync")`))
	assert.ErrorContains(t, err, "threw")
	_, err = Await(context.Background(), fn(`return 42`))
	assert.ErrorContains(t, err, "did not return a Promise")
	_, err = Await(context.Background(), js.ValueOf(1))
	assert.ErrorContains(t, err, "no function")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = Await(ctx, fn(`return new Promise(() => {})`))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// Promise settles with the work's value as plain JS, rejects with a named
// Error (RunRefused with the reason's code), and turns a panic into a
// rejection.
func TestPromise(t *testing.T) {
	then := js.Global().Get("Function").New("p", `return p.then((v) => ({ok: true, v}), (e) => ({ok: false, name: e.name, code: e.code, message: e.message}))`)
	settle := func(work func() (any, error)) js.Value {
		v, err := Await(context.Background(), then, Promise(work))
		require.NoError(t, err)
		return v
	}
	v := settle(func() (any, error) { return map[string]int{"n": 3}, nil })
	assert.True(t, v.Get("ok").Bool())
	assert.Equal(t, 3, v.Get("v").Get("n").Int())

	v = settle(func() (any, error) { return nil, reason.New(reason.MissingAPIKey, "no key") })
	assert.Equal(t, "RunRefused", v.Get("name").String())
	assert.Equal(t, "missing_api_key", v.Get("code").String())

	v = settle(func() (any, error) { panic("boom") })
	assert.False(t, v.Get("ok").Bool())
	assert.Equal(t, "internal error: boom", v.Get("message").String())
}
