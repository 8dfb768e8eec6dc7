package builder

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// chrome finds the site's chrome in a page that marks no main content:
// the menus, link bars, sidebars, tables of contents and footers a site
// repeats around every page, which would otherwise become passages of
// their own (or the start of the first one) on every page and weigh on
// every search for the words they hold. A block is chrome when more than
// half of its text is link text, when its ARIA role is a landmark that is
// not the page's own content, or when its class or id names it chrome
// (chromeName: DocBook's navheader, whose page titles are not links) —
// unless it holds more than half of the page's text: then it is the page
// itself (an index, a list of functions), read whole. Paragraphs,
// headings and list items are never chrome on their own (a sentence of
// links is still a sentence), nor is the root.
func chrome(root *html.Node) map[*html.Node]bool {
	var m measure
	m.count(root, false)
	out := map[*html.Node]bool{}
	page := m.of[root]
	var mark func(n *html.Node)
	mark = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || skipped(c) {
				continue
			}
			if s := m.of[c]; chromeRole(attr(c, "role")) || chromeBlock(c.DataAtom) && (s.link*2 > s.text || chromeName(c)) {
				if s.text*2 <= page.text {
					out[c] = true
				}
				continue
			}
			mark(c)
		}
	}
	mark(root)
	return out
}

// chromeBlock reports whether an element can be a block of the site's
// chrome.
func chromeBlock(a atom.Atom) bool {
	switch a {
	case atom.Div, atom.Ul, atom.Ol, atom.Dl, atom.Table, atom.Header, atom.Aside, atom.Form,
		atom.Section, atom.Center, atom.Fieldset:
		return true
	}
	return false
}

// chromeRole reports whether an ARIA role is a landmark that is never a
// page's own content.
func chromeRole(role string) bool {
	switch role {
	case "banner", "navigation", "search", "contentinfo", "complementary":
		return true
	}
	return false
}

// chromeName reports whether an element's class or id names it a part of
// the site's chrome: a word of it (between '-', '_' and spaces) starting
// or ending with "nav" (navbar, navheader, topnav), holding "menu",
// "sidebar", "footer" or "breadcrumb", or starting with "toc" (toc,
// toctree). "header" is not one: a page's header often holds its title.
func chromeName(n *html.Node) bool {
	words := strings.FieldsFunc(strings.ToLower(attr(n, "class")+" "+attr(n, "id")), func(r rune) bool {
		return r == '-' || r == '_' || unicode.IsSpace(r)
	})
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "nav"), strings.HasSuffix(w, "nav"), strings.HasPrefix(w, "toc"),
			strings.Contains(w, "menu"), strings.Contains(w, "sidebar"), strings.Contains(w, "footer"),
			strings.Contains(w, "breadcrumb"):
			return true
		}
	}
	return false
}

// measure holds each element's count of text characters (white space and
// skipped elements not counted) and of those inside links.
type measure struct {
	of map[*html.Node]counts
}

type counts struct{ text, link int }

func (m *measure) count(n *html.Node, inLink bool) counts {
	if m.of == nil {
		m.of = map[*html.Node]counts{}
	}
	var c counts
	switch n.Type {
	case html.TextNode:
		for _, r := range n.Data {
			if !unicode.IsSpace(r) {
				c.text++
			}
		}
		if inLink {
			c.link = c.text
		}
		return c
	case html.ElementNode:
		if skipped(n) {
			return c
		}
		inLink = inLink || n.DataAtom == atom.A && attr(n, "href") != ""
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		s := m.count(ch, inLink)
		c.text += s.text
		c.link += s.link
	}
	if n.Type == html.ElementNode {
		m.of[n] = c
	}
	return c
}
