// Package builder makes a corpus pack from a folder of documents (Sphinx
// or other HTML, Markdown, reStructuredText, plain text): each document is
// read into headed sections, each section cut into passages small enough
// that a run's source-byte limit allows several reads, and every passage
// gets an id that is the same on every rebuild of the same input and the
// URL of the nearest anchor (a documented object or a section). It takes
// bytes, not paths: the caller walks the folder.
package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// DefaultMaxBytes is a passage's size cap: with the default 4096-byte
// source limit a run can read at least two passages of any size, and
// usually three or four.
const DefaultMaxBytes = 1500

// MinMaxBytes is the smallest cap a build accepts.
const MinMaxBytes = 200

// MaxDocumentBytes bounds one input document.
const MaxDocumentBytes = 8 << 20

// Document is one input file: its path relative to the folder (with
// forward slashes) and its bytes.
type Document struct {
	Path string
	Data []byte
}

// Kind is how a document is read.
type Kind string

// The kinds of document, chosen by the name's extension.
const (
	HTML     Kind = "html"
	Markdown Kind = "markdown"
	RST      Kind = "rst"
	Text     Kind = "text"
	// Passages is a JSON Lines file of passages already cut: one object a
	// line with source_id, url and text, and optionally version, title and
	// text_sha256 (see readPassages).
	Passages   Kind = "passages"
	Unreadable Kind = ""
)

// KindOf is the kind a path's extension names, or Unreadable.
func KindOf(name string) Kind {
	switch strings.ToLower(path.Ext(name)) {
	case ".html", ".htm":
		return HTML
	case ".md", ".markdown":
		return Markdown
	case ".rst", ".rest":
		return RST
	case ".txt", ".text":
		return Text
	case ".jsonl":
		return Passages
	}
	return Unreadable
}

// Options are a build's settings and the manifest's descriptive fields.
type Options struct {
	ID          string
	Title       string
	Language    string
	Version     string // every passage's version
	SearchK     int    // 0 means corpus.DefaultSearchK
	Licence     string
	Attribution string
	Source      string
	MadeBy      string
	// BaseURL is prefixed to a document's path (with PageExt) to make its
	// URL; it must be an absolute https URL ending in "/".
	BaseURL string
	// PageExt, if set, replaces each document's extension in its URL
	// (".html" for a Sphinx source tree whose pages are published).
	PageExt string
	// MaxBytes caps a passage's text; 0 means DefaultMaxBytes.
	MaxBytes int
	// RetrievalConfig is the pack's default retrieval configuration (a
	// built-in's name, or RetrievalSpec's); "" writes none, which means
	// seed.
	RetrievalConfig string
	// RetrievalSpec is the default's spec when it is one of one's own
	// (its JSON, compact), or nil.
	RetrievalSpec []byte
}

func (o *Options) check() error {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SearchK == 0 {
		o.SearchK = corpus.DefaultSearchK
	}
	if o.MaxBytes < MinMaxBytes {
		return fmt.Errorf("build: the passage cap is %d bytes; it must be at least %d", o.MaxBytes, MinMaxBytes)
	}
	if !corpus.ValidVersion(o.Version) {
		return fmt.Errorf("build: version %q is not of the form 3.12", o.Version)
	}
	if !strings.HasSuffix(o.BaseURL, "/") || !corpus.ValidURL(o.BaseURL) {
		return fmt.Errorf("build: base URL %q is not an absolute https URL ending in /", o.BaseURL)
	}
	if o.PageExt != "" && (!strings.HasPrefix(o.PageExt, ".") || strings.ContainsAny(o.PageExt, "/#?")) {
		return fmt.Errorf("build: page extension %q must start with a dot", o.PageExt)
	}
	return nil
}

// Skipped is an input document the build left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Result is a build's passages, in order, with what was left out.
type Result struct {
	Passages  []corpus.Passage
	Documents int
	Skipped   []Skipped
}

