package store

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/ncruces/go-sqlite3"
)

// scorer searches an index: the agent's literal OR query ranked by bm25,
// computed in Go from FTS5's own postings (those Image exported, or for an
// index built by Open those FTS5 holds, read through fts5vocab),
// exactly as FTS5's bm25() computes it (fts5_aux.c, fts5Bm25Function, with
// its default k1 1.2, b 0.75 and weight 1 per column), operation for
// operation, so every score is the same float64 and the order (bm25, then
// rowid) the same. FTS5 itself costs a docsize lookup (a SQL statement)
// and an instance walk per matching row; under WebAssembly that made a
// query for a common word take hundreds of milliseconds. Here a matching
// row costs a few float operations, and a search whose terms were seen
// before runs no SQL at all. The logarithm in each term's idf is
// SQLite's own ln(), the libc log FTS5 calls, not Go's math.Log, whose
// last bit may differ. TestImageSearchEqualsFTS5 holds the equality.
type scorer struct {
	ix *Index
	// read is a term's posting as the index holds it: an image's postings
	// row, or FTS5's own through fts5vocab for an index built by Open.
	read func(term string) (docs []int32, tf []float64, err error)

	rows    int64
	norm    []float64 // per passage: k1 * ((1 - b) + b * tokens / avgdl)
	tokens  []uint64  // per passage: FTS5's token count
	bytes   []uint64
	version []uint64
	// versions are the image's version strings; version indexes them.
	versions []string
	pages    int

	terms map[string]*posting
	ln    *sqlite3.Stmt
	post  *sqlite3.Stmt

	// Scratch for one search: each row's score so far, the rows touched
	// (stamped with the search's generation) and the candidates.
	acc     []float64
	stamp   []uint32
	gen     uint32
	touched []int32

	// Statements for reading passages, prepared on first use.
	head, lookup, text *sqlite3.Stmt
	// aliases says whether the image keeps aliases (format 3 on).
	aliases bool
}

// aliasesColumn is meta's aliases column, or ” for an image made before
// aliases.
func (s *scorer) aliasesColumn() string {
	if s.aliases {
		return "aliases"
	}
	return "''"
}

