package pyjson

import (
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Marshaler is implemented by the rare type whose JSON shape its struct
// tags cannot state (a key present or absent depending on another field,
// an integer where the field holds a float). MarshalPyJSON returns the
// value to write in its place, anything Marshal takes. As with
// encoding/json, a struct embedding such a type inherits the method, so
// such types are not embedded.
type Marshaler interface {
	MarshalPyJSON() any
}

// ValueOf returns v as the package's value set (nil, bool, string, int,
// float64, Number, []any and *Object, every struct and map an *Object in
// the key order Marshal writes), for code that compares, inspects or
// validates what Marshal would write: Equal, Diff, a model reply's value.
// Parts of v already in the set are shared, not copied. Like Dumps it
// panics where Marshal returns an error.
func ValueOf(v any) any {
	e := encoder{}
	defer func() {
		if r := recover(); r != nil {
			if fail, ok := r.(encodeError); ok {
				panic(fail.err.Error())
			}
			panic(r)
		}
	}()
	x, _ := e.value(v, 0)
	return x
}

// value converts v, reporting whether anything changed (so that a decoded
// value passes through without a copy).
func (e *encoder) value(v any, level int) (any, bool) {
	if level > maxDepth {
		e.fail("nesting deeper than %d levels (a cycle?)", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, Number, int, float64:
		return x, false
	case int64:
		if int64(int(x)) == x {
			return int(x), true
		}
		return Number(strconv.FormatInt(x, 10)), true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case []any:
		var out []any
		for i, item := range x {
			y, changed := e.value(item, level+1)
			if changed && out == nil {
				out = append(make([]any, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, y)
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case *Object:
		var out *Object
		for i, k := range x.Keys() {
			y, changed := e.value(x.values[k], level+1)
			if changed && out == nil {
				out = &Object{values: make(map[string]any, x.Len())}
				for _, before := range x.keys[:i] {
					out.Set(before, x.values[before])
				}
			}
			if out != nil {
				out.Set(k, y)
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := &Object{values: make(map[string]any, len(x))}
		for _, k := range keys {
			y, _ := e.value(x[k], level+1)
			out.Set(k, y)
		}
		return out, true
	case *fields:
		out := &Object{values: make(map[string]any, len(x.keys))}
		for i, k := range x.keys {
			y, _ := e.value(x.values[i], level+1)
			out.Set(k, y)
		}
		return out, true
	}
	y, _ := e.value(e.plain(v), level)
	return y, true
}

// fields is a struct or a map as an object: its keys in the order they are
// written (unless SortKeys) and their values, still Go values.
type fields struct {
	keys   []string
	values []any
}

func (e *encoder) fieldObject(f *fields, level int) {
	if !e.opt.SortKeys || sort.StringsAreSorted(f.keys) {
		e.object(f.keys, func(i int) any { return f.values[i] }, level)
		return
	}
	order := make([]int, len(f.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.keys[order[a]] < f.keys[order[b]] })
	keys := make([]string, len(order))
	for i, j := range order {
		keys[i] = f.keys[j]
	}
	e.object(keys, func(i int) any { return f.values[order[i]] }, level)
}

// plain converts one level of a value outside the value set into it: a
// struct or map becomes *fields, a slice or array []any, a pointer what it
// points to, a named type its underlying value, a Marshaler its value. The
// parts (field values, items) stay Go values, converted when they are
// written, so nothing is built twice.
func (e *encoder) plain(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil
	}
	if m, ok := v.(Marshaler); ok {
		x := m.MarshalPyJSON()
		if reflect.TypeOf(x) == rv.Type() {
			e.fail("%s.MarshalPyJSON returns its own type", rv.Type())
		}
		return x
	}
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i := rv.Int(); int64(int(i)) == i {
			return int(i)
		}
		return Number(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt {
			return int(u)
		}
		return Number(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float64:
		return rv.Float()
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = e.box(rv.Index(i))
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			e.fail("cannot encode %s: object keys are strings", rv.Type())
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		f := &fields{keys: make([]string, len(keys)), values: make([]any, len(keys))}
		for i, k := range keys {
			f.keys[i], f.values[i] = k.String(), e.box(rv.MapIndex(k))
		}
		return f
	case reflect.Struct:
		return e.structFields(rv)
	case reflect.Pointer, reflect.Interface: // a pointer to a pointer or to an interface
		if rv.IsNil() {
			return nil
		}
		return e.box(rv.Elem())
	}
	e.fail("cannot encode %s", rv.Type())
	return nil
}

// box is a part of a value as an interface value; a struct or array that
// can be addressed is passed by pointer rather than copied.
func (e *encoder) box(v reflect.Value) any {
	if !v.CanInterface() {
		e.fail("cannot encode %s: it is reached through an unexported field", v.Type())
	}
	if (v.Kind() == reflect.Struct || v.Kind() == reflect.Array) && v.CanAddr() {
		return v.Addr().Interface()
	}
	return v.Interface()
}

// field is one JSON key of a struct type: its name, where its value is
// (the path through embedded structs) and its options.
type field struct {
	name      string
	index     []int
	tagged    bool
	omitEmpty bool
	omitZero  bool
	nullable  bool // `pyjson:"nullable"`: a nil slice or map is null
}

func (e *encoder) structFields(v reflect.Value) *fields {
	t := v.Type()
	list, ok := e.fields[t]
	if !ok {
		list = e.typeFields(t)
		if e.fields == nil {
			e.fields = map[reflect.Type][]field{}
		}
		e.fields[t] = list
	}
	out := &fields{keys: make([]string, 0, len(list)), values: make([]any, 0, len(list))}
next:
	for _, f := range list {
		fv := v
		for i, x := range f.index {
			if i > 0 && fv.Kind() == reflect.Pointer {
				if fv.IsNil() { // the fields of a nil embedded pointer are absent
					continue next
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
		if f.omitEmpty && isEmpty(fv) || f.omitZero && isZero(fv) {
			continue
		}
		var x any
		if !(f.nullable && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil()) {
			x = e.box(fv)
		}
		out.keys = append(out.keys, f.name)
		out.values = append(out.values, x)
	}
	return out
}

// typeFields lists a struct type's JSON keys in the order encoding/json
// writes them: breadth first through embedded structs, a name kept by its
// shallowest field (a tagged one winning a tie, a remaining tie dropping
// the name), then in declaration order.
func (e *encoder) typeFields(t reflect.Type) []field {
	type level struct {
		t     reflect.Type
		index []int
	}
	var found []field
	next := []level{{t: t}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count := map[reflect.Type]int{}
		for _, l := range current {
			count[l.t]++
		}
		for _, l := range current {
			if visited[l.t] {
				continue
			}
			visited[l.t] = true
			for i := 0; i < l.t.NumField(); i++ {
				sf := l.t.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(append([]int(nil), l.index...), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					continue
				}
				f := field{name: name, index: index, tagged: name != "", nullable: sf.Tag.Get("pyjson") == "nullable"}
				if name == "" {
					f.name = sf.Name
				}
				for _, o := range strings.Split(opts, ",") {
					switch o {
					case "omitempty":
						f.omitEmpty = true
					case "omitzero":
						f.omitZero = true
					case "string":
						e.fail("%s.%s: the ,string tag option is not supported", t, sf.Name)
					}
				}
				found = append(found, f)
				if count[l.t] > 1 { // the same struct twice at one depth: its names collide
					found = append(found, f)
				}
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.name != b.name {
			return a.name < b.name
		}
		if len(a.index) != len(b.index) {
			return len(a.index) < len(b.index)
		}
		return a.tagged && !b.tagged
	})
	var kept []field
	for i := 0; i < len(found); {
		j := i + 1
		for j < len(found) && found[j].name == found[i].name {
			j++
		}
		if j-i == 1 || len(found[i].index) < len(found[i+1].index) || found[i].tagged != found[i+1].tagged {
			kept = append(kept, found[i])
		}
		i = j
	}
	sort.Slice(kept, func(i, j int) bool { return lessIndex(kept[i].index, kept[j].index) })
	return kept
}

func lessIndex(a, b []int) bool {
	for k := 0; k < len(a) && k < len(b); k++ {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return len(a) < len(b)
}

// isEmpty is encoding/json's omitempty test: false, 0, "", a nil pointer
// or interface, an empty slice, map or array.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// isZero is encoding/json's omitzero test: the type's IsZero method when
// it has one, else the zero value.
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}
