//go:build js && wasm

package jsbridge

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/vectors"
)

// Models is engine.Models over a front end's JS functions, for one
// request: vectors(pack, name) resolves to the vectors file's bytes (a
// Uint8Array); embedder(model) resolves to {model, embed}, model the
// vectors.Model record and embed(texts) resolving to one Float32Array per
// text. The node module implements them with files and lab/embed.mjs.
type Models struct {
	vectors, embedder js.Value

	mu   sync.Mutex
	open map[string]*embedder
}

// ModelsOf is the Models of a request's hooks ({vectors, embedder}), or
// nil when the hooks give neither.
func ModelsOf(hooks js.Value) *Models {
	v, e := Field(hooks, "vectors"), Field(hooks, "embedder")
	if !IsFunc(v) && !IsFunc(e) {
		return nil
	}
	return &Models{vectors: v, embedder: e, open: map[string]*embedder{}}
}

// Vectors reads the vectors file through hooks.vectors.
func (m *Models) Vectors(pack, name string) ([]byte, error) {
	if !IsFunc(m.vectors) {
		return nil, errors.New("the front end gives no vectors files (hooks.vectors)")
	}
	v, err := Await(context.Background(), m.vectors, pack, name)
	if err != nil {
		return nil, err
	}
	return Bytes(v)
}

// Embedder opens model's embedder through hooks.embedder, once.
func (m *Models) Embedder(ctx context.Context, model string) (vectors.Embedder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.open[model]; ok {
		return e, nil
	}
	if !IsFunc(m.embedder) {
		return nil, errors.New("the front end runs no model (hooks.embedder)")
	}
	v, err := Await(ctx, m.embedder, model)
	if err != nil {
		return nil, err
	}
	e := &embedder{embed: Field(v, "embed")}
	if err := json.Unmarshal([]byte(JSONText(Field(v, "model"))), &e.model); err != nil {
		return nil, fmt.Errorf("the embedder's model record: %v", err)
	}
	if !IsFunc(e.embed) {
		return nil, errors.New("the embedder has no embed(texts) function")
	}
	m.open[model] = e
	return e, nil
}

// embedder is a JS embedder: its model record and embed function.
type embedder struct {
	model vectors.Model
	embed js.Value
}

func (e *embedder) Model() vectors.Model { return e.model }

// Embed calls embed(texts) and copies each Float32Array's bytes into Go
// (never element by element, never as JSON).
func (e *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	arr := js.Global().Get("Array").New(len(texts))
	for i, t := range texts {
		arr.SetIndex(i, t)
	}
	v, err := Await(ctx, e.embed, arr)
	if err != nil {
		return nil, err
	}
	if v.Type() != js.TypeObject || v.Get("length").Int() != len(texts) {
		return nil, fmt.Errorf("embed returned no array of %d vectors", len(texts))
	}
	u8 := js.Global().Get("Uint8Array")
	out := make([][]float32, len(texts))
	for i := range out {
		f := v.Index(i)
		if !f.InstanceOf(js.Global().Get("Float32Array")) {
			return nil, fmt.Errorf("embed's vector %d is not a Float32Array", i+1)
		}
		raw := make([]byte, f.Get("byteLength").Int())
		js.CopyBytesToGo(raw, u8.New(f.Get("buffer"), f.Get("byteOffset"), f.Get("byteLength")))
		row := make([]float32, len(raw)/4)
		for j := range row {
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		out[i] = row
	}
	return out, nil
}
