// Package secret keeps the API key out of everything the lab shows or
// writes. A server (or a model asked to repeat its request, or a
// provider's error page) can echo the key back in a body in many spellings,
// so matching only the key's exact bytes misses most echoes. Each
// character of the key may be written as itself in either case (ASCII
// letters), as a JSON escape (\u0041, "/" as \/, the backslash doubled any
// number of times), percent-encoded (%41, + for a space) or as an HTML
// reference (&#65;, &#x41;, &amp;, &sol;), in any mix, with white space
// between characters (a space, a line break, also escaped); and the key's
// bytes may sit anywhere in base64 text (standard or URL alphabet, padded
// or not, at any of the three alignments, broken into lines).
//
// Redact is applied by every transport to every response body, whatever
// its status, before anything else sees it; Contains is the final check the
// command line makes on every file and line it writes, and the page's
// download screen. The key compared is the key as sent: trimmed of white
// space, as the transports trim it. A key shorter than MinKey characters is
// not a key: the command line and the page refuse one at entry (CheckKey),
// so it is never sent, and these functions never look for a fragment that
// would match nearly any text.
package secret

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Mark replaces the key where it was found.
const Mark = "[redacted key]"

// MinKey is the fewest characters (code points) a key has. Gemini's keys
// have 39.
const MinKey = 16

// CheckKey refuses a key (as sent: trimmed) shorter than MinKey characters;
// "" is no key and passes.
func CheckKey(key string) error {
	k := strings.TrimSpace(key)
	if n := utf8.RuneCountInString(k); n > 0 && n < MinKey {
		return fmt.Errorf("a key of %d characters is not an API key (a key has at least %d; Gemini's have 39)", n, MinKey)
	}
	return nil
}

// pattern is one spelling to look for: the key's characters, compared
// with ASCII letters folded, or a run of base64 digits, compared exactly.
type pattern struct {
	chars []rune
	fold  bool
}

// patterns are what to look for: the key and the base64 digits its bytes
// always produce, at each alignment and in both alphabets; nil for no key.
func patterns(key string) []pattern {
	k := strings.TrimSpace(key)
	if utf8.RuneCountInString(k) < MinKey {
		return nil
	}
	out := []pattern{{chars: []rune(k), fold: true}}
	seen := map[string]bool{}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, p := range base64Runs(enc, []byte(k)) {
			if !seen[p] {
				seen[p] = true
				out = append(out, pattern{chars: []rune(p)})
			}
		}
	}
	return out
}

// base64Runs are the digits that encode key's bytes, and nothing else,
// when they start at byte offset 0, 1 and 2 of a 3-byte group: digit i
// covers bits 6i to 6i+6, and those within the key's bits are the same
// whatever surrounds it (the one or two digits at each end that mix in
// the neighbours' bits are left out, and with them any padding).
func base64Runs(enc *base64.Encoding, key []byte) []string {
	out := make([]string, 0, 3)
	for o := range 3 {
		digits := enc.EncodeToString(append(make([]byte, o), key...))
		from, to := (8*o+5)/6, (8*o+8*len(key))/6
		out = append(out, digits[from:to])
	}
	return out
}

