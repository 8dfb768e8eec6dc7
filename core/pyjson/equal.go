package pyjson

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
)

// Equal reports whether a == b would be true for the two values in Python:
// objects compare by key set and values whatever their order, numbers by
// value across int, float and bool (True == 1, 0 == 0.0), NaN never.
func Equal(a, b any) bool {
	_, _, same := diff(a, b, "$")
	return same
}

// Difference locates the first place two values differ.
type Difference struct {
	Path string // JSONPath-like location, e.g. $.contents[0].parts[0].text
	Got  string // a short excerpt of the first value at Path
	Want string // a short excerpt of the second value at Path
}

func (d Difference) String() string {
	return fmt.Sprintf("%s differs: got %s, want %s", d.Path, d.Got, d.Want)
}

// Diff returns the first difference between got and want, visiting object keys
// in sorted order, or ok=true when they are Equal. For two strings the excerpt
// starts a little before the first differing character and says at which
// character (code point) that is.
func Diff(got, want any) (d Difference, ok bool) {
	path, detail, same := diff(got, want, "$")
	if same {
		return Difference{}, true
	}
	return Difference{Path: path, Got: detail[0], Want: detail[1]}, false
}

func diff(a, b any, path string) (string, [2]string, bool) {
	na, aNum := numeric(a)
	nb, bNum := numeric(b)
	if aNum && bNum {
		if numbersEqual(na, nb) {
			return "", [2]string{}, true
		}
		return path, [2]string{excerpt(a), excerpt(b)}, false
	}
	switch av := a.(type) {
	case nil:
		if b == nil {
			return "", [2]string{}, true
		}
	case string:
		if bv, ok := b.(string); ok {
			if av == bv {
				return "", [2]string{}, true
			}
			return stringDiff(av, bv, path)
		}
	case []any:
		if bv, ok := b.([]any); ok {
			for i := 0; i < len(av) && i < len(bv); i++ {
				if p, d, same := diff(av[i], bv[i], fmt.Sprintf("%s[%d]", path, i)); !same {
					return p, d, false
				}
			}
			if len(av) == len(bv) {
				return "", [2]string{}, true
			}
			return path, [2]string{fmt.Sprintf("a list of %d items", len(av)), fmt.Sprintf("a list of %d items", len(bv))}, false
		}
	case *Object, map[string]any:
		if _, ok := asObject(b); ok {
			ao, _ := asObject(a)
			bo, _ := asObject(b)
			keys := map[string]bool{}
			for k := range ao {
				keys[k] = true
			}
			for k := range bo {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				p := path + "." + k
				if !isIdentifier(k) {
					p = path + "[" + strconv.Quote(k) + "]"
				}
				x, inA := ao[k]
				y, inB := bo[k]
				switch {
				case !inA:
					return p, [2]string{"(missing)", excerpt(y)}, false
				case !inB:
					return p, [2]string{excerpt(x), "(missing)"}, false
				}
				if q, d, same := diff(x, y, p); !same {
					return q, d, false
				}
			}
			return "", [2]string{}, true
		}
	}
	return path, [2]string{excerpt(a), excerpt(b)}, false
}

func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

func asObject(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case *Object:
		m := make(map[string]any, v.Len())
		for _, k := range v.keys {
			m[k] = v.values[k]
		}
		return m, true
	}
	return nil, false
}

// numeric normalizes the number-like values: Python's bool is an int.
func numeric(v any) (Number, bool) {
	switch v := v.(type) {
	case Number:
		return v, true
	case bool:
		if v {
			return "1", true
		}
		return "0", true
	case int:
		return Number(strconv.Itoa(v)), true
	case int64:
		return Number(strconv.FormatInt(v, 10)), true
	case float64:
		if math.IsNaN(v) {
			return "NaN", true
		}
		if math.IsInf(v, 0) {
			if v > 0 {
				return "Infinity", true
			}
			return "-Infinity", true
		}
		return Number(strconv.FormatFloat(v, 'g', -1, 64)), true
	}
	return "", false
}

// numbersEqual compares exactly, as Python compares int and float.
func numbersEqual(a, b Number) bool {
	if a.IsInt() && b.IsInt() {
		return a.bigInt().Cmp(b.bigInt()) == 0
	}
	fa, fb := a.Float64(), b.Float64()
	if math.IsNaN(fa) || math.IsNaN(fb) {
		return false
	}
	if math.IsInf(fa, 0) || math.IsInf(fb, 0) {
		// an int is never infinite, however large its float conversion
		return !a.IsInt() && !b.IsInt() && fa == fb
	}
	x, y := exact(a), exact(b)
	return x.Cmp(y) == 0
}

func exact(n Number) *big.Float {
	if n.IsInt() {
		return new(big.Float).SetInt(n.bigInt())
	}
	return new(big.Float).SetFloat64(n.Float64())
}

const excerptRunes = 40

// excerpt is a short one-line rendering of a value for a message.
func excerpt(v any) string {
	switch v.(type) {
	case *Object, map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return clip(Dumps(v, Options{Unicode: true}))
}

func clip(s string) string {
	r := []rune(s)
	if len(r) > excerptRunes {
		return string(r[:excerptRunes]) + "…"
	}
	return s
}

func stringDiff(a, b, path string) (string, [2]string, bool) {
	ra, rb := codePoints(a), codePoints(b)
	i := 0
	for i < len(ra) && i < len(rb) && ra[i] == rb[i] {
		i++
	}
	from := max(0, i-10)
	show := func(r []rune) string {
		if from >= len(r) {
			return "(end of text)"
		}
		end := min(len(r), from+excerptRunes)
		s := Dumps(string(appendRunes(r[from:end])), Options{Unicode: true})
		if from > 0 {
			s = "…" + s
		}
		if end < len(r) {
			s += "…"
		}
		return s
	}
	return fmt.Sprintf("%s (character %d)", path, i), [2]string{show(ra), show(rb)}, false
}

func codePoints(s string) []rune {
	var out []rune
	for i := 0; i < len(s); {
		r, size := decodeRune(s[i:])
		if size == 0 {
			r, size = 0xFFFD, 1
		}
		out = append(out, r)
		i += size
	}
	return out
}

func appendRunes(rs []rune) []byte {
	var b []byte
	for _, r := range rs {
		b = appendRune(b, r)
	}
	return b
}

// Truthy is Python's bool(v) for a decoded value.
func Truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case *Object:
		return v.Len() > 0
	case map[string]any:
		return len(v) > 0
	}
	if n, ok := numeric(v); ok {
		f := n.Float64()
		return f != 0 || math.IsNaN(f)
	}
	return true
}
