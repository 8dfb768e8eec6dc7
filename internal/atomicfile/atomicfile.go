// Package atomicfile replaces files so that a reader, a crash or a kill sees
// the old contents or the new, never half of either. Recordings, reports
// and the spending ledger are saved this way because they are the only
// record of money already spent.
//
// A write goes through a temporary file beside its target, named
// .<name>.<random>.ragagent.tmp and held under an exclusive lock while it
// exists; a writer killed between creating and renaming it leaves it
// behind, unlocked, and Clean (run when the lab next starts writing there)
// removes it.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/internal/filelock"
)

// tmpSuffix ends every temporary file's name.
const tmpSuffix = ".ragagent.tmp"

// Write writes data to a temporary file beside path, flushes it to disk,
// renames it over path and flushes the directory, so the rename itself
// survives a crash. The file keeps path's permission bits when path exists
// (else 0644).
func Write(path string, data []byte) error {
	perm := fs.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	}
	return write(path, data, perm, func(tmp string) error { return os.Rename(tmp, path) })
}

// Create writes a new file at path whole or not at all: the data is
// written and flushed in a temporary file, which is then linked to path,
// failing with fs.ErrExist if path exists. So an output name is claimed
// and given valid contents in one step (a claim that created an empty
// file first left a 0-byte recording when killed before its first save).
func Create(path string, data []byte) error {
	return write(path, data, 0o644, func(tmp string) error {
		if err := os.Link(tmp, path); err != nil {
			var le *os.LinkError
			if errors.As(err, &le) && errors.Is(le.Err, fs.ErrExist) {
				return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
			}
			return err
		}
		return os.Remove(tmp)
	})
}

func write(path string, data []byte, perm fs.FileMode, place func(tmp string) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*"+tmpSuffix)
	if err != nil {
		return err
	}
	name := tmp.Name()
	// Held until the file is renamed or removed: Clean leaves it alone.
	locked, lerr := filelock.TryLock(tmp)
	switch {
	case errors.Is(lerr, filelock.ErrUnsupported):
		lerr = nil // no locks here: Clean then removes nothing
	case lerr == nil && !locked:
		lerr = errors.New("atomicfile: a new temporary file is locked by someone else")
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	err = errors.Join(lerr, werr, serr, tmp.Chmod(perm))
	if err == nil {
		err = place(name)
	}
	cerr := tmp.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	syncDir(dir)
	return nil
}

// Clean removes the temporary files that writers killed mid-write left in
// dir: those named as Write names them, unlocked (no live writer holds
// them) and at least a second old (so one just created, not yet locked,
// is never taken). It returns the names removed.
func Clean(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), tmpSuffix) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if stale(path) && os.Remove(path) == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

// stale reports whether the temporary file at path is a dead writer's: old
// enough and not locked, and still the file at that name.
func stale(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || time.Since(info.ModTime()) < time.Second {
		return false
	}
	if ok, err := filelock.TryLock(f); err != nil || !ok {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(info, now)
}

// syncDir flushes a directory entry; where directories cannot be opened or
// synced (some platforms, the browser's file system shim) the rename has
// still happened, so a failure here is not an error.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
