package builder

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// lineReader gathers the paragraphs of a line-based document (Markdown,
// reStructuredText, plain text) into sections.
type lineReader struct {
	out    []section
	titles []string
	anchor string
	blocks []block
	para   []string
}

func (r *lineReader) endPara() {
	if len(r.para) > 0 {
		if text := collapse(strings.Join(r.para, " ")); text != "" {
			r.blocks = append(r.blocks, block{text: text})
		}
		r.para = nil
	}
}

func (r *lineReader) addPre(lines []string) {
	r.endPara()
	text := strings.Trim(strings.Join(lines, "\n"), "\n")
	if strings.TrimSpace(text) != "" {
		r.blocks = append(r.blocks, block{text: text, pre: true})
	}
}

func (r *lineReader) flush() {
	r.endPara()
	if len(r.blocks) > 0 {
		r.out = append(r.out, section{anchor: r.anchor, titles: append([]string(nil), r.titles...), blocks: r.blocks})
		r.blocks = nil
	}
}

// heading starts a section at a level (0 is the top) with an anchor.
func (r *lineReader) heading(level int, title, anchor string) {
	r.flush()
	if level > len(r.titles) {
		level = len(r.titles)
	}
	r.titles = append(r.titles[:level], title)
	r.anchor = anchor
}

// readText reads plain text: paragraphs separated by blank lines, one
// section without an anchor.
func readText(text string) []section {
	r := &lineReader{}
	for _, line := range lines(text) {
		if strings.TrimSpace(line) == "" {
			r.endPara()
			continue
		}
		r.para = append(r.para, line)
	}
	r.flush()
	return r.out
}

func lines(text string) []string {
	return strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	fence      = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	setext     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	listItem   = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// thematicBreak is a line of three or more -, * or _ (spaces between allowed).
	thematicBreak = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
)

// readMarkdown reads Markdown: ATX (#) and setext (=== / ---) headings
// anchored as GitHub anchors them, fenced code kept as one block, each
// list item its own paragraph, links reduced to their text.
func readMarkdown(text string) []section {
	r := &lineReader{}
	slugs := map[string]int{}
	ls := lines(text)
	for i := 0; i < len(ls); i++ {
		line := ls[i]
		if m := fence.FindStringSubmatch(line); m != nil {
			var code []string
			for i++; i < len(ls) && !strings.HasPrefix(strings.TrimSpace(ls[i]), m[1]); i++ {
				code = append(code, ls[i])
			}
			r.addPre(code)
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			title := mdInline(m[2])
			r.heading(len(m[1])-1, title, githubSlug(title, slugs))
			continue
		}
		if m := setext.FindStringSubmatch(line); m != nil && len(r.para) > 0 {
			title := mdInline(strings.Join(r.para, " "))
			r.para = nil
			level := 0
			if m[1][0] == '-' {
				level = 1
			}
			r.heading(level, title, githubSlug(title, slugs))
			continue
		}
		switch {
		case strings.TrimSpace(line) == "" || thematicBreak.MatchString(line):
			r.endPara()
		case listItem.MatchString(line):
			r.endPara()
			r.para = append(r.para, mdInline(line))
		default:
			r.para = append(r.para, mdInline(line))
		}
	}
	r.flush()
	return r.out
}

// mdInline reduces links and images to their text.
func mdInline(s string) string { return strings.TrimSpace(mdLink.ReplaceAllString(s, "$1")) }

// githubSlug is GitHub's heading anchor: lower case, punctuation other
// than '-' and '_' dropped, spaces as '-', a repeat numbered -1, -2, ...
func githubSlug(title string, seen map[string]int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	slug := b.String()
	n := seen[slug]
	seen[slug] = n + 1
	if n > 0 {
		slug = fmt.Sprintf("%s-%d", slug, n)
	}
	return slug
}

var (
	rstDirective = regexp.MustCompile(`^\.\.\s+([\w:-]+)::\s*(.*)$`)
	rstRole      = regexp.MustCompile(":[\\w:-]+:`([^`]*)`")
	rstLiteral   = regexp.MustCompile("``([^`]*)``")
)

// rstObjects are the Python domain's directives that document an object:
// their argument is the object's signature and its name the anchor.
var rstObjects = map[string]bool{
	"function": true, "class": true, "method": true, "attribute": true, "data": true, "exception": true,
	"decorator": true, "classmethod": true, "staticmethod": true, "property": true,
	"py:function": true, "py:class": true, "py:method": true, "py:attribute": true, "py:data": true,
	"py:exception": true, "py:decorator": true, "py:classmethod": true, "py:staticmethod": true, "py:property": true,
}

// rstCode are directives whose body is code.
var rstCode = map[string]bool{"code-block": true, "code": true, "sourcecode": true, "literalinclude": true, "doctest": true, "testcode": true}

