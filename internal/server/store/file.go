package store

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// OpenFile opens (creating it when missing) the native server's database:
// SQLite in WAL mode with synchronous=FULL, so a commit is on disk before
// the write that follows it (an event is sent only after it is committed,
// so a client never saw an event a crash can lose), and a busy timeout for
// another process (the tokens command) writing at the same time.
func OpenFile(ctx context.Context, path string) (*SQL, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(full)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	// The query planner stability guarantee: bound values never change a
	// plan, so a prepared statement is not parsed again each time its
	// parameters change (with STAT4 built in, SQLite would re-prepare the
	// event stream's query on every read).
	db, err := driver.Open(dsn, func(c *sqlite3.Conn) error {
		_, err := c.Config(sqlite3.DBCONFIG_ENABLE_QPSG, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s, err := New(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
