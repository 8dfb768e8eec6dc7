package pyjson

import (
	"fmt"
	"unicode/utf8"
)

// maxDepth bounds nesting. CPython's scanner recurses and stops with a
// RecursionError near 1000 levels; we refuse at the same depth with an error
// instead of growing the stack.
const maxDepth = 1000

// SyntaxError says why and where a text is not JSON that json.loads accepts.
type SyntaxError struct {
	Msg    string
	Offset int // byte offset into the text
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
}

// Decode parses text as json.loads(text) would (strict mode): NaN, Infinity
// and -Infinity are accepted, a repeated key keeps its first position and its
// last value, lone surrogate escapes are kept (as WTF-8), control characters
// inside strings are refused, and anything after the value but white space is
// an error.
func Decode(text string) (any, error) {
	d := decoder{s: text}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.s) {
		return nil, d.fail("extra data")
	}
	return v, nil
}

type decoder struct {
	s string
	i int
}

func (d *decoder) fail(msg string) error { return &SyntaxError{Msg: msg, Offset: d.i} }

func (d *decoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) literal(word string) bool {
	if len(d.s)-d.i >= len(word) && d.s[d.i:d.i+len(word)] == word {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) value(depth int) (any, error) {
	if d.i >= len(d.s) {
		return nil, d.fail("expecting value")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		if depth >= maxDepth {
			return nil, d.fail("nesting too deep")
		}
		return d.object(depth + 1)
	case c == '[':
		if depth >= maxDepth {
			return nil, d.fail("nesting too deep")
		}
		return d.array(depth + 1)
	case c == '"':
		return d.str()
	case c == '-' || ('0' <= c && c <= '9'):
		if d.literal("-Infinity") {
			return Number("-Infinity"), nil
		}
		return d.number()
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	case d.literal("null"):
		return nil, nil
	case d.literal("NaN"):
		return Number("NaN"), nil
	case d.literal("Infinity"):
		return Number("Infinity"), nil
	}
	return nil, d.fail("expecting value")
}

func (d *decoder) object(depth int) (any, error) {
	d.i++ // {
	o := &Object{values: map[string]any{}}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return o, nil
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.fail("expecting property name enclosed in double quotes")
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, d.fail("expecting ':' delimiter")
		}
		d.i++
		d.space()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		o.Set(key.(string), v)
		d.space()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return o, nil
		}
		if d.i >= len(d.s) || d.s[d.i] != ',' {
			return nil, d.fail("expecting ',' delimiter")
		}
		d.i++
		d.space()
	}
}

func (d *decoder) array(depth int) (any, error) {
	d.i++ // [
	list := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return list, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return list, nil
		}
		if d.i >= len(d.s) || d.s[d.i] != ',' {
			return nil, d.fail("expecting ',' delimiter")
		}
		d.i++
		d.space()
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? as Python's
// scanner does: a fraction or exponent that is not complete is left
// unconsumed (and then fails as extra data), it is not an error by itself.
func (d *decoder) number() (any, error) {
	start := d.i
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	switch {
	case j < len(d.s) && d.s[j] == '0':
		j++
	case j < len(d.s) && isDigit(d.s[j]):
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	default:
		return nil, d.fail("expecting value")
	}
	if j+1 < len(d.s) && d.s[j] == '.' && isDigit(d.s[j+1]) {
		j += 2
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		k := j + 1
		if k < len(d.s) && (d.s[k] == '+' || d.s[k] == '-') {
			k++
		}
		if k < len(d.s) && isDigit(d.s[k]) {
			for k < len(d.s) && isDigit(d.s[k]) {
				k++
			}
			j = k
		}
	}
	d.i = j
	return Number(d.s[start:j]), nil
}

func hexValue(c byte) (rune, bool) {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0'), true
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

func (d *decoder) hex4(at int) (rune, bool) {
	if at+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for k := at; k < at+4; k++ {
		h, ok := hexValue(d.s[k])
		if !ok {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

func (d *decoder) str() (any, error) {
	d.i++ // opening quote
	var out []byte
	for {
		start := d.i
		for d.i < len(d.s) && d.s[d.i] != '"' && d.s[d.i] != '\\' && d.s[d.i] >= 0x20 {
			if d.s[d.i] < utf8.RuneSelf {
				d.i++
				continue
			}
			_, size := decodeRune(d.s[d.i:])
			if size == 0 {
				return nil, d.fail("invalid UTF-8")
			}
			d.i += size
		}
		out = append(out, d.s[start:d.i]...)
		if d.i >= len(d.s) {
			return nil, d.fail("unterminated string")
		}
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return string(out), nil
		case c < 0x20:
			return nil, d.fail("invalid control character")
		}
		// backslash
		if d.i+1 >= len(d.s) {
			return nil, d.fail("unterminated string")
		}
		esc := d.s[d.i+1]
		if b, ok := simpleEscape(esc); ok {
			out = append(out, b)
			d.i += 2
			continue
		}
		if esc != 'u' {
			d.i++
			return nil, d.fail("invalid \\escape")
		}
		r, ok := d.hex4(d.i + 2)
		if !ok {
			d.i++
			return nil, d.fail("invalid \\uXXXX escape")
		}
		d.i += 6
		if 0xD800 <= r && r <= 0xDBFF && d.i+1 < len(d.s) && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
			if lo, ok := d.hex4(d.i + 2); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				d.i += 6
			}
		}
		out = appendRune(out, r)
	}
}

// appendRune appends r as UTF-8, or a surrogate code point as WTF-8.
func appendRune(b []byte, r rune) []byte {
	if 0xD800 <= r && r <= 0xDFFF {
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(b, r)
}

func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
