// Package secret keeps the API key out of everything the lab shows or
// writes. A server (or a model asked to repeat its request) can echo the
// key back in a body: verbatim, JSON-escaped (any character as \u0041,
// "/" as \/) or URL-encoded (%41, + for a space), in any mix, so matching
// only the key's exact bytes misses most echoes. Redact is applied by
// every transport to every response body, whatever its status, before
// anything else sees it; Contains is the final check the command line
// makes on every file and line it writes. The key compared is the key as
// sent: trimmed of white space, as the transports trim it.
package secret

import (
	"strings"
	"unicode/utf8"
)

// Mark replaces the key where it was found.
const Mark = "[redacted key]"

// Redact returns data with every occurrence of key, in any of its forms,
// replaced by Mark. It returns data itself when there is none (or no key).
func Redact(data []byte, key string) []byte {
	key = strings.TrimSpace(key)
	if key == "" {
		return data
	}
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		end := match(data, i, key)
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
	key = strings.TrimSpace(key)
	if key == "" {
		return false
	}
	for i := range data {
		if match(data, i, key) >= 0 {
			return true
		}
	}
	return false
}

// match returns where an occurrence of key starting at data[at] ends, or
// -1: each of its characters may be written as itself, as a JSON escape or
// percent-encoded.
func match(data []byte, at int, key string) int {
	i := at
	for _, r := range key {
		n := char(data[i:], r)
		if n == 0 {
			return -1
		}
		i += n
	}
	return i
}

// char returns how many bytes at the start of b spell r, or 0.
func char(b []byte, r rune) int {
	var enc [utf8.UTFMax]byte
	raw := enc[:utf8.EncodeRune(enc[:], r)]
	if len(b) >= len(raw) && string(b[:len(raw)]) == string(raw) {
		return len(raw)
	}
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case '\\':
		return jsonEscape(b, r)
	case '%', '+':
		return percent(b, raw, r)
	}
	return 0
}

// jsonEscape matches a JSON escape of r: \uXXXX (a surrogate pair above
// U+FFFF) or the short escape for / " \ and the control characters, its
// backslash doubled any number of times (JSON inside a JSON string).
func jsonEscape(b []byte, r rune) int {
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
	case r <= 0xFFFF && u == r:
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
func percent(b []byte, raw []byte, r rune) int {
	if r == ' ' && b[0] == '+' {
		return 1
	}
	i := 0
	for _, want := range raw {
		switch {
		case i < len(b) && b[i] == want:
			i++
		case i+2 < len(b) && b[i] == '%':
			hi, ok1 := hexDigit(b[i+1])
			lo, ok2 := hexDigit(b[i+2])
			if !ok1 || !ok2 || hi<<4|lo != want {
				return 0
			}
			i += 3
		default:
			return 0
		}
	}
	return i
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
