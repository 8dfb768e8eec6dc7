package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
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

// readRecording reads and parses a ragagent-recording/1 file; a parse
// error names the file.
func readRecording(path string) (*recording.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := recording.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
