//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"syscall/js"
)

// Rejection is a JS Promise's rejection as a Go error: the reason's name,
// message and kind (each "" when the reason has none; a string reason is
// its own message).
type Rejection struct {
	Name, Message, Kind string
}

func (r *Rejection) Error() string {
	if r.Name == "" {
		return r.Message
	}
	return r.Name + ": " + r.Message
}

// rejection reads a rejection's reason.
func rejection(v js.Value) *Rejection {
	if v.Type() == js.TypeString {
		return &Rejection{Message: v.String()}
	}
	return &Rejection{Name: stringOf(Field(v, "name")), Message: stringOf(Field(v, "message")), Kind: stringOf(Field(v, "kind"))}
}

func stringOf(v js.Value) string {
	if v.Type() == js.TypeString {
		return v.String()
	}
	return ""
}

// Await calls fn(args...), which must return a Promise (any thenable), and
// waits for it to settle without blocking the event loop: the goroutine
// parks while JS runs. It returns the fulfilled value, or a *Rejection. A
// synchronous throw or a result that is not a thenable is an error, not a
// panic. When ctx ends first, Await returns ctx's error at once; its
// handlers stay until the Promise settles and then release themselves
// (exactly one of them runs, once).
func Await(ctx context.Context, fn js.Value, args ...any) (js.Value, error) {
	type settled struct {
		v        js.Value
		rejected bool
	}
	done := make(chan settled, 1)
	var onValue, onError js.Func
	finish := func(args []js.Value, rejected bool) any {
		onValue.Release()
		onError.Release()
		done <- settled{Args(args).At(0), rejected}
		return nil
	}
	onValue = js.FuncOf(func(_ js.Value, args []js.Value) any { return finish(args, false) })
	onError = js.FuncOf(func(_ js.Value, args []js.Value) any { return finish(args, true) })
	if err := chain(fn, onValue, onError, args...); err != nil {
		onValue.Release()
		onError.Release()
		return js.Undefined(), err
	}
	select {
	case s := <-done:
		if s.rejected {
			return s.v, rejection(s.v)
		}
		return s.v, nil
	case <-ctx.Done():
		return js.Undefined(), ctx.Err()
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
