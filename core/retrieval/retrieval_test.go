package retrieval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
)

// docs is a small index's passages: two versions, titles and URLs, words
// in several inflections and a pair near and far apart.
var docs = []store.Doc{
	{Version: "3.11", Title: "pathlib › Path.write_text", URL: "https://docs.example/library/pathlib.html#pathlib.Path.write_text",
		Text: "Open the file in text mode, write to it, and close the file. An existing file of the same name is overwritten."},
	{Version: "3.11", Title: "sqlite3 › Connection", URL: "https://docs.example/library/sqlite3.html#sqlite3.Connection",
		Text: "Each open SQLite database is represented by a Connection object. Connections are made by connect."},
	{Version: "3.11", Title: "Reading files", URL: "https://docs.example/tutorial/inputoutput.html",
		Text: "To read a file line by line, loop over the file object. Reading is fast and memory efficient."},
	{Version: "3.12", Title: "pathlib › Path.read_text", URL: "https://docs.example/library/pathlib.html#pathlib.Path.read_text",
		Text: "Return the decoded contents of the pointed-to file as a string. The file is opened and then closed."},
	{Version: "3.11", Title: "Glossary", URL: "https://docs.example/glossary.html#term-file-object",
		Text: "file object: an object exposing a file-oriented API. Also called a text file, line iterators read it."},
	{Version: "3.11", Title: "json › dumps", URL: "https://docs.example/library/json.html#json.dumps",
		Text: "Serialize obj to a JSON formatted str. If ensure_ascii is false, non-ASCII characters are output as is."},
}

func openIndex(t *testing.T) *store.Index {
	t.Helper()
	ix, err := store.Open(docs)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return ix
}

func builtin(t *testing.T, name string) retrieval.Spec {
	t.Helper()
	s, err := retrieval.Lookup(name)
	require.NoError(t, err)
	return s
}

// TestSeedIsStoreSearch: the seed configuration, and any spec with the
// seed's settings whatever its name, is store.Search exactly: the same
// hits, ranks and float64 scores, the same refusals.
func TestSeedIsStoreSearch(t *testing.T) {
	ix := openIndex(t)
	seed := builtin(t, "seed")
	assert.True(t, seed.IsSeed())
	same, err := retrieval.Parse([]byte(`{"name": "mine"}`))
	require.NoError(t, err)
	for _, spec := range []retrieval.Spec{seed, same} {
		s, err := retrieval.Open(ix, spec)
		require.NoError(t, err)
		for _, q := range []string{"file", "read the file line by line", "Connection connect", "ensure_ascii JSON", "zzz"} {
			for _, v := range []string{"", "3.11", "3.12", "9.9"} {
				for _, k := range []int{1, 2, 10} {
					want, werr := ix.Search(q, k, v)
					got, gerr := s.Search(q, k, v)
					assert.Equal(t, werr, gerr)
					assert.Equal(t, want, got, "%s %q k %d version %q", spec.Name, q, k, v)
				}
			}
		}
		_, err = s.Search("?!", 2, "3.11")
		assert.ErrorIs(t, err, store.ErrNoTerms)
	}
}

// TestEveryBuiltinSearches: each built-in ranks within the version, at
// most k hits with ranks 1..n, scores ascending (lower is better), the
// same answer twice, and refuses a query without terms as the seed does.
func TestEveryBuiltinSearches(t *testing.T) {
	ix := openIndex(t)
	base := retrieval.NewBase(ix)
	for _, spec := range retrieval.Builtins() {
		s, err := base.Open(spec)
		require.NoError(t, err)
		for _, v := range []string{"3.11", "3.12", ""} {
			hits, err := s.Search("how do I read a text file", 3, v)
			require.NoError(t, err, spec.Name)
			again, err := s.Search("how do I read a text file", 3, v)
			require.NoError(t, err)
			assert.Equal(t, hits, again, "%s is deterministic", spec.Name)
			assert.NotEmpty(t, hits, spec.Name)
			assert.LessOrEqual(t, len(hits), 3)
			for i, h := range hits {
				assert.Equal(t, i+1, h.Rank)
				if v != "" {
					assert.Equal(t, v, docs[h.Doc].Version, "%s keeps to version %s", spec.Name, v)
				}
				if i > 0 {
					assert.LessOrEqual(t, hits[i-1].Score, h.Score)
				}
			}
		}
		_, err = s.Search("?!", 2, "3.11")
		assert.ErrorIs(t, err, store.ErrNoTerms, spec.Name)
		hits, err := s.Search("file", 2, "4.0")
		require.NoError(t, err)
		assert.Empty(t, hits, "no passage of an unknown version")
	}
}

