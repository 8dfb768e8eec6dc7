package pyjson

import (
	"fmt"
	"math"
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

// Dumps returns json.dumps(v, ...) for the given options. It panics on a value
// of a type outside the package's value set, which is a programming error.
func Dumps(v any, opt Options) string {
	var b strings.Builder
	encode(&b, v, opt, 0)
	return b.String()
}

func encode(b *strings.Builder, v any, opt Options, level int) {
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
		writeString(b, v, opt.Unicode)
	case Number:
		if opt.Strict && !v.IsInt() && !isFinite(v.Float64()) {
			b.WriteString("null")
			return
		}
		b.WriteString(numberRepr(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		if opt.Strict && !isFinite(v) {
			b.WriteString("null")
			return
		}
		b.WriteString(FloatRepr(v))
	case []any:
		encodeList(b, len(v), func(i int) { encode(b, v[i], opt, level+1) }, opt, level)
	case []string:
		encodeList(b, len(v), func(i int) { writeString(b, v[i], opt.Unicode) }, opt, level)
	case *Object:
		keys := v.Keys()
		if opt.SortKeys {
			sort.Strings(keys)
		}
		encodeObject(b, keys, func(k string) any { x, _ := v.Get(k); return x }, opt, level)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a map has no order of its own
		encodeObject(b, keys, func(k string) any { return v[k] }, opt, level)
	default:
		panic(fmt.Sprintf("pyjson: cannot encode %T", v))
	}
}

func newline(b *strings.Builder, opt Options, level int) {
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", opt.Indent*level))
}

func encodeList(b *strings.Builder, n int, item func(int), opt Options, level int) {
	if n == 0 {
		b.WriteString("[]")
		return
	}
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
			if opt.Indent == 0 {
				b.WriteByte(' ')
			}
		}
		if opt.Indent > 0 {
			newline(b, opt, level+1)
		}
		item(i)
	}
	if opt.Indent > 0 {
		newline(b, opt, level)
	}
	b.WriteByte(']')
}

func encodeObject(b *strings.Builder, keys []string, get func(string) any, opt Options, level int) {
	if len(keys) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
			if opt.Indent == 0 {
				b.WriteByte(' ')
			}
		}
		if opt.Indent > 0 {
			newline(b, opt, level+1)
		}
		writeString(b, k, opt.Unicode)
		b.WriteString(": ")
		encode(b, get(k), opt, level+1)
	}
	if opt.Indent > 0 {
		newline(b, opt, level)
	}
	b.WriteByte('}')
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
func (o *Object) MarshalJSON() ([]byte, error) {
	return []byte(Dumps(o, Options{Strict: true})), nil
}

// MarshalJSON writes the number, not a string (non-finite as null).
func (n Number) MarshalJSON() ([]byte, error) {
	return []byte(Dumps(n, Options{Strict: true})), nil
}
