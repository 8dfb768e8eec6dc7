package vectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/vectors"
)

func model(d int) vectors.Model {
	return vectors.Model{ID: "ragagent-test/tiny-embedder", Revision: "fixture-1", Dimensions: d, Pooling: "mean", Normalize: true,
		Files: []vectors.File{{Path: "onnx/model.onnx", SHA256: strings.Repeat("a", 64), Bytes: 10}}}
}

func header(d int) vectors.Header {
	return vectors.Header{Pack: "python-3.11", PassagesSHA256: strings.Repeat("b", 64), Model: model(d), Text: vectors.TextTitled}
}

func TestEncodeParseRoundTrips(t *testing.T) {
	s, err := vectors.New(header(3), [][]float32{{3, 4, 0}, {0, 0, 2}, {1, 1, 1}})
	require.NoError(t, err)
	b, err := s.Encode()
	require.NoError(t, err)
	assert.Equal(t, vectors.Magic, string(b[:len(vectors.Magic)]))
	assert.Zero(t, (len(b)-4*9)%4, "the rows start on a 4-byte boundary")
	got, err := vectors.Parse(b)
	require.NoError(t, err)
	assert.Equal(t, s.Header, got.Header)
	assert.Equal(t, 3, got.Len())
	assert.InDeltaSlice(t, []float32{0.6, 0.8, 0}, got.Row(0), 1e-7, "rows are kept normalized")
	assert.Equal(t, s.Row(2), got.Row(2))
	again, err := got.Encode()
	require.NoError(t, err)
	assert.Equal(t, b, again, "the same set encodes to the same bytes")
}

func TestParseRefuses(t *testing.T) {
	s, err := vectors.New(header(2), [][]float32{{1, 0}, {0, 1}})
	require.NoError(t, err)
	good, err := s.Encode()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, want string
		file       []byte
	}{
		{"not a vectors file", "does not start with", []byte("PK\x03\x04 a zip")},
		{"cut short", "the file holds", good[:len(good)-1]},
		{"a row too many", "the file holds", append(append([]byte(nil), good...), 0, 0, 128, 63)},
		{"header beyond the file", "beyond the file", append([]byte(vectors.Magic), 255, 255, 0, 0, '{')},
		{"a row of zeros", "all zeros", func() []byte {
			b := append([]byte(nil), good...)
			copy(b[len(b)-8:], make([]byte, 8))
			return b
		}()},
		{"a NaN", "NaN", func() []byte {
			b := append([]byte(nil), good...)
			copy(b[len(b)-4:], []byte{0, 0, 192, 127})
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vectors.Parse(tc.file)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		h          vectors.Header
		rows       [][]float32
	}{
		{"no rows", "counts 0", header(2), nil},
		{"a short row", "has 1 dimensions", header(2), [][]float32{{1, 0}, {1}}},
		{"no pack", "names no pack", func() vectors.Header { h := header(2); h.Pack = ""; return h }(), [][]float32{{1, 0}}},
		{"a model without files", "names 0 files", func() vectors.Header { h := header(2); h.Model.Files = nil; return h }(), [][]float32{{1, 0}}},
		{"another text", "embeds", func() vectors.Header { h := header(2); h.Text = "text"; return h }(), [][]float32{{1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vectors.New(tc.h, tc.rows)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNearestRanksByCosineTiesInPassageOrder(t *testing.T) {
	s, err := vectors.New(header(2), [][]float32{{1, 0}, {0, 1}, {1, 1}, {2, 0}, {-1, 0}})
	require.NoError(t, err)
	got, err := s.Nearest([]float32{5, 0}, nil, 10)
	require.NoError(t, err)
	var docs []int32
	for _, n := range got {
		docs = append(docs, n.Doc)
	}
	assert.Equal(t, []int32{0, 3, 2, 1, 4}, docs, "0 and 3 tie at cosine 1: passage order")
	assert.InDelta(t, 0.7071, got[2].Cosine, 1e-4)

	even, err := s.Nearest([]float32{1, 0}, func(d int32) bool { return d%2 == 1 }, 1)
	require.NoError(t, err)
	assert.Equal(t, []vectors.Neighbor{{Doc: 3, Cosine: 1}}, even, "keep filters, n bounds")

	_, err = s.Nearest([]float32{1, 0, 0}, nil, 1)
	assert.ErrorContains(t, err, "3 dimensions")
	_, err = s.Nearest([]float32{0, 0}, nil, 1)
	assert.ErrorContains(t, err, "all zeros")
}

func TestSameIsTheIDAndFiles(t *testing.T) {
	a := model(4)
	b := model(4)
	b.Runtime = map[string]any{"device": "cpu"}
	b.Revision = "another label"
	assert.True(t, a.Same(b), "what ran it and the revision's label do not matter")
	c := model(4)
	c.Files = []vectors.File{{Path: "onnx/model.onnx", SHA256: strings.Repeat("c", 64)}}
	assert.False(t, a.Same(c), "another file is another model")
	d := model(4)
	d.ID = "sentence-transformers/all-MiniLM-L6-v2"
	assert.False(t, a.Same(d))
}

type fake struct {
	m     vectors.Model
	calls [][]string
}

func (f *fake) Model() vectors.Model { return f.m }
func (f *fake) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.calls = append(f.calls, texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func TestEmbedAllBatchesAndReports(t *testing.T) {
	f := &fake{m: model(2)}
	var seen [][2]int
	got, err := vectors.EmbedAll(context.Background(), f, []string{"a", "bb", "ccc", "dddd", "e"}, 2, func(done, total int) { seen = append(seen, [2]int{done, total}) })
	require.NoError(t, err)
	assert.Len(t, got, 5)
	assert.Equal(t, [][]string{{"a", "bb"}, {"ccc", "dddd"}, {"e"}}, f.calls)
	assert.Equal(t, [][2]int{{2, 5}, {4, 5}, {5, 5}}, seen)

	f.m.Dimensions = 3
	_, err = vectors.EmbedAll(context.Background(), f, []string{"a"}, 2, nil)
	assert.ErrorContains(t, err, "has 2 dimensions")
}
