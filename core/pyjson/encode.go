package pyjson

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Options selects json.dumps arguments. The zero value is json.dumps(v).
type Options struct {
	SortKeys bool // sort_keys=True
	Indent   int  // indent=N; 0 means None (one line with ", " and ": ")
	// Unicode writes non-ASCII characters as themselves (ensure_ascii=False).
	Unicode bool
	// Strict writes NaN and the infinities as null, for consumers that only
	// take standard JSON.
	Strict bool
}

// Marshal returns json.dumps(v, ...) for the given options, v being any Go
// value that stands for JSON, so that one encoder writes every output shape
// with Python's escaping and float formatting:
//
//   - the package's value set (nil, bool, string, Number, []any, *Object)
//     and int, int64, float64, []string and map[string]any; a nil *Object
//     is the empty object, as its methods treat it;
//   - a struct as an object of its exported fields in declaration order,
//     named, omitted and promoted as encoding/json does: `json:"name"`,
//     `json:"-"`, the omitempty and omitzero options, and the fields of an
//     embedded struct (or of a non-nil embedded pointer) in its place, the
//     shallower field winning a name;
//   - a pointer or an interface as the value it holds, nil as null;
//   - a slice or an array as a list. A nil slice is [] (Python has no nil
//     list, and every published record writes an empty one), unless the
//     struct field holding it is tagged `pyjson:"nullable"`: then null;
//   - a map with string keys as an object with its keys sorted; a nil map
//     is {} (null when its field is nullable);
//   - a named bool, string, integer or float64 type as its underlying value;
//   - a Marshaler as the value its MarshalPyJSON returns.
//
// encoding/json's own Marshaler is not consulted: the types here that have
// one implement it with this package. Anything else (a channel, a function,
// a complex or float32 number, a map with other keys, the ",string" tag
// option) is an error, as is nesting deeper than 1000 levels (a cycle).
func Marshal(v any, opt Options) (s string, err error) {
	e := encoder{opt: opt}
	defer func() {
		if r := recover(); r != nil {
			fail, ok := r.(encodeError)
			if !ok {
				panic(r)
			}
			err = fail.err
		}
	}()
	e.encode(v, 0)
	return e.b.String(), nil
}

// Dumps is Marshal for a value whose types the program chose: it panics
// where Marshal returns an error, which is then a programming error.
func Dumps(v any, opt Options) string {
	s, err := Marshal(v, opt)
	if err != nil {
		panic(err.Error())
	}
	return s
}

// MarshalJSON is the body of the MarshalJSON method of a type that
// encoding/json must also write (inside the lab's reports, across the WASM
// bridge): Marshal with Strict, standard ASCII JSON. encoding/json keeps
// its key order, float digits and escapes (a lone surrogate included),
// only compacting it and escaping <, > and &.
func MarshalJSON(v any) ([]byte, error) {
	s, err := Marshal(v, Options{Strict: true})
	return []byte(s), err
}

// encodeError carries an error out of the recursive encoder to Marshal.
type encodeError struct{ err error }

func (e *encoder) fail(format string, args ...any) {
	panic(encodeError{fmt.Errorf("pyjson: "+format, args...)})
}

// encoder is one Marshal call: the text so far, the options, and the
// struct types met (their fields computed once per call; the package
// keeps no state between calls).
type encoder struct {
	b     strings.Builder
	opt   Options
	types map[reflect.Type]*structType
}

