//go:build js && wasm

package jsbridge

import (
	"errors"
	"syscall/js"
)

// Args are a JS call's arguments; one left out reads as undefined.
type Args []js.Value

// At returns the i'th argument, or undefined.
func (a Args) At(i int) js.Value {
	if i < len(a) {
		return a[i]
	}
	return js.Undefined()
}

// Int returns the i'th argument when it is a number, else 0.
func (a Args) Int(i int) int {
	if v := a.At(i); v.Type() == js.TypeNumber {
		return v.Int()
	}
	return 0
}

// Field returns o[name] when o is an object, else undefined.
func Field(o js.Value, name string) js.Value {
	if o.Type() != js.TypeObject {
		return js.Undefined()
	}
	return o.Get(name)
}

// IsFunc reports whether v is a function.
func IsFunc(v js.Value) bool { return v.Type() == js.TypeFunction }

// Notify calls a progress callback if it is a function; a throw is
// ignored, since progress is a courtesy and must not end the work.
func Notify(fn js.Value, args ...any) {
	if !IsFunc(fn) {
		return
	}
	defer func() { _ = recover() }()
	fn.Invoke(args...)
}

// Bytes copies a whole file's Uint8Array (or a string, as UTF-8) into Go:
// file bytes never cross as JSON.
func Bytes(v js.Value) ([]byte, error) {
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
