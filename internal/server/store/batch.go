package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/ncruces/go-sqlite3/driver"
)

// SQLiteBatcher is a Batcher over a SQLite file, each batch one
// transaction on one connection, as D1 runs them: it lets the D1 store be
// tested natively, statement for statement, beside the SQL store.
type SQLiteBatcher struct {
	db *sql.DB
}

// OpenBatcher opens (creating it when missing) a SQLite file as a Batcher.
func OpenBatcher(ctx context.Context, path string) (*SQLiteBatcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	db, err := driver.Open((&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // D1 runs one batch at a time
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return &SQLiteBatcher{db: db}, nil
}

// Batch runs stmts in one transaction; values come back as D1's binding
// gives them to Go (integers as int64, text as string).
func (b *SQLiteBatcher) Batch(ctx context.Context, stmts []Statement) ([]Rows, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	out := make([]Rows, 0, len(stmts))
	for _, st := range stmts {
		rows, err := tx.QueryContext(ctx, st.SQL, st.Args...)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return nil, err
		}
		var rs Rows
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			rs = append(rs, vals)
		}
		// A statement's failure (a key's conflict) comes from the rows'
		// iteration, not from Close: D1 fails the whole batch on it.
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, tx.Commit()
}

// Close closes the file.
func (b *SQLiteBatcher) Close() error { return b.db.Close() }
