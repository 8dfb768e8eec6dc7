package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/fixtures/packs"
)

var flagErrHelp = flag.ErrHelp

// corpusHelp is the help of every --corpus flag.
const corpusHelp = "the corpus `pack`: seed (the four published passages), python-3.11, or a pack folder or its manifest.json"

// knownPacks are the packs the command line ships (see fixtures/packs/); a broken
// embedded pack is a build mistake, reported when it is used.
func knownPacks() []engine.PackSource {
	sources, err := packs.Sources()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ragagent: %v\n", err)
	}
	return sources
}

// openCorpus makes name usable in e and returns its pack id: a pack the
// engine knows by id, or a pack folder (or its manifest.json) on disk,
// read and loaded.
func openCorpus(e *engine.Engine, name string) (string, error) {
	for _, p := range e.Packs() {
		if p.Manifest.ID == name {
			return name, nil
		}
	}
	manifestPath := name
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		manifestPath = filepath.Join(name, "manifest.json")
	} else if errors.Is(err, os.ErrNotExist) {
		var ids []string
		for _, p := range e.Packs() {
			ids = append(ids, p.Manifest.ID)
		}
		return "", fmt.Errorf("--corpus %q is neither a pack (%v) nor a pack folder or manifest", name, ids)
	}
	manifest, err := readBounded(manifestPath, 1<<20)
	if err != nil {
		return "", err
	}
	m, err := corpus.ParseManifest(manifest)
	if err != nil {
		return "", fmt.Errorf("%s: %w", manifestPath, err)
	}
	dir := filepath.Dir(manifestPath)
	passages, err := packs.Read(os.DirFS(dir), m.PassagesFile, m)
	if err != nil {
		return "", err
	}
	if _, err := e.LoadPack(manifest, passages); err != nil {
		return "", err
	}
	return m.ID, nil
}

// readBounded reads a file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes; at most %d are read", path, info.Size(), max)
	}
	return os.ReadFile(path)
}