// readRST reads reStructuredText: section titles (underlined, or over-
// and underlined) with levels in the order their styles first appear,
// anchored as docutils names section ids; Python domain directives
// (function, class, method, ...) anchored at the object's name (with the
// current module); literal blocks (after "::") and code directives kept
// as code; comments left out; roles and literals reduced to their text.
func readRST(text string) []section {
	r := &lineReader{}
	ls := lines(text)
	var styles []string
	module := ""
	level := func(style string) int {
		for i, s := range styles {
			if s == style {
				return i
			}
		}
		styles = append(styles, style)
		return len(styles) - 1
	}
	for i := 0; i < len(ls); i++ {
		line := ls[i]
		trimmed := strings.TrimSpace(line)
		// An overlined title: adornment, title, adornment.
		if adornment(line) && i+2 < len(ls) && strings.TrimSpace(ls[i+1]) != "" &&
			strings.TrimRight(ls[i+2], " \t") == strings.TrimRight(line, " \t") {
			title := rstInline(strings.TrimSpace(ls[i+1]))
			r.heading(level("over"+line[:1]), title, docutilsID(title))
			i += 2
			continue
		}
		// An underlined title: a line of text, then an adornment at least as long.
		if trimmed != "" && line[0] != ' ' && i+1 < len(ls) && adornment(ls[i+1]) &&
			len([]rune(strings.TrimSpace(ls[i+1]))) >= len([]rune(trimmed)) && len(r.para) == 0 {
			title := rstInline(trimmed)
			r.heading(level("under"+ls[i+1][:1]), title, docutilsID(title))
			i++
			continue
		}
		if m := rstDirective.FindStringSubmatch(line); m != nil {
			r.endPara()
			name, arg := m[1], strings.TrimSpace(m[2])
			body, next := indented(ls, i+1)
			switch {
			case name == "module" || name == "currentmodule" || name == "py:module" || name == "py:currentmodule":
				module = arg
			case rstObjects[name]:
				anchor := objectName(arg)
				if module != "" && !strings.HasPrefix(anchor, module+".") {
					anchor = module + "." + anchor
				}
				r.flush()
				saved, savedTitles := r.anchor, append([]string(nil), r.titles...)
				r.anchor = anchor
				r.titles = append(r.titles, anchor)
				r.blocks = append(r.blocks, block{text: rstInline(arg)})
				r.body(body)
				r.flush()
				r.anchor, r.titles = saved, savedTitles
			case rstCode[name]:
				r.addPre(dropOptions(body))
			case name == "image" || name == "figure" || name == "toctree" || name == "include" || name == "raw" || name == "index":
			default: // note, warning, versionadded, ...: the text counts
				if arg != "" {
					r.para = append(r.para, rstInline(arg))
				}
				r.body(dropOptions(body))
			}
			i = next - 1
			continue
		}
		if strings.HasPrefix(trimmed, "..") && line[0] == '.' { // a comment or target
			r.endPara()
			_, next := indented(ls, i+1)
			i = next - 1
			continue
		}
		switch {
		case trimmed == "":
			r.endPara()
		case strings.HasSuffix(trimmed, "::"):
			if t := strings.TrimSuffix(trimmed, "::"); strings.TrimSpace(t) != "" {
				r.para = append(r.para, rstInline(t+":"))
			}
			r.endPara()
			body, next := indented(ls, i+1)
			r.addPre(body)
			i = next - 1
		case listItem.MatchString(line):
			r.endPara()
			r.para = append(r.para, rstInline(trimmed))
		default:
			r.para = append(r.para, rstInline(trimmed))
		}
	}
	r.flush()
	return r.out
}

// adornment reports whether line is a section adornment: three or more
// of one ASCII punctuation character, then nothing but white space.
func adornment(line string) bool {
	line = strings.TrimRight(line, " \t")
	if len(line) < 3 || !unicode.IsPunct(rune(line[0])) && !unicode.IsSymbol(rune(line[0])) || line[0] >= 0x80 {
		return false
	}
	return strings.Count(line, line[:1]) == len(line)
}

// body reads a directive's dedented body as paragraphs.
func (r *lineReader) body(body []string) {
	for _, l := range body {
		if strings.TrimSpace(l) == "" {
			r.endPara()
			continue
		}
		r.para = append(r.para, rstInline(strings.TrimSpace(l)))
	}
	r.endPara()
}

// indented returns the indented (or blank) lines from i on, dedented, and
// the index of the first line after them.
func indented(ls []string, i int) ([]string, int) {
	var body []string
	for ; i < len(ls); i++ {
		if strings.TrimSpace(ls[i]) != "" && !strings.HasPrefix(ls[i], " ") && !strings.HasPrefix(ls[i], "\t") {
			break
		}
		body = append(body, ls[i])
	}
	indent := -1
	for _, l := range body {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for j, l := range body {
		if len(l) >= indent && indent > 0 {
			body[j] = l[indent:]
		} else {
			body[j] = strings.TrimSpace(l)
		}
	}
	return body, i
}

// dropOptions drops a directive body's leading ":option: value" lines.
func dropOptions(body []string) []string {
	for len(body) > 0 && (strings.HasPrefix(strings.TrimSpace(body[0]), ":") || strings.TrimSpace(body[0]) == "") {
		body = body[1:]
	}
	return body
}

// objectName is a signature's dotted name ("Path.write_text(data)" gives
// "Path.write_text").
func objectName(sig string) string {
	end := strings.IndexAny(sig, "( ")
	if end < 0 {
		end = len(sig)
	}
	return sig[:end]
}

// rstInline reduces roles (:func:`x`) and literals (“x“) to their text.
func rstInline(s string) string {
	s = rstRole.ReplaceAllString(s, "$1")
	return rstLiteral.ReplaceAllString(s, "$1")
}

// docutilsID is docutils' id for a title: lower case, every run of
// characters other than ASCII letters and digits one '-', trimmed.
func docutilsID(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}
