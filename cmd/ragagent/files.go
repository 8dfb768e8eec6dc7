package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/inputfile"
)

// claim creates path empty, refusing one that exists, so that an output
// name is ours before anything is spent; later saves replace it atomically.
func claim(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; refusing to overwrite it (choose another file or move it away)", path)
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// replaceFile replaces path atomically (see atomicfile.Write).
func replaceFile(path string, data []byte) error { return atomicfile.Write(path, data) }

// inputs reads the files a command is given: regular files only, of at
// most --max-input-bytes.
type inputs struct{ max *int64 }

// addInputFlag adds --max-input-bytes to a command that reads files.
func addInputFlag(fs *flag.FlagSet) inputs {
	return inputs{max: fs.Int64("max-input-bytes", jsonfile.MaxInputBytes,
		"the cap on each file read (`bytes`); larger files, and anything but a regular file, are refused unread")}
}

// check refuses a cap that is not a positive number of bytes.
func (in inputs) check() error {
	if *in.max < 1 {
		return fmt.Errorf("--max-input-bytes must be at least 1, got %d", *in.max)
	}
	return nil
}

// read reads path within the cap.
func (in inputs) read(path string) ([]byte, error) {
	data, err := inputfile.Read(path, *in.max)
	var big *inputfile.TooLargeError
	if errors.As(err, &big) {
		return nil, fmt.Errorf("%w; it was not read (--max-input-bytes raises the cap)", err)
	}
	return data, err
}

// recording reads and parses a ragagent-recording/1 file; a parse error
// names the file.
func (in inputs) recording(path string) (*recording.File, error) {
	data, err := in.read(path)
	if err != nil {
		return nil, err
	}
	f, err := recording.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
