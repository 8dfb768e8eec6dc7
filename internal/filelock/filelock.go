// Package filelock takes exclusive advisory locks on files (flock), the
// one piece of the operating system the ledger and the atomic writer need
// to tell a live writer from a dead one: a lock is released when its
// holder closes the file or dies, kill -9 included.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrUnsupported is returned where the platform has no flock.
var ErrUnsupported = errors.New("this platform has no advisory file lock")

// TryLock takes an exclusive lock on f without waiting; false (and no
// error) when another open file holds it. Closing f releases it.
func TryLock(f *os.File) (bool, error) { return tryLock(f) }

// Acquire opens path (creating it, mode 0644) and takes an exclusive lock
// on it, trying every 10 ms for up to timeout; release unlocks and closes
// it. The lock file stays: removing it would let a second locker lock a
// new file while the first still holds the old one.
func Acquire(path string, timeout time.Duration) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return func() { f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another process has held the lock %s for %s; try again when it has finished", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
