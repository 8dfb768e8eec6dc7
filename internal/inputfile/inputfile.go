// Package inputfile reads the files the command line is given (recordings,
// published records, a fake server's script, the ledger) within a size
// cap, and only when they are regular files: a recording named /dev/zero,
// a pipe or a 200 MB file must be refused at once, not read until memory
// runs out. The cap itself is core's (jsonfile.MaxInputBytes), so the page
// applies the same one.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TooLargeError is a file over the cap.
type TooLargeError struct {
	Path string
	Size int64 // what fstat said, or more than Max when the file grew while read
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the cap of %d bytes on a file the lab reads", e.Path, e.Size, e.Max)
}

// ErrNotRegular is the error (wrapped with the path) for a directory, a
// pipe, a socket or a device.
var ErrNotRegular = errors.New("not a regular file (a directory, pipe or device cannot be read as one)")

// Read returns the contents of path if it is a regular file of at most max
// bytes. It opens without blocking (a FIFO with no writer would otherwise
// wait forever), refuses anything but a regular file before reading a
// byte, refuses a file whose size is over max without reading it, and
// reads through a limit, so a file that grows while read is refused too.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, path, max)
}

// ReadOpen is Read for a file already open (the ledger, read under its
// lock).
func ReadOpen(f *os.File, path string, max int64) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	if info.Size() > max {
		return nil, &TooLargeError{Path: path, Size: info.Size(), Max: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Max: max}
	}
	return data, nil
}
