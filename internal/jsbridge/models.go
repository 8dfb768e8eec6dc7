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

	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// Models is engine.Models over a front end's JS functions, for one
// request: vectors(pack, name) resolves to the vectors file's bytes (a
// Uint8Array); embedder(model) resolves to {model, embed}, model the
// vectors.Model record and embed(texts) resolving to one Float32Array per
// text; scorer(model) to {model, score}, score(query, texts) resolving to
// one logit per text (an array of numbers or a Float64Array). The node
// module implements them with files and lab/embed.mjs.
type Models struct {
	vectors, embedder, scorer js.Value

	mu     sync.Mutex
	open   map[string]*embedder
	scored map[string]*scorer
}

// ModelsOf is the Models of a request's hooks ({vectors, embedder,
// scorer}), or nil when the hooks give none.
func ModelsOf(hooks js.Value) *Models {
	v, e, s := Field(hooks, "vectors"), Field(hooks, "embedder"), Field(hooks, "scorer")
	if !IsFunc(v) && !IsFunc(e) && !IsFunc(s) {
		return nil
	}
	return &Models{vectors: v, embedder: e, scorer: s, open: map[string]*embedder{}, scored: map[string]*scorer{}}
}

// Scorer opens the cross-encoder model's scorer through hooks.scorer,
// once.
func (m *Models) Scorer(ctx context.Context, model string) (retrieval.Scorer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.scored[model]; ok {
		return s, nil
	}
	if !IsFunc(m.scorer) {
		return nil, errors.New("the front end runs no cross-encoder (hooks.scorer)")
	}
	v, err := Await(ctx, m.scorer, model)
	if err != nil {
		return nil, err
	}
	s := &scorer{score: Field(v, "score")}
	if err := json.Unmarshal([]byte(JSONText(Field(v, "model"))), &s.model); err != nil {
		return nil, fmt.Errorf("the scorer's model record: %v", err)
	}
	if !IsFunc(s.score) {
		return nil, errors.New("the scorer has no score(query, texts) function")
	}
	m.scored[model] = s
	return s, nil
}

// scorer is a JS cross-encoder: its model record and score function.
type scorer struct {
	model vectors.Model
	score js.Value
}

func (s *scorer) Model() vectors.Model { return s.model }

// Score calls score(query, texts); each logit must be a finite number.
func (s *scorer) Score(ctx context.Context, query string, texts []string) ([]float64, error) {
	arr := js.Global().Get("Array").New(len(texts))
	for i, t := range texts {
		arr.SetIndex(i, t)
	}
	v, err := Await(ctx, s.score, query, arr)
	if err != nil {
		return nil, err
	}
	if v.Type() != js.TypeObject || v.Get("length").Int() != len(texts) {
		return nil, fmt.Errorf("score returned no array of %d logits", len(texts))
	}
	out := make([]float64, len(texts))
	for i := range out {
		x := v.Index(i)
		if x.Type() != js.TypeNumber || math.IsNaN(x.Float()) || math.IsInf(x.Float(), 0) {
			return nil, fmt.Errorf("score's logit %d is not a finite number", i+1)
		}
		out[i] = x.Float()
	}
	return out, nil
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
