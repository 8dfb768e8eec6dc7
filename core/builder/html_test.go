package builder

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// siteMenu is a site's chrome as sqlite.org writes it around every page
// (no <nav>, no <main>): a tagline and a bar of links.
const siteMenu = `<div class=nosearch><div class=tagline>Small. Fast. Reliable.</div>
<div class="menu mainmenu"><ul><li><a href="index.html">Home</a><li><a href="about.html">About</a>
<li><a href="docs.html">Documentation</a><li><a href="download.html">Download</a><li><a href="support.html">Support</a></ul></div></div>`

// article is a page's own text, with a link inside a sentence.
const article = `<h1 id="upsert">UPSERT</h1>
<p>An upsert is an ordinary INSERT that behaves as an UPDATE or a no-op when it would violate a uniqueness constraint.</p>
<p>See the <a href="lang_conflict.html">conflict resolution</a> page for the other algorithms.</p>`

// TestMainContentByPageShape reads one page of each shape: the element
// the page marks as its main content is read (Sphinx's div.body, <main>,
// role=main, a lone <article>), and a page that marks none is read from
// its body without the site's chrome. One row per shape, in the order
// mainContent tries them.
func TestMainContentByPageShape(t *testing.T) {
	for _, c := range []struct {
		name, page   string
		want, absent []string
	}{
		{"sphinx body", `<body><div class="related" role="navigation"><a href="i.html">index</a></div>
<div class="body" role="main">` + article + `</div><div class="sphinxsidebar">Quick search</div></body>`,
			[]string{"An upsert is", "See the conflict resolution page"}, []string{"index", "Quick search"}},
		{"main", `<body><header><a href="/">Site</a> <a href="/blog">Blog</a></header><main>` + article +
			`</main><footer>© Site</footer></body>`,
			[]string{"An upsert is"}, []string{"Site", "Blog", "©"}},
		{"role main", `<body>` + siteMenu + `<div role="main">` + article + `</div><p>Unrelated footer text.</p></body>`,
			[]string{"An upsert is"}, []string{"Small. Fast.", "Download", "Unrelated footer"}},
		{"article", `<body><div class="top">Welcome to the site, read our news below.</div><article>` + article +
			`</article><div>Copyright notice of the site.</div></body>`,
			[]string{"An upsert is"}, []string{"Welcome", "Copyright"}},
		{"two articles read from the body", `<body>` + siteMenu + `<article><p>First post: an index makes a lookup by its columns fast.</p></article>
<article><p>Second post: a trigger runs its statements on each change.</p></article></body>`,
			[]string{"First post", "Second post"}, []string{"Small. Fast.", "Download"}},
		{"none: link-dense blocks are chrome", `<body>` + siteMenu + `<div class=fancy>` + article + `
<div class="fancy_toc"><a href="#a">1. Overview</a> <a href="#b">2. Syntax</a> <a href="#c">3. Limitations</a></div>
<p>UPSERT does not currently work for virtual tables.</p></div></body>`,
			[]string{"An upsert is", "See the conflict resolution page", "virtual tables"},
			[]string{"Small. Fast.", "Home", "Download", "Overview", "Limitations"}},
		{"none: chrome named by class or id", `<body><div class="navheader"><table><tr><th>INSERT</th></tr><tr>
<td><a href="p.html">Prev</a></td><td>SQL Commands</td><td><a href="n.html">Next</a></td></tr></table></div>
<div class="refentry">` + article + `</div><div id="site-footer">Last updated 2024-05-31</div>
<div class="navfooter"><table><tr><td>IMPORT FOREIGN SCHEMA</td><td>LISTEN</td></tr></table></div></body>`,
			[]string{"An upsert is"}, []string{"Prev", "SQL Commands", "Last updated", "IMPORT FOREIGN"}},
		{"none: landmark roles", `<body><div role="banner">The Site Name and its slogan</div>` + article +
			`<div role="complementary">Related reading chosen by editors</div><div role="contentinfo">Contact us</div></body>`,
			[]string{"An upsert is"}, []string{"Site Name", "Related reading", "Contact"}},
		{"none: an index page keeps its list", `<body>` + siteMenu + `<h2>List Of Functions:</h2><div class="columns"><ul>` +
			strings.Repeat(`<li><a href="bind.html">sqlite3_bind_blob</a><li><a href="step.html">sqlite3_step</a>`, 10) + `</ul></div></body>`,
			[]string{"List Of Functions:", "sqlite3_bind_blob", "sqlite3_step"}, []string{"Small. Fast.", "Download"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sections, _, why := readHTML(c.page)
			require.Empty(t, why)
			text := sectionsText(sections)
			for _, w := range c.want {
				assert.Contains(t, text, w)
			}
			for _, a := range c.absent {
				assert.NotContains(t, text, a)
			}
		})
	}
}