// Build reads the documents in path order and cuts them into passages.
// A document that is not UTF-8, is binary, too large or of no known kind
// is skipped with its reason (the rest still build); a build with no
// passage at all is an error (the result still says why each document
// was skipped). onDocument, if set, is told after each
// document (for progress).
func Build(docs []Document, o Options, onDocument func(done, total int)) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	sorted := append([]Document(nil), docs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Path < sorted[b].Path })
	res := &Result{}
	ids := map[string]bool{}
	// Every document is read first: a page's title loses the part every
	// page of the site shares (siteAffixes), which only all of them tell.
	read := make([]document, len(sorted))
	var titles []string
	for i, d := range sorted {
		read[i] = readDocument(d)
		if read[i].title != "" {
			titles = append(titles, read[i].title)
		}
	}
	prefix, suffix := siteAffixes(titles)
	for i, d := range sorted {
		r := read[i]
		switch {
		case r.why != "":
			res.Skipped = append(res.Skipped, Skipped{Path: d.Path, Reason: r.why})
		case KindOf(d.Path) == Passages:
			ps, why := readPassages(d, o.Version, ids)
			if why != "" {
				res.Skipped = append(res.Skipped, Skipped{Path: d.Path, Reason: why})
				break
			}
			res.Documents++
			res.Passages = append(res.Passages, ps...)
		default:
			res.Documents++
			withTitle(r.sections, stripAffixes(r.title, prefix, suffix))
			res.Passages = append(res.Passages, o.passages(d.Path, r.sections, ids)...)
		}
		if onDocument != nil {
			onDocument(i+1, len(sorted))
		}
	}
	if len(res.Passages) == 0 {
		return res, fmt.Errorf("build: no passage: none of the %d documents has readable text", len(docs))
	}
	return res, nil
}

// unreadable says why a document cannot be read as text at all, or "".
func unreadable(d Document) string {
	switch {
	case KindOf(d.Path) == Unreadable:
		return "not HTML, Markdown, reStructuredText, plain text or JSON Lines passages (by its extension)"
	case len(d.Data) > MaxDocumentBytes:
		return fmt.Sprintf("larger than %d bytes", MaxDocumentBytes)
	case !utf8.Valid(d.Data):
		return "not UTF-8 text"
	case strings.ContainsRune(string(d.Data), 0):
		return "binary (contains a NUL byte)"
	}
	return ""
}

// document is a document read: its sections and an HTML page's title, or
// why it cannot be read. A passages file is read later, in order (its
// ids are taken as they come).
type document struct {
	sections []section
	title    string
	why      string
}

// readDocument parses a document into sections, or says why it cannot.
func readDocument(d Document) document {
	if KindOf(d.Path) == Passages {
		return document{}
	}
	if why := unreadable(d); why != "" {
		return document{why: why}
	}
	text := strings.TrimPrefix(string(d.Data), "\ufeff")
	switch KindOf(d.Path) {
	case HTML:
		sections, title, why := readHTML(text)
		return document{sections: sections, title: title, why: why}
	case Markdown:
		return document{sections: readMarkdown(text)}
	case RST:
		return document{sections: readRST(text)}
	}
	return document{sections: readText(text)}
}

// section is a run of blocks under one anchor and heading path, with the
// other ids that lead to it.
type section struct {
	anchor  string
	aliases []string
	titles  []string
	blocks  []block
}

// withTitle puts a page's title at the head of each section's title path
// unless the path already starts with it (a Sphinx page's <h1> is its
// title): "Write-Ahead Logging › 1. Overview", not "1. Overview".
func withTitle(sections []section, title string) {
	if title == "" {
		return
	}
	for i, s := range sections {
		if len(s.titles) > 0 && sameTitle(s.titles[0], title) {
			continue
		}
		sections[i].titles = append([]string{title}, s.titles...)
	}
}

// sameTitle reports whether a heading is the page's title, or holds it
// or is held by it ("git-rebase(1) Manual Page" for "git-rebase(1)"),
// ignoring case.
func sameTitle(heading, title string) bool {
	h, t := strings.ToLower(heading), strings.ToLower(title)
	return strings.Contains(h, t) || strings.Contains(t, h)
}

// titleSeparators part a page title from its site's name ("re — Regular
// expression operations — Python 3.11.2 documentation", "File system |
// Node.js v18.20.4 Documentation", "PostgreSQL: Documentation: 15: ...").
var titleSeparators = []string{" — ", " – ", " | ", " - ", ": ", " :: ", " · "}

// siteAffixes are the prefix and the suffix (each with its separator) that
// more than half of the pages' titles share, when two or more pages do:
// the site's name, which tells nothing of a passage. The longest shared
// one wins; "" when none.
func siteAffixes(titles []string) (prefix, suffix string) {
	if len(titles) < 2 {
		return "", ""
	}
	prefixes, suffixes := map[string]int{}, map[string]int{}
	for _, t := range titles {
		seenP, seenS := map[string]bool{}, map[string]bool{}
		for _, sep := range titleSeparators {
			for i := 0; ; {
				j := strings.Index(t[i:], sep)
				if j < 0 {
					break
				}
				at := i + j
				if p := t[:at+len(sep)]; at > 0 && !seenP[p] {
					seenP[p] = true
					prefixes[p]++
				}
				if s := t[at:]; at+len(sep) < len(t) && !seenS[s] {
					seenS[s] = true
					suffixes[s]++
				}
				i = at + len(sep)
			}
		}
	}
	longest := func(counts map[string]int) string {
		best := ""
		for a, n := range counts {
			if n*2 > len(titles) && n >= 2 && (len(a) > len(best) || len(a) == len(best) && a < best) {
				best = a
			}
		}
		return best
	}
	return longest(prefixes), longest(suffixes)
}

