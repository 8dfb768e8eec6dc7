package builder

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// readHTML reads an HTML page's main content (see mainContent) and its
// title (pageTitle). Headings make the title path; a section's (or a
// headed div's) or a heading's id is the anchor, and inside a definition
// list whose term has an id (a Sphinx object: a function, class, method,
// ...) that id is the anchor of the term's signature and description.
// Every other id a section holds is one of its aliases (see
// htmlReader.ids). Navigation, scripts, tables of contents and permalink
// marks are left out.
func readHTML(text string) ([]section, string, string) {
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return nil, "", "not parseable as HTML: " + err.Error()
	}
	root, marked := mainContent(doc)
	if root == nil {
		return nil, "", "no body"
	}
	r := &htmlReader{}
	if !marked {
		r.chrome = chrome(root)
	}
	r.walk(root)
	r.flush()
	r.leave()
	if len(r.carried) > 0 && len(r.out) > 0 {
		// Anchors after the page's last text land on its last passage.
		last := &r.out[len(r.out)-1]
		last.aliases = aliasesOf(last.anchor, last.aliases, r.carried)
	}
	return r.out, pageTitle(doc), ""
}

// pageTitle is a page's <title>, or its first <h1> when it has none
// (white space collapsed): the head of every passage's title path, since
// a page's main content often leaves its title out (sqlite.org's pages,
// whose first heading is "1. Overview"). The site's part of it ("— Python
// 3.11 documentation") is taken off across the build (siteAffixes).
func pageTitle(doc *html.Node) string {
	var title, h1 string
	var find func(n *html.Node)
	find = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Title && title == "":
				title = collapse(textOfNode(n))
			case n.DataAtom == atom.H1 && h1 == "":
				h1 = collapse((&htmlReader{}).textOf(n))
			}
		}
		for c := n.FirstChild; c != nil && title == ""; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if title != "" {
		return title
	}
	return h1
}

// textOfNode is all the text under n (a <title>'s).
func textOfNode(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// mainContent finds the element whose content is the document, and says
// whether the page marked it: Sphinx's div.body, else <main>, else the
// element whose role is main, else the page's one outermost <article>.
// A page that marks none is read from its <body> (marked false), with its
// chrome left out (see chrome).
func mainContent(doc *html.Node) (*html.Node, bool) {
	var body, main, role, sphinx *html.Node
	var articles []*html.Node
	var find func(n *html.Node, inArticle bool)
	find = func(n *html.Node, inArticle bool) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Div && hasClass(n, "body") && attr(n, "role") == "main" && sphinx == nil:
				sphinx = n
			case n.DataAtom == atom.Main && main == nil:
				main = n
			case attr(n, "role") == "main" && role == nil:
				role = n
			case n.DataAtom == atom.Article && !inArticle:
				articles = append(articles, n)
			case n.DataAtom == atom.Body && body == nil:
				body = n
			}
			inArticle = inArticle || n.DataAtom == atom.Article
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			find(c, inArticle)
		}
	}
	find(doc, false)
	switch {
	case sphinx != nil:
		return sphinx, true
	case main != nil:
		return main, true
	case role != nil:
		return role, true
	case len(articles) == 1:
		return articles[0], true
	}
	return body, false
}

type htmlReader struct {
	out    []section
	titles [6]string
	// object is the documented object's id (a dt's) whose description is
	// being read, appended to the title path.
	object string
	anchor string
	blocks []block
	// terms counts the object's signature blocks: an object whose section
	// holds nothing else (documented by name only) is left out.
	terms  int
	inline strings.Builder
	// chrome are the blocks left out of a page that marks no main
	// content (see chrome).
	chrome map[*html.Node]bool
	// ids are the current anchor's other ids: those of the elements in
	// its text (Sphinx's index targets, texinfo's heading spans, an
	// object's other terms: re.IGNORECASE beside re.I), each a link that
	// lands in this text.
	ids []string
	// placed holds the anchors that have a passage: their own (a URL)
	// or one that carries them (an alias).
	placed map[string]bool
	// carried are anchors left with no text of their own (a section whose
	// heading a subsection follows at once, an object documented by name
	// only: ExceptionGroup beside BaseExceptionGroup), with their ids: a
	// link to one lands on the next passage, which takes them as aliases.
	carried []string
}

// setAnchor makes id the anchor from here on; the anchor it replaces is
// carried to the next passage if it had none.
func (r *htmlReader) setAnchor(id string) {
	if id == r.anchor {
		return
	}
	r.leave()
	r.anchor, r.ids = id, nil
}

// leave carries the current anchor and its ids when it has no passage.
func (r *htmlReader) leave() {
	if r.anchor != "" && !r.placed[r.anchor] {
		r.carried = append(append(r.carried, r.anchor), r.ids...)
		r.place(r.anchor)
	}
}

func (r *htmlReader) place(anchor string) {
	if r.placed == nil {
		r.placed = map[string]bool{}
	}
	r.placed[anchor] = true
}

// addID records an element's id as an alias of the current anchor.
func (r *htmlReader) addID(id string) {
	if id != "" && id != r.anchor {
		r.ids = append(r.ids, id)
	}
}