// A marked main content is read whole: a block of links inside it is the
// author's (Sphinx's "See also" boxes), never taken for chrome.
func TestMarkedContentKeepsItsLinks(t *testing.T) {
	sections, _, why := readHTML(`<body><main><p>Text.</p><div class="admonition seealso"><a href="os.html">Module os</a></div></main></body>`)
	require.Empty(t, why)
	assert.Contains(t, sectionsText(sections), "Module os")
}

func sectionsText(sections []section) string {
	var b strings.Builder
	for _, s := range sections {
		b.WriteString(strings.Join(s.titles, " › "))
		b.WriteByte('\n')
		for _, bl := range s.blocks {
			b.WriteString(bl.text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// FuzzReadHTML reads any text as an HTML page: it never panics, every
// block it keeps has text, and the same page reads the same twice.
func FuzzReadHTML(f *testing.F) {
	f.Add(`<body>` + siteMenu + article + `</body>`)
	f.Add(`<body><div class="body" role="main"><dl><dt id="a">a()</dt><dd><p>Does a.</p></dd></dl></div></body>`)
	f.Add(`<main><article><section id="s"><h2>S</h2><table><tr><td>x</td></tr></table></section></article></main>`)
	f.Add(`<div role="navigation"><a href="x">x</a></div><div class="toc"><ul><li><a>y</a></ul></div><pre>code</pre>`)
	f.Fuzz(func(t *testing.T, page string) {
		first, _, why := readHTML(page)
		again, _, whyAgain := readHTML(page)
		require.Equal(t, why, whyAgain)
		require.Equal(t, first, again, "the same page reads the same")
		for _, s := range first {
			require.NotEmpty(t, s.blocks)
			for _, b := range s.blocks {
				require.NotEmpty(t, strings.TrimSpace(b.text))
			}
		}
	})
}

// BenchmarkReadHTML reads a page of 40 sections marked as main content
// and the same page unmarked (its chrome found by link density): the
// second's extra cost is the chrome pass.
func BenchmarkReadHTML(b *testing.B) {
	body := siteMenu + strings.Repeat(`<div class="fancy_toc"><a href="#a">1. Overview</a></div>`+article, 40)
	for _, c := range []struct{ name, page string }{
		{"marked", "<body><main>" + body + "</main></body>"},
		{"unmarked", "<body>" + body + "</body>"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.page)))
			for i := 0; i < b.N; i++ {
				if _, _, why := readHTML(c.page); why != "" {
					b.Fatal(why)
				}
			}
		})
	}
}

// Old-style anchors (<a name>, or <a id> without href) start a section as
// an id does, between blocks or inside a heading; a link is not one.
func TestNamedAnchors(t *testing.T) {
	sections, _, why := readHTML(`<body><h1>Frequently Asked Questions</h1>
<a name="q1"></a><p><b>(1) How do I create an AUTOINCREMENT field?</b></p><blockquote><p>Declare it INTEGER PRIMARY KEY.</p></blockquote>
<a name="q2"></a><p><b>(2) What datatypes does SQLite support?</b></p><p>See <a href="datatype3.html">datatypes</a>.</p>
<h2><a id="limits"></a>Limits</h2><p>Strings hold at most a billion bytes.
<a name="pragma_busy_timeout"></a><hr><p>PRAGMA busy_timeout sets a busy handler.</p></body>`)
	require.Empty(t, why)
	type got struct{ anchor, first string }
	var out []got
	for _, s := range sections {
		out = append(out, got{s.anchor, s.blocks[0].text})
	}
	assert.Equal(t, []got{
		{"q1", "(1) How do I create an AUTOINCREMENT field?"},
		{"q2", "(2) What datatypes does SQLite support?"},
		{"limits", "Strings hold at most a billion bytes."},
		{"pragma_busy_timeout", "PRAGMA busy_timeout sets a busy handler."}, // the anchor is inside the unclosed <p>
	}, out)
	assert.Equal(t, []string{"Frequently Asked Questions"}, sections[0].titles, "an anchor keeps the title path")
}

