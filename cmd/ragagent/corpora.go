package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/fixtures/packs"
)

var flagErrHelp = flag.ErrHelp

// corpusHelp is the help of every --corpus flag.
const corpusHelp = "the corpus `pack`: seed (the four published passages), python-3.11, sqlite-3.40, or a pack folder or its manifest.json"

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
// read and loaded: the manifest and the passages file as every input is
// (in), and a manifest claiming passages over the cap refused before the
// passages file is opened.
func openCorpus(e *engine.Engine, in inputs, name string) (string, error) {
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
	manifest, passages, err := packs.Load(manifestPath, in.read, *in.max)
	var big *packs.OverCapError
	if errors.As(err, &big) {
		return "", fmt.Errorf("%w (--max-input-bytes raises the cap)", err)
	}
	if err != nil {
		return "", err
	}
	info, err := e.LoadPack(manifest, passages)
	if err != nil {
		return "", err
	}
	return info.Manifest.ID, nil
}

// openWithCorpus opens an engine with the shipped packs and makes name
// usable in it (openCorpus), returning its pack id; the caller closes the
// engine.
func openWithCorpus(o engine.Options, in inputs, name string) (*engine.Engine, string, error) {
	o.Packs = knownPacks()
	e, err := engine.Open(o)
	if err != nil {
		return nil, "", err
	}
	id, err := openCorpus(e, in, name)
	if err != nil {
		e.Close()
		return nil, "", err
	}
	return e, id, nil
}
