package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	"github.com/ragagentlab/ragagent/internal/filelock"
)

// OpenFile opens (creating it when missing) the native server's database:
// SQLite in WAL mode with synchronous=FULL, so a commit is on disk before
// the write that follows it (an event is sent only after it is committed,
// so a client never saw an event a crash can lose), and a busy timeout for
// another process (the tokens command) writing at the same time.
//
// The file holds token HMACs and recordings: a new one is created 0600,
// its WAL and shared-memory files too (made 0600 before SQLite opens them;
// SQLite's modeof gives a WAL it makes again the database's mode, and the
// shared-memory file is given it once the store is open). An existing
// database keeps the mode it has.
func OpenFile(ctx context.Context, path string) (*SQL, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{abs, abs + "-wal", abs + "-shm"} {
		if err := createOwnerOnly(name); err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	q := url.Values{}
	q.Set("modeof", abs)
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
	// SQLite removes the shared-memory file when its last connection
	// closes, and makes it again with the default mode (modeof covers the
	// WAL, not it): now that the store holds its connections open, give
	// both the database's mode.
	if err := sameMode(abs, abs+"-wal", abs+"-shm"); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// sameMode gives the files that exist among names the permissions of the
// file main.
func sameMode(main string, names ...string) error {
	fi, err := os.Stat(main)
	if err != nil {
		return err
	}
	for _, name := range names {
		got, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if got.Mode().Perm() != fi.Mode().Perm() {
			if err := os.Chmod(name, fi.Mode().Perm()); err != nil {
				return err
			}
		}
	}
	return nil
}

// createOwnerOnly creates an empty file readable and writable by its owner
// alone, unless one is there.
func createOwnerOnly(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// ServeLock is the lock file beside a database that the server serving it
// holds: path with -server.lock appended (SQLite's own companions are -wal,
// -shm and, for its dot-file locking, .lock).
func ServeLock(path string) string { return path + "-server.lock" }

// ErrServed refuses a second server on a database another one serves.
var ErrServed = errors.New("store: the database is served by another process")

// served is ErrServed, saying which file and lock.
type served struct{ path, lock string }

func (e served) Error() string {
	return fmt.Sprintf("another ragagent serve-api is serving %s (it holds %s); stop it first, or give this server its own --db", e.path, e.lock)
}

func (served) Is(target error) bool { return target == ErrServed }

// LockForServing makes sure one server at a time serves the database at
// path: it takes an exclusive lock on ServeLock(path) (created 0600 when
// missing), held until release or the process's death (kill -9 included),
// or fails with ErrServed at once when another process holds it. Two
// servers on one file would each take the other's running runs for a dead
// process's: the second's recovery would end them interrupted while the
// first went on calling the model for them. The tokens command opens the
// database without this lock, beside a running server. ok is false where
// the platform has no advisory lock (nothing is held then).
func LockForServing(path string) (release func(), ok bool, err error) {
	lock := ServeLock(path)
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("store: %w", err)
	}
	held, err := filelock.TryLock(f)
	switch {
	case errors.Is(err, filelock.ErrUnsupported):
		f.Close()
		return func() {}, false, nil
	case err != nil:
		f.Close()
		return nil, false, fmt.Errorf("store: %w", err)
	case !held:
		f.Close()
		return nil, false, served{path, lock}
	}
	return func() { f.Close() }, true, nil
}
