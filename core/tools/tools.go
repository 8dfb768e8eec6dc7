// Package tools is what an admitted action may do: search the index, price a
// read, read an issued handle and check the read against the handle's
// receipt. It knows nothing of models or limits; the agent admits first.
package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
)

// Handle is an issued search result. The model sees only SourceID, Rank and
// Version; Bytes prices a read and TextSHA256 is the receipt a read must match.
type Handle struct {
	SourceID   string `json:"source_id"`
	Rank       int    `json:"rank"`
	Version    string `json:"version"`
	Bytes      int    `json:"bytes"`
	TextSHA256 string `json:"text_sha256"`
}

// Tools is the tool surface the agent drives. Errors that carry a
// reason.Code end the run as failed with that code.
type Tools interface {
	Search(query string, k int, version string) ([]Handle, error)
	ReadCost(h Handle) int
	Read(h Handle) (corpus.Passage, error)
	ValidateRead(p corpus.Passage, h Handle) error
}

// Library serves a pack's passages through its index: a decoded snapshot
// held in memory, or an image whose passages stay in the image until a
// search issues one (its head is checked then) or a read needs its text
// (checked against the handle's receipt by ValidateRead).
type Library struct {
	snapshot *corpus.Snapshot // nil for an image pack
	index    *store.Index
	pack     *corpus.Pack // nil for a bare snapshot
	// spec is the retrieval configuration searches rank by (seed unless
	// Under chose another), searcher its ranking and base what the
	// configurations over the index share.
	spec     retrieval.Spec
	searcher searcher
	base     *retrieval.Base
}

// searcher is a ranking: *store.Index itself (seed) or a
// *retrieval.Searcher.
type searcher interface {
	Search(query string, k int, version string) ([]store.Hit, error)
}

// Under is the library searching under spec (the same index and passages;
// its searches ranked by spec): not safe for use at the same time as the
// library it came from, whose index it shares, and never to be closed
// (closing the first closes both). A spec that cannot run here is refused
// (retrieval.Open).
func (l *Library) Under(spec retrieval.Spec) (*Library, error) {
	if l.base == nil {
		l.base = retrieval.NewBase(l.index)
	}
	s, err := l.base.Open(spec)
	if err != nil {
		return nil, err
	}
	view := *l
	view.spec, view.searcher = spec, s
	return &view, nil
}

// Retrieval is the configuration the library's searches rank by.
func (l *Library) Retrieval() retrieval.Spec {
	if l.spec.Name == "" {
		return seedSpec()
	}
	return l.spec
}

func seedSpec() retrieval.Spec {
	s, _ := retrieval.Lookup(retrieval.Seed)
	return s
}

// search is the library's ranking: the seed's (the index) unless Under
// chose another.
func (l *Library) search(query string, k int, version string) ([]store.Hit, error) {
	if l.searcher == nil {
		return l.index.Search(query, k, version)
	}
	return l.searcher.Search(query, k, version)
}

// Hasher is a sha256 implementation giving lower-case hex; nil means Go's.
type Hasher func([]byte) (string, error)

// OpenPack checks a pack's passages file against its manifest (size and
// sha256, with hash when given), then opens its index: a JSON file's
// passages are decoded, validated and indexed now; a SQLite image is
// opened as it is, its passages read only when needed. The file's sha256
// covers every byte of every passage, so an image's passages are not
// re-hashed at open; each is checked when it is first used.
func OpenPack(m *corpus.Manifest, passages []byte, hash Hasher) (*Library, error) {
	return OpenPackWith(m, passages, nil, hash)
}

