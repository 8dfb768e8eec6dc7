// Package vectors is the vector branch's data: a pack's passage vectors,
// made once by a sentence-embedding model and kept beside the pack in one
// binary file (Format), the model they came from (Model), the embedder
// that turns a query into a vector with the same model (Embedder), and
// the cosine ranking over them (Set.Nearest). The model itself runs
// outside the core: transformers.js in the page, under node, or in the
// child process internal/embedproc starts for the command line.
//
// The file is binary, not JSON: a pack's 12,352 vectors of 384 float32
// are 19 MB, which encoding/json under WebAssembly reads many times
// slower than a copy of little-endian words.
package vectors

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"

	"github.com/ragagentlab/ragagent/core/jsonfile"
)

// Format names the vectors file: Magic, the header's length as a
// little-endian uint32, the header (JSON, Header), padding to a multiple
// of 4 bytes, then Count rows of Dimensions little-endian float32, one row
// per passage in the pack's passage order (the index's doc order).
const Format = "ragagent-vectors/1"

// Magic opens every vectors file.
const Magic = "RAGVEC1\n"

// Bounds of a vectors file.
const (
	MaxDimensions = 4096
	MaxHeader     = 1 << 20
	MaxFiles      = 64
)

// Model is the sentence-embedding model a set of vectors came from, as
// the embedder reports it: its id and revision, every file it read with
// its sha256, the vectors' dimensions and how they were pooled. Two
// models are the same model when their ids and files are (Same): a query
// embedded by any other would be compared with vectors from another
// space.
type Model struct {
	ID         string `json:"id"`
	Revision   string `json:"revision"`
	Dimensions int    `json:"dimensions"`
	Files      []File `json:"files"`
	Pooling    string `json:"pooling"`
	Normalize  bool   `json:"normalize"`
	MaxTokens  int    `json:"max_tokens,omitempty"`
	// Kind is what the model is, as its runner says: KindEmbedder or
	// KindCrossEncoder ("" where the runner does not say).
	Kind string `json:"kind,omitempty"`
	// Runtime is what ran it (transformers.js and ONNX Runtime versions,
	// device, dtype): recorded, not compared.
	Runtime map[string]any `json:"runtime,omitempty"`
}

// Kinds of model a runner reports.
const (
	KindEmbedder     = "embedder"
	KindCrossEncoder = "cross-encoder"
)

// File is one model file and its sha256.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

var (
	validModelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
	validSHA256  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Check refuses a model record that cannot identify a model.
func (m Model) Check() error {
	if !validModelID.MatchString(m.ID) || len(m.ID) > 200 {
		return fmt.Errorf("vectors: the model id %q is not of the form owner/name", m.ID)
	}
	if m.Dimensions < 1 || m.Dimensions > MaxDimensions {
		return fmt.Errorf("vectors: model %s has %d dimensions; from 1 to %d", m.ID, m.Dimensions, MaxDimensions)
	}
	if len(m.Files) == 0 || len(m.Files) > MaxFiles {
		return fmt.Errorf("vectors: model %s names %d files; from 1 to %d", m.ID, len(m.Files), MaxFiles)
	}
	for _, f := range m.Files {
		if f.Path == "" || !validSHA256.MatchString(f.SHA256) || f.Bytes < 0 {
			return fmt.Errorf("vectors: model %s: file %q has no valid sha256", m.ID, f.Path)
		}
	}
	return nil
}

// Same reports whether m and o are one model: the same id and the same
// files, byte for byte (by sha256), whatever ran them.
func (m Model) Same(o Model) bool {
	if m.ID != o.ID || m.Dimensions != o.Dimensions || m.Pooling != o.Pooling || m.Normalize != o.Normalize || len(m.Files) != len(o.Files) {
		return false
	}
	files := func(fs []File) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = f.Path + " " + f.SHA256
		}
		sort.Strings(out)
		return out
	}
	a, b := files(m.Files), files(o.Files)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Embedder turns texts into vectors with one model, in order. An
