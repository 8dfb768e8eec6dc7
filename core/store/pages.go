package store

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// HasPages reports which of pages (URLs without a #fragment) some passage
// of an image is on: its URL is the page, or the page and a #fragment.
// One range lookup per page through meta's url index ('$' follows '#').
func (ix *Index) HasPages(pages []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(pages) == 0 {
		return found, nil
	}
	stmt, _, err := ix.conn.Prepare(`SELECT 1 FROM meta WHERE url = ?1 OR (url >= ?1 || '#' AND url < ?1 || '$') LIMIT 1`)
	if err != nil {
		return nil, fmt.Errorf("store: prepare page lookup: %w", err)
	}
	defer stmt.Close()
	for _, p := range pages {
		if err := stmt.BindText(1, p); err != nil {
			return nil, err
		}
		if stmt.Step() {
			found[p] = true
		}
		if err := stmt.Err(); err != nil {
			return nil, err
		}
		stmt.Reset()
	}
	return found, nil
}

// Heads are an image's passages without their text, in order (source
// id, version, URL, title and receipt from its meta rows): what an
// experiment matches a ranking's passages against, read in one pass.
func (ix *Index) Heads() ([]corpus.Passage, error) {
	s := ix.img
	if s == nil {
		return nil, errors.New("store: not an image")
	}
	stmt, _, err := ix.conn.Prepare(`SELECT rowid, source_id, url, title, text_sha256, ` + s.aliasesColumn() + ` FROM meta ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("store: heads: %w", err)
	}
	defer stmt.Close()
	out := make([]corpus.Passage, ix.docs)
	seen := 0
	for stmt.Step() {
		id := stmt.ColumnInt(0)
		if id < 1 || id > ix.docs {
			return nil, fmt.Errorf("store: meta row %d is not a doc", id)
		}
		out[id-1] = corpus.Passage{SourceID: stmt.ColumnText(1), Version: s.versions[s.version[id-1]], URL: stmt.ColumnText(2),
			Title: stmt.ColumnText(3), TextSHA256: hex.EncodeToString(stmt.ColumnRawBlob(4)), Aliases: splitAliases(stmt.ColumnText(5))}
		seen++
	}
	if err := stmt.Err(); err != nil {
		return nil, fmt.Errorf("store: heads: %w", err)
	}
	if seen != ix.docs {
		return nil, fmt.Errorf("store: the image has %d meta rows for %d docs", seen, ix.docs)
	}
	return out, nil
}
