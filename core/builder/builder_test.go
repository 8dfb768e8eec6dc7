package builder

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func testDocs(t *testing.T) []Document {
	var docs []Document
	root := "testdata/docs"
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		docs = append(docs, Document{Path: filepath.ToSlash(rel), Data: data})
		return nil
	}))
	return docs
}

func options() Options {
	return Options{ID: "demo", Title: "Demo", Language: "en", Version: "1.0", Licence: "CC0", Attribution: "the tests",
		Source: "testdata/docs", MadeBy: "builder_test", BaseURL: "https://docs.example.org/1.0/", PageExt: ".html", MaxBytes: 300}
}

// TestBuildGolden builds the small HTML, Markdown, reStructuredText and
// text fixtures and compares every passage with the golden file
// (go test ./core/builder -update rewrites it).
func TestBuildGolden(t *testing.T) {
	res, err := Build(testDocs(t), options(), nil)
	require.NoError(t, err)
	got, err := json.MarshalIndent(map[string]any{"documents": res.Documents, "skipped": res.Skipped, "passages": res.Passages}, "", "  ")
	require.NoError(t, err)
	golden := "testdata/build.golden.json"
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got)+"\n")

	m := options().Manifest(res.Passages, []byte("x"), corpus.EncodingJSON, "passages.json", 0)
	m.PassagesBytes = 1
	_, err = corpus.NewPack(m, res.Passages)
	require.NoError(t, err, "every built passage passes the pack's checks")
}

func TestBuildRules(t *testing.T) {
	res, err := Build(testDocs(t), options(), nil)
	require.NoError(t, err)
	byID := map[string]corpus.Passage{}
	for _, p := range res.Passages {
		byID[p.SourceID] = p
		assert.LessOrEqual(t, len(p.Text), 300, "%s is within the cap", p.SourceID)
		assert.NotContains(t, p.Text, "¶", "permalink marks are left out")
		assert.NotContains(t, p.Text, "table of contents")
		assert.NotContains(t, p.Text, "not text", "scripts are left out")
	}
	assert.Equal(t, []Skipped{
		{Path: "archive.md", Reason: "binary (contains a NUL byte)"},
		{Path: "image.png", Reason: "not HTML, Markdown, reStructuredText, plain text or JSON Lines passages (by its extension)"},
		{Path: "latin1.txt", Reason: "not UTF-8 text"},
	}, res.Skipped, "each file that cannot be read says why; the rest still build")

	area := byID["api.shapes.shapes.circle.area"]
	assert.Equal(t, "https://docs.example.org/1.0/api/shapes.html#shapes.Circle.area", area.URL, "the nearest documented object is the anchor")
	assert.True(t, strings.HasPrefix(area.Text, "area()\n\nsurface()\n\nReturn the area"), "terms in a row share their description: %q", area.Text)
	assert.Equal(t, "shapes — Geometry › Circles › shapes.Circle.area", area.Title)
	_, radius := byID["api.shapes.shapes.circle.radius"]
	assert.False(t, radius, "an object documented by name only adds no passage")
	assert.Contains(t, byID["guide.options--flags-1"].Text, "same title", "a repeated Markdown heading gets GitHub's numbered anchor")
	assert.Equal(t, "https://docs.example.org/1.0/notes.html#notes.parse", byID["notes.notes.parse"].URL)

	// Long prose is cut at paragraph boundaries first: no passage ends
	// inside a paragraph that would have fitted whole.
	var long []string
	for _, p := range res.Passages {
		if strings.HasPrefix(p.SourceID, "long") {
			long = append(long, p.Text)
		}
	}
	require.GreaterOrEqual(t, len(long), 3)
	for _, text := range long {
		for _, para := range strings.Split(text, "\n\n") {
			assert.True(t, strings.HasSuffix(para, "."), "pieces end at a sentence or paragraph end: %q", para)
		}
	}
}

func TestIDsAreStableAcrossRebuilds(t *testing.T) {
	docs := testDocs(t)
	a, err := Build(docs, options(), nil)
	require.NoError(t, err)
	// Another order of the same files, and an extra file, change no id.
	reversed := append([]Document{{Path: "zz-extra.md", Data: []byte("# Extra\n\nMore text.\n")}}, docs...)
	for i, j := 1, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	b, err := Build(reversed, options(), nil)
	require.NoError(t, err)
	require.Len(t, b.Passages, len(a.Passages)+1)
	assert.Equal(t, a.Passages, b.Passages[:len(a.Passages)])
}

func TestBuildRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"cap", func(o *Options) { o.MaxBytes = 100 }, "the passage cap is 100 bytes"},
		{"version", func(o *Options) { o.Version = "one" }, `version "one" is not of the form`},
		{"base url", func(o *Options) { o.BaseURL = "http://docs.example.org/" }, "not an absolute https URL ending in /"},
		{"base url slash", func(o *Options) { o.BaseURL = "https://docs.example.org" }, "not an absolute https URL ending in /"},
		{"page ext", func(o *Options) { o.PageExt = "html" }, "must start with a dot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := options()
			c.edit(&o)
			_, err := Build(testDocs(t), o, nil)
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err := Build([]Document{{Path: "a.png", Data: []byte("x")}}, options(), nil)
	assert.ErrorContains(t, err, "no passage")
}

func TestChunkCutsOnlyWhatDoesNotFit(t *testing.T) {
	para := strings.Repeat("word ", 50) + "end." // 254 bytes
	got := chunk([]block{{text: "Short."}, {text: para}, {text: "Tail."}}, 265)
	assert.Equal(t, []string{"Short.\n\n" + para, "Tail."}, got)
	code := strings.Repeat("x = 1\n", 80)
	for _, piece := range chunk([]block{{text: code, pre: true}}, 100) {
		assert.LessOrEqual(t, len(piece), 100)
		assert.True(t, strings.HasPrefix(piece, "x = 1"), "code is cut at line ends")
	}
	for _, piece := range chunk([]block{{text: strings.Repeat("é", 400)}}, 201) {
		assert.LessOrEqual(t, len(piece), 201)
		assert.True(t, strings.HasPrefix(piece, "é"), "a word is cut between characters, never inside one")
	}
}

// A JSON Lines passages file joins the build as its passages are; one row
// per refusal, each skipping the whole file with the line it stopped at,
// while the other documents still build.
func TestJSONLinesPassages(t *testing.T) {
	good := `{"source_id": "faq.install", "url": "https://example.org/faq#install", "title": "FAQ › Install", "text": "Run the installer."}
` + "\n" + `{"source_id": "faq.upgrade", "version": "2.0", "url": "https://example.org/faq#upgrade", "text": "Upgrade in place."}
`
	res, err := Build([]Document{{Path: "faq.jsonl", Data: []byte(good)}, {Path: "notes.md", Data: []byte("# Notes\n\nA note.")}}, options(), nil)
	require.NoError(t, err)
	require.Len(t, res.Passages, 3)
	assert.Equal(t, corpus.Passage{SourceID: "faq.install", Version: "1.0", URL: "https://example.org/faq#install", Title: "FAQ › Install",
		Text: "Run the installer.", TextSHA256: corpus.SHA256("Run the installer.")}, res.Passages[0])
	assert.Equal(t, "2.0", res.Passages[1].Version)
	m := options().Manifest(res.Passages, []byte("x"), corpus.EncodingJSON, "passages.json", 0)
	assert.Equal(t, []string{"1.0", "2.0"}, m.Versions, "a passages file's version joins the manifest's")

	for _, c := range []struct{ name, data, want string }{
		{"not json", "{not json}\n", "line 1: not a passage object"},
		{"unknown field", `{"source_id": "a", "url": "https://e.org/", "text": "t", "body": "x"}`, `line 1: not a passage object (unknown field "body")`},
		{"two values", `{"source_id": "a", "url": "https://e.org/", "text": "t"} {}`, "line 1: not a passage object (extra data at byte 57)"},
		{"bad url", `{"source_id": "a", "url": "http://e.org/", "text": "t"}`, `line 1 ("a"): url "http://e.org/" is not an absolute https URL`},
		{"changed text", `{"source_id": "a", "url": "https://e.org/", "text": "t", "text_sha256": "` + corpus.SHA256("u") + `"}`, `line 1 ("a"): text_sha256`},
		{"bad version", `{"source_id": "a", "version": "v1", "url": "https://e.org/", "text": "t"}`, `line 1 ("a"): version "v1"`},
		{"repeated id", "{\"source_id\": \"a\", \"url\": \"https://e.org/\", \"text\": \"t\"}\n{\"source_id\": \"a\", \"url\": \"https://e.org/\", \"text\": \"u\"}", `line 2: source_id "a" is already a passage's`},
		{"id of another document", `{"source_id": "notes", "url": "https://e.org/", "text": "t"}`, `line 1: source_id "notes" is already a passage's`},
		{"case-variant key", `{"source_id": "a", "url": "https://e.org/", "text": "one", "Text": "two"}`, "line 1: not a passage object"},
		{"repeated key", `{"source_id": "a", "url": "https://e.org/", "text": "one", "text": "two"}`, "line 1: not a passage object"},
		{"empty", "\n\n", "no passage"},
		{"not utf-8", "\xff\xfe", "not UTF-8 text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// notes.md sorts before zz.jsonl, so its id "notes" is taken first.
			res, err := Build([]Document{{Path: "notes.md", Data: []byte("A note.")}, {Path: "zz.jsonl", Data: []byte(c.data)}}, options(), nil)
			require.NoError(t, err)
			require.Len(t, res.Skipped, 1)
			assert.Equal(t, "zz.jsonl", res.Skipped[0].Path)
			assert.Contains(t, res.Skipped[0].Reason, c.want)
			assert.NotContains(t, res.Skipped[0].Reason, "\n")
			require.Len(t, res.Passages, 1, "the other document still builds")
		})
	}
}

