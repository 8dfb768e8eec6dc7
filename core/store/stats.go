package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The accessors below hand a ranking of its own (core/retrieval) the
// statistics FTS5 keeps: its vocabulary, each term's postings, each
// passage's token count, version, title, URL and text. An image reads
// them from the tables Image wrote; an index built by Open from FTS5's
// own tables (through fts5vocab) and the docs it was given. Nothing here
// changes Search.

// Vocabulary is every term the index holds (FTS5's unicode61 tokens,
// lower-cased, diacritics removed), sorted.
func (ix *Index) Vocabulary() ([]string, error) {
	if ix.fromLexicon() {
		return slices.Sorted(maps.Keys(ix.lex.terms)), nil
	}
	var q string
	if ix.img != nil {
		q = `SELECT term FROM postings ORDER BY term`
	} else {
		if err := ix.vocabTables(); err != nil {
			return nil, err
		}
		q = `SELECT term FROM temp.vocab_row ORDER BY term`
	}
	stmt, _, err := ix.conn.Prepare(q)
	if err != nil {
		return nil, fmt.Errorf("store: vocabulary: %w", err)
	}
	defer stmt.Close()
	var out []string
	for stmt.Step() {
		out = append(out, stmt.ColumnText(0))
	}
	if err := stmt.Err(); err != nil {
		return nil, fmt.Errorf("store: vocabulary: %w", err)
	}
	return out, nil
}

// vocabTables makes the fts5vocab tables over an index built by Open.
func (ix *Index) vocabTables() error {
	if ix.vocab != nil {
		return nil
	}
	if err := ix.conn.Exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_instance USING fts5vocab(main, passages, instance);
		CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_row USING fts5vocab(main, passages, row)`); err != nil {
		return fmt.Errorf("store: vocabulary tables: %w", err)
	}
	var err error
	if ix.vocab, _, err = ix.conn.Prepare(`SELECT doc, count(*) FROM temp.vocab_instance WHERE term = ? GROUP BY doc ORDER BY doc`); err != nil {
		return fmt.Errorf("store: prepare postings: %w", err)
	}
	return nil
}

// Postings are the docs (0-based, ascending) holding term and how often
// each holds it; none for a term the index lacks. The slices are the
// index's own: the caller must not change them.
func (ix *Index) Postings(term string) (docs []int32, tf []float64, err error) {
	p, err := ix.rank().term(term)
	if err != nil {
		return nil, nil, err
	}
	return p.docs, p.tf, nil
}

// vocabPostings reads a term's postings from FTS5's own index, through
// its fts5vocab instance table.
func (ix *Index) vocabPostings(term string) (docs []int32, tf []float64, err error) {
	if err := ix.vocabTables(); err != nil {
		return nil, nil, err
	}
	defer ix.vocab.Reset()
	if err := ix.vocab.BindText(1, term); err != nil {
		return nil, nil, err
	}
	for ix.vocab.Step() {
		docs = append(docs, int32(ix.vocab.ColumnInt(0)-1))
		tf = append(tf, float64(ix.vocab.ColumnInt(1)))
	}
	if err := ix.vocab.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: postings: %w", err)
	}
	return docs, tf, nil
}

// DocTokens is each doc's token count, as FTS5's docsize holds it.
func (ix *Index) DocTokens() ([]int, error) {
	out := make([]int, ix.docs)
	if ix.img != nil {
		for i, t := range ix.img.tokens {
			out[i] = int(t)
		}
		return out, nil
	}
	for i, t := range ix.lex.tokens {
		out[i] = int(t)
	}
	return out, nil
}

// docsizes is each doc's token count, as an index built by Open's FTS5
// docsize table holds it.
func (ix *Index) docsizes() ([]uint64, error) {
	out := make([]uint64, ix.docs)
	stmt, _, err := ix.conn.Prepare(`SELECT id, sz FROM passages_docsize ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: docsize: %w", err)
	}
	defer stmt.Close()
	for stmt.Step() {
		id := stmt.ColumnInt(0)
		if id < 1 || id > ix.docs {
			return nil, fmt.Errorf("store: docsize row %d is not a doc", id)
		}
		out[id-1] = sumVarints(stmt.ColumnRawBlob(1))
	}
	if err := stmt.Err(); err != nil {
		return nil, fmt.Errorf("store: docsize: %w", err)
	}
	return out, nil
}

// DocVersions is each doc's version.
func (ix *Index) DocVersions() []string {
	if ix.img == nil {
		return append([]string(nil), ix.versions...)
	}
	out := make([]string, ix.docs)
	for i, v := range ix.img.version {
		out[i] = ix.img.versions[v]
	}
	return out
}

// Labels are each doc's title and URL: an image's meta rows, or the docs
// an index was built from (empty where they had none).
func (ix *Index) Labels() (titles, urls []string, err error) {
	if ix.img == nil {
		return append([]string(nil), ix.titles...), append([]string(nil), ix.urls...), nil
	}
	stmt, _, err := ix.conn.Prepare(`SELECT rowid, title, url FROM meta ORDER BY rowid`)
	if err != nil {
		return nil, nil, fmt.Errorf("store: labels: %w", err)
	}
	defer stmt.Close()
	titles, urls = make([]string, ix.docs), make([]string, ix.docs)
	for stmt.Step() {
		id := stmt.ColumnInt(0)
		if id < 1 || id > ix.docs {
			return nil, nil, fmt.Errorf("store: meta row %d is not a doc", id)
		}
		titles[id-1], urls[id-1] = stmt.ColumnText(1), stmt.ColumnText(2)
	}
	if err := stmt.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: labels: %w", err)
	}
	return titles, urls, nil
}

// Text is one doc's text as the index holds it.
func (ix *Index) Text(doc int) (string, error) {
	if doc < 0 || doc >= ix.docs {
		return "", errors.New("store: no such doc")
	}
	if ix.img != nil {
		p, err := ix.Passage(doc)
		return p.Text, err
	}
	return ix.text(doc)
}