// OpenPackWith is OpenPack with a JSON pack's lexicon (Lexicon's bytes,
// nil for none): its index opens from the lexicon, ranking without SQLite
// (store.OpenLexicon), instead of being built. A lexicon made from other
// passages, or given for an image, is refused.
func OpenPackWith(m *corpus.Manifest, passages, lexicon []byte, hash Hasher) (*Library, error) {
	var err error
	if hash != nil {
		err = m.CheckFileWith(passages, hash)
	} else {
		err = m.CheckFile(passages)
	}
	if err != nil {
		return nil, err
	}
	switch m.PassagesEncoding {
	case corpus.EncodingJSON:
		ps, err := corpus.DecodeJSON(passages)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.ID, err)
		}
		p, err := corpus.NewPack(m, ps)
		if err != nil {
			return nil, err
		}
		var lib *Library
		if lexicon != nil {
			lib, err = openLexicon(p.Snapshot, lexicon, m.PassagesSHA256)
		} else {
			lib, err = Open(p.Snapshot)
		}
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.ID, err)
		}
		lib.pack = p
		return lib, nil
	case corpus.EncodingSQLite:
		if lexicon != nil {
			return nil, fmt.Errorf("pack %s: a lexicon is for a pack of JSON passages; an image is its own", m.ID)
		}
		ix, err := store.OpenImage(passages)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.ID, err)
		}
		if ix.Len() != m.Passages {
			ix.Close()
			return nil, fmt.Errorf("pack %s: the passages file has %d passages, the manifest says %d", m.ID, ix.Len(), m.Passages)
		}
		return &Library{index: ix, pack: &corpus.Pack{Manifest: m}}, nil
	}
	return nil, fmt.Errorf("pack %s: passages_encoding %q is not known", m.ID, m.PassagesEncoding)
}

// Pack is the pack the library serves (nil for a bare snapshot).
func (l *Library) Pack() *corpus.Pack { return l.pack }

// Open indexes the snapshot's passages in file order.
func Open(s *corpus.Snapshot) (*Library, error) {
	ix, err := store.Open(docs(s))
	if err != nil {
		return nil, err
	}
	return &Library{snapshot: s, index: ix}, nil
}

// docs are the snapshot's passages as the index takes them.
func docs(s *corpus.Snapshot) []store.Doc {
	docs := make([]store.Doc, len(s.Passages))
	for i, p := range s.Passages {
		docs[i] = store.Doc{Version: p.Version, Text: p.Text, Title: p.Title, URL: p.URL}
	}
	return docs
}

// Lexicon is the lexicon OpenPackWith takes for a JSON pack whose
// passages file has the sha256 source and holds s: its index's, built
// now, as JSON.
func Lexicon(s *corpus.Snapshot, source string) ([]byte, error) {
	ix, err := store.Open(docs(s))
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	lx, err := ix.Lexicon(source)
	if err != nil {
		return nil, err
	}
	return json.Marshal(lx)
}

// openLexicon opens s from its lexicon, made from the passages file with
// sha256 source.
func openLexicon(s *corpus.Snapshot, lexicon []byte, source string) (*Library, error) {
	var lx store.Lexicon
	if err := json.Unmarshal(lexicon, &lx); err != nil {
		return nil, fmt.Errorf("the lexicon is not JSON: %w", err)
	}
	if lx.Source != source {
		return nil, fmt.Errorf("the lexicon was made from passages with sha256 %q, not these (%s)", lx.Source, source)
	}
	ix, err := store.OpenLexicon(docs(s), &lx)
	if err != nil {
		return nil, err
	}
	return &Library{snapshot: s, index: ix}, nil
}

// Close releases the index.
func (l *Library) Close() error { return l.index.Close() }

// Snapshot is the corpus the library serves when it holds it in memory;
// nil for an image pack.
func (l *Library) Snapshot() *corpus.Snapshot { return l.snapshot }

// Len is the number of passages.
func (l *Library) Len() int { return l.index.Len() }

// head is passage doc without its text (for an image; a snapshot's
// passage has it), checked, and the text's size in bytes.
func (l *Library) head(doc int) (corpus.Passage, int, error) {
	if l.snapshot != nil {
		p := l.snapshot.Passages[doc]
		return p, p.Bytes(), nil
	}
	p, n, err := l.index.Head(doc)
	if err == nil {
		err = l.pack.Manifest.CheckHead(doc, p)
	}
	return p, n, err
}