func FuzzReadPassages(f *testing.F) {
	f.Add([]byte(`{"source_id": "a", "url": "https://e.org/", "text": "t"}`))
	f.Add([]byte("{\"source_id\": \"a\", \"version\": \"1.0\", \"url\": \"https://e.org/#x\", \"title\": \"T\", \"text\": \"t\"}\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, why := readPassages(Document{Path: "f.jsonl", Data: data}, "1.0", map[string]bool{})
		if why == "" {
			require.NotEmpty(t, ps)
			for _, p := range ps {
				require.NoError(t, corpus.CheckPassage(p))
			}
		} else {
			require.Empty(t, ps)
			require.NotContains(t, why, "\n")
		}
	})
}

// TestSiteAffixes takes off what most of a site's titles share, and only
// that.
func TestSiteAffixes(t *testing.T) {
	for _, c := range []struct {
		name           string
		titles         []string
		prefix, suffix string
	}{
		{"sphinx", []string{"re — Regular expression operations — Python 3.11.2 documentation",
			"os — Miscellaneous operating system interfaces — Python 3.11.2 documentation", "Glossary — Python 3.11.2 documentation"},
			"", " — Python 3.11.2 documentation"},
		{"node", []string{"File system | Node.js v18.20.4 Documentation", "HTTP | Node.js v18.20.4 Documentation", "About this documentation"},
			"", " | Node.js v18.20.4 Documentation"},
		{"a prefix", []string{"PostgreSQL: Documentation: 15: CREATE INDEX", "PostgreSQL: Documentation: 15: VACUUM"},
			"PostgreSQL: Documentation: 15: ", ""},
		{"nothing shared", []string{"Write-Ahead Logging", "The SQLite Query Optimizer Overview", "SQLite FTS5 Extension"}, "", ""},
		{"one page", []string{"Bash Reference Manual"}, "", ""},
		{"shared by half is not enough", []string{"A | Site", "B | Site", "C", "D"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix, suffix := siteAffixes(c.titles)
			assert.Equal(t, c.prefix, prefix)
			assert.Equal(t, c.suffix, suffix)
		})
	}
	assert.Equal(t, "re — Regular expression operations", stripAffixes("re — Regular expression operations — Python 3.11.2 documentation", "", " — Python 3.11.2 documentation"))
	assert.Equal(t, "Home | Site", stripAffixes("Home | Site", "Home | Site", ""), "a title that is all affix is kept")
}

// TestPassagesCarryThePageTitleAndAliases builds a page of a site that
// leaves its title out of the main content: its passages' title paths
// start with the page's title, without the site's suffix, and their
// aliases are absolute URLs of the page.
func TestPassagesCarryThePageTitleAndAliases(t *testing.T) {
	page := func(title, body string) []byte {
		return []byte(`<html><head><title>` + title + ` | Docs</title></head><body><main>` + body + `</main></body></html>`)
	}
	res, err := Build([]Document{
		{Path: "wal.html", Data: page("Write-Ahead Logging", `<h1 id="overview">1. Overview</h1><p><span id="intro"></span>WAL is a journal mode.</p>`)},
		{Path: "re.html", Data: page("re — Regular expressions", `<h1>re — Regular expressions</h1><dl><dt id="re.I">re.I</dt><dt id="re.IGNORECASE">re.IGNORECASE</dt><dd><p>Ignore case.</p></dd></dl>`)},
	}, Options{ID: "t", Version: "1.0", BaseURL: "https://docs.example.org/"}, nil)
	require.NoError(t, err)
	require.Len(t, res.Passages, 2)
	re, wal := res.Passages[0], res.Passages[1]
	assert.Equal(t, "re — Regular expressions › re.I", re.Title, "a title the path starts with is not repeated")
	assert.Equal(t, []string{"https://docs.example.org/re.html#re.IGNORECASE"}, re.Aliases)
	assert.Equal(t, "Write-Ahead Logging › 1. Overview", wal.Title)
	assert.Equal(t, "https://docs.example.org/wal.html#overview", wal.URL)
	assert.Equal(t, []string{"https://docs.example.org/wal.html#intro"}, wal.Aliases)
	for _, p := range res.Passages {
		require.NoError(t, corpus.CheckPassage(p))
	}
}