// addIDs records the ids (and named anchors) of n's descendants that are
// read as text (textOf), as aliases of the current anchor.
func (r *htmlReader) addIDs(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || r.skip(c) {
			continue
		}
		r.addID(attr(c, "id"))
		if c.DataAtom == atom.A && attr(c, "href") == "" {
			r.addID(attr(c, "name"))
		}
		r.addIDs(c)
	}
}

// aliasesOf are carried and ids without repeats, without anchor, in the
// order met, at most corpus.MaxAliases (the first ones: the nearest).
func aliasesOf(anchor string, ids ...[]string) []string {
	var out []string
	seen := map[string]bool{anchor: true}
	for _, list := range ids {
		for _, id := range list {
			if !seen[id] && len(out) < corpus.MaxAliases {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// flush ends the current section, if it has any text.
func (r *htmlReader) flush() {
	r.endInline()
	if len(r.blocks) == 0 || r.object != "" && len(r.blocks) == r.terms {
		r.blocks, r.terms = nil, 0
		return
	}
	var titles []string
	for _, t := range r.titles {
		if t != "" {
			titles = append(titles, t)
		}
	}
	if r.object != "" {
		titles = append(titles, r.object)
	}
	r.out = append(r.out, section{anchor: r.anchor, titles: titles, blocks: r.blocks,
		aliases: aliasesOf(r.anchor, r.carried, r.ids)})
	r.blocks, r.terms, r.carried = nil, 0, nil
	r.place(r.anchor)
}

func (r *htmlReader) add(text string, pre bool) {
	if !pre {
		text = collapse(text)
	} else {
		text = strings.Trim(text, "\n")
	}
	if strings.TrimSpace(text) != "" {
		r.blocks = append(r.blocks, block{text: text, pre: pre})
	}
}

func (r *htmlReader) endInline() {
	if r.inline.Len() > 0 {
		r.add(r.inline.String(), false)
		r.inline.Reset()
	}
}

// state is what a section or an object restores when it ends.
type state struct {
	titles [6]string
	object string
	anchor string
	ids    []string
}

func (r *htmlReader) save() state { return state{r.titles, r.object, r.anchor, r.ids} }

func (r *htmlReader) restore(s state) {
	r.flush()
	if s.anchor != r.anchor {
		r.leave()
	}
	r.titles, r.object, r.anchor, r.ids = s.titles, s.object, s.anchor, s.ids
}

func (r *htmlReader) walk(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.node(c)
	}
}

func (r *htmlReader) node(n *html.Node) {
	if n.Type == html.TextNode {
		r.inline.WriteString(n.Data)
		return
	}
	if n.Type != html.ElementNode || r.skip(n) {
		return
	}
	switch {
	case n.DataAtom == atom.Section || n.DataAtom == atom.Article || n.DataAtom == atom.Div && r.headed(n):
		saved := r.save()
		r.flush()
		if id := attr(n, "id"); id != "" {
			r.setAnchor(id)
		}
		r.walk(n)
		r.restore(saved)
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.heading(n)
	case atom.Dl:
		r.definitions(n)
	case atom.P, atom.Caption, atom.Figcaption, atom.Summary, atom.Address, atom.Dt:
		r.endInline()
		if innerAnchor(n) != "" {
			// An anchor the parser put inside an unclosed <p> still
			// starts its section.
			r.walk(n)
			r.endInline()
			return
		}
		r.addID(attr(n, "id"))
		r.addIDs(n)
		r.add(r.textOf(n), false)
	case atom.Pre:
		r.endInline()
		r.addID(attr(n, "id"))
		r.addIDs(n)
		r.add(r.textOf(n), true)
	case atom.Tr:
		r.endInline()
		r.addID(attr(n, "id"))
		r.addIDs(n)
		var cells []string
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
				cells = append(cells, collapse(r.textOf(c)))
			}
		}
		r.add(strings.Join(cells, " | "), false)
	case atom.Li:
		r.endInline()
		r.addID(attr(n, "id"))
		if hasBlock(n) || innerAnchor(n) != "" {
			r.walk(n)
			r.endInline()
		} else {
			r.addIDs(n)
			r.add(r.textOf(n), false)
		}
	case atom.Br:
		r.inline.WriteString(" ")
	case atom.A:
		if hasClass(n, "indexterm") {
			// DocBook's index targets (<a id="id-1.5.7.9.2"
			// class="indexterm">) mark a term inside a section's text:
			// an alias of it, not the start of another.
			r.addID(attr(n, "id"))
			r.addID(attr(n, "name"))
		} else if name := namedAnchor(n); name != "" {
			// An old-style anchor (<a name="pragma_journal_mode">, as
			// sqlite.org writes them) starts a section, as an id does.
			r.flush()
			r.setAnchor(name)
		}
		r.walk(n)
	default:
		r.addID(attr(n, "id"))
		if blockContainer[n.DataAtom] {
			r.endInline()
			r.walk(n)
			r.endInline()
			return
		}
		r.walk(n) // inline: its text joins the current paragraph
	}
}

// heading sets the title path at the heading's level; its id (or a named
// anchor inside it), or its section's, is the anchor from here on.
func (r *htmlReader) heading(n *html.Node) {
	r.flush()
	level := int(n.Data[1] - '1')
	r.titles[level] = collapse(r.textOf(n))
	for i := level + 1; i < len(r.titles); i++ {
		r.titles[i] = ""
	}
	r.object = ""
	if id := attr(n, "id"); id != "" {
		r.setAnchor(id)
	} else if name := innerAnchor(n); name != "" {
		r.setAnchor(name)
	}
	r.addIDs(n)
}

// headed reports whether a div is a section (texinfo's div.section,
// DocBook's div.sect1, each with an id): it has an id and its first text
// is a heading's.
func (r *htmlReader) headed(n *html.Node) bool {
	if attr(n, "id") == "" {
		return false
	}
	var first func(n *html.Node) (heading, found bool)
	first = func(n *html.Node) (bool, bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode && strings.TrimSpace(c.Data) != "":
				return false, true
			case c.Type != html.ElementNode || r.skip(c):
			case headingAtom(c.DataAtom):
				return true, true
			default:
				if h, ok := first(c); ok {
					return h, true
				}
			}
		}
		return false, false
	}
	h, _ := first(n)
	return h
}