// Redact returns data with every occurrence of key, in any of its forms,
// replaced by Mark. It returns data itself when there is none (or no key).
func Redact(data []byte, key string) []byte {
	ps := patterns(key)
	if ps == nil {
		return data
	}
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		end := matchAny(data, i, ps)
		if end < 0 {
			i++
			continue
		}
		out = append(append(out, data[last:i]...), Mark...)
		i, last = end, end
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// Contains reports whether data holds key in any of its forms.
func Contains(data []byte, key string) bool {
	ps := patterns(key)
	for i := 0; ps != nil && i < len(data); i++ {
		if matchAny(data, i, ps) >= 0 {
			return true
		}
	}
	return false
}

// matchAny returns where the first pattern found at data[at] ends, or -1.
func matchAny(data []byte, at int, ps []pattern) int {
	for _, p := range ps {
		if end := match(data, at, p); end >= 0 {
			return end
		}
	}
	return -1
}

// match returns where an occurrence of p starting at data[at] ends, or -1:
// each of its characters spelled in one of the forms char accepts, white
// space allowed before each one after the first that is not itself white
// space (looked for only when the character is not right there: a + is a
// plus before it is a space).
func match(data []byte, at int, p pattern) int {
	i := at
	for j, r := range p.chars {
		n := char(data[i:], r, p.fold)
		if n == 0 && j > 0 && !isSpace(r) {
			if k := skipSpace(data, i, r, p.fold); k > i {
				i, n = k, char(data[k:], r, p.fold)
			}
		}
		if n == 0 {
			return -1
		}
		i += n
	}
	return i
}

// spaces are the white space that may split an echo of the key.
var spaces = [...]rune{' ', '\n', '\r', '\t', '\f', '\v'}

func isSpace(r rune) bool {
	for _, s := range spaces {
		if r == s {
			return true
		}
	}
	return false
}

// skipSpace returns where the white space at data[i] ends (i if none), in
// any spelling char accepts (a line break as \n or &#10; too), or where r
// is spelled first (a + that is r is not a space).
func skipSpace(data []byte, i int, r rune, fold bool) int {
	for i < len(data) && char(data[i:], r, fold) == 0 {
		n := 0
		for _, s := range spaces {
			if n = char(data[i:], s, false); n > 0 {
				break
			}
		}
		if n == 0 {
			return i
		}
		i += n
	}
	return i
}

// same reports whether c is r, or with fold the other case of an ASCII
// letter r.
func same(c, r rune, fold bool) bool { return c == r || fold && isLetter(r) && lower(c) == lower(r) }

func isLetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

func lower(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// char returns how many bytes at the start of b spell r, or 0: an escape,
// a percent-encoding or a reference first (so &amp; is an ampersand, not
// the ampersand of "&amp;"), else r itself.
func char(b []byte, r rune, fold bool) int {
	if len(b) == 0 {
		return 0
	}
	n := 0
	switch b[0] {
	case '\\':
		n = jsonEscape(b, r, fold)
	case '%', '+':
		n = percent(b, r, fold)
	case '&':
		n = htmlReference(b, r, fold)
	}
	if n > 0 {
		return n
	}
	if c, size := utf8.DecodeRune(b); !(c == utf8.RuneError && size == 1) && same(c, r, fold) {
		return size
	}
	return 0
}

// jsonEscape matches a JSON escape of r: \uXXXX (a surrogate pair above
// U+FFFF) or the short escape for / " \ and the control characters, its
// backslash doubled any number of times (JSON inside a JSON string).
func jsonEscape(b []byte, r rune, fold bool) int {
	n := 0
	for n < len(b) && b[n] == '\\' {
		n++
	}
	if n < len(b) && shortEscape(b[n]) == r {
		return n + 1
	}
	u, ok := hex4u(b, n)
	switch {
	case !ok:
		return 0
	case r <= 0xFFFF && same(u, r, fold):
		return n + 5
	case r > 0xFFFF && u == 0xD800+(r-0x10000)>>10:
		if lo, ok := hex4u(b[n+5:], n); ok && lo == 0xDC00+(r-0x10000)&0x3FF {
			return 2 * (n + 5)
		}
	}
	return 0
}

// shortEscape is the character a two-character JSON escape \c stands
// for (-1 when \c is not one).
func shortEscape(c byte) rune {
	switch c {
	case '/', '"', '\\':
		return rune(c)
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return -1
}

// hex4u reads n backslashes, then uXXXX.
func hex4u(b []byte, n int) (rune, bool) {
	if len(b) < n+5 || b[n] != 'u' {
		return 0, false
	}
	for _, c := range b[:n] {
		if c != '\\' {
			return 0, false
		}
	}
	var r rune
	for _, c := range b[n+1 : n+5] {
		h, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// percent matches r's UTF-8 bytes each written as itself or as %XX, or a
// space written as +.
func percent(b []byte, r rune, fold bool) int {
	if r == ' ' && b[0] == '+' {
		return 1
	}
	var enc [utf8.UTFMax]byte
	raw := enc[:utf8.EncodeRune(enc[:], r)]
	i := 0
	for _, want := range raw {
		switch {
		case i+2 < len(b) && b[i] == '%' && escaped(b[i+1], b[i+2], want, fold && len(raw) == 1):
			i += 3
		case i < len(b) && b[i] == want:
			i++
		default:
			return 0
		}
	}
	return i
}

// escaped reports whether %hl is the byte want.
func escaped(h, l, want byte, fold bool) bool {
	hi, ok1 := hexDigit(h)
	lo, ok2 := hexDigit(l)
	return ok1 && ok2 && sameByte(hi<<4|lo, want, fold)
}

func sameByte(c, want byte, fold bool) bool { return same(rune(c), rune(want), fold) }

// htmlReference matches an HTML character reference to r: decimal &#65;
// or hexadecimal &#x41; (the semicolon may be left out, as browsers allow)
// or a named one (&amp;, &sol;, ...: named references are case-sensitive).
func htmlReference(b []byte, r rune, fold bool) int {
	if len(b) < 3 {
		return 0
	}
	if b[1] == '#' {
		i, base := 2, rune(10)
		if b[i] == 'x' || b[i] == 'X' {
			i, base = 3, 16
		}
		start := i
		var v rune
		for i < len(b) && i-start < 8 {
			d, ok := hexDigit(b[i])
			if !ok || rune(d) >= base {
				break
			}
			v = v*base + rune(d)
			i++
		}
		if i == start || !same(v, r, fold) {
			return 0
		}
		if i < len(b) && b[i] == ';' {
			i++
		}
		return i
	}
	end := 1
	for end < len(b) && end < 20 && isLetter(rune(b[end])) {
		end++
	}
	if end == 1 || end >= len(b) || b[end] != ';' {
		return 0
	}
	if c, ok := entities[string(b[1:end])]; ok && same(c, r, fold) {
		return end + 1
	}
	return 0
}

// entities are HTML's named references for the ASCII characters that have
// one, and the white space an echo may be split by.
var entities = map[string]rune{
	"amp": '&', "AMP": '&', "lt": '<', "LT": '<', "gt": '>', "GT": '>', "quot": '"', "QUOT": '"', "apos": '\'',
	"sol": '/', "bsol": '\\', "plus": '+', "equals": '=', "lowbar": '_', "UnderBar": '_', "period": '.', "colon": ':',
	"comma": ',', "excl": '!', "num": '#', "dollar": '$', "percnt": '%', "lpar": '(', "rpar": ')', "ast": '*',
	"midast": '*', "semi": ';', "quest": '?', "commat": '@', "lsqb": '[', "lbrack": '[', "rsqb": ']', "rbrack": ']',
	"Hat": '^', "grave": '`', "DiacriticalGrave": '`', "lcub": '{', "lbrace": '{', "rcub": '}', "rbrace": '}',
	"verbar": '|', "vert": '|', "VerticalLine": '|', "Tab": '\t', "NewLine": '\n',
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