func (e *encoder) encode(v any, level int) {
	if level > maxDepth {
		e.fail("nesting deeper than %d levels (a cycle?)", maxDepth)
	}
	b := &e.b
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeString(b, v, e.opt.Unicode)
	case Number:
		if e.opt.Strict && !v.IsInt() && !isFinite(v.Float64()) {
			b.WriteString("null")
			return
		}
		b.WriteString(numberRepr(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		if e.opt.Strict && !isFinite(v) {
			b.WriteString("null")
			return
		}
		b.WriteString(FloatRepr(v))
	case []any:
		e.list(len(v), func(i int) { e.encode(v[i], level+1) }, level)
	case []string:
		e.list(len(v), func(i int) { writeString(b, v[i], e.opt.Unicode) }, level)
	case *Object:
		keys := v.Keys()
		if e.opt.SortKeys {
			sort.Strings(keys)
		}
		e.object(keys, func(i int) any { return v.values[keys[i]] }, level)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a map has no order of its own
		e.object(keys, func(i int) any { return v[keys[i]] }, level)
	case *fields:
		e.fieldObject(v, level)
	default:
		e.encode(e.plain(v), level)
	}
}

func (e *encoder) newline(level int) {
	e.b.WriteByte('\n')
	e.b.WriteString(strings.Repeat(" ", e.opt.Indent*level))
}

// separator writes what comes between two items.
func (e *encoder) separator() {
	e.b.WriteByte(',')
	if e.opt.Indent == 0 {
		e.b.WriteByte(' ')
	}
}

func (e *encoder) list(n int, item func(int), level int) {
	if n == 0 {
		e.b.WriteString("[]")
		return
	}
	e.b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			e.separator()
		}
		if e.opt.Indent > 0 {
			e.newline(level + 1)
		}
		item(i)
	}
	if e.opt.Indent > 0 {
		e.newline(level)
	}
	e.b.WriteByte(']')
}

// object writes keys with the value of each (by its position in keys).
func (e *encoder) object(keys []string, value func(int) any, level int) {
	if len(keys) == 0 {
		e.b.WriteString("{}")
		return
	}
	e.b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			e.separator()
		}
		if e.opt.Indent > 0 {
			e.newline(level + 1)
		}
		writeString(&e.b, k, e.opt.Unicode)
		e.b.WriteString(": ")
		e.encode(value(i), level+1)
	}
	if e.opt.Indent > 0 {
		e.newline(level)
	}
	e.b.WriteByte('}')
}

const hexDigits = "0123456789abcdef"

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[r>>12&0xF])
	b.WriteByte(hexDigits[r>>8&0xF])
	b.WriteByte(hexDigits[r>>4&0xF])
	b.WriteByte(hexDigits[r&0xF])
}

// writeString follows CPython's encoder: with ensure_ascii every character
// outside ' '..'~' is escaped (short forms for \b \f \n \r \t, \uXXXX in
// lower-case hex otherwise, a surrogate pair above U+FFFF); without it only
// '"', '\\' and the C0 controls are escaped. Nothing else is: not '<', '>',
// '&', U+2028 or U+2029. A byte that is neither UTF-8 nor WTF-8 cannot occur
// in a Python str; it is written as U+FFFD.
func writeString(b *strings.Builder, s string, unicode bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7F && c != '"' && c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if size == 0 {
			r, size = 0xFFFD, 1
		}
		i += size
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				writeU(b, r)
			case unicode:
				b.WriteString(string(appendRune(nil, r)))
			case r < 0x10000:
				writeU(b, r)
			default:
				r -= 0x10000
				writeU(b, 0xD800|(r>>10)&0x3FF)
				writeU(b, 0xDC00|r&0x3FF)
			}
		}
	}
	b.WriteByte('"')
}

// numberRepr writes a decoded number as Python would after loading it: an
// int keeps its digits (minus zero is 0), a float is written by repr.
func numberRepr(n Number) string {
	if n.IsInt() {
		if strings.Trim(string(n), "-0") == "" {
			return "0"
		}
		return string(n)
	}
	return FloatRepr(n.Float64())
}

// FloatRepr is Python's float.__repr__ as json.dumps uses it: the shortest
// digits that round-trip, in positional notation when the decimal exponent is
// in [-4, 16), else in scientific notation with a signed two-digit exponent.
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(sci[strings.IndexByte(sci, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// MarshalJSON lets encoding/json write an Object in its key order, as
// standard ASCII JSON (non-finite numbers as null).
func (o *Object) MarshalJSON() ([]byte, error) { return MarshalJSON(o) }

// MarshalJSON writes the number, not a string (non-finite as null).
func (n Number) MarshalJSON() ([]byte, error) { return MarshalJSON(n) }
