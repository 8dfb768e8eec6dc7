//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// The bridge's rules: every exported function returns at once (work runs on
// a goroutine and settles a Promise), values cross as JSON (so JS gets plain
// objects and Go never holds a JS object longer than a call), and every
// js.Func made for one call is released when that call is done with it.

// promise runs work on a goroutine and settles a new Promise with its
// result. A panic in work rejects the Promise instead of killing the
// module: no input may crash the engine.
func promise(work func() (any, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			v, err := guarded(work)
			if err != nil {
				reject.Invoke(jsError(err))
				return
			}
			out, err := toJS(v)
			if err != nil {
				reject.Invoke(jsError(err))
				return
			}
			resolve.Invoke(out)
		}()
		return nil
	})
	// The executor runs inside the Promise constructor, so it can go now.
	p := js.Global().Get("Promise").New(executor)
	executor.Release()
	return p
}

// guarded calls work, turning a panic into an error.
func guarded(work func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			println("ragagent: internal error:", fmt.Sprint(r), "\n"+string(debug.Stack()))
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return work()
}

// raw is a value that is already a JS value and crosses as is.
type raw struct{ v js.Value }

// toJS converts a Go value to a JS value through JSON.
func toJS(v any) (js.Value, error) {
	switch x := v.(type) {
	case nil:
		return js.Undefined(), nil
	case raw:
		return x.v, nil
	case string:
		return js.ValueOf(x), nil
	case bool:
		return js.ValueOf(x), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return js.Undefined(), err
	}
	return js.Global().Get("JSON").Call("parse", string(b)), nil
}

// fromJS reads a JS value as JSON text ("null" for undefined).
func fromJS(v js.Value) string {
	if v.IsUndefined() || v.IsNull() {
		return "null"
	}
	return js.Global().Get("JSON").Call("stringify", v).String()
}

// jsError is the Error a Promise rejects with: name RunRefused with the
// reason code for a task refused before it started, RecordingError for a
// malformed recording, Error otherwise; the message is one line.
func jsError(err error) js.Value {
	e := js.Global().Get("Error").New(err.Error())
	if code, ok := reason.Of(err); ok {
		e.Set("name", "RunRefused")
		e.Set("code", string(code))
		e.Set("detail", reason.DetailOf(err))
	}
	var pe *recording.ParseError
	if errors.As(err, &pe) {
		e.Set("name", "RecordingError")
	}
	var nc *engine.NoCaseError
	if errors.As(err, &nc) {
		e.Set("name", "NoCase")
	}
	return e
}

// arg returns args[i] or undefined.
func arg(args []js.Value, i int) js.Value {
	if i < len(args) {
		return args[i]
	}
	return js.Undefined()
}

// callback returns args[i] if it is a function, else a null Value.
func callback(args []js.Value, i int) (js.Value, bool) {
	v := arg(args, i)
	return v, v.Type() == js.TypeFunction
}

// field returns o[name] when o is an object, else undefined.
func field(o js.Value, name string) js.Value {
	if o.Type() != js.TypeObject {
		return js.Undefined()
	}
	return o.Get(name)
}

// await calls fn(args...), which must return a Promise (any thenable), and
// waits for it to settle without blocking the event loop: the goroutine
// parks while JS runs. It returns the fulfilled value, or the rejection
// reason with rejected set. A synchronous throw or a result that is not a
// thenable is an error, not a panic. When ctx ends first, await returns
// ctx's error at once; its handlers stay until the Promise settles and then
// release themselves (exactly one of them runs, once).
func await(ctx context.Context, fn js.Value, args ...any) (v js.Value, rejected bool, err error) {
	type settled struct {
		v        js.Value
		rejected bool
	}
	done := make(chan settled, 1)
	var onValue, onError js.Func
	finish := func(args []js.Value, rejected bool) any {
		onValue.Release()
		onError.Release()
		done <- settled{arg(args, 0), rejected}
		return nil
	}
	onValue = js.FuncOf(func(_ js.Value, args []js.Value) any { return finish(args, false) })
	onError = js.FuncOf(func(_ js.Value, args []js.Value) any { return finish(args, true) })
	if err := chain(fn, onValue, onError, args...); err != nil {
		onValue.Release()
		onError.Release()
		return js.Undefined(), false, err
	}
	select {
	case s := <-done:
		return s.v, s.rejected, nil
	case <-ctx.Done():
		return js.Undefined(), false, ctx.Err()
	}
}

// chain calls fn and attaches the handlers to the Promise it returns,
// reporting a synchronous throw or a non-thenable result as an error.
func chain(fn js.Value, onValue, onError js.Func, args ...any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("the page's function threw")
		}
	}()
	if fn.Type() != js.TypeFunction {
		return errors.New("the page gave no function to call")
	}
	p := fn.Invoke(args...)
	if p.Type() != js.TypeObject || p.Get("then").Type() != js.TypeFunction {
		return errors.New("the page's function did not return a Promise")
	}
	p.Call("then", onValue, onError)
	return nil
}

// stringField returns o[name] when it is a string (nil otherwise, so an
// empty string is still given).
func stringField(o js.Value, name string) *string {
	if v := field(o, name); v.Type() == js.TypeString {
		s := v.String()
		return &s
	}
	return nil
}

// str is *s, or "" for nil.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// boolField returns o[name] when it is a boolean, else false.
func boolField(o js.Value, name string) bool {
	v := field(o, name)
	return v.Type() == js.TypeBoolean && v.Bool()
}

// intArg returns args[i] when it is a number, else 0.
func intArg(args []js.Value, i int) int {
	if v := arg(args, i); v.Type() == js.TypeNumber {
		return v.Int()
	}
	return 0
}

// notify calls a progress callback if it is a function; a throw is
// ignored, since progress is a courtesy and must not end the work.
func notify(fn js.Value, args ...any) {
	if fn.Type() != js.TypeFunction {
		return
	}
	defer func() { _ = recover() }()
	fn.Invoke(args...)
}

// fileBytes copies a whole file's Uint8Array (or a string, as UTF-8) into
// Go.
func fileBytes(v js.Value) ([]byte, error) {
	if v.Type() == js.TypeString {
		return []byte(v.String()), nil
	}
	if v.Type() != js.TypeObject || !v.InstanceOf(js.Global().Get("Uint8Array")) {
		return nil, errors.New("expected a Uint8Array or a string")
	}
	b := make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b, nil
}
