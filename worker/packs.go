//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
)

// packSources are the packs worker.mjs bundles besides the seed (make
// worker: WORKER_PACKS, python-3.11 by default), each its manifest and its
// gzip passages file as Data modules: a pack's passages are copied in and
// inflated only when a run first names it (the engine opens packs then),
// so a front program, which only lists them, never holds them.
func packSources() ([]engine.PackSource, error) {
	list := jsContext.Get("packs")
	if list.IsUndefined() {
		return nil, nil
	}
	out := make([]engine.PackSource, 0, list.Length())
	for i := range list.Length() {
		p := list.Index(i)
		if p.Get("manifest").Type() != js.TypeString {
			return nil, fmt.Errorf("bundled pack %d has no manifest", i)
		}
		gz := p.Get("passages")
		manifest := []byte(p.Get("manifest").String())
		out = append(out, engine.PackSource{
			Manifest: manifest,
			Passages: func() ([]byte, error) {
				m, err := corpus.ParseManifest(manifest)
				if err != nil {
					return nil, fmt.Errorf("bundled pack %d: %w", i, err)
				}
				data := make([]byte, gz.Get("byteLength").Int())
				js.CopyBytesToGo(data, js.Global().Get("Uint8Array").New(gz))
				passages, err := m.Gunzip(data)
				if err != nil {
					return nil, fmt.Errorf("bundled pack %s: %w", m.ID, err)
				}
				return passages, nil
			},
		})
	}
	return out, nil
}
