package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/ncruces/go-sqlite3/ext/serdes"
	"github.com/ncruces/go-sqlite3/vfs/memdb"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// ImageFormat tags a passages image (in its format table). Version 2 adds
// the postings and the per-passage arrays that let an image open without
// reading its rows and be searched without FTS5's per-row cost; version 3
// adds each passage's aliases (meta's aliases column, and the aliases
// table that finds a passage by one). Images of version 2 still open
// (their passages have no aliases): a pack built before keeps working.
const ImageFormat = "ragagent-passages-sqlite/3"

// imageFormat2 is the version before aliases.
const imageFormat2 = "ragagent-passages-sqlite/2"

// imagePageSize is the image's page size. SQLite's default of 4096 bytes
// leaves the FTS5 index and the texts in many small pages; larger pages
// make a smaller image (fewer headers and partly filled pages) and fewer
// page reads per query.
const imagePageSize = 16384

// The image's own tables besides the FTS5 table (schema, the same as
// Open's, so every bm25 statistic is the same):
//   - meta: each passage's source id (unique: the index is how a read
//     finds its passage), URL (indexed: how authored cases' target URLs
//     are checked when a pack opens), title, receipt and aliases (joined
//     by newlines, which no URL holds), by rowid;
//   - aliases: each alias URL and its passage's rowid, keyed by URL (how
//     a target naming an alias is checked);
//   - postings: for each term of FTS5's own vocabulary, the passages that
//     hold it and how often (see encodePostings), from which Search
//     computes bm25 exactly as FTS5 does (see scorer);
//   - docs: one row of per-passage arrays, so opening reads one row, not
//     12,000: token counts (FTS5's docsize), byte sizes, version numbers
//     (into versions, a list joined by commas), and the number of pages.
const (
	metaSchema     = `CREATE TABLE meta(rowid INTEGER PRIMARY KEY, source_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL, title TEXT NOT NULL, text_sha256 BLOB NOT NULL, aliases TEXT NOT NULL)`
	metaSchema2    = `CREATE TABLE meta(rowid INTEGER PRIMARY KEY, source_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL, title TEXT NOT NULL, text_sha256 BLOB NOT NULL)`
	metaURLs       = `CREATE INDEX meta_url ON meta(url)`
	aliasesSchema  = `CREATE TABLE aliases(url TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(url, doc)) WITHOUT ROWID`
	postingsSchema = `CREATE TABLE postings(term TEXT PRIMARY KEY, docs BLOB NOT NULL) WITHOUT ROWID`
	docsSchema     = `CREATE TABLE docs(tokens BLOB NOT NULL, bytes BLOB NOT NULL, versions TEXT NOT NULL, version BLOB NOT NULL, pages INTEGER NOT NULL)`
)

// Image builds a SQLite database image of passages: the index table
// exactly as Open builds it (same schema, rowids 1..n in order, so every
// bm25 statistic is the same), merged into one segment, with the meta,
// postings and docs tables. Opening it (OpenImage) parses, indexes and
// reads no passage. The same passages give the same bytes.
func Image(passages []corpus.Passage) ([]byte, error) {
	conn, err := sqlite3.Open(":memory:")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	defer conn.Close()
	if err := fts5.Register(conn); err != nil {
		return nil, fmt.Errorf("store: register fts5: %w", err)
	}
	for _, q := range []string{
		fmt.Sprintf(`PRAGMA page_size = %d`, imagePageSize),
		schema, metaSchema, metaURLs, aliasesSchema, postingsSchema, docsSchema,
		`CREATE TABLE format(tag TEXT NOT NULL)`,
		fmt.Sprintf(`INSERT INTO format VALUES ('%s')`, ImageFormat),
	} {
		if err := conn.Exec(q); err != nil {
			return nil, fmt.Errorf("store: image schema: %w", err)
		}
	}
	ix := &Index{conn: conn}
	docs := make([]Doc, len(passages))
	for i, p := range passages {
		docs[i] = Doc{Version: p.Version, Text: p.Text}
	}
	if err := ix.insert(docs); err != nil {
		return nil, err
	}
	if err := insertMeta(conn, passages); err != nil {
		return nil, err
	}
	if err := conn.Exec(`INSERT INTO passages(passages) VALUES ('optimize')`); err != nil {
		return nil, fmt.Errorf("store: compact image: %w", err)
	}
	if err := insertPostings(conn); err != nil {
		return nil, err
	}
	if err := insertDocs(conn, passages); err != nil {
		return nil, err
	}
	if err := conn.Exec(`VACUUM`); err != nil {
		return nil, fmt.Errorf("store: compact image: %w", err)
	}
	data, err := serdes.Serialize(conn, "main")
	if err != nil {
		return nil, fmt.Errorf("store: serialize image: %w", err)
	}
	return data, nil
}