// implementation runs the model (a child process, a JS function): the core
// only sees vectors.
type Embedder interface {
	// Model is the model the embedder loaded.
	Model() Model
	// Embed returns one vector of Model().Dimensions per text.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Header is the vectors file's JSON header: what the vectors are of (the
// pack, bound by its passages' receipt) and from (the model).
type Header struct {
	Format string `json:"format"`
	// Pack and PassagesSHA256 are the pack's id and its manifest's
	// passages_sha256: vectors of another build of the pack are refused.
	Pack           string `json:"pack"`
	PassagesSHA256 string `json:"passages_sha256"`
	Count          int    `json:"count"`
	Model          Model  `json:"model"`
	// Text says what was embedded per passage: TextTitled.
	Text string `json:"text"`
	// CreatedBy is the command that made the file.
	CreatedBy string `json:"created_by,omitempty"`
}

// TextTitled is what each passage's vector embeds: its title (the page's
// and section's headings), a line end, and its text (PassageText).
const TextTitled = "title+text"

// PassageText is the text a passage's vector embeds (TextTitled): the
// headings say what a passage is about when its text does not.
func PassageText(title, text string) string {
	if title == "" {
		return text
	}
	return title + "\n" + text
}

// Set is a parsed vectors file: its header and its rows, each of unit
// length (Parse normalizes, so the dot product is the cosine).
type Set struct {
	Header Header
	data   []float32
}

// Len is how many passages the set has vectors of.
func (s *Set) Len() int { return s.Header.Count }

// Row is passage i's vector (shared, not to be modified).
func (s *Set) Row(i int) []float32 {
	d := s.Header.Model.Dimensions
	return s.data[i*d : (i+1)*d]
}

// New makes a set from rows (one per passage, in passage order), checking
// the header and every row's length and values, and normalizing each row.
func New(h Header, rows [][]float32) (*Set, error) {
	h.Format, h.Count = Format, len(rows)
	if err := h.check(); err != nil {
		return nil, err
	}
	d := h.Model.Dimensions
	data := make([]float32, 0, len(rows)*d)
	for i, r := range rows {
		if len(r) != d {
			return nil, fmt.Errorf("vectors: passage %d's vector has %d dimensions; the model's have %d", i+1, len(r), d)
		}
		data = append(data, r...)
	}
	s := &Set{Header: h, data: data}
	if err := s.normalize(); err != nil {
		return nil, err
	}
	return s, nil
}

func (h Header) check() error {
	if h.Format != Format {
		return fmt.Errorf("vectors: the header's format is %q, not %q", h.Format, Format)
	}
	if h.Pack == "" || !validSHA256.MatchString(h.PassagesSHA256) {
		return fmt.Errorf("vectors: the header names no pack and passages_sha256")
	}
	if h.Count < 1 {
		return fmt.Errorf("vectors: the header counts %d passages", h.Count)
	}
	if h.Text != TextTitled {
		return fmt.Errorf("vectors: the header's text is %q; this build embeds %q", h.Text, TextTitled)
	}
	return h.Model.Check()
}

// normalize scales each row to unit length, refusing a row that is not
// finite or is all zeros (its cosine is undefined).
func (s *Set) normalize() error {
	for i := 0; i < s.Header.Count; i++ {
		if err := Normalize(s.Row(i)); err != nil {
			return fmt.Errorf("vectors: passage %d: %w", i+1, err)
		}
	}
	return nil
}

// Normalize scales v to unit length in place (float64 sums, each product
// rounded to float32, so native and WebAssembly agree).
func Normalize(v []float32) error {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("the vector holds %v", f)
		}
		sum += float64(f * f)
	}
	if sum == 0 {
		return fmt.Errorf("the vector is all zeros")
	}
	n := math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) / n)
	}
	return nil
}

// Encode is the set's file (Format).
func (s *Set) Encode() ([]byte, error) {
	head, err := json.Marshal(s.Header)
	if err != nil {
		return nil, err
	}
	for (len(Magic)+4+len(head))%4 != 0 {
		head = append(head, ' ')
	}
	var buf bytes.Buffer
	buf.Grow(len(Magic) + 4 + len(head) + 4*len(s.data))
	buf.WriteString(Magic)
	binary.Write(&buf, binary.LittleEndian, uint32(len(head)))
	buf.Write(head)
	word := make([]byte, 4)
	for _, x := range s.data {
		binary.LittleEndian.PutUint32(word, math.Float32bits(x))
		buf.Write(word)
	}
	return buf.Bytes(), nil
}

