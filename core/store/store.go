// Package store is the lexical backend: an in-memory SQLite FTS5 index
// searched with a literal multi-term OR query, ranked by FTS5's bm25 (in
// Go, from FTS5's own postings: see scorer) and filtered by version while
// the page is chosen, so a filter can never empty a page that a later
// version would have filled.
package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// Doc is one indexed text. Docs are inserted in the order given; their
// position is the Hit.Doc returned by Search.
type Doc struct {
	Version string
	Text    string
	// Title and URL are kept beside the index, not indexed (so bm25's
	// statistics stay the text's alone), for retrieval configurations that
	// weigh them as fields of their own (see Labels).
	Title string
	URL   string
}

// Hit is one ranked match.
type Hit struct {
	Doc   int     // index into the docs the Index was built from
	Rank  int     // 1-based position in bm25 order
	Score float64 // FTS5 bm25(); lower is better
	// Snippet is the highlighted excerpt (SearchSnippets only).
	Snippet string
}

// Index is an FTS5 table over docs. It is not safe for concurrent use (one
// SQLite connection); each run or worker builds or borrows its own.
type Index struct {
	conn *sqlite3.Conn
	docs int
	// lex ranks an index built by Open, from FTS5's own postings (an
	// image's scorer is img), or one opened from a Lexicon, whose texts
	// (non-nil only then) are the docs' and whose conn is nil until
	// snippets need it.
	lex   *scorer
	texts []string
	// snippet makes the hits' highlighted excerpts from the temporary
	// table SearchSnippets fills, and readText reads a doc's text; both
	// prepared on first use (only people inspecting the index ask).
	snippet  *sqlite3.Stmt
	readText *sqlite3.Stmt
	// image is the memdb name of an opened image, deleted on Close, and
	// img its scorer and passage reader (nil for an index built by Open).
	image string
	img   *scorer
	// versions, titles and urls are an index built by Open's docs'
	// versions, titles and URLs (nil for an image, which holds them).
	versions, titles, urls []string
	// vocab and vocabRow read an index built by Open's own FTS5
	// vocabulary (Postings, Vocabulary), prepared on first use.
	vocab, vocabRow *sqlite3.Stmt
}

// ErrNoTerms reports a query with no [a-z0-9] token; there is nothing to match.
var ErrNoTerms = errors.New("store: query has no searchable terms")

// Open builds an in-memory index over docs. Only the text is indexed (the
// version is an UNINDEXED column), so bm25 statistics are those of the text
// alone and match the reference lab's scores exactly.
func Open(docs []Doc) (*Index, error) {
	conn, err := sqlite3.Open(":memory:")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	ix := &Index{conn: conn, docs: len(docs)}
	for _, d := range docs {
		ix.versions = append(ix.versions, d.Version)
		ix.titles = append(ix.titles, d.Title)
		ix.urls = append(ix.urls, d.URL)
	}
	if err := ix.build(docs); err != nil {
		conn.Close()
		return nil, err
	}
	return ix, nil
}

// schema is the index table: only the text is indexed, so bm25 statistics
// are those of the text alone.
const schema = `CREATE VIRTUAL TABLE passages USING fts5(version UNINDEXED, text)`

func (ix *Index) build(docs []Doc) error {
	if err := fts5.Register(ix.conn); err != nil {
		return fmt.Errorf("store: register fts5: %w", err)
	}
	if err := ix.conn.Exec(schema); err != nil {
		return fmt.Errorf("store: create table: %w", err)
	}
	if err := ix.insert(docs); err != nil {
		return err
	}
	return ix.scorer()
}

// insert adds docs with rowids 1..n in one transaction.
func (ix *Index) insert(docs []Doc) error {
	return inTransaction(ix.conn, `INSERT INTO passages(rowid, version, text) VALUES (?, ?, ?)`, len(docs), func(st *sqlite3.Stmt, i int) error {
		return errors.Join(st.BindInt(1, i+1), st.BindText(2, docs[i].Version), st.BindText(3, docs[i].Text))
	})
}

// scorer makes the index's ranking: bm25 in Go, as an image's (see
// scorer), over the postings FTS5 built, read term by term through
// fts5vocab as searches first name them. A search then costs no SQL
// statement once its terms have been seen: under WebAssembly, SQLite's
// query engine is neither run nor compiled by V8's optimising tier on
// the way to a ranking (docs/worker.md, "The cold round").
func (ix *Index) scorer() error {
	d := versionArrays(ix.versions)
	var total uint64
	if ix.docs > 0 {
		var rows int
		var err error
		if rows, total, err = ix.totals(); err != nil {
			return err
		}
		if d.tokens, err = ix.docsizes(); err != nil {
			return err
		}
		if rows != ix.docs {
			return fmt.Errorf("store: FTS5 counts %d rows of %d docs", rows, ix.docs)
		}
	}
	ix.lex = newScorer(ix, d, total)
	ix.lex.read = ix.vocabPostings
	return nil
}

