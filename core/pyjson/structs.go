package pyjson

import (
	"math"
	"reflect"
	"slices"
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
		if x == nil {
			return x, false
		}
		var out *Object
		for i, k := range x.keys {
			y, changed := e.value(x.values[k], level+1)
			if changed && out == nil {
				out = newObject(x.Len())
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
		out := newObject(len(x))
		for _, k := range keys {
			y, _ := e.value(x[k], level+1)
			out.Set(k, y)
		}
		return out, true
	case *fields:
		out := newObject(len(x.keys))
		for i, k := range x.keys {
			y, _ := e.value(x.values[i], level+1)
			out.Set(k, y)
		}
		return out, true
	}
	y, _ := e.value(e.plain(v), level)
	return y, true
}

// newObject is an empty object with room for n keys.
func newObject(n int) *Object {
	return &Object{keys: make([]string, 0, n), values: make(map[string]any, n)}
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
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(f.keys[a], f.keys[b]) })
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

// structType is what an encoder knows of a struct type: its fields and
// their names (shared by every value that writes them all).
type structType struct {
	fields []field
	names  []string
}

func (e *encoder) structFields(v reflect.Value) *fields {
	t := v.Type()
	st, ok := e.types[t]
	if !ok {
		st = &structType{fields: e.typeFields(t)}
		st.names = make([]string, len(st.fields))
		for i, f := range st.fields {
			st.names[i] = f.name
		}
		if e.types == nil {
			e.types = map[reflect.Type]*structType{}
		}
		e.types[t] = st
	}
	values := make([]any, 0, len(st.fields))
	var keys []string // nil while every field so far is written (then st.names serves)
	omit := func() {
		if keys == nil {
			keys = append(make([]string, 0, len(st.fields)), st.names[:len(values)]...)
		}
	}
next:
	for _, f := range st.fields {
		fv := v
		for i, x := range f.index {
			if i > 0 && fv.Kind() == reflect.Pointer {
				if fv.IsNil() { // the fields of a nil embedded pointer are absent
					omit()
					continue next
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
		if f.omitEmpty && isEmpty(fv) || f.omitZero && isZero(fv) {
			omit()
			continue
		}
		var x any
		if !(f.nullable && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil()) {
			x = e.box(fv)
		}
		if keys != nil {
			keys = append(keys, f.name)
		}
		values = append(values, x)
	}
	if keys == nil {
		keys = st.names
	}
	return &fields{keys: keys, values: values}
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
	found := make([]field, 0, t.NumField())
	next := []level{{t: t}}
	visited := []reflect.Type{t} // few: a slice, not a map
	embedded := false
	for depth := 0; len(next) > 0; depth++ {
		current := next
		next = nil
		for n, l := range current {
			if depth > 0 {
				if slices.Contains(visited, l.t) {
					continue
				}
				visited = append(visited, l.t)
			}
			// the same struct twice at one depth: its names collide
			twice := slices.ContainsFunc(current[n+1:], func(o level) bool { return o.t == l.t })
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
				index := sf.Index // []int{i}, new for each call of Field
				if depth > 0 {
					index = append(append(make([]int, 0, len(l.index)+1), l.index...), i)
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					embedded = true
					continue
				}
				f := field{name: name, index: index, tagged: name != "", nullable: sf.Tag.Get("pyjson") == "nullable"}
				if name == "" {
					f.name = sf.Name
				}
				for opts != "" {
					var o string
					o, opts, _ = strings.Cut(opts, ",")
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
				if twice {
					found = append(found, f)
				}
			}
		}
	}
	if !embedded {
		return found // in declaration order; a name repeats only by mistake (go vet's structtag)
	}
	byIndex := func(a, b field) int { return slices.Compare(a.index, b.index) }
	if !repeatsName(found) {
		slices.SortFunc(found, byIndex)
		return found
	}
	slices.SortStableFunc(found, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		switch {
		case a.tagged && !b.tagged:
			return -1
		case b.tagged && !a.tagged:
			return 1
		}
		return 0
	})
	kept := found[:0:0]
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
	slices.SortFunc(kept, byIndex)
	return kept
}

// repeatsName reports whether two fields share a name (a struct has few).
func repeatsName(fs []field) bool {
	for i := range fs {
		for j := i + 1; j < len(fs); j++ {
			if fs[i].name == fs[j].name {
				return true
			}
		}
	}
	return false
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
