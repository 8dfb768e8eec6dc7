package evaluate

import (
	"fmt"
	"regexp"
	"strings"
)

// Python's re gives the shorthand classes their Unicode meaning for str
// patterns (\s is every str.isspace() character, \w every alphanumeric and
// the underscore, \d every decimal digit), while RE2 gives them ASCII
// meanings. A fixture pattern must grade a model's answer as the reference
// grade() would, so the shorthands are rewritten to explicit Unicode
// classes before compiling.
const (
	pySpace = `\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	pyWord  = `\p{L}\p{N}_`
	pyDigit = `\p{Nd}`
)

// compilePattern compiles a fixture pattern case-insensitively (Python's
// re.I). It is RE2 syntax, with \s \S \w \W \d \D meaning what they mean in
// Python 3 for text. \b and \B are refused: RE2 can only place them around
// ASCII words and has no look-around to do otherwise, so a pattern that uses
// them would match differently from the reference; write the boundary out,
// e.g. (?:^|[^\p{L}\p{N}_])word(?:[^\p{L}\p{N}_]|$).
func compilePattern(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			e := p[i]
			var set string
			negated := false
			switch e {
			case 's', 'S':
				set, negated = pySpace, e == 'S'
			case 'w', 'W':
				set, negated = pyWord, e == 'W'
			case 'd', 'D':
				set, negated = pyDigit, e == 'D'
			case 'b', 'B':
				if !inClass {
					return nil, fmt.Errorf("%q uses \\%c, which RE2 cannot match as Python does; write the boundary out", p, e)
				}
			}
			switch {
			case set == "":
				b.WriteByte('\\')
				b.WriteByte(e)
			case inClass && negated:
				return nil, fmt.Errorf("%q uses \\%c inside a character class; write the class out", p, e)
			case inClass:
				b.WriteString(set)
			case negated:
				b.WriteString("[^" + set + "]")
			default:
				b.WriteString("[" + set + "]")
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// a ']' right after '[' or '[^' is a literal, not the end
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return regexp.Compile("(?i)" + b.String())
}