// Has reports whether a passage has the source id.
func (l *Library) Has(sourceID string) (bool, error) {
	if l.snapshot != nil {
		_, ok := l.snapshot.Passage(sourceID)
		return ok, nil
	}
	_, ok, err := l.index.Lookup(sourceID)
	return ok, err
}

// Aliases are the aliases of the passage with the source id (none for an
// unknown id): what grading adds to a read passage's URL, since a run's
// records carry the URL alone.
func (l *Library) Aliases(sourceID string) []string {
	if l.snapshot != nil {
		p, _ := l.snapshot.Passage(sourceID)
		return p.Aliases
	}
	doc, ok, err := l.index.Lookup(sourceID)
	if err != nil || !ok {
		return nil
	}
	p, _, err := l.head(doc)
	if err != nil {
		return nil
	}
	return p.Aliases
}

// HasURLs reports which of urls some passage has: a URL with a #fragment
// as some passage's URL or alias, one without (a page) as the page of some
// passage's URL (the URL itself or it with a #fragment).
func (l *Library) HasURLs(urls []string) (map[string]bool, error) {
	var exact, pages []string
	for _, u := range urls {
		if strings.Contains(u, "#") {
			exact = append(exact, u)
		} else {
			pages = append(pages, u)
		}
	}
	if l.snapshot == nil {
		found, err := l.index.HasURLs(exact)
		if err != nil {
			return nil, err
		}
		onPage, err := l.index.HasPages(pages)
		for p := range onPage {
			found[p] = true
		}
		return found, err
	}
	found := map[string]bool{}
	want := map[string]bool{}
	for _, u := range urls {
		want[u] = true
	}
	for _, p := range l.snapshot.Passages {
		page, _, _ := strings.Cut(p.URL, "#")
		for _, u := range p.URLs() {
			if want[u] && strings.Contains(u, "#") {
				found[u] = true
			}
		}
		if want[page] {
			found[page] = true
		}
	}
	return found, nil
}

// Stats are what a pack's passages are like as a whole.
type Stats struct {
	Pages     int // distinct URLs without their fragment
	TextBytes int
	// Bytes are the passages' sizes, in order.
	Bytes []int
}

// Stats describes the passages (an image from its docs row, without
// reading them).
func (l *Library) Stats() Stats {
	if l.snapshot == nil {
		st, _ := l.index.Stats()
		out := Stats{Pages: st.Pages, Bytes: st.Bytes}
		for _, b := range st.Bytes {
			out.TextBytes += b
		}
		return out
	}
	pages := map[string]bool{}
	out := Stats{}
	for _, p := range l.snapshot.Passages {
		page, _, _ := strings.Cut(p.URL, "#")
		pages[page] = true
		out.Bytes = append(out.Bytes, p.Bytes())
		out.TextBytes += p.Bytes()
	}
	out.Pages = len(pages)
	return out
}

// Verify reads and checks every passage as NewPack does (id, version, URL,
// title, text and receipt, no repeated id): an image's are otherwise
// checked one by one as they are used. It is what `ragagent corpus info`
// does to vouch for a whole pack.
func (l *Library) Verify() error {
	if l.snapshot != nil || l.pack == nil {
		return nil // checked when it was decoded
	}
	ps, err := l.index.Passages()
	if err != nil {
		return fmt.Errorf("pack %s: %w", l.pack.Manifest.ID, err)
	}
	_, err = corpus.NewPack(l.pack.Manifest, ps)
	return err
}

// Scored is a handle with its bm25 score, for people inspecting the index;
// Snippet (from ExplainSnippets) is the best window of its text with the
// matched terms between store.MarkOpen and store.MarkClose.
type Scored struct {
	Handle
	Score float64 `json:"score"`
	URL   string  `json:"url,omitempty"`
	Title string  `json:"title,omitempty"`
	// Aliases are the passage's other URLs (corpus.Passage.Aliases).
	Aliases []string `json:"aliases,omitempty"`
	Snippet string   `json:"snippet,omitempty"`
}