// bm25's constants, as variables so that k1 + 1 is rounded as FTS5's
// compiled C rounds it, not computed exactly as a Go constant would be.
var (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// posting is one term's rows (0-based), its frequency in each, and its idf.
type posting struct {
	docs []int32
	tf   []float64
	idf  float64
}

func newScorer(ix *Index, d *docArrays, totalTokens uint64) *scorer {
	rows := len(d.tokens)
	s := &scorer{ix: ix, rows: int64(rows), tokens: d.tokens, bytes: d.bytes, version: d.version, versions: d.versions, pages: d.pages,
		norm: make([]float64, rows), terms: map[string]*posting{},
		acc: make([]float64, rows), stamp: make([]uint32, rows)}
	// fts5Bm25Function: avgdl = (double)nToken / (double)nRow, then per row
	// k1 * (1 - b + b * D / avgdl), evaluated left to right.
	avgdl := float64(totalTokens) / float64(rows)
	for i, t := range d.tokens {
		s.norm[i] = float64(bm25K1 * float64(float64(1-bm25B)+float64(float64(bm25B*float64(t))/avgdl)))
	}
	return s
}

func (s *scorer) close() error {
	var first error
	for _, st := range []*sqlite3.Stmt{s.ln, s.post, s.head, s.lookup, s.text} {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// term is a term's posting with its idf, read once and kept (the index
// never changes). A term no passage holds has an empty posting, not kept
// (the terms kept are at most the vocabulary, whatever the queries).
func (s *scorer) term(t string) (*posting, error) {
	if p, ok := s.terms[t]; ok {
		return p, nil
	}
	docs, tf, err := s.read(t)
	if err != nil {
		return nil, err
	}
	p := &posting{docs: docs, tf: tf}
	if len(docs) == 0 {
		// In no doc: it scores nothing, so its idf is never read.
		return p, nil
	}
	if s.ln == nil {
		var err error
		if s.ln, _, err = s.ix.conn.Prepare(`SELECT ln(?)`); err != nil {
			return nil, fmt.Errorf("store: prepare ln: %w", err)
		}
	}
	// fts5Bm25GetData: idf = log((nRow - nHit + 0.5) / (nHit + 0.5)), at
	// least 1e-6.
	hits := int64(len(p.docs))
	x := (float64(s.rows-hits) + 0.5) / (float64(hits) + 0.5)
	defer s.ln.Reset()
	if err := s.ln.BindFloat(1, x); err != nil {
		return nil, err
	}
	if !s.ln.Step() {
		return nil, fmt.Errorf("store: ln: %v", s.ln.Err())
	}
	p.idf = s.ln.ColumnFloat(0)
	if p.idf <= 0 {
		p.idf = 1e-6
	}
	s.terms[t] = p
	return p, nil
}

// imagePosting reads a term's row of an image's postings table: (row
// delta, frequency) uvarint pairs.
func (s *scorer) imagePosting(t string) (docs []int32, tf []float64, err error) {
	if s.post == nil {
		if s.post, _, err = s.ix.conn.Prepare(`SELECT docs FROM postings WHERE term = ?`); err != nil {
			return nil, nil, fmt.Errorf("store: prepare postings: %w", err)
		}
	}
	defer s.post.Reset()
	if err := s.post.BindText(1, t); err != nil {
		return nil, nil, err
	}
	if s.post.Step() {
		b := s.post.ColumnRawBlob(0)
		doc := int64(0)
		for len(b) > 0 {
			delta, n := binary.Uvarint(b)
			if n <= 0 {
				break
			}
			f, m := binary.Uvarint(b[n:])
			if m <= 0 {
				break
			}
			b = b[n+m:]
			doc += int64(delta)
			if doc < 1 || doc > s.rows {
				return nil, nil, fmt.Errorf("store: the posting of %q names row %d of %d", t, doc, s.rows)
			}
			docs = append(docs, int32(doc-1))
			tf = append(tf, float64(f))
		}
		if len(b) > 0 {
			return nil, nil, fmt.Errorf("store: the posting of %q is malformed", t)
		}
	}
	if err := s.post.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: read postings: %w", err)
	}
	return docs, tf, nil
}

// maxInsertionK is the longest page kept by insertion while scoring;
// longer pages sort every candidate.
const maxInsertionK = 32

// search ranks the rows holding any of terms (phrases in query order) by
// bm25, then rowid, and keeps the first k of version (every version when
// it is "").
func (s *scorer) search(terms []string, k int, version string) ([]Hit, error) {
	want := -1
	if version != "" {
		for i, v := range s.versions {
			if v == version {
				want = i
			}
		}
		if want < 0 {
			return nil, nil
		}
	}
	s.gen++
	if s.gen == 0 { // wrapped: forget every stamp
		clear(s.stamp)
		s.gen = 1
	}
	s.touched = s.touched[:0]
	k1p1 := bm25K1 + 1.0
	// score += idf[i] * ((f * (k1 + 1)) / (f + norm)) for each phrase i in
	// order; a phrase a row lacks adds exactly +0.0, so skipping it leaves
	// the sum bit for bit the same.
	for _, t := range terms {
		p, err := s.term(t)
		if err != nil {
			return nil, err
		}
		for j, d := range p.docs {
			if s.stamp[d] != s.gen {
				s.stamp[d] = s.gen
				s.acc[d] = 0
				s.touched = append(s.touched, d)
			}
			f := p.tf[j]
			s.acc[d] += float64(p.idf * float64(float64(f*k1p1)/float64(f+s.norm[d])))
		}
	}
	type cand struct {
		doc   int32
		score float64
	}
	less := func(a, b cand) bool { return a.score < b.score || (a.score == b.score && a.doc < b.doc) }
	var best []cand
	if k > maxInsertionK {
		// A long page (the rerank lab's lexical branch): sort them all.
		for _, d := range s.touched {
			if want < 0 || s.version[d] == uint64(want) {
				best = append(best, cand{doc: d, score: -1.0 * s.acc[d]})
			}
		}
		sort.Slice(best, func(i, j int) bool { return less(best[i], best[j]) })
		best = best[:min(k, len(best))]
	}
	for _, d := range s.touched {
		if k > maxInsertionK {
			break
		}
		if want >= 0 && s.version[d] != uint64(want) {
			continue
		}
		c := cand{doc: d, score: -1.0 * s.acc[d]}
		if len(best) == k && !less(c, best[k-1]) {
			continue
		}
		i := sort.Search(len(best), func(i int) bool { return less(c, best[i]) })
		if len(best) < k {
			best = append(best, cand{})
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = c
	}
	hits := make([]Hit, len(best))
	for i, c := range best {
		hits[i] = Hit{Doc: int(c.doc), Rank: i + 1, Score: c.score}
	}
	return hits, nil
}
