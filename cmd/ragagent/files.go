package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/inputfile"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

// output is a file a command writes: never one that exists, and at every
// instant either absent or whole. The first save creates it with its
// contents in one step (atomicfile.Create), so a kill before it leaves no
// file, never an empty one; later saves replace it atomically. Temporary
// files a killed writer left in its directory are removed when the output
// is named.
//
// Every save is first checked for the API key (keyguard.Guard).
type output struct {
	path    string
	created bool
	guard   *keyguard.Guard
}

// newOutput names an output, refusing a path that exists (before anything
// is sent, so nothing is spent for a file that could not be written).
func newOutput(path string, g *keyguard.Guard) (*output, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s already exists; refusing to overwrite it (choose another file or move it away)", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if _, err := atomicfile.Clean(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return &output{path: path, guard: g}, nil
}

// save writes the whole file.
func (o *output) save(data []byte) error {
	if err := o.guard.WriteFile(o.path, data, !o.created); err != nil {
		if !o.created && errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s was created by someone else meanwhile; refusing to overwrite it", o.path)
		}
		return err
	}
	o.created = true
	return nil
}

// inputs reads the files a command is given: regular files only, of at
// most --max-input-bytes.
type inputs struct{ max *int64 }

// addInputFlag adds --max-input-bytes to a command that reads files.
func addInputFlag(fs *flag.FlagSet) inputs {
	return inputs{max: fs.Int64("max-input-bytes", engine.MaxInputBytes,
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

// configHelp is --config's help on search, run and eval.
const configHelp = "the retrieval configuration to search under: a built-in's `name` (seed, stemmed, fields, proximity, rm3, general) or a JSON file of one (default: the corpus's, see corpus info)"

// config reads a --config value: "" (the corpus's default), a built-in's
// name, or the path of a configuration's JSON file (a value with a path
// separator or ending in .json), read within the cap and passed on as its
// text.
func (in inputs) config(value string) (string, error) {
	if value == "" || !(strings.ContainsAny(value, `/\`) || strings.HasSuffix(value, ".json")) {
		return value, nil
	}
	data, err := in.read(value)
	if err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	if _, err := engine.ParseConfig(string(data)); err != nil {
		return "", fmt.Errorf("--config %s: %w", value, err)
	}
	return string(data), nil
}