// Close releases the connection (and an image's memory).
func (ix *Index) Close() error {
	var imgErr error
	if ix.img != nil {
		imgErr = ix.img.close()
	}
	var lexErr error
	if ix.lex != nil {
		lexErr = ix.lex.close()
	}
	err := errors.Join(imgErr, lexErr, ix.snippet.Close(), ix.readText.Close(),
		ix.vocab.Close(), ix.vocabRow.Close())
	if ix.conn != nil {
		err = errors.Join(err, ix.conn.Close())
	}
	if ix.image != "" {
		memdb.Delete(ix.image)
	}
	return err
}

// Len is the number of indexed docs.
func (ix *Index) Len() int { return ix.docs }

// Terms returns the query's search terms: the [a-z0-9]+ runs of its Python
// lower-case form, each once, in first-seen order.
func Terms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	start := -1
	var b strings.Builder
	flush := func() {
		if start >= 0 {
			t := b.String()
			if !seen[t] {
				seen[t] = true
				terms = append(terms, t)
			}
			b.Reset()
			start = -1
		}
	}
	for i, r := range query {
		lower := pyLowerASCII(r)
		if lower == 0 {
			// U+0130 lowers to "i" followed by U+0307, so it extends (or
			// starts) a term with "i" and then ends it.
			if r == 'İ' {
				if start < 0 {
					start = i
				}
				b.WriteByte('i')
			}
			flush()
			continue
		}
		if start < 0 {
			start = i
		}
		b.WriteByte(lower)
	}
	flush()
	return terms
}

// pyLowerASCII returns the [a-z0-9] byte that r becomes under Python's
// str.lower(), or 0 when it becomes something else. Besides ASCII, only the
// Kelvin sign lowers to a single ASCII letter; U+0130 is handled by Terms.
func pyLowerASCII(r rune) byte {
	switch {
	case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		return byte(r)
	case 'A' <= r && r <= 'Z':
		return byte(r) + 'a' - 'A'
	case r == '\u212A': // KELVIN SIGN
		return 'k'
	}
	return 0
}

// MatchExpression is the FTS5 query for terms: each double-quoted (they are
// [a-z0-9]+, so quoting makes them literal), joined with OR.
func MatchExpression(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	return strings.Join(quoted, " OR ")
}

// Search returns up to k docs matching any term of query, best bm25 first
// (ties by insertion order). An empty version searches every version
// (diagnostics only; runs always name one). Both kinds of index are
// scored in Go (see scorer) with FTS5's own scores.
func (ix *Index) Search(query string, k int, version string) ([]Hit, error) {
	terms := Terms(query)
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	if k < 1 {
		return nil, fmt.Errorf("store: k must be at least 1, got %d", k)
	}
	return ix.rank().search(terms, k, version)
}

// rank is the index's bm25 ranking: an image's scorer, or Open's.
func (ix *Index) rank() *scorer {
	if ix.img != nil {
		return ix.img
	}
	return ix.lex
}

// The highlight marks around each matched term in a snippet, and what
// stands for text left out: characters that Python documentation does not
// use, so a front end can split on them.
const (
	MarkOpen  = "\u27e6" // ⟦
	MarkClose = "\u27e7" // ⟧
	Ellipsis  = "…"
)

// SnippetTokens is how many tokens a snippet shows at most.
const SnippetTokens = 24

// SearchSnippets is Search with each hit's FTS5 snippet(): the best
// SnippetTokens-token window of its text, terms between MarkOpen and
// MarkClose. Hits and scores are exactly Search's. The snippets are made
// for the hits alone, by an FTS5 table of their texts in the connection's
// temporary schema: snippet() reads only its row's text and the query's
// terms (no statistic of the table), so it is the snippet FTS5 makes in
// the whole index (TestSnippetsArePerHit), without walking every long
// doclist to reach each hit's row.
func (ix *Index) SearchSnippets(query string, k int, version string) ([]Hit, error) {
	hits, err := ix.Search(query, k, version)
	if err != nil || len(hits) == 0 {
		return hits, err
	}
	return ix.Snippets(query, hits)
}