func insertMeta(conn *sqlite3.Conn, passages []corpus.Passage) error {
	err := inTransaction(conn, `INSERT INTO meta(rowid, source_id, url, title, text_sha256, aliases) VALUES (?, ?, ?, ?, ?, ?)`, len(passages),
		func(stmt *sqlite3.Stmt, i int) error {
			p := passages[i]
			sum, err := hex.DecodeString(p.TextSHA256)
			if err != nil {
				return fmt.Errorf("passage %d (%q): text_sha256 is not hex", i+1, p.SourceID)
			}
			return errors.Join(stmt.BindInt(1, i+1), stmt.BindText(2, p.SourceID), stmt.BindText(3, p.URL),
				stmt.BindText(4, p.Title), stmt.BindBlob(5, sum), stmt.BindText(6, strings.Join(p.Aliases, "\n")))
		})
	if err != nil {
		return err
	}
	type alias struct {
		url string
		doc int
	}
	var aliases []alias
	for i, p := range passages {
		for _, a := range p.Aliases {
			aliases = append(aliases, alias{a, i + 1})
		}
	}
	return inTransaction(conn, `INSERT OR IGNORE INTO aliases(url, doc) VALUES (?, ?)`, len(aliases), func(stmt *sqlite3.Stmt, i int) error {
		return errors.Join(stmt.BindText(1, aliases[i].url), stmt.BindInt(2, aliases[i].doc))
	})
}