// Parse reads a vectors file, refusing one that is cut short, too long, or
// holds a header or row out of its rules; each row is normalized.
func Parse(b []byte) (*Set, error) {
	if len(b) < len(Magic)+4 || string(b[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("vectors: not a vectors file (%s): it does not start with %q", Format, Magic)
	}
	n := int(binary.LittleEndian.Uint32(b[len(Magic):]))
	start := len(Magic) + 4
	if n > MaxHeader || n > len(b)-start {
		return nil, fmt.Errorf("vectors: the header's length %d is beyond the file's %d bytes", n, len(b))
	}
	var h Header
	if err := jsonfile.Decode(bytes.TrimRight(b[start:start+n], " "), &h); err != nil {
		return nil, fmt.Errorf("vectors: the header: %v", err)
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	body := b[start+n:]
	d := h.Model.Dimensions
	if want := 4 * h.Count * d; len(body) != want {
		return nil, fmt.Errorf("vectors: %d passages of %d dimensions are %d bytes; the file holds %d", h.Count, d, want, len(body))
	}
	data := make([]float32, h.Count*d)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
	}
	s := &Set{Header: h, data: data}
	if err := s.normalize(); err != nil {
		return nil, err
	}
	return s, nil
}

// Neighbor is a passage (its index in the set) and its cosine to a query.
type Neighbor struct {
	Doc    int32
	Cosine float64
}

// Nearest is the n passages closest to q by cosine among those keep
// admits (nil: all), closest first, ties by passage order. q is
// normalized in a copy. Each dot product is summed in float64 with every
// product rounded, so native and WebAssembly rank alike.
func (s *Set) Nearest(q []float32, keep func(doc int32) bool, n int) ([]Neighbor, error) {
	d := s.Header.Model.Dimensions
	if len(q) != d {
		return nil, fmt.Errorf("vectors: the query's vector has %d dimensions; the passages' have %d", len(q), d)
	}
	q = append([]float32(nil), q...)
	if err := Normalize(q); err != nil {
		return nil, fmt.Errorf("vectors: the query's vector: %w", err)
	}
	if n <= 0 {
		return nil, nil
	}
	all := make([]Neighbor, 0, s.Header.Count)
	for i := 0; i < s.Header.Count; i++ {
		if keep != nil && !keep(int32(i)) {
			continue
		}
		row := s.data[i*d : (i+1)*d]
		var dot float64
		for j, x := range row {
			dot += float64(float64(x) * float64(q[j]))
		}
		all = append(all, Neighbor{Doc: int32(i), Cosine: dot})
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].Cosine != all[b].Cosine {
			return all[a].Cosine > all[b].Cosine
		}
		return all[a].Doc < all[b].Doc
	})
	return all[:min(n, len(all))], nil
}

// EmbedAll embeds texts batch at a time with e, checking each vector's
// length, and reports progress after each batch (done of len(texts)).
func EmbedAll(ctx context.Context, e Embedder, texts []string, batch int, progress func(done, total int)) ([][]float32, error) {
	if batch < 1 {
		batch = 1
	}
	d := e.Model().Dimensions
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		part := texts[start:min(start+batch, len(texts))]
		got, err := e.Embed(ctx, part)
		if err != nil {
			return nil, err
		}
		if len(got) != len(part) {
			return nil, fmt.Errorf("vectors: the embedder returned %d vectors for %d texts", len(got), len(part))
		}
		for i, v := range got {
			if len(v) != d {
				return nil, fmt.Errorf("vectors: the embedder's vector for text %d has %d dimensions; model %s's have %d", start+i+1, len(v), e.Model().ID, d)
			}
		}
		out = append(out, got...)
		if progress != nil {
			progress(len(out), len(texts))
		}
	}
	return out, nil
}
