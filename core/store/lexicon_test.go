package store

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lexiconOf builds docs with Open, exports their lexicon and reopens them
// from its JSON.
func lexiconOf(t *testing.T, docs []Doc) (built, reopened *Index, data []byte) {
	t.Helper()
	built, err := Open(docs)
	require.NoError(t, err)
	t.Cleanup(func() { built.Close() })
	lx, err := built.Lexicon("test")
	require.NoError(t, err)
	data, err = json.Marshal(lx)
	require.NoError(t, err)
	var back Lexicon
	require.NoError(t, json.Unmarshal(data, &back))
	reopened, err = OpenLexicon(docs, &back)
	require.NoError(t, err)
	t.Cleanup(func() { reopened.Close() })
	return built, reopened, data
}

// An index reopened from its lexicon (through JSON) is the index: FTS5's
// own bm25 bit for bit for random queries, every k and version; the same
// vocabulary, postings, token counts, texts and snippets.
func TestLexiconReopensTheIndex(t *testing.T) {
	ps := synthetic(600)
	docs := make([]Doc, len(ps))
	for i, p := range ps {
		docs[i] = Doc{Version: p.Version, Text: p.Text, Title: p.Title, URL: p.URL}
	}
	built, ix, _ := lexiconOf(t, docs)
	assert.False(t, ix.Connected(), "opening a lexicon runs no SQLite")

	assert.Greater(t, equalsFTS5(t, ps, 5, built, ix), 10000, "the queries matched many rows")
	assert.False(t, ix.Connected(), "searching a lexicon runs no SQLite")

	vocab, err := built.Vocabulary()
	require.NoError(t, err)
	got, err := ix.Vocabulary()
	require.NoError(t, err)
	assert.Equal(t, vocab, got)
	for _, term := range append(slices.Clone(vocab[:40]), "absent") {
		wd, wt, err := built.Postings(term)
		require.NoError(t, err)
		gd, gt, err := ix.Postings(term)
		require.NoError(t, err)
		assert.Equal(t, wd, gd, term)
		assert.Equal(t, wt, gt, term)
	}
	wantTokens, err := built.DocTokens()
	require.NoError(t, err)
	gotTokens, err := ix.DocTokens()
	require.NoError(t, err)
	assert.Equal(t, wantTokens, gotTokens)
	assert.Equal(t, built.DocVersions(), ix.DocVersions())
	for _, doc := range []int{0, 299, 599} {
		wantText, err := built.Text(doc)
		require.NoError(t, err)
		gotText, err := ix.Text(doc)
		require.NoError(t, err)
		assert.Equal(t, wantText, gotText)
	}
	want, err := built.SearchSnippets("file path write_text Café", 5, "3.12")
	require.NoError(t, err)
	snippets, err := ix.SearchSnippets("file path write_text Café", 5, "3.12")
	require.NoError(t, err)
	assert.Equal(t, want, snippets)
}

// OpenLexicon refuses a lexicon that does not describe the docs it is
// given or contradicts itself, one row per check in the order made.
func TestOpenLexiconRefuses(t *testing.T) {
	docs := fourDocs()
	_, _, data := lexiconOf(t, docs)
	for _, c := range []struct {
		name   string
		change func(*Lexicon)
		docs   int
		err    string
	}{
		{"format", func(l *Lexicon) { l.Format = "ragagent-lexicon/0" }, 4, "format"},
		{"docs", func(l *Lexicon) {}, 3, "tokens of 4 docs, not 3"},
		{"empty term", func(l *Lexicon) { l.Terms[""] = l.Terms["file"] }, 4, `term "" is malformed`},
		{"no docs", func(l *Lexicon) { l.Terms["zzz"] = LexiconTerm{IDF: 1} }, 4, `term "zzz" is malformed`},
		{"tf length", func(l *Lexicon) { p := l.Terms["file"]; p.TF = p.TF[1:]; l.Terms["file"] = p }, 4, `term "file" is malformed`},
		{"idf", func(l *Lexicon) { p := l.Terms["file"]; p.IDF = 0; l.Terms["file"] = p }, 4, `term "file" is malformed`},
		{"doc range", func(l *Lexicon) { p := l.Terms["file"]; p.Docs[0] = 4; l.Terms["file"] = p }, 4, `postings of "file"`},
		{"order", func(l *Lexicon) { p := l.Terms["file"]; p.Docs[1] = p.Docs[0]; l.Terms["file"] = p }, 4, `postings of "file"`},
		{"tf", func(l *Lexicon) { p := l.Terms["file"]; p.TF[0] = 0.5; l.Terms["file"] = p }, 4, `postings of "file"`},
		{"sums", func(l *Lexicon) { l.Tokens[0]++ }, 4, "doc 1 has"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lx Lexicon
			require.NoError(t, json.Unmarshal(data, &lx))
			require.Contains(t, lx.Terms, "file")
			c.change(&lx)
			_, err := OpenLexicon(docs[:c.docs], &lx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
	image, err := Image(fourPassages())
	require.NoError(t, err)
	ix, err := OpenImage(image)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Lexicon("x")
	assert.Error(t, err, "an image is its own lexicon")
}

// FuzzOpenLexicon: any lexicon JSON is refused with an error or opens an
// index that searches without failing.
func FuzzOpenLexicon(f *testing.F) {
	built, err := Open(fourDocs())
	require.NoError(f, err)
	lx, err := built.Lexicon("seed")
	require.NoError(f, err)
	built.Close()
	good, err := json.Marshal(lx)
	require.NoError(f, err)
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		var lx Lexicon
		if json.Unmarshal(data, &lx) != nil {
			return
		}
		ix, err := OpenLexicon(fourDocs(), &lx)
		if err != nil {
			return
		}
		defer ix.Close()
		for _, q := range []string{"file text path", "json write_text utf 8", "zzz"} {
			hits, err := ix.Search(q, 3, "3.12")
			require.NoError(t, err)
			for _, h := range hits {
				require.False(t, math.IsNaN(h.Score), "%q", q)
			}
		}
	})
}
