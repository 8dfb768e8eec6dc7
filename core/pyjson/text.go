package pyjson

import "unicode/utf8"

// decodeRune decodes the first code point of s, accepting a WTF-8 lone
// surrogate as one code point. It returns size 0 for a byte sequence that is
// neither (which a Python str cannot hold).
func decodeRune(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r != utf8.RuneError || size != 1 {
		return r, size
	}
	if len(s) >= 3 && s[0] == 0xED && s[1] >= 0xA0 && s[1] <= 0xBF && s[2] >= 0x80 && s[2] <= 0xBF {
		return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	}
	return utf8.RuneError, 0
}

// Len counts code points as Python's len(str) does (a lone surrogate counts
// once; a byte that is not UTF-8 also counts once).
func Len(s string) int {
	n := 0
	for i := 0; i < len(s); n++ {
		_, size := decodeRune(s[i:])
		if size == 0 {
			size = 1
		}
		i += size
	}
	return n
}

// IsSpace reports whether Python's str.isspace() is true for r: the Unicode
// white space characters plus the information separators U+001C..U+001F,
// which Go's unicode.IsSpace leaves out.
func IsSpace(r rune) bool {
	switch {
	case r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1C && r <= 0x1F):
		return true
	case r == 0x85 || r == 0xA0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200A):
		return true
	case r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000:
		return true
	}
	return false
}

// Blank reports whether s.strip() is empty in Python.
func Blank(s string) bool {
	for i := 0; i < len(s); {
		r, size := decodeRune(s[i:])
		if size == 0 || !IsSpace(r) {
			return false
		}
		i += size
	}
	return true
}