// stripAffixes takes the site's prefix and suffix off a title, unless
// nothing would be left.
func stripAffixes(title, prefix, suffix string) string {
	t := title
	if prefix != "" && strings.HasPrefix(t, prefix) && len(t) > len(prefix) {
		t = t[len(prefix):]
	}
	if suffix != "" && strings.HasSuffix(t, suffix) && len(t) > len(suffix) {
		t = t[:len(t)-len(suffix)]
	}
	return strings.TrimSpace(t)
}

// block is a paragraph; pre keeps its line breaks (code, literal blocks).
type block struct {
	text string
	pre  bool
}

// passages cuts a document's sections into passages with ids and URLs.
func (o Options) passages(docPath string, sections []section, ids map[string]bool) []corpus.Passage {
	page := docPath
	if o.PageExt != "" {
		page = strings.TrimSuffix(page, path.Ext(page)) + o.PageExt
	}
	base := o.BaseURL + escapePath(page)
	stem := idPart(strings.ReplaceAll(strings.TrimSuffix(docPath, path.Ext(docPath)), "/", "."))
	var out []corpus.Passage
	for _, s := range sections {
		url, id := base, stem
		if s.anchor != "" {
			url += "#" + s.anchor
			id += "." + idPart(s.anchor)
		}
		title := strings.Join(s.titles, " › ")
		var aliases []string
		for _, a := range s.aliases {
			// An id no URL can carry as is (a space, a stray '%') is left
			// out: the passage keeps its other names.
			if u := base + "#" + a; corpus.ValidURL(u) && !strings.ContainsAny(a, " \t\n#") {
				aliases = append(aliases, u)
			}
		}
		for _, text := range chunk(s.blocks, o.MaxBytes) {
			out = append(out, corpus.Passage{SourceID: unique(id, ids), Version: o.Version, URL: url,
				Title: clipTitle(title), Aliases: aliases, Text: text, TextSHA256: corpus.SHA256(text)})
		}
	}
	return out
}

// idPart is s as source id characters: lower case, and every run of
// characters outside [a-z0-9._-] one '-'.
func idPart(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = false
	}
	return strings.Trim(b.String(), "-._")
}

// maxIDBytes keeps room for a "-nnnn" suffix under the 128-byte id cap.
const maxIDBytes = 120

// unique returns id (shortened with a hash when too long, "x" when empty),
// or id-2, id-3, ... when taken, and marks it taken. The order of the
// documents and sections decides which is which, so a rebuild of the same
// input gives every passage the same id.
func unique(id string, taken map[string]bool) string {
	if id == "" {
		id = "x"
	}
	if len(id) > maxIDBytes {
		sum := sha256.Sum256([]byte(id))
		id = strings.TrimRight(id[:maxIDBytes-9], "-._") + "-" + hex.EncodeToString(sum[:4])
	}
	out := id
	for n := 2; taken[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	taken[out] = true
	return out
}

func clipTitle(t string) string {
	if len(t) <= corpus.MaxTitleBytes {
		return t
	}
	cut := corpus.MaxTitleBytes - len("…")
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "…"
}

// escapePath percent-escapes what a URL path cannot hold as is.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"#%<>?\^`+"`{|}", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Manifest is the pack manifest for built passages encoded as file
// (with its encoding and, when compressed, its compressed size).
func (o Options) Manifest(passages []corpus.Passage, file []byte, encoding, fileName string, compressedBytes int) *corpus.Manifest {
	if o.SearchK == 0 {
		o.SearchK = corpus.DefaultSearchK
	}
	// The build's version, then any other a passages file brought, sorted.
	versions, seen := []string{o.Version}, map[string]bool{o.Version: true}
	var others []string
	for _, p := range passages {
		if !seen[p.Version] {
			seen[p.Version] = true
			others = append(others, p.Version)
		}
	}
	sort.Strings(others)
	versions = append(versions, others...)
	return &corpus.Manifest{Format: corpus.PackFormat, ID: o.ID, Title: o.Title, Language: o.Language,
		Versions: versions, DefaultVersion: o.Version, SearchK: o.SearchK, Licence: o.Licence,
		Attribution: o.Attribution, Source: o.Source, MadeBy: o.MadeBy, Passages: len(passages),
		PassagesSHA256: corpus.SHA256(string(file)), PassagesEncoding: encoding, PassagesFile: fileName,
		PassagesBytes: len(file), CompressedBytes: compressedBytes, RetrievalConfig: o.RetrievalConfig, RetrievalSpec: o.RetrievalSpec}
}