// TestAliases reads every id a section answers to: one row per way an id
// joins a passage, in the order htmlReader meets them.
func TestAliases(t *testing.T) {
	type got struct {
		anchor  string
		aliases []string
	}
	for _, c := range []struct {
		name, page string
		want       []got
	}{
		{"terms sharing a description", `<main><dl><dt id="re.I">re.I</dt><dt id="re.IGNORECASE">re.IGNORECASE</dt>
<dd><p>Case-insensitive matching.</p></dd></dl></main>`,
			[]got{{"re.I", []string{"re.IGNORECASE"}}}},
		{"an object documented by name only lands on the next", `<main><dl><dt id="ExceptionGroup">ExceptionGroup(msg, excs)</dt><dd></dd></dl>
<dl><dt id="BaseExceptionGroup">BaseExceptionGroup(msg, excs)</dt><dd><p>Both wrap the exceptions.</p></dd></dl></main>`,
			[]got{{"BaseExceptionGroup", []string{"ExceptionGroup"}}}},
		{"ids inside the text", `<main><section id="s"><h2>S</h2><p><span id="index-0"></span>Text of S.</p>
<ul><li id="item">An item.</li></ul></section></main>`,
			[]got{{"s", []string{"index-0", "item"}}}},
		{"a section with no text of its own lands on its first subsection", `<main><section id="parent"><span id="legacy"></span><h2>Parent</h2>
<section id="child"><h3>Child</h3><p>Child text.</p></section></section></main>`,
			[]got{{"child", []string{"parent", "legacy"}}}},
		{"a heading's id after its section's", `<main><section id="sec"><h2 id="head">Head</h2><p>Text.</p></section></main>`,
			[]got{{"head", []string{"sec"}}}},
		{"a texinfo section: a div with an id and a heading", `<body><div class="subsection" id="Pipelines">
<span id="Pipelines-1"></span><h4 class="subsection">3.2.3 Pipelines</h4><span id="index-pipeline"></span>
<p>A pipeline is a sequence of commands separated by a control operator.</p></div>
<div class="subsection" id="Lists"><h4>3.2.4 Lists</h4><p>A list is a sequence of pipelines.</p></div></body>`,
			[]got{{"Pipelines", []string{"Pipelines-1", "index-pipeline"}}, {"Lists", nil}}},
		{"a DocBook section: its div's id, index terms inside it", `<body><div class="sect2" id="DATATYPE-SERIAL"><div class="titlepage"><div><div>
<h3 class="title">8.1.4. Serial Types</h3></div></div></div><a id="id-1.5.7.9.10.2" class="indexterm"></a>
<p>The data types smallserial, serial and bigserial are not true types.</p></div></body>`,
			[]got{{"DATATYPE-SERIAL", []string{"id-1.5.7.9.10.2"}}}},
		{"a div whose first text is not a heading is not a section", `<main><div id="intro"><p>Plain text first.</p><h2>Later</h2><p>More.</p></div></main>`,
			[]got{{"", []string{"intro"}}}},
		{"anchors after the last text land on the last passage", `<main><section id="a"><p>Text.</p></section><section id="end"><h2>End</h2></section></main>`,
			[]got{{"a", []string{"end"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sections, _, why := readHTML(c.page)
			require.Empty(t, why)
			var out []got
			for _, s := range sections {
				out = append(out, got{s.anchor, s.aliases})
			}
			if c.name == "a div whose first text is not a heading is not a section" {
				require.NotEmpty(t, out)
				out = out[:1]
			}
			assert.Equal(t, c.want, out)
		})
	}
}

// TestPageTitle is a page's <title>, else its first <h1>, even outside
// the main content.
func TestPageTitle(t *testing.T) {
	for _, c := range []struct{ page, want string }{
		{`<html><head><title>Write-Ahead  Logging</title></head><body><h1 id="overview">1. Overview</h1><p>Text.</p></body></html>`, "Write-Ahead Logging"},
		{`<body><header><h1>Manual</h1></header><main><p>Text.</p></main></body>`, "Manual"},
		{`<body><main><p>Text.</p></main></body>`, ""},
	} {
		_, title, why := readHTML(c.page)
		require.Empty(t, why)
		assert.Equal(t, c.want, title)
	}
}
