//go:build js && wasm

// Package jsbridge is what the two JS adapters share: wasm/ (the page's
// and node's engine) and worker/ (the server edition on Cloudflare
// Workers). It settles Promises with Go work, awaits JS Promises without
// blocking the event loop, moves values across as JSON, reads arguments
// and posts model requests through a JS fetch (Fetch). With wasm/ and
// worker/ it is the only package that imports syscall/js (internal/layout
// holds the rule); it lives in internal/ beside httptransport, the native
// transport, because it is an adapter's helper, not an API.
//
// The rules it keeps: a function JS calls returns at once (work runs on a
// goroutine and settles a Promise), values cross as JSON (JS gets plain
// objects and Go holds no JS object longer than a call), and every js.Func
// made for one call is released when that call is done with it.
package jsbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// Promise runs work on a goroutine and settles a new Promise with its
// result (ToJS of the value, Error of the error). A panic in work rejects
// the Promise instead of killing the module: no input may crash the
// engine.
func Promise(work func() (any, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			v, err := guarded(work)
			var out js.Value
			if err == nil {
				out, err = ToJS(v)
			}
			if err != nil {
				reject.Invoke(Error(err))
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

// ToJS converts a Go value to a JS value: nil is undefined, a js.Value
// crosses as it is, a string or bool directly, anything else through JSON.
func ToJS(v any) (js.Value, error) {
	switch x := v.(type) {
	case nil:
		return js.Undefined(), nil
	case js.Value:
		return x, nil
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

// JSONText is a JS value as JSON text ("null" for undefined).
func JSONText(v js.Value) string {
	if v.IsUndefined() || v.IsNull() {
		return "null"
	}
	return js.Global().Get("JSON").Call("stringify", v).String()
}

// Decode reads a JS value into a typed request through JSON. A left-out
// (undefined or null) value leaves an object, slice, map or pointer
// request at its zero value, but is an error for a scalar one (a string
// id, a number): those are required. An object going into a struct is
// read field by field (decodeFields).
func Decode(v js.Value, into any) error {
	if _, custom := into.(json.Unmarshaler); !custom && v.Type() == js.TypeObject &&
		!js.Global().Get("Array").Call("isArray", v).Bool() {
		if rv := reflect.ValueOf(into).Elem(); rv.Kind() == reflect.Struct {
			return decodeFields(v, rv)
		}
	}
	text := JSONText(v)
	if text == "null" {
		switch reflect.TypeOf(into).Elem().Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
		return errors.New("the argument is missing")
	}
	return json.Unmarshal([]byte(text), into)
}

// decodeFields reads an object's properties into a struct's fields, each
// named by its JSON tag (exactly; properties the struct does not name are
// ignored): a string into a string or *string field as it is, anything
// else through JSON. A recording's text (hundreds of kB) so crosses once,
// without being escaped into JSON and unescaped again in Go (measured:
// replaying the bundled recording from its text took 10% more CPU).
func decodeFields(o js.Value, rv reflect.Value) error {
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		p := o.Get(name)
		if !f.IsExported() || name == "-" || p.IsUndefined() {
			continue
		}
		fv := rv.Field(i)
		switch k := f.Type.Kind(); {
		case p.Type() == js.TypeString && k == reflect.String:
			fv.SetString(p.String())
		case p.Type() == js.TypeString && k == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			fv.Set(reflect.New(f.Type.Elem()))
			fv.Elem().SetString(p.String())
		default:
			if err := json.Unmarshal([]byte(JSONText(p)), fv.Addr().Interface()); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// Error is the JS Error a Promise rejects with: named RunRefused with the
// reason code and detail for a task refused before it started,
// RecordingError for a malformed recording, Error otherwise; the message
// is one line.
func Error(err error) js.Value {
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
	return e
}
