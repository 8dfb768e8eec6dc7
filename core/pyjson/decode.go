package pyjson

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDepth bounds nesting. CPython's scanner recurses and stops with a
// RecursionError near 1000 levels; we refuse at the same depth with an error
// instead of growing the stack.
const maxDepth = 1000

// SyntaxError says why and where a text is not JSON that json.loads accepts
// (or, decoded with DecodeOptions.UniqueKeys, repeats a key).
type SyntaxError struct {
	Msg    string
	Offset int // byte offset into the text
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
}

// MemoryError is a text whose decoded value would take more memory than
// DecodeOptions.MaxMemory allows. It is found before anything is built.
type MemoryError struct {
	Need, Max int64 // bytes
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("its decoded value would take about %s of memory, over the %s allowed for a text of its size (a file of many tiny values, not a recording or data file)",
		megabytes(e.Need), megabytes(e.Max))
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// DecodeOptions are rules stricter than json.loads, for files the project
// reads (a reply from a model is decoded as json.loads would, with Decode).
type DecodeOptions struct {
	// UniqueKeys refuses an object that repeats a key (json.loads keeps
	// the last value, so a file could hide an earlier one) or that holds
	// two keys differing only in case (encoding/json would match both to
	// one field, the last winning).
	UniqueKeys bool
	// MaxMemory, above 0, bounds the memory the decoded value may take: a
	// first pass over the text adds up what the value will hold and its
	// containers' lengths, and a text whose value would take more is
	// refused with a *MemoryError before anything is built. The second pass
	// then allocates every list, object and key list at its exact length
	// and shares short number literals, so the value takes what the first
	// pass counted (see Cost) and no growth garbage.
	MaxMemory int64
}

// Decode parses text as json.loads(text) would (strict mode): NaN, Infinity
// and -Infinity are accepted, a repeated key keeps its first position and its
// last value, lone surrogate escapes are kept (as WTF-8), control characters
// inside strings are refused, and anything after the value but white space is
// an error. Strings without escapes share the text's memory.
func Decode(text string) (any, error) {
	return DecodeWith(text, DecodeOptions{})
}

// DecodeWith is Decode under stricter options.
func DecodeWith(text string, o DecodeOptions) (any, error) {
	d := decoder{s: text, unique: o.UniqueKeys}
	if o.MaxMemory > 0 {
		if int64(len(text)) > math.MaxInt32 {
			return nil, &MemoryError{Need: int64(len(text)) * 2, Max: o.MaxMemory}
		}
		m := decoder{s: text, measure: true, unique: o.UniqueKeys}
		if _, err := m.document(); err != nil {
			return nil, err
		}
		if m.cost > o.MaxMemory {
			return nil, &MemoryError{Need: m.cost, Max: o.MaxMemory}
		}
		d.counts, d.short = m.counts, map[string]any{}
	}
	return d.document()
}

// Cost is the memory DecodeWith with a MaxMemory takes for text under o,
// in bytes, as its first pass counts it (an upper bound of what both
// passes allocate), or an error if text does not decode.
func Cost(text string, o DecodeOptions) (int64, error) {
	m := decoder{s: text, measure: true, unique: o.UniqueKeys}
	if _, err := m.document(); err != nil {
		return 0, err
	}
	return m.cost, nil
}

// Sizes the first pass charges, in bytes, for 64-bit Go: a boxed string
// or number header, a boxed slice header, an Object, a list or key slot.
const (
	boxedString = 16
	boxedSlice  = 24
	objectSize  = 32
	slotSize    = 16
	countChunk  = 1 << 14           // containers' lengths are kept in chunks of this many
	chunkSize   = 4*countChunk + 24 // one chunk, and its slot in the list of chunks
	shortCached = 4                 // number literals this long or shorter are boxed once per text
	shortEntry  = 160               // one entry of that cache, with the map's growth
	shortMax    = 40000
)

// mapCost is an upper bound of a Go map[string]any made with room for n
// keys: a header and one group of eight slots for up to eight, else groups
// of 8 slots at a 7/8 load, rounded up to a power of two (about 75 bytes a
// key at worst) and the tables' headers.
func mapCost(n int) int64 {
	switch {
	case n == 0:
		return 0
	case n <= 8:
		return 48 + 288
	}
	return 64 + 80*int64(n) + 128*int64(n/1024+1)
}

type decoder struct {
	s string
	i int

	unique bool // DecodeOptions.UniqueKeys

	// measure walks without building, adding up in cost what building will
	// allocate and recording each container's length in counts, in the
	// order the containers open; a build with counts takes them in that
	// order (next) and shares number literals of up to shortCached bytes
	// (short).
	measure bool
	cost    int64
	shorts  int
	counts  counts
	next    int
	short   map[string]any
}

// counts are containers' lengths in chunks, so that recording millions of
// them never copies (or leaves behind) a grown slice.
type counts [][]int32

// push adds a length and returns its index, and whether a chunk was made.
func (c *counts) push() (int, bool) {
	grew := false
	if n := len(*c); n == 0 || len((*c)[n-1]) == countChunk {
		*c = append(*c, make([]int32, 0, countChunk))
		grew = true
	}
	last := &(*c)[len(*c)-1]
	*last = append(*last, 0)
	return (len(*c)-1)*countChunk + len(*last) - 1, grew
}

func (c counts) at(i int) *int32 { return &c[i/countChunk][i%countChunk] }

func (d *decoder) document() (any, error) {
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.s) {
		return nil, d.fail("extra data")
	}
	if d.measure {
		d.cost += shortEntry * int64(min(d.shorts, shortMax))
	}
	return v, nil
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
		s, err := d.str()
		switch {
		case err != nil:
			return nil, err
		case d.measure:
			if s != "" {
				d.cost += boxedString // an escaped string was charged by str
			}
			return nil, nil
		}
		return s, nil
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

// open starts a container: while measuring it reserves the slot of its
// length; while building with counts it returns that length (else 0).
func (d *decoder) open() (slot, n int) {
	switch {
	case d.measure:
		slot, grew := d.counts.push()
		if grew {
			d.cost += chunkSize
		}
		return slot, 0
	case d.counts != nil:
		n = int(*d.counts.at(d.next))
		d.next++
		return 0, n
	}
	return 0, 0
}

// close records a measured container's length n and charges what building
// it takes: keys or slots, and per object its Object and map.
func (d *decoder) close(slot, n int, object bool) {
	if !d.measure {
		return
	}
	*d.counts.at(slot) = int32(n)
	if object {
		d.cost += objectSize + slotSize*int64(n) + mapCost(n)
		if d.unique && n > 8 {
			d.cost += slotSize * int64(n) // caseVariants sorts a copy of the keys
		}
		return
	}
	d.cost += boxedSlice + slotSize*int64(n)
}

func (d *decoder) object(depth int) (any, error) {
	at := d.i
	d.i++ // {
	slot, size := d.open()
	var o *Object
	if !d.measure {
		o = &Object{}
		if size > 0 {
			o.keys, o.values = make([]string, 0, size), make(map[string]any, size)
		}
	}
	n := 0
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.close(slot, 0, true)
		return o, nil
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.fail("expecting property name enclosed in double quotes")
		}
		keyAt := d.i
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
		n++
		if !d.measure {
			if _, repeated := o.values[key]; repeated && d.unique {
				return nil, &SyntaxError{Msg: fmt.Sprintf("the key %s appears twice in one object", quoted(key)), Offset: keyAt}
			}
			o.Set(key, v)
		}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			d.close(slot, n, true)
			if d.unique && !d.measure {
				if a, b, ok := caseVariants(o.keys); ok {
					return nil, &SyntaxError{Msg: fmt.Sprintf("the keys %s and %s of one object differ only in case", quoted(a), quoted(b)), Offset: at}
				}
			}
			return o, nil
		}
		if d.i >= len(d.s) || d.s[d.i] != ',' {
			return nil, d.fail("expecting ',' delimiter")
		}
		d.i++
		d.space()
	}
}

