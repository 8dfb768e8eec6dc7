package store

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// LexiconFormat is the format tag of a Lexicon.
const LexiconFormat = "ragagent-lexicon/1"

// Lexicon is what bm25 reads of an index built by Open, as FTS5 keeps it:
// each doc's token count and every term's postings, with the idf SQLite's
// ln() gives it (see scorer). Exported once (Index.Lexicon), it reopens the
// same docs as an index that ranks without SQLite (OpenLexicon): the seed
// pack ships one (fixtures.SeedLexicon), so a program that only searches
// the seed neither runs SQLite nor has V8 compile it. Under WebAssembly
// the first SQL statement a program runs sets V8's optimising tier on
// SQLite's largest functions, seconds of compiling (docs/worker.md, "The
// cold round").
type Lexicon struct {
	Format string `json:"format"`
	// Source names the docs the lexicon was made from (for a pack, its
	// passages file's sha256), for the opener to check.
	Source string `json:"source"`
	// Tokens is each doc's token count (FTS5's docsize); their sum is
	// FTS5's total, so their mean is bm25's average document length.
	Tokens []uint64 `json:"tokens"`
	// Terms are every term of the vocabulary (FTS5's unicode61 tokens).
	Terms map[string]LexiconTerm `json:"terms"`
}

// LexiconTerm is one term's postings: the docs holding it (0-based,
// ascending), how often each does, and its idf.
type LexiconTerm struct {
	Docs []int32   `json:"docs"`
	TF   []float64 `json:"tf"`
	IDF  float64   `json:"idf"`
}

// Lexicon exports an index built by Open (not an image: an image is its
// own lexicon) with every term's postings and idf.
func (ix *Index) Lexicon(source string) (*Lexicon, error) {
	if ix.lex == nil || ix.fromLexicon() {
		return nil, errors.New("store: only an index built by Open exports a lexicon")
	}
	vocab, err := ix.Vocabulary()
	if err != nil {
		return nil, err
	}
	lx := &Lexicon{Format: LexiconFormat, Source: source, Tokens: slices.Clone(ix.lex.tokens), Terms: make(map[string]LexiconTerm, len(vocab))}
	for _, t := range vocab {
		p, err := ix.lex.term(t)
		if err != nil {
			return nil, err
		}
		lx.Terms[t] = LexiconTerm{Docs: p.docs, TF: p.tf, IDF: p.idf}
	}
	return lx, nil
}

// OpenLexicon opens docs as an index whose ranking is lx, made by
// Index.Lexicon from an index of the same docs: searches, postings, the
// vocabulary and texts need no SQLite; snippets open an in-memory
// connection when first asked. lx is checked for consistency (every
// doc's tokens are the sum of its postings' frequencies), not against the
// texts: the caller checks Source. The index keeps lx's postings, so lx
// must not change afterwards.
func OpenLexicon(docs []Doc, lx *Lexicon) (*Index, error) {
	if err := lx.check(len(docs)); err != nil {
		return nil, err
	}
	ix := &Index{docs: len(docs), texts: make([]string, len(docs))}
	for i, d := range docs {
		ix.versions = append(ix.versions, d.Version)
		ix.titles = append(ix.titles, d.Title)
		ix.urls = append(ix.urls, d.URL)
		ix.texts[i] = d.Text
	}
	d := versionArrays(ix.versions)
	d.tokens = slices.Clone(lx.Tokens)
	var total uint64
	for _, t := range d.tokens {
		total += t
	}
	ix.lex = newScorer(ix, d, total)
	for t, p := range lx.Terms {
		ix.lex.terms[t] = &posting{docs: p.Docs, tf: p.TF, idf: p.IDF}
	}
	// A term the lexicon lacks is in no doc.
	ix.lex.read = func(string) ([]int32, []float64, error) { return nil, nil, nil }
	return ix, nil
}

// check is lx's consistency with itself and n docs.
func (lx *Lexicon) check(n int) error {
	switch {
	case lx.Format != LexiconFormat:
		return fmt.Errorf("store: the lexicon's format is %q, not %s", lx.Format, LexiconFormat)
	case len(lx.Tokens) != n:
		return fmt.Errorf("store: the lexicon counts the tokens of %d docs, not %d", len(lx.Tokens), n)
	}
	sums := make([]float64, n)
	for t, p := range lx.Terms {
		if t == "" || len(p.Docs) == 0 || len(p.Docs) != len(p.TF) || !(p.IDF > 0) || math.IsInf(p.IDF, 0) {
			return fmt.Errorf("store: the lexicon's term %q is malformed", t)
		}
		for j, d := range p.Docs {
			if d < 0 || int(d) >= n || (j > 0 && d <= p.Docs[j-1]) || p.TF[j] < 1 || p.TF[j] != math.Trunc(p.TF[j]) {
				return fmt.Errorf("store: the lexicon's postings of %q are malformed", t)
			}
			sums[d] += p.TF[j]
		}
	}
	for i, s := range sums {
		if s != float64(lx.Tokens[i]) {
			return fmt.Errorf("store: the lexicon's doc %d has %d tokens but postings of %v", i+1, lx.Tokens[i], s)
		}
	}
	return nil
}

// versionArrays are the distinct versions, in first-seen order, and each
// doc's index into them.
func versionArrays(versions []string) *docArrays {
	d := &docArrays{version: make([]uint64, len(versions))}
	index := map[string]uint64{}
	for i, v := range versions {
		n, ok := index[v]
		if !ok {
			n = uint64(len(d.versions))
			index[v] = n
			d.versions = append(d.versions, v)
		}
		d.version[i] = n
	}
	return d
}
