//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/engine"
)

// exportPacks adds the corpus calls besides packs, packInfo and loadPack:
// a person's documents built into a pack, a pack removed, one passage
// read in full, and a pack's authored cases.
func (a *adapter) exportPacks(export exporter, withEngine func(func(*engine.Engine) (any, error)) js.Value) {
	export("buildPack", func(args []js.Value) any {
		files, onDocument := arg(args, 0), arg(args, 1)
		return withEngine(func(e *engine.Engine) (any, error) {
			docs, err := documents(files)
			if err != nil {
				return nil, err
			}
			return e.BuildPack(engine.BuildRequest{Documents: docs, OnDocument: func(done, total int) { notify(onDocument, done, total) }})
		})
	})
	export("removePack", func(args []js.Value) any {
		id := arg(args, 0)
		return withEngine(func(e *engine.Engine) (any, error) {
			if id.Type() != js.TypeString {
				return nil, errors.New("removePack: give a pack id")
			}
			return nil, e.RemovePack(id.String())
		})
	})
	export("passage", func(args []js.Value) any {
		corpus, id := stringField(arg(args, 0), "corpus"), stringField(arg(args, 0), "source_id")
		return withEngine(func(e *engine.Engine) (any, error) {
			if corpus == nil || id == nil {
				return nil, errors.New("passage: give {corpus, source_id}")
			}
			return e.Passage(*corpus, *id)
		})
	})
	export("packCases", func(args []js.Value) any {
		id := arg(args, 0)
		return withEngine(func(e *engine.Engine) (any, error) {
			if id.Type() != js.TypeString {
				return nil, errors.New("packCases: give a pack id")
			}
			return e.PackCases(id.String())
		})
	})
}

// documents reads [{path, bytes}] (bytes a Uint8Array) as the builder's
// documents.
func documents(files js.Value) ([]builder.Document, error) {
	if files.Type() != js.TypeObject || !js.Global().Get("Array").Call("isArray", files).Bool() {
		return nil, errors.New("buildPack: give an array of {path, bytes}")
	}
	n := files.Length()
	docs := make([]builder.Document, n)
	for i := 0; i < n; i++ {
		f := files.Index(i)
		path := stringField(f, "path")
		if path == nil || *path == "" {
			return nil, fmt.Errorf("buildPack: file %d has no path", i+1)
		}
		data, err := fileBytes(field(f, "bytes"))
		if err != nil {
			return nil, fmt.Errorf("buildPack: %s: %w", *path, err)
		}
		docs[i] = builder.Document{Path: *path, Data: data}
	}
	return docs, nil
}