// Explain runs a search and keeps the scores (the agent never sees them).
func (l *Library) Explain(query string, k int, version string) ([]Scored, error) {
	hits, err := l.search(query, k, version)
	return l.scored(hits, err, false)
}

// ExplainSnippets is Explain with each hit's URL, title and highlighted
// snippet: what a person searching the corpus sees.
func (l *Library) ExplainSnippets(query string, k int, version string) ([]Scored, error) {
	if l.searcher == nil || l.Retrieval().IsSeed() {
		hits, err := l.index.SearchSnippets(query, k, version)
		return l.scored(hits, err, true)
	}
	hits, err := l.search(query, k, version)
	if err == nil {
		hits, err = l.index.Snippets(query, hits)
	}
	return l.scored(hits, err, true)
}

func (l *Library) scored(hits []store.Hit, err error, links bool) ([]Scored, error) {
	if errors.Is(err, store.ErrNoTerms) {
		return nil, reason.New(reason.InvalidQuery, "the query has no [a-z0-9] terms")
	}
	if err != nil {
		return nil, err
	}
	out := make([]Scored, len(hits))
	for i, h := range hits {
		p, n, err := l.head(h.Doc)
		if err != nil {
			return nil, err
		}
		out[i] = Scored{Handle: Handle{SourceID: p.SourceID, Rank: h.Rank, Version: p.Version, Bytes: n, TextSHA256: p.TextSHA256},
			Score: h.Score, Snippet: h.Snippet}
		if links {
			out[i].URL, out[i].Title, out[i].Aliases = p.URL, p.Title, p.Aliases
		}
	}
	return out, nil
}

// Search issues handles for the top k passages of version matching query.
func (l *Library) Search(query string, k int, version string) ([]Handle, error) {
	scored, err := l.Explain(query, k, version)
	if err != nil {
		return nil, err
	}
	handles := make([]Handle, len(scored))
	for i, s := range scored {
		handles[i] = s.Handle
	}
	return handles, nil
}

// ReadCost is the handle's byte size, known before reading.
func (l *Library) ReadCost(h Handle) int { return h.Bytes }

// Read returns the passage a handle names; an image's is read now, its
// head checked (ValidateRead checks its text against the receipt).
func (l *Library) Read(h Handle) (corpus.Passage, error) {
	if l.snapshot != nil {
		p, ok := l.snapshot.Passage(h.SourceID)
		if !ok {
			return corpus.Passage{}, reason.New(reason.UnissuedSource, "no passage %q", h.SourceID)
		}
		return p, nil
	}
	doc, ok, err := l.index.Lookup(h.SourceID)
	if err != nil {
		return corpus.Passage{}, err
	}
	if !ok {
		return corpus.Passage{}, reason.New(reason.UnissuedSource, "no passage %q", h.SourceID)
	}
	p, err := l.index.Passage(doc)
	if err == nil {
		err = l.pack.Manifest.CheckHead(doc, p)
	}
	return p, err
}

// ValidateRead refuses a read whose text no longer matches the receipt the
// handle was issued with.
func (l *Library) ValidateRead(p corpus.Passage, h Handle) error {
	return Validate(p, h)
}

// Validate is the receipt check, shared by any Tools implementation.
func Validate(p corpus.Passage, h Handle) error {
	switch {
	case p.SourceID != h.SourceID || p.Version != h.Version:
		return reason.New(reason.ChangedRead, "read %s@%s for handle %s@%s", p.SourceID, p.Version, h.SourceID, h.Version)
	case p.TextSHA256 != h.TextSHA256 || corpus.SHA256(p.Text) != h.TextSHA256:
		return reason.New(reason.ChangedRead, "%s text no longer matches receipt %s", h.SourceID, h.TextSHA256)
	}
	return nil
}
