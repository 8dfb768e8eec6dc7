package store

import "fmt"

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
