// Package rerank is the second retrieval stage: it reorders a fixed set of
// first-stage candidates (hybrid lexical+vector fusion) by query-term
// coverage, by a model's listwise permutation, or by cross-encoder logits,
// and it refuses any candidate whose identity or payload differs from the
// pinned snapshot, because a reranker that can swap a passage's text is a
// retriever nobody asked for.
//
// Every function is a port of the reference reranking lab's Python (rerank,
// apply_order, accept_scores, the hybrid fusion and the top-1/MRR metrics),
// check for check and in its order; results are plain structs whose Value
// is the reference record's JSON shape, key for key. The package also holds
// what a front end reads of the reranking lab: the three runs' records
// (records.go), the model manifest a fresh cross-encoder scoring fetches by
// (manifest.go), and a corpus pack's lexical-and-coverage rerank (pack.go).
package rerank

import (
	"fmt"
	"net/url"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// SnapshotFormat is the rerank snapshot file's format tag.
const SnapshotFormat = "ragagent-rerank-snapshot/1"

// Chunk is one retrievable piece of a document, with its receipt.
type Chunk struct {
	ChunkID    string `json:"chunk_id"`
	Text       string `json:"text"`
	TextSHA256 string `json:"text_sha256"`
}

// Document is one versioned source and its chunks.
type Document struct {
	SourceID string  `json:"source_id"`
	Version  string  `json:"version"`
	URL      string  `json:"url"`
	Chunks   []Chunk `json:"chunks"`
}

// Snapshot is the versioned corpus the reranker checks candidates against:
// the reference lab's snapshot id and chunk ids, kept exactly as published.
// It is only built by ParseSnapshot, so a *Snapshot is always valid.
type Snapshot struct {
	Format      string     `json:"format"`
	Description string     `json:"description,omitempty"`
	SnapshotID  string     `json:"snapshot_id"`
	Documents   []Document `json:"documents"`
	// DocumentsSHA256 is this project's receipt over the documents (the
	// reference does not publish how it derives its ids, so they cannot be
	// recomputed): sha256 of json.dumps(documents, sort_keys=True).
	DocumentsSHA256 string `json:"documents_sha256"`

	chunks []Passage
	byID   map[string]int
}

// Passage is a chunk with its document's identity: what a candidate must
// match field for field.
type Passage struct {
	ChunkID  string
	SourceID string
	Version  string
	URL      string
	Text     string
}

// ParseSnapshot decodes and validates a rerank snapshot. A changed text, id,
// url or version is refused, with the first thing that does not hold.
func ParseSnapshot(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := jsonfile.Decode(data, &s); err != nil {
		return nil, fmt.Errorf("rerank snapshot: not a valid snapshot file: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Snapshot) validate() error {
	switch {
	case s.Format != SnapshotFormat:
		return fmt.Errorf("rerank snapshot: format is %q, want %q", s.Format, SnapshotFormat)
	case !isHex64(s.SnapshotID):
		return fmt.Errorf("rerank snapshot: snapshot_id %q is not 64 lower-case hex digits", s.SnapshotID)
	case len(s.Documents) == 0:
		return fmt.Errorf("rerank snapshot: no documents")
	}
	s.byID = map[string]int{}
	sources := map[string]bool{}
	for i, d := range s.Documents {
		where := fmt.Sprintf("rerank snapshot: document %d (%q)", i+1, d.SourceID)
		if !corpus.ValidSourceID(d.SourceID) {
			return fmt.Errorf("%s: source_id must be 1-128 lower-case letters, digits, '.', '_' or '-'", where)
		}
		if sources[d.SourceID] {
			return fmt.Errorf("%s: source_id repeats an earlier document", where)
		}
		sources[d.SourceID] = true
		if !corpus.ValidVersion(d.Version) {
			return fmt.Errorf("%s: version %q is not of the form 3.12", where, d.Version)
		}
		if u, err := url.Parse(d.URL); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%s: url %q is not an absolute https URL", where, d.URL)
		}
		if len(d.Chunks) == 0 {
			return fmt.Errorf("%s: no chunks", where)
		}
		for j, c := range d.Chunks {
			at := fmt.Sprintf("%s chunk %d", where, j+1)
			switch {
			case !isHex64(c.ChunkID):
				return fmt.Errorf("%s: chunk_id %q is not 64 lower-case hex digits", at, c.ChunkID)
			case c.Text == "" || !utf8.ValidString(c.Text):
				return fmt.Errorf("%s: text must be non-empty UTF-8", at)
			case corpus.SHA256(c.Text) != c.TextSHA256:
				return fmt.Errorf("%s: text_sha256 %q does not match the text (which hashes to %s)", at, c.TextSHA256, corpus.SHA256(c.Text))
			}
			if k, dup := s.byID[c.ChunkID]; dup {
				return fmt.Errorf("%s: chunk_id repeats chunk %d of the snapshot", at, k+1)
			}
			s.byID[c.ChunkID] = len(s.chunks)
			s.chunks = append(s.chunks, Passage{ChunkID: c.ChunkID, SourceID: d.SourceID, Version: d.Version, URL: d.URL, Text: c.Text})
		}
	}
	if got := DocumentsSHA256(s.Documents); got != s.DocumentsSHA256 {
		return fmt.Errorf("rerank snapshot: documents_sha256 %q does not match the documents (which hash to %s): an id, url, version or text changed", s.DocumentsSHA256, got)
	}
	return nil
}

// DocumentsSHA256 is the receipt over documents: the sha256 of
// json.dumps(documents, sort_keys=True), so Python can recompute it.
func DocumentsSHA256(docs []Document) string {
	list := make([]any, len(docs))
	for i, d := range docs {
		chunks := make([]any, len(d.Chunks))
		for j, c := range d.Chunks {
			chunks[j] = pyjson.NewObject("chunk_id", c.ChunkID, "text", c.Text, "text_sha256", c.TextSHA256)
		}
		list[i] = pyjson.NewObject("source_id", d.SourceID, "version", d.Version, "url", d.URL, "chunks", chunks)
	}
	return corpus.SHA256(pyjson.Dumps(list, pyjson.Options{SortKeys: true}))
}

// Passages lists every chunk in snapshot order (documents in file order,
// then chunks in document order), the order the lexical index is built in
// and the order ties fall back to.
func (s *Snapshot) Passages() []Passage { return append([]Passage(nil), s.chunks...) }

// Passage returns the chunk with the given id.
func (s *Snapshot) Passage(chunkID string) (Passage, bool) {
	i, ok := s.byID[chunkID]
	if !ok {
		return Passage{}, false
	}
	return s.chunks[i], true
}

// Eligible lists the chunks of documents with the given version, in
// snapshot order; an empty version means every chunk.
func (s *Snapshot) Eligible(version string) []Passage {
	var out []Passage
	for _, p := range s.chunks {
		if version == "" || p.Version == version {
			out = append(out, p)
		}
	}
	return out
}

// Candidate is the passage as a candidate without branch evidence, the form
// an exhaustive fixture pool supplies.
func (p Passage) Candidate() Candidate {
	return Candidate{ChunkID: p.ChunkID, SourceID: p.SourceID, Version: p.Version, URL: p.URL, Text: p.Text}
}
