package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/ncruces/go-sqlite3/ext/serdes"
	"github.com/ncruces/go-sqlite3/vfs/memdb"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// ImageFormat tags a passages image (in its format table).
const ImageFormat = "ragagent-passages-sqlite/1"

// imagePageSize is the image's page size. SQLite's default of 4096 bytes
// leaves the FTS5 index and the texts in many small pages; larger pages
// make a smaller image (fewer headers and partly filled pages) and fewer
// page reads per query.
const imagePageSize = 16384

// Image builds a SQLite database image of passages: the index table
// exactly as Open builds it (same schema, rowids 1..n in order, so every
// bm25 score is the same), merged into one segment, and a meta table with
// each passage's source id, URL, title and receipt. Opening it (OpenImage)
// parses and indexes nothing, which is what makes a large pack quick to
// open in the browser. The same passages give the same bytes.
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
		schema,
		`CREATE TABLE meta(rowid INTEGER PRIMARY KEY, source_id TEXT NOT NULL, url TEXT NOT NULL, title TEXT NOT NULL, text_sha256 BLOB NOT NULL)`,
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
	for _, q := range []string{`INSERT INTO passages(passages) VALUES ('optimize')`, `VACUUM`} {
		if err := conn.Exec(q); err != nil {
			return nil, fmt.Errorf("store: compact image: %w", err)
		}
	}
	data, err := serdes.Serialize(conn, "main")
	if err != nil {
		return nil, fmt.Errorf("store: serialize image: %w", err)
	}
	return data, nil
}

func insertMeta(conn *sqlite3.Conn, passages []corpus.Passage) error {
	if err := conn.Exec(`BEGIN`); err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	stmt, _, err := conn.Prepare(`INSERT INTO meta(rowid, source_id, url, title, text_sha256) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: prepare meta: %w", err)
	}
	defer stmt.Close()
	for i, p := range passages {
		sum, err := hex.DecodeString(p.TextSHA256)
		if err != nil {
			return fmt.Errorf("store: passage %d (%q): text_sha256 is not hex", i+1, p.SourceID)
		}
		if err := errors.Join(stmt.BindInt(1, i+1), stmt.BindText(2, p.SourceID), stmt.BindText(3, p.URL),
			stmt.BindText(4, p.Title), stmt.BindBlob(5, sum)); err != nil {
			return fmt.Errorf("store: bind meta %d: %w", i+1, err)
		}
		if err := stmt.Exec(); err != nil {
			return fmt.Errorf("store: insert meta %d: %w", i+1, err)
		}
	}
	if err := conn.Exec(`COMMIT`); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// OpenImage opens an image made by Image without copying or re-indexing
// it (through go-sqlite3's memdb VFS, read-only) and reads its passages
// back in index order, unvalidated: the caller checks them (corpus.NewPack).
// The index takes ownership of data, which must not change afterwards.
func OpenImage(data []byte) (*Index, []corpus.Passage, error) {
	if len(data) < 100 || string(data[:16]) != "SQLite format 3\x00" {
		return nil, nil, errors.New("store: the passages file is not a SQLite database image")
	}
	name := "ragagent-" + rand.Text()
	memdb.Create(name, data)
	conn, err := sqlite3.OpenFlags("file:/"+name+"?vfs=memdb", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		memdb.Delete(name)
		return nil, nil, fmt.Errorf("store: open image: %w", err)
	}
	ix := &Index{conn: conn, image: name}
	passages, err := ix.openImage()
	if err != nil {
		ix.Close()
		return nil, nil, err
	}
	ix.docs = len(passages)
	return ix, passages, nil
}

func (ix *Index) openImage() ([]corpus.Passage, error) {
	if err := fts5.Register(ix.conn); err != nil {
		return nil, fmt.Errorf("store: register fts5: %w", err)
	}
	tag, err := ix.one(`SELECT tag FROM format`)
	if err != nil || tag != ImageFormat {
		return nil, fmt.Errorf("store: the image is not a %s image (format %q, %v)", ImageFormat, tag, err)
	}
	var metaRows, docRows string
	if metaRows, err = ix.one(`SELECT count(*) FROM meta`); err == nil {
		docRows, err = ix.one(`SELECT count(*) FROM passages`)
	}
	if err != nil {
		return nil, fmt.Errorf("store: read image: %w", err)
	}
	if metaRows != docRows {
		return nil, fmt.Errorf("store: the image has %s indexed passages but %s meta rows", docRows, metaRows)
	}
	stmt, _, err := ix.conn.Prepare(`SELECT p.rowid, p.version, p.text, m.source_id, m.url, m.title, m.text_sha256
		FROM passages p JOIN meta m ON m.rowid = p.rowid ORDER BY p.rowid`)
	if err != nil {
		return nil, fmt.Errorf("store: read image: %w", err)
	}
	defer stmt.Close()
	var out []corpus.Passage
	for stmt.Step() {
		if row := stmt.ColumnInt(0); row != len(out)+1 {
			return nil, fmt.Errorf("store: image row %d follows row %d; rows must be numbered 1..n", row, len(out))
		}
		out = append(out, corpus.Passage{Version: stmt.ColumnText(1), Text: stmt.ColumnText(2),
			SourceID: stmt.ColumnText(3), URL: stmt.ColumnText(4), Title: stmt.ColumnText(5),
			TextSHA256: hex.EncodeToString(stmt.ColumnRawBlob(6))})
	}
	if err := stmt.Err(); err != nil {
		return nil, fmt.Errorf("store: read image: %w", err)
	}
	if fmt.Sprint(len(out)) != docRows {
		return nil, fmt.Errorf("store: the image has %s passages but %d have meta rows", docRows, len(out))
	}
	return out, ix.prepare()
}

// one returns the first column of a one-row query as text.
func (ix *Index) one(q string) (string, error) {
	stmt, _, err := ix.conn.Prepare(q)
	if err != nil {
		return "", err
	}
	defer stmt.Close()
	if !stmt.Step() {
		if err := stmt.Err(); err != nil {
			return "", err
		}
		return "", errors.New("no row")
	}
	return stmt.ColumnText(0), nil
}