// splitAliases reads meta's aliases column.
func splitAliases(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// inTransaction runs an insert statement n times in one transaction,
// bind(stmt, i) giving the i-th row's values.
func inTransaction(conn *sqlite3.Conn, insert string, n int, bind func(*sqlite3.Stmt, int) error) error {
	if err := conn.Exec(`BEGIN`); err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	stmt, _, err := conn.Prepare(insert)
	if err != nil {
		return fmt.Errorf("store: prepare %q: %w", insert, err)
	}
	defer stmt.Close()
	for i := 0; i < n; i++ {
		if err := bind(stmt, i); err != nil {
			return fmt.Errorf("store: row %d: %w", i+1, err)
		}
		if err := stmt.Exec(); err != nil {
			return fmt.Errorf("store: insert row %d: %w", i+1, err)
		}
	}
	if err := conn.Exec(`COMMIT`); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// insertPostings exports FTS5's own index, term by term, through its
// fts5vocab instance table: which passages hold each term and how often.
// These are the very counts FTS5's bm25() reads.
func insertPostings(conn *sqlite3.Conn) error {
	if err := conn.Exec(`CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, passages, instance)`); err != nil {
		return fmt.Errorf("store: vocabulary: %w", err)
	}
	stmt, _, err := conn.Prepare(`SELECT term, doc, count(*) FROM temp.vocab GROUP BY term, doc ORDER BY term, doc`)
	if err != nil {
		return fmt.Errorf("store: vocabulary: %w", err)
	}
	type entry struct {
		term string
		docs []byte
	}
	var entries []entry
	var cur *entry
	prev := int64(0)
	for stmt.Step() {
		term, doc, tf := stmt.ColumnText(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)
		if cur == nil || cur.term != term {
			entries = append(entries, entry{term: term})
			cur, prev = &entries[len(entries)-1], 0
		}
		cur.docs = binary.AppendUvarint(binary.AppendUvarint(cur.docs, uint64(doc-prev)), uint64(tf))
		prev = doc
	}
	err = errors.Join(stmt.Err(), stmt.Close())
	if err != nil {
		return fmt.Errorf("store: vocabulary: %w", err)
	}
	if err := conn.Exec(`DROP TABLE temp.vocab`); err != nil {
		return fmt.Errorf("store: vocabulary: %w", err)
	}
	return inTransaction(conn, `INSERT INTO postings(term, docs) VALUES (?, ?)`, len(entries), func(stmt *sqlite3.Stmt, i int) error {
		return errors.Join(stmt.BindText(1, entries[i].term), stmt.BindBlob(2, entries[i].docs))
	})
}

// insertDocs writes the per-passage arrays: FTS5's token count of each
// passage (its docsize row), the text's bytes, its version, and how many
// pages (URLs without their fragment) the passages come from.
func insertDocs(conn *sqlite3.Conn, passages []corpus.Passage) error {
	tokens := make([]uint64, len(passages))
	stmt, _, err := conn.Prepare(`SELECT id, sz FROM passages_docsize ORDER BY id`)
	if err != nil {
		return fmt.Errorf("store: docsize: %w", err)
	}
	n := 0
	for stmt.Step() {
		id := stmt.ColumnInt(0)
		if id < 1 || id > len(passages) {
			stmt.Close()
			return fmt.Errorf("store: docsize row %d is not a passage", id)
		}
		tokens[id-1] = sumVarints(stmt.ColumnRawBlob(1))
		n++
	}
	if err := errors.Join(stmt.Err(), stmt.Close()); err != nil || n != len(passages) {
		return fmt.Errorf("store: docsize: %d rows for %d passages (%v)", n, len(passages), err)
	}
	var tokenBlob, byteBlob, versionBlob []byte
	versionIndex := map[string]int{}
	var versions []string
	pages := map[string]bool{}
	for i, p := range passages {
		tokenBlob = binary.AppendUvarint(tokenBlob, tokens[i])
		byteBlob = binary.AppendUvarint(byteBlob, uint64(len(p.Text)))
		v, ok := versionIndex[p.Version]
		if !ok {
			v = len(versions)
			versionIndex[p.Version] = v
			versions = append(versions, p.Version)
		}
		versionBlob = binary.AppendUvarint(versionBlob, uint64(v))
		page, _, _ := strings.Cut(p.URL, "#")
		pages[page] = true
	}
	return inTransaction(conn, `INSERT INTO docs(tokens, bytes, versions, version, pages) VALUES (?, ?, ?, ?, ?)`, 1, func(stmt *sqlite3.Stmt, _ int) error {
		return errors.Join(stmt.BindBlob(1, tokenBlob), stmt.BindBlob(2, byteBlob), stmt.BindText(3, strings.Join(versions, ",")),
			stmt.BindBlob(4, versionBlob), stmt.BindInt(5, len(pages)))
	})
}

// OpenImage opens an image made by Image without copying or re-indexing
// it (through go-sqlite3's memdb VFS, read-only) and without reading its
// passages: it checks the image's format and tables, reads the docs row
// and FTS5's own totals, and leaves every passage where it is until Head
// or Passage asks for it (the caller checks what they return). The index
// takes ownership of data, which must not change afterwards.
func OpenImage(data []byte) (*Index, error) {
	if len(data) < 100 || string(data[:16]) != "SQLite format 3\x00" {
		return nil, errors.New("store: the passages file is not a SQLite database image")
	}
	name := "ragagent-" + rand.Text()
	memdb.Create(name, data)
	conn, err := sqlite3.OpenFlags("file:/"+name+"?vfs=memdb", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		memdb.Delete(name)
		return nil, fmt.Errorf("store: open image: %w", err)
	}
	ix := &Index{conn: conn, image: name}
	if err := ix.openImage(); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

func (ix *Index) openImage() error {
	if err := fts5.Register(ix.conn); err != nil {
		return fmt.Errorf("store: register fts5: %w", err)
	}
	tag, err := ix.one(`SELECT tag FROM format`)
	if err != nil || tag.text != ImageFormat && tag.text != imageFormat2 {
		return fmt.Errorf("store: the image is not a %s image (format %q, %v)", ImageFormat, tag.text, err)
	}
	tables := map[string]string{"meta": metaSchema, "meta_url": metaURLs, "aliases": aliasesSchema, "postings": postingsSchema, "docs": docsSchema}
	if tag.text == imageFormat2 {
		tables["meta"] = metaSchema2
		delete(tables, "aliases")
	}
	for table, want := range tables {
		got, err := ix.one(`SELECT sql FROM sqlite_schema WHERE name = '` + table + `'`)
		if err != nil || got.text != want {
			return fmt.Errorf("store: the image's %s table is not %s's", table, tag.text)
		}
	}
	rows, total, err := ix.totals()
	if err != nil {
		return err
	}
	d, err := ix.docsRow()
	if err != nil {
		return err
	}
	metaRows, err := ix.one(`SELECT count(*) FROM meta`)
	if err != nil {
		return fmt.Errorf("store: read image: %w", err)
	}
	switch {
	case len(d.tokens) != rows || len(d.bytes) != rows || len(d.version) != rows || int(metaRows.n) != rows:
		return fmt.Errorf("store: the image indexes %d passages but has %d meta rows and arrays of %d, %d and %d",
			rows, metaRows.n, len(d.tokens), len(d.bytes), len(d.version))
	case d.tokenSum != total:
		return fmt.Errorf("store: the image's token counts add up to %d, FTS5 counts %d", d.tokenSum, total)
	}
	ix.docs = rows
	// An image is searched by its scorer, from its postings table.
	ix.img = newScorer(ix, d, total)
	ix.img.read = ix.img.imagePosting
	ix.img.aliases = tag.text != imageFormat2
	return nil
}

// totals are FTS5's averages record: the row count, and the tokens of
// every row and column (bm25's average document length is their ratio).
func (ix *Index) totals() (rows int, tokens uint64, err error) {
	avg, err := ix.one(`SELECT block FROM passages_data WHERE id = 1`)
	if err != nil {
		return 0, 0, fmt.Errorf("store: read the index's FTS5 totals: %w", err)
	}
	totals := varints(avg.blob)
	if len(totals) < 2 || totals[0] == 0 {
		return 0, 0, errors.New("store: the index's FTS5 totals are malformed")
	}
	for _, t := range totals[1:] {
		tokens += t
	}
	return int(totals[0]), tokens, nil
}

// docArrays is an image's docs row, decoded.
type docArrays struct {
	tokens, bytes, version []uint64
	versions               []string
	pages                  int
	tokenSum               uint64
}

func (ix *Index) docsRow() (*docArrays, error) {
	stmt, _, err := ix.conn.Prepare(`SELECT tokens, bytes, versions, version, pages FROM docs`)
	if err != nil {
		return nil, fmt.Errorf("store: read the image's docs: %w", err)
	}
	defer stmt.Close()
	if !stmt.Step() {
		return nil, fmt.Errorf("store: the image has no docs row (%v)", stmt.Err())
	}
	d := &docArrays{tokens: uvarints(stmt.ColumnRawBlob(0)), bytes: uvarints(stmt.ColumnRawBlob(1)),
		versions: strings.Split(stmt.ColumnText(2), ","), version: uvarints(stmt.ColumnRawBlob(3)), pages: stmt.ColumnInt(4)}
	if d.tokens == nil || d.bytes == nil || d.version == nil {
		return nil, errors.New("store: the image's docs arrays are malformed")
	}
	for _, v := range d.version {
		if v >= uint64(len(d.versions)) {
			return nil, errors.New("store: the image's docs name a version it does not list")
		}
	}
	for _, t := range d.tokens {
		d.tokenSum += t
	}
	if stmt.Step() {
		return nil, errors.New("store: the image has more than one docs row")
	}
	return d, nil
}

// Head is what an image says of a passage without reading its text: the
// passage with an empty Text, and the text's size in bytes.
func (ix *Index) Head(doc int) (corpus.Passage, int, error) {
	s := ix.img
	if s == nil || doc < 0 || doc >= ix.docs {
		return corpus.Passage{}, 0, fmt.Errorf("store: no passage %d", doc+1)
	}
	if s.head == nil {
		var err error
		if s.head, _, err = ix.conn.Prepare(`SELECT source_id, url, title, text_sha256, ` + s.aliasesColumn() + ` FROM meta WHERE rowid = ?`); err != nil {
			return corpus.Passage{}, 0, fmt.Errorf("store: prepare head: %w", err)
		}
	}
	defer s.head.Reset()
	if err := s.head.BindInt(1, doc+1); err != nil {
		return corpus.Passage{}, 0, err
	}
	if !s.head.Step() {
		return corpus.Passage{}, 0, fmt.Errorf("store: passage %d has no meta row (%v)", doc+1, s.head.Err())
	}
	p := corpus.Passage{SourceID: s.head.ColumnText(0), Version: s.versions[s.version[doc]], URL: s.head.ColumnText(1),
		Title: s.head.ColumnText(2), TextSHA256: hex.EncodeToString(s.head.ColumnRawBlob(3)), Aliases: splitAliases(s.head.ColumnText(4))}
	return p, int(s.bytes[doc]), nil
}

// Lookup finds a passage of an image by source id (through meta's unique
// index).
func (ix *Index) Lookup(sourceID string) (doc int, ok bool, err error) {
	s := ix.img
	if s == nil {
		return 0, false, errors.New("store: not an image")
	}
	if s.lookup == nil {
		if s.lookup, _, err = ix.conn.Prepare(`SELECT rowid FROM meta WHERE source_id = ?`); err != nil {
			return 0, false, fmt.Errorf("store: prepare lookup: %w", err)
		}
	}
	defer s.lookup.Reset()
	if err := s.lookup.BindText(1, sourceID); err != nil {
		return 0, false, err
	}
	if !s.lookup.Step() {
		return 0, false, s.lookup.Err()
	}
	return s.lookup.ColumnInt(0) - 1, true, nil
}

// Passage reads one passage of an image in full: its head and its text
// and version as the FTS5 table holds them (a version that differs from
// the docs row's is refused). The caller checks the receipt.
func (ix *Index) Passage(doc int) (corpus.Passage, error) {
	p, _, err := ix.Head(doc)
	if err != nil {
		return p, err
	}
	s := ix.img
	if s.text == nil {
		if s.text, _, err = ix.conn.Prepare(`SELECT version, text FROM passages WHERE rowid = ?`); err != nil {
			return p, fmt.Errorf("store: prepare read: %w", err)
		}
	}
	defer s.text.Reset()
	if err := s.text.BindInt(1, doc+1); err != nil {
		return p, err
	}
	if !s.text.Step() {
		return p, fmt.Errorf("store: passage %d has no text (%v)", doc+1, s.text.Err())
	}
	if v := s.text.ColumnText(0); v != p.Version {
		return p, fmt.Errorf("store: passage %d (%q) is indexed as version %s but listed as %s", doc+1, p.SourceID, v, p.Version)
	}
	p.Text = s.text.ColumnText(1)
	return p, nil
}

// Passages reads every passage of an image, in order: for verifying a
// whole pack (ragagent corpus info), never on the way to a search.
func (ix *Index) Passages() ([]corpus.Passage, error) {
	out := make([]corpus.Passage, ix.docs)
	for i := range out {
		var err error
		if out[i], err = ix.Passage(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ImageStats is what an image's docs row says of its passages as a whole.
type ImageStats struct {
	Pages int
	// Bytes are the passages' text sizes, in order.
	Bytes []int
}

// Stats describes an image's passages from its docs row.
func (ix *Index) Stats() (ImageStats, bool) {
	s := ix.img
	if s == nil {
		return ImageStats{}, false
	}
	out := ImageStats{Pages: s.pages, Bytes: make([]int, len(s.bytes))}
	for i, b := range s.bytes {
		out.Bytes[i] = int(b)
	}
	return out, true
}

// HasURLs reports which of urls some passage of an image has (through
// meta's url index).
func (ix *Index) HasURLs(urls []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(urls) == 0 {
		return found, nil
	}
	want := append([]string(nil), urls...)
	sort.Strings(want)
	q := `SELECT DISTINCT url FROM meta WHERE url IN (` + strings.TrimSuffix(strings.Repeat("?,", len(want)), ",") + `)`
	stmt, _, err := ix.conn.Prepare(q)
	if err != nil {
		return nil, fmt.Errorf("store: prepare url lookup: %w", err)
	}
	defer stmt.Close()
	for i, u := range want {
		if err := stmt.BindText(i+1, u); err != nil {
			return nil, err
		}
	}
	for stmt.Step() {
		found[stmt.ColumnText(0)] = true
	}
	if err := stmt.Err(); err != nil || ix.img == nil || !ix.img.aliases {
		return found, err
	}
	aliases, _, err := ix.conn.Prepare(`SELECT DISTINCT url FROM aliases WHERE url IN (` + strings.TrimSuffix(strings.Repeat("?,", len(want)), ",") + `)`)
	if err != nil {
		return nil, fmt.Errorf("store: prepare alias lookup: %w", err)
	}
	defer aliases.Close()
	for i, u := range want {
		if err := aliases.BindText(i+1, u); err != nil {
			return nil, err
		}
	}
	for aliases.Step() {
		found[aliases.ColumnText(0)] = true
	}
	return found, aliases.Err()
}

// one is the first row of a one-row query: its first column as text, as
// an integer and as a blob.
type oneRow struct {
	text string
	n    int64
	blob []byte
}

func (ix *Index) one(q string) (oneRow, error) {
	stmt, _, err := ix.conn.Prepare(q)
	if err != nil {
		return oneRow{}, err
	}
	defer stmt.Close()
	if !stmt.Step() {
		if err := stmt.Err(); err != nil {
			return oneRow{}, err
		}
		return oneRow{}, errors.New("no row")
	}
	return oneRow{text: stmt.ColumnText(0), n: stmt.ColumnInt64(0), blob: stmt.ColumnBlob(0, nil)}, nil
}

// uvarints decodes a blob of binary.AppendUvarint values; nil if it is
// malformed.
func uvarints(b []byte) []uint64 {
	out := []uint64{}
	for len(b) > 0 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return nil
		}
		out = append(out, x)
		b = b[n:]
	}
	return out
}

// varints decodes a blob of SQLite varints (big-endian groups of 7 bits,
// the ninth byte whole), the encoding of FTS5's docsize and averages
// records.
func varints(b []byte) []uint64 {
	var out []uint64
	for len(b) > 0 {
		var x uint64
		n := 0
		for n < 9 && n < len(b) {
			c := b[n]
			n++
			if n == 9 {
				x = x<<8 | uint64(c)
				break
			}
			x = x<<7 | uint64(c&0x7f)
			if c < 0x80 {
				break
			}
		}
		out = append(out, x)
		b = b[n:]
	}
	return out
}

func sumVarints(b []byte) uint64 {
	var s uint64
	for _, x := range varints(b) {
		s += x
	}
	return s
}