// quoted shows a key in an error, shortened.
func quoted(key string) string {
	if r := []rune(key); len(r) > 40 {
		key = string(r[:40]) + "…"
	}
	return Dumps(key, Options{Unicode: true})
}

// caseVariants finds two keys equal under Unicode case folding (as
// strings.EqualFold and encoding/json's field matching compare them):
// pairwise for a few keys, else in a copy sorted by their folded form.
func caseVariants(keys []string) (string, string, bool) {
	if len(keys) <= 8 {
		for i := range keys {
			for j := i + 1; j < len(keys); j++ {
				if strings.EqualFold(keys[i], keys[j]) {
					return keys[i], keys[j], true
				}
			}
		}
		return "", "", false
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, foldCompare)
	for i := 1; i < len(sorted); i++ {
		if foldCompare(sorted[i-1], sorted[i]) == 0 {
			return sorted[i-1], sorted[i], true
		}
	}
	return "", "", false
}

// foldCompare orders strings by their runes' case folds (each rune taken
// as the least of its simple folding orbit), so that it returns 0 exactly
// when strings.EqualFold holds. It allocates nothing.
func foldCompare(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if c := cmp.Compare(leastFold(ra), leastFold(rb)); c != 0 {
			return c
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

func leastFold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

func (d *decoder) array(depth int) (any, error) {
	d.i++ // [
	slot, size := d.open()
	var list []any
	if !d.measure {
		list = make([]any, 0, size)
	}
	n := 0
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.close(slot, 0, false)
		if d.measure {
			return nil, nil
		}
		return list, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		n++
		if !d.measure {
			list = append(list, v)
		}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			d.close(slot, n, false)
			if d.measure {
				return nil, nil
			}
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
	lit := d.s[start:j]
	switch {
	case d.measure && len(lit) <= shortCached:
		d.shorts++
		return nil, nil
	case d.measure:
		d.cost += boxedString
		return nil, nil
	case d.short != nil && len(lit) <= shortCached:
		if v, ok := d.short[lit]; ok {
			return v, nil
		}
		var v any = Number(lit)
		d.short[lit] = v
		return v, nil
	}
	return Number(lit), nil
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

// plain scans the run of unescaped characters from d.i, stopping at a
// quote, a backslash, a control character or the end.
func (d *decoder) plain() error {
	for d.i < len(d.s) && d.s[d.i] != '"' && d.s[d.i] != '\\' && d.s[d.i] >= 0x20 {
		if d.s[d.i] < utf8.RuneSelf {
			d.i++
			continue
		}
		_, size := decodeRune(d.s[d.i:])
		if size == 0 {
			return d.fail("invalid UTF-8")
		}
		d.i += size
	}
	return nil
}

// str reads a string. One without escapes is the text's own bytes (no
// copy); one with escapes is decoded into a buffer of its raw length,
// which decoding can only shorten.
func (d *decoder) str() (string, error) {
	d.i++ // opening quote
	start := d.i
	if err := d.plain(); err != nil {
		return "", err
	}
	if d.i < len(d.s) && d.s[d.i] == '"' {
		d.i++
		return d.s[start : d.i-1], nil
	}
	var out []byte
	raw := d.i - start + d.rawLength()
	if d.measure {
		d.cost += boxedString + 2*int64(raw) // the buffer, then the string made from it
	} else {
		out = make([]byte, 0, raw)
		out = append(out, d.s[start:d.i]...)
	}
	for {
		if d.i >= len(d.s) {
			return "", d.fail("unterminated string")
		}
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return string(out), nil
		case c < 0x20:
			return "", d.fail("invalid control character")
		}
		// backslash
		if d.i+1 >= len(d.s) {
			return "", d.fail("unterminated string")
		}
		esc := d.s[d.i+1]
		if b, ok := simpleEscape(esc); ok {
			if !d.measure {
				out = append(out, b)
			}
			d.i += 2
		} else {
			if esc != 'u' {
				d.i++
				return "", d.fail("invalid \\escape")
			}
			r, ok := d.hex4(d.i + 2)
			if !ok {
				d.i++
				return "", d.fail("invalid \\uXXXX escape")
			}
			d.i += 6
			if 0xD800 <= r && r <= 0xDBFF && d.i+1 < len(d.s) && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
				if lo, ok := d.hex4(d.i + 2); ok && 0xDC00 <= lo && lo <= 0xDFFF {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					d.i += 6
				}
			}
			if !d.measure {
				out = appendRune(out, r)
			}
		}
		from := d.i
		if err := d.plain(); err != nil {
			return "", err
		}
		if !d.measure {
			out = append(out, d.s[from:d.i]...)
		}
	}
}

// rawLength is the length of the string from d.i to its closing quote (or
// the end of the text), escapes counted as written.
func (d *decoder) rawLength() int {
	j := d.i
	for j < len(d.s) && d.s[j] != '"' {
		if d.s[j] == '\\' {
			j++
		}
		j++
	}
	return min(j, len(d.s)) - d.i
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
