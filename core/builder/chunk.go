package builder

import (
	"strings"
	"unicode/utf8"
)

// chunk packs a section's blocks into passages of at most max bytes,
// joined by blank lines: a passage ends at a paragraph boundary, and only
// a paragraph larger than max is cut (code at line ends, prose at sentence
// ends, then at spaces, then anywhere between characters).
func chunk(blocks []block, max int) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, b := range blocks {
		for _, piece := range split(b, max) {
			if cur.Len() > 0 && cur.Len()+2+len(piece) > max {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(piece)
		}
	}
	flush()
	return out
}

// split cuts one block into pieces of at most max bytes.
func split(b block, max int) []string {
	if len(b.text) <= max {
		return []string{b.text}
	}
	if b.pre {
		return pack(strings.Split(b.text, "\n"), max, "\n")
	}
	return pack(sentences(b.text), max, " ")
}

// pack joins units greedily into pieces of at most max bytes; a unit
// larger than max is cut at spaces, then between characters.
func pack(units []string, max int, sep string) []string {
	var out []string
	cur := ""
	for _, u := range units {
		if sep == " " {
			u = strings.TrimSpace(u)
		}
		if strings.TrimSpace(u) == "" {
			continue
		}
		if len(u) > max {
			if cur != "" {
				out = append(out, cur)
				cur = ""
			}
			out = append(out, cutWords(u, max)...)
			continue
		}
		switch {
		case cur == "":
			cur = u
		case len(cur)+len(sep)+len(u) <= max:
			cur += sep + u
		default:
			out = append(out, cur)
			cur = u
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// sentences splits prose after ". ", "? " or "! " (keeping the mark).
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '?' || s[i] == '!') && s[i+1] == ' ' {
			out = append(out, s[start:i+1])
			start = i + 2
		}
	}
	return append(out, s[start:])
}

// cutWords cuts s at spaces into pieces of at most max bytes, a word
// longer than max between characters.
func cutWords(s string, max int) []string {
	var out []string
	for len(s) > max {
		cut := strings.LastIndexByte(s[:max+1], ' ')
		if cut <= 0 {
			cut = max
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			out = append(out, s[:cut])
			s = s[cut:]
			continue
		}
		out = append(out, strings.TrimRight(s[:cut], " "))
		s = strings.TrimLeft(s[cut:], " ")
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