// Snippets fills each hit's Snippet as SearchSnippets does, for hits of
// any ranking (a retrieval configuration's): the best window of its text
// for the query's literal terms; a hit holding none of them (found
// through a stem or another field) gets none.
func (ix *Index) Snippets(query string, hits []Hit) ([]Hit, error) {
	if len(hits) == 0 || len(Terms(query)) == 0 {
		return hits, nil
	}
	var err error
	if err := ix.connect(); err != nil {
		return nil, err
	}
	if err := ix.snippetTable(); err != nil {
		return nil, err
	}
	texts := make([]string, len(hits))
	for i, h := range hits {
		if texts[i], err = ix.text(h.Doc); err != nil {
			return nil, err
		}
	}
	// The last search's rows go without re-reading them ('delete-all' of
	// an external-content table), then the hits' texts are indexed: each
	// text is tokenized twice (here and by snippet()), not three times.
	if err := ix.conn.Exec(`INSERT INTO temp.hits(hits) VALUES ('delete-all'); DELETE FROM temp.hit_texts`); err != nil {
		return nil, fmt.Errorf("store: snippets: %w", err)
	}
	if err := inTransaction(ix.conn, `INSERT INTO temp.hit_texts(id, text) VALUES (?1, ?2)`, len(hits), func(st *sqlite3.Stmt, i int) error {
		return errors.Join(st.BindInt(1, i+1), st.BindText(2, texts[i]))
	}); err != nil {
		return nil, err
	}
	if err := ix.conn.Exec(`INSERT INTO temp.hits(rowid, text) SELECT id, text FROM temp.hit_texts`); err != nil {
		return nil, fmt.Errorf("store: snippets: %w", err)
	}
	defer ix.snippet.Reset()
	if err := ix.snippet.BindText(1, MatchExpression(Terms(query))); err != nil {
		return nil, fmt.Errorf("store: bind snippet: %w", err)
	}
	for ix.snippet.Step() {
		if i := ix.snippet.ColumnInt(0) - 1; i >= 0 && i < len(hits) {
			hits[i].Snippet = ix.snippet.ColumnText(1)
		}
	}
	if err := ix.snippet.Err(); err != nil {
		return nil, fmt.Errorf("store: snippet: %w", err)
	}
	return hits, nil
}

// snippetTable makes the temporary table SearchSnippets fills with the
// hits' texts, and its statement, once.
func (ix *Index) snippetTable() error {
	if ix.snippet != nil {
		return nil
	}
	if err := ix.conn.Exec(`CREATE TABLE temp.hit_texts(id INTEGER PRIMARY KEY, text TEXT NOT NULL);
		CREATE VIRTUAL TABLE temp.hits USING fts5(text, content='hit_texts', content_rowid='id')`); err != nil {
		return fmt.Errorf("store: snippet table: %w", err)
	}
	q := fmt.Sprintf(`SELECT rowid, snippet(hits, 0, '%s', '%s', '%s', %d) FROM temp.hits WHERE hits MATCH ?1`,
		MarkOpen, MarkClose, Ellipsis, SnippetTokens)
	var err error
	if ix.snippet, _, err = ix.conn.Prepare(q); err != nil {
		return fmt.Errorf("store: prepare snippet: %w", err)
	}
	return nil
}

// fromLexicon reports whether the index was opened from a Lexicon.
func (ix *Index) fromLexicon() bool { return ix.texts != nil }

// Connected reports whether the index holds a SQLite connection: one
// opened from a Lexicon has none until something asks for snippets.
func (ix *Index) Connected() bool { return ix.conn != nil }

// connect opens a lexicon's connection, for its snippets' tables.
func (ix *Index) connect() error {
	if ix.conn != nil {
		return nil
	}
	conn, err := sqlite3.Open(":memory:")
	if err != nil {
		return fmt.Errorf("store: open sqlite: %w", err)
	}
	if err := fts5.Register(conn); err != nil {
		conn.Close()
		return fmt.Errorf("store: register fts5: %w", err)
	}
	ix.conn = conn
	return nil
}

// text is one doc's text, read from the index's own table (a lexicon's
// from its docs).
func (ix *Index) text(doc int) (string, error) {
	if ix.fromLexicon() {
		return ix.texts[doc], nil
	}
	if ix.readText == nil {
		var err error
		if ix.readText, _, err = ix.conn.Prepare(`SELECT text FROM passages WHERE rowid = ?`); err != nil {
			return "", fmt.Errorf("store: prepare read: %w", err)
		}
	}
	defer ix.readText.Reset()
	if err := ix.readText.BindInt(1, doc+1); err != nil {
		return "", err
	}
	if !ix.readText.Step() {
		return "", fmt.Errorf("store: no text for doc %d (%v)", doc+1, ix.readText.Err())
	}
	return ix.readText.ColumnText(0), nil
}
