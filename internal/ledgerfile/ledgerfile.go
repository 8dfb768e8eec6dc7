// Package ledgerfile keeps the spending ledger (budget.Ledger) in a file on
// disk, for the command line. The ledger's rules live in core/budget; this
// package loads its bytes and runs its transactions under an exclusive
// lock, so any number of processes can share one ledger file.
package ledgerfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/filelock"
	"github.com/ragagentlab/ragagent/internal/inputfile"
)

var _ budget.Store = File{}

// File is a Store in a file.
//
// Update takes an exclusive lock on <ledger>.lock beside the ledger (a
// file that stays, so every process locks the same one), re-reads the
// ledger, applies the change and replaces the file atomically (a temporary
// file flushed to disk and renamed over it: a crash leaves the old ledger
// or the new one), then unlocks. A ledger that is a symbolic link is
// followed: the file it points to is locked, read and replaced, and the
// link stays a link (a dangling link is refused). A read-only ledger is
// refused, never replaced. A ledger is read like any input file: a regular
// file of at most MaxBytes.
type File struct {
	Path string
	// MaxBytes caps the ledger read; 0 means jsonfile.MaxInputBytes.
	MaxBytes int64
	// Check, if set, sees every text before it is written; an error
	// refuses the write (the command line's scan for the key).
	Check func(data []byte) error
	// LockTimeout is how long Update waits for another process's lock;
	// 0 means 30 seconds.
	LockTimeout time.Duration
}

// Load reads the ledger; a missing file is an empty ledger.
func (f File) Load() ([]byte, bool, error) {
	target, err := f.target()
	if err != nil {
		return nil, false, err
	}
	return f.read(target)
}

// Update runs one transaction on the ledger under its lock.
func (f File) Update(apply func(old []byte, exists bool) ([]byte, error)) error {
	target, err := f.target()
	if err != nil {
		return err
	}
	timeout := f.LockTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	release, err := filelock.Acquire(target+".lock", timeout)
	if err != nil {
		return fmt.Errorf("cannot lock the ledger: %w", err)
	}
	defer release()
	// Only the lock holder writes the ledger's temporary files: any left
	// now are a killed writer's.
	_, _ = atomicfile.Clean(filepath.Dir(target))
	old, exists, err := f.read(target)
	if err != nil {
		return err
	}
	if exists {
		if err := writable(target); err != nil {
			return err
		}
	}
	data, err := apply(old, exists)
	if err != nil {
		return err
	}
	if f.Check != nil {
		if err := f.Check(data); err != nil {
			return err
		}
	}
	return atomicfile.Write(target, data)
}

// target is the file the ledger lives in: Path, or where the symbolic
// link Path points.
func (f File) target() (string, error) {
	info, err := os.Lstat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return f.Path, nil
	}
	if err != nil {
		return "", err
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return f.Path, nil
	}
	target, err := filepath.EvalSymlinks(f.Path)
	if err != nil {
		link, _ := os.Readlink(f.Path)
		return "", fmt.Errorf("%s is a symbolic link to %s, which cannot be followed (%v); create the ledger there or name a file with --ledger", f.Path, link, errors.Unwrap(err))
	}
	return target, nil
}

// read reads the ledger within the cap; a missing file is not an error.
func (f File) read(path string) ([]byte, bool, error) {
	max := f.MaxBytes
	if max == 0 {
		max = jsonfile.MaxInputBytes
	}
	data, err := inputfile.Read(path, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// writable refuses a ledger without write permission: it is not replaced
// behind its owner's back (renaming over a read-only file works whenever
// the directory is writable).
func writable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	refuse := fmt.Errorf("%s is read-only; refusing to replace it (make it writable to spend from it, or name another ledger)", path)
	if info.Mode().Perm()&0o200 == 0 {
		return refuse
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return refuse
	}
	return w.Close()
}
