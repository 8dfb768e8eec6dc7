// Package atomicfile replaces files so that a reader, a crash or a kill sees
// the old contents or the new, never half of either. Recordings and the
// spending ledger are saved this way because they are the only record of
// money already spent.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path, flushes it to disk,
// renames it over path and flushes the directory, so the rename itself
// survives a crash. The file gets mode 0644.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	err = errors.Join(werr, serr, cerr)
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	syncDir(dir)
	return nil
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