func top(t *testing.T, ix *store.Index, spec retrieval.Spec, q, v string) int {
	t.Helper()
	s, err := retrieval.Open(ix, spec)
	require.NoError(t, err)
	hits, err := s.Search(q, 1, v)
	require.NoError(t, err)
	if len(hits) == 0 {
		return -1
	}
	return hits[0].Doc
}

// TestStemmingMatchesInflections: "connecting" finds "Connections" only
// when stemmed; stop words are dropped from the query, not from a query
// of stop words alone.
func TestStemmingMatchesInflections(t *testing.T) {
	ix := openIndex(t)
	assert.Equal(t, -1, top(t, ix, builtin(t, "seed"), "connecting", "3.11"))
	assert.Equal(t, 1, top(t, ix, builtin(t, "stemmed"), "connecting", "3.11"))
	s, err := retrieval.Open(ix, builtin(t, "stemmed"))
	require.NoError(t, err)
	hits, err := s.Search("the", 5, "")
	require.NoError(t, err)
	assert.NotEmpty(t, hits, "a query of stop words alone searches them")
}

// TestFieldsWeighTheAnchor: "pathlib" is in two passages' anchors and
// titles only; the text field alone cannot find it, the fields
// configuration finds the one of the version asked.
func TestFieldsWeighTheAnchor(t *testing.T) {
	ix := openIndex(t)
	assert.Equal(t, -1, top(t, ix, builtin(t, "stemmed"), "pathlib", "3.11"))
	assert.Equal(t, 0, top(t, ix, builtin(t, "fields"), "pathlib", "3.11"))
	assert.Equal(t, 3, top(t, ix, builtin(t, "fields"), "pathlib", "3.12"))
}

// TestProximityPrefersTermsNearEachOther: "file object" is adjacent in
// two passages and apart in others; proximity ranks an adjacent one
// first.
func TestProximityPrefersTermsNearEachOther(t *testing.T) {
	ix := openIndex(t)
	s, err := retrieval.Open(ix, builtin(t, "proximity"))
	require.NoError(t, err)
	hits, err := s.Search("file object", 6, "3.11")
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Contains(t, []int{2, 4}, hits[0].Doc)
}

// TestOpenRefusesWhatCannotRunHere: a vector branch, the cross-encoder
// and a live listwise stage are declared but refused with unknown_config.
func TestOpenRefusesWhatCannotRunHere(t *testing.T) {
	ix := openIndex(t)
	for _, src := range []string{
		`{"name": "hybrid", "fusion": {"method": "rrf", "model": "all-MiniLM-L6-v2", "vectors": "vectors.bin"}}`,
		`{"name": "ce", "second_stage": {"method": "cross-encoder", "model": "cross-encoder/ms-marco-MiniLM-L6-v2"}}`,
		`{"name": "lw", "second_stage": {"method": "listwise", "depth": 20}}`,
	} {
		spec, err := retrieval.Parse([]byte(src))
		require.NoError(t, err, src)
		_, err = retrieval.Open(ix, spec)
		code, _ := reason.Of(err)
		assert.Equal(t, reason.UnknownConfig, code, src)
	}
}

