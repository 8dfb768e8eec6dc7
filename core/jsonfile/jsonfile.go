// Package jsonfile is the one strict reader of every JSON file the lab
// reads: recordings, the spending ledger, the corpus snapshot and cases,
// the rerank fixtures, the published records, fake-server scripts. A file
// with a misspelt key, a repeated key, two keys that differ only in case,
// or a second value is a mistake to report, not something to half-read,
// because these files pin what the labs check and record money spent. (A
// model's reply is not a file: it is decoded as json.loads would, by
// pyjson.Decode.)
//
// Reading is bounded twice: front ends read at most MaxInputBytes of a
// file (a cap people can raise), and decoding refuses, before building
// anything, a file whose decoded form would take more than MemoryFactor
// times its size plus MemoryAllowance (a real recording takes about three
// times its size; a file of millions of tiny objects is refused).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/ragagentlab/ragagent/core/pyjson"
)

// MaxInputBytes is the default cap on a file the lab reads, 64 MiB: fifty
// times the largest recording a 200-request batch writes (1.3 MB). The
// command line reads files through this cap (--max-input-bytes raises it)
// and the page applies the same cap to files it is given.
const MaxInputBytes = 64 << 20

// The memory bound of decoding a file of n bytes: MemoryFactor*n +
// MemoryAllowance.
const (
	MemoryFactor    = 16
	MemoryAllowance = 4 << 20
)

// Options are the decode options for a file of n bytes: unique keys, and
// the memory bound.
func Options(n int) pyjson.DecodeOptions {
	return pyjson.DecodeOptions{UniqueKeys: true, MaxMemory: MemoryFactor*int64(n) + MemoryAllowance}
}

// Value decodes data as one JSON value (pyjson's values, json.loads'
// grammar), refusing a repeated key, keys of one object that differ only
// in case, and a file whose value would take more memory than Options
// allows.
func Value(data []byte) (any, error) {
	return pyjson.DecodeWith(string(data), Options(len(data)))
}

// Decode decodes exactly one JSON value from data into v, with Value's
// refusals, and also refusing every object key that is not exactly the
// name of a field of the struct it fills (encoding/json would match
// "ENTRIES" to the field entries) and anything after the value.
func Decode(data []byte, v any) error {
	tree, err := Value(data)
	if err != nil {
		return err
	}
	if err := exactKeys(tree, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the value")
	}
	return nil
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// exactKeys checks every key of value against the field names of the type
// it decodes into, at path.
func exactKeys(value any, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if t.Implements(unmarshaler) {
			return nil
		}
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		o, ok := value.(*pyjson.Object)
		if !ok {
			return nil // the wrong type: encoding/json says so
		}
		fields := fieldsOf(t)
		for _, k := range o.Keys() {
			ft, known := fields[k]
			if !known {
				return unknownField(path, k, fields)
			}
			child, _ := o.Get(k)
			if err := exactKeys(child, ft, path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Map:
		o, ok := value.(*pyjson.Object)
		if !ok {
			return nil
		}
		for _, k := range o.Keys() {
			child, _ := o.Get(k)
			if err := exactKeys(child, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		list, ok := value.([]any)
		if !ok {
			return nil
		}
		for i, child := range list {
			if err := exactKeys(child, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func unknownField(path, key string, fields map[string]reflect.Type) error {
	where := ""
	if path != "" {
		where = " in " + strings.TrimPrefix(path, ".")
	}
	for name := range fields {
		if strings.EqualFold(name, key) {
			return fmt.Errorf("unknown field %q%s (keys are matched exactly: the field is %q)", key, where, name)
		}
	}
	return fmt.Errorf("unknown field %q%s", key, where)
}

// fieldsOf maps the JSON names of a struct's fields (embedded structs'
// fields included, as encoding/json promotes them) to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range fieldsOf(ft) {
					if _, shadowed := fields[n]; !shadowed {
						fields[n] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