func headingAtom(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

// namedAnchor is the name (or id) of an <a> that is a link target, not a
// link (no href), nor one of DocBook's index terms.
func namedAnchor(n *html.Node) string {
	if n.DataAtom != atom.A || attr(n, "href") != "" || hasClass(n, "indexterm") {
		return ""
	}
	if id := attr(n, "id"); id != "" {
		return id
	}
	return attr(n, "name")
}

// innerAnchor is the first named anchor inside an element
// (<h2><a name="x"></a>Title</h2>), or "".
func innerAnchor(n *html.Node) string {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if name := namedAnchor(c); name != "" {
			return name
		}
		if name := innerAnchor(c); name != "" {
			return name
		}
	}
	return ""
}

// definitions reads a definition list. A term with an id is a documented
// object: its signature and description are a section anchored at the id,
// and the text after the list goes back to the enclosing anchor.
func (r *htmlReader) definitions(n *html.Node) {
	r.endInline()
	saved := r.save()
	objects, afterTerm := false, false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == atom.Dt {
			// Terms in a row share one description (bytes.islower and
			// bytearray.islower): the first one's id anchors them all.
			id := attr(c, "id")
			if id != "" && !afterTerm {
				r.flush()
				objects = true
				r.setAnchor(id)
				r.object = id
			} else {
				r.addID(id) // bytearray.islower beside bytes.islower
			}
			leading := id != "" || afterTerm
			r.addIDs(c)
			r.add(r.textOf(c), false)
			if objects && leading {
				r.terms = len(r.blocks) // the object's signatures so far
			}
			afterTerm = true
			continue
		}
		afterTerm = false
		r.node(c)
	}
	if objects {
		r.restore(saved)
	}
}

// blockContainer are elements whose children are blocks.
var blockContainer = map[atom.Atom]bool{
	atom.Div: true, atom.Main: true, atom.Body: true, atom.Ul: true, atom.Ol: true, atom.Dd: true,
	atom.Blockquote: true, atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true,
	atom.Figure: true, atom.Details: true, atom.Aside: true, atom.Center: true, atom.Form: true,
	atom.Fieldset: true, atom.Header: true, atom.Hgroup: true,
}

// hasBlock reports whether an element holds block elements.
func hasBlock(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			switch c.DataAtom {
			case atom.P, atom.Pre, atom.Ul, atom.Ol, atom.Dl, atom.Div, atom.Table, atom.Blockquote:
				return true
			}
		}
	}
	return false
}

// skipped are elements that are not the document's text: scripts and
// styles, navigation, Sphinx's permalink marks, tables of contents and
// sidebars, and form controls.
func skipped(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Nav, atom.Footer, atom.Button,
		atom.Input, atom.Select, atom.Textarea, atom.Svg, atom.Math, atom.Iframe, atom.Object, atom.Img:
		return true
	case atom.A:
		return hasClass(n, "headerlink")
	case atom.Div:
		return hasClass(n, "toctree-wrapper") || hasClass(n, "sphinxsidebar") || hasClass(n, "related") ||
			hasClass(n, "footer") || (hasClass(n, "topic") && hasClass(n, "contents"))
	case atom.Span:
		return hasClass(n, "linenos")
	}
	return attr(n, "hidden") != "" || attr(n, "aria-hidden") == "true"
}

// skip reports whether an element is left out: never text (skipped), or
// the site's chrome.
func (r *htmlReader) skip(n *html.Node) bool { return skipped(n) || r.chrome[n] }

// textOf is an element's text, without skipped descendants.
func (r *htmlReader) textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && r.skip(n):
		case n.Type == html.ElementNode && n.DataAtom == atom.Br:
			b.WriteString("\n")
		case n.Type == html.ElementNode && n.DataAtom == atom.Sup:
			b.WriteString("^") // 10<sup>6</sup> reads 10^6, not 106
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		default:
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// collapse makes every run of white space one space and trims the ends.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}