// TestParse: defaults, and every refusal an invalid_config naming the
// field.
func TestParse(t *testing.T) {
	s, err := retrieval.Parse([]byte(`{"name": "p", "proximity": {}, "expansion": {"terms": 5}}`))
	require.NoError(t, err)
	assert.Equal(t, retrieval.Spec{Name: "p", Tokenizer: "seed", StopWords: "none", Fields: retrieval.Fields{Text: 1},
		Proximity:   &retrieval.Proximity{Window: 8, Weight: 1, Depth: 50},
		Expansion:   &retrieval.Expansion{Method: "rm3", Docs: 10, Terms: 5, Weight: 0.5},
		SecondStage: retrieval.SecondStage{Method: "none"}}, s)
	s, err = retrieval.Parse([]byte(`{"name": "q", "fields": {"title": 2}, "proximity": null}`))
	require.NoError(t, err)
	assert.Equal(t, retrieval.Fields{Text: 1, Title: 2}, s.Fields)
	assert.Nil(t, s.Proximity)
	s, err = retrieval.Parse([]byte(`{"name": "q", "tokenizer": "stemmed", "stop_words": "questions"}`))
	require.NoError(t, err)
	assert.Equal(t, retrieval.StopQuestions, s.StopWords)

	for _, c := range []struct{ src, says string }{
		{`{"name": "x", "tokeniser": "seed"}`, `unknown field "tokeniser"`},
		{`{"name": "x", "fields": {"body": 1}}`, `unknown field "body"`},
		{`{"name": "x", "name": "y"}`, `appears twice`},
		{`{"tokenizer": "seed"}`, `name ""`},
		{`{"name": "Bad Name"}`, `name "Bad Name"`},
		{`{"name": "x", "tokenizer": "porter"}`, `tokenizer "porter"`},
		{`{"name": "x", "stop_words": "french"}`, `stop_words "french" is not "none", "english" or "questions"`},
		{`{"name": "x", "fields": {"text": -1}}`, `fields.text`},
		{`{"name": "x", "fields": {"text": 0}}`, `at least one field`},
		{`{"name": "x", "k": 101}`, `k must be`},
		{`{"name": "x", "k": 2.5}`, `not valid`},
		{`{"name": "x", "proximity": {"window": 0}}`, `proximity.window`},
		{`{"name": "x", "expansion": {"method": "bo1"}}`, `expansion.method`},
		{`{"name": "x", "expansion": {"weight": 1}}`, `expansion.weight`},
		{`{"name": "x", "fusion": {"method": "rrf"}}`, `fusion needs a model`},
		{`{"name": "x", "fusion": {"model": "m", "vectors": "../etc/passwd"}}`, `not a plain file name beside the pack`},
		{`{"name": "x", "fusion": {"model": "a b", "vectors": "v.bin"}}`, `fusion.model "a b" is not a model id`},
		{`{"name": "x", "fusion": {"model": "m", "vectors": "v.bin", "depth": 0}}`, `fusion.depth`},
		{`{"name": "x", "fusion": {"model": "m", "vectors": "v.bin", "k": 0}}`, `fusion.k`},
		{`{"name": "x", "second_stage": {"method": "magic"}}`, `second_stage.method "magic"`},
		{`{"name": "x", "second_stage": {"method": "none", "depth": 5}}`, `second_stage.depth`},
		{`{"name": "x", "second_stage": {"method": "cross-encoder"}}`, `second_stage.model is required`},
		{`{"name": "x", "second_stage": {"method": "cross-encoder", "model": "a b"}}`, `second_stage.model "a b" is not a model id`},
		{`{"name": "x", "second_stage": {"method": "coverage", "model": "o/m"}}`, `second_stage.model applies to "cross-encoder" or "listwise", not to "coverage"`},
		{`{"name": "x", "second_stage": {"method": "magic", "model": "o/m"}}`, `second_stage.method "magic"`},
		{`[1]`, `not a JSON object`},
		{`{"name": "x"} {}`, `not`},
	} {
		_, err := retrieval.Parse([]byte(c.src))
		require.Error(t, err, c.src)
		code, _ := reason.Of(err)
		assert.Equal(t, reason.InvalidConfig, code, c.src)
		assert.Contains(t, err.Error(), c.says, c.src)
	}
}

// TestBuiltins: seed first, at least three others, names distinct, each
// valid, offline, and its canonical form parsing back to itself.
func TestBuiltins(t *testing.T) {
	bs := retrieval.Builtins()
	require.GreaterOrEqual(t, len(bs), 4)
	assert.Equal(t, "seed", bs[0].Name)
	seen := map[string]bool{}
	for _, s := range bs {
		assert.False(t, seen[s.Name], s.Name)
		seen[s.Name] = true
		require.NoError(t, s.Validate())
		require.NoError(t, s.Runnable())
		back, err := retrieval.Parse(s.Canonical())
		require.NoError(t, err)
		assert.Equal(t, s.SHA256(), back.SHA256())
		assert.NotEmpty(t, s.Description)
	}
	bs[0].Name = "changed"
	assert.Equal(t, "seed", retrieval.Builtins()[0].Name, "Builtins hands out a fresh copy")
	_, err := retrieval.Lookup("bm42")
	code, _ := reason.Of(err)
	assert.Equal(t, reason.UnknownConfig, code)
}

// TestSHA256IsOfTheCanonicalSettings: the digest is pinned (the same
// natively and under WebAssembly: make test-wasm runs this), ignores the
// description and follows every setting.
func TestSHA256IsOfTheCanonicalSettings(t *testing.T) {
	seed := builtin(t, "seed")
	assert.Equal(t, `{"name":"seed","tokenizer":"seed","stop_words":"none","fields":{"text":1,"title":0,"anchor":0},"k":0,"second_stage":{"method":"none"}}`, string(seed.Canonical()))
	assert.Equal(t, "289dc8f4d1f160cdd173ba18d3aa83c89db9dce7c47cbcd7d1b94c9d6a4c9b62", seed.SHA256())
	other := seed
	other.Description = "another sentence"
	assert.Equal(t, seed.SHA256(), other.SHA256())
	other.Fields.Title = 0.5
	assert.NotEqual(t, seed.SHA256(), other.SHA256())
}

// TestSearchK: k 0 is the pack's.
func TestSearchK(t *testing.T) {
	s := builtin(t, "proximity")
	assert.Equal(t, 3, s.SearchK(3))
	s.K = 5
	assert.Equal(t, 5, s.SearchK(3))
}
