// Package tools is what an admitted action may do: search the index, price a
// read, read an issued handle and check the read against the handle's
// receipt. It knows nothing of models or limits; the agent admits first.
package tools

import (
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/reason"
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

// Library serves a validated snapshot through its FTS5 index.
type Library struct {
	snapshot *corpus.Snapshot
	index    *store.Index
	pack     *corpus.Pack // nil for a bare snapshot
}

// OpenPack checks a pack's passages file against its manifest (size and
// sha256), decodes and validates its passages and opens their index: a
// JSON file is indexed now, a SQLite image is opened as it is.
func OpenPack(m *corpus.Manifest, passages []byte) (*Library, error) {
	if err := m.CheckFile(passages); err != nil {
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
		lib, err := Open(p.Snapshot)
		if err != nil {
			return nil, err
		}
		lib.pack = p
		return lib, nil
	case corpus.EncodingSQLite:
		ix, ps, err := store.OpenImage(passages)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.ID, err)
		}
		p, err := corpus.NewPack(m, ps)
		if err != nil {
			ix.Close()
			return nil, err
		}
		return &Library{snapshot: p.Snapshot, index: ix, pack: p}, nil
	}
	return nil, fmt.Errorf("pack %s: passages_encoding %q is not known", m.ID, m.PassagesEncoding)
}

// Pack is the pack the library serves (nil for a bare snapshot).
func (l *Library) Pack() *corpus.Pack { return l.pack }

// Open indexes the snapshot's passages in file order.
func Open(s *corpus.Snapshot) (*Library, error) {
	docs := make([]store.Doc, len(s.Passages))
	for i, p := range s.Passages {
		docs[i] = store.Doc{Version: p.Version, Text: p.Text}
	}
	ix, err := store.Open(docs)
	if err != nil {
		return nil, err
	}
	return &Library{snapshot: s, index: ix}, nil
}

// Close releases the index.
func (l *Library) Close() error { return l.index.Close() }

// Snapshot is the corpus the library serves.
func (l *Library) Snapshot() *corpus.Snapshot { return l.snapshot }

// Scored is a handle with its bm25 score, for people inspecting the index;
// Snippet (from ExplainSnippets) is the best window of its text with the
// matched terms between store.MarkOpen and store.MarkClose.
type Scored struct {
	Handle
	Score   float64 `json:"score"`
	URL     string  `json:"url,omitempty"`
	Title   string  `json:"title,omitempty"`
	Snippet string  `json:"snippet,omitempty"`
}

// Explain runs a search and keeps the scores (the agent never sees them).
func (l *Library) Explain(query string, k int, version string) ([]Scored, error) {
	hits, err := l.index.Search(query, k, version)
	return l.scored(hits, err, false)
}

// ExplainSnippets is Explain with each hit's URL, title and highlighted
// snippet: what a person searching the corpus sees.
func (l *Library) ExplainSnippets(query string, k int, version string) ([]Scored, error) {
	hits, err := l.index.SearchSnippets(query, k, version)
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
		p := l.snapshot.Passages[h.Doc]
		out[i] = Scored{Handle: Handle{SourceID: p.SourceID, Rank: h.Rank, Version: p.Version, Bytes: p.Bytes(), TextSHA256: p.TextSHA256},
			Score: h.Score, Snippet: h.Snippet}
		if links {
			out[i].URL, out[i].Title = p.URL, p.Title
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

// Read returns the passage a handle names.
func (l *Library) Read(h Handle) (corpus.Passage, error) {
	p, ok := l.snapshot.Passage(h.SourceID)
	if !ok {
		return corpus.Passage{}, reason.New(reason.UnissuedSource, "no passage %q", h.SourceID)
	}
	return p, nil
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
