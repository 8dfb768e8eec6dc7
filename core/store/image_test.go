package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/ncruces/go-sqlite3/ext/serdes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
)

func fourPassages() []corpus.Passage {
	var ps []corpus.Passage
	for i, d := range fourDocs() {
		ps = append(ps, corpus.Passage{SourceID: []string{"json-text", "path-read", "path-write", "path-read-3-13"}[i],
			Version: d.Version, URL: "https://docs.python.org/x", Title: "t", Text: d.Text, TextSHA256: corpus.SHA256(d.Text)})
	}
	return ps
}

func TestImageScoresEqualTheBuiltIndex(t *testing.T) {
	data, err := Image(fourPassages())
	require.NoError(t, err)
	again, err := Image(fourPassages())
	require.NoError(t, err)
	assert.Equal(t, data, again, "the same passages give the same image")
	ix, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	ps, err := ix.Passages()
	require.NoError(t, err)
	assert.Equal(t, fourPassages(), ps)
	built, err := Open(fourDocs())
	require.NoError(t, err)
	defer built.Close()
	for _, version := range []string{"3.12", "3.13", "", "9.9"} {
		want, err := built.Search("Will write_text replace the contents of an existing file?", 3, version)
		require.NoError(t, err)
		got, err := ix.Search("Will write_text replace the contents of an existing file?", 3, version)
		require.NoError(t, err)
		assert.Equal(t, want, got, version)
	}
}

// synthetic makes n passages of words drawn with a skewed distribution
// (a few very common words, a long tail), in two versions, with the
// things FTS5's tokenizer folds: capitals, diacritics, underscores,
// hyphens, digits and punctuation.
func synthetic(n int) []corpus.Passage {
	r := rand.New(rand.NewPCG(1, 2))
	var vocab []string
	for _, w := range strings.Fields("the a of to and in is it for file path write_text read_text open json dumps ensure_ascii UTF-8 encoding " +
		"Café naïve résumé 3.12 2to3 __init__ self-test overwrite existing contents bytes str None True dict list") {
		vocab = append(vocab, w)
	}
	for i := 0; len(vocab) < 3000; i++ {
		vocab = append(vocab, fmt.Sprintf("w%dx%d", i%97, i))
	}
	word := func() string {
		// Zipf-like: index ~ floor(exp(u * ln(len))) - 1
		i := int(math.Exp(r.Float64()*math.Log(float64(len(vocab))))) - 1
		return vocab[i]
	}
	ps := make([]corpus.Passage, n)
	for i := range ps {
		var b strings.Builder
		for j, m := 0, 5+r.IntN(200); j < m; j++ {
			if j > 0 {
				b.WriteString([]string{" ", " ", " ", ", ", ". ", "\n\n", " (", ") "}[r.IntN(8)])
			}
			b.WriteString(word())
		}
		text := b.String()
		version := "3.12"
		if r.IntN(3) == 0 {
			version = "3.13"
		}
		ps[i] = corpus.Passage{SourceID: fmt.Sprintf("p-%d", i), Version: version, URL: fmt.Sprintf("https://example.com/page%d.html#s%d", i/7, i),
			Title: fmt.Sprintf("Page %d", i/7), Text: text, TextSHA256: corpus.SHA256(text)}
	}
	return ps
}

// fts5Search is the query the Go scorers are held to: FTS5's own bm25()
// over an index built by Open, the version filtered inside the same
// statement as the order and the limit, ties by rowid.
func fts5Search(t *testing.T, ix *Index, query string, k int, version string) []Hit {
	t.Helper()
	q := `SELECT rowid, bm25(passages) FROM passages WHERE passages MATCH ?1 AND (?3 = '' OR version = ?3) ORDER BY bm25(passages), rowid LIMIT ?2`
	stmt, _, err := ix.conn.Prepare(q)
	require.NoError(t, err)
	defer stmt.Close()
	require.NoError(t, stmt.BindText(1, MatchExpression(Terms(query))))
	require.NoError(t, stmt.BindInt(2, k))
	require.NoError(t, stmt.BindText(3, version))
	var hits []Hit
	for stmt.Step() {
		hits = append(hits, Hit{Doc: stmt.ColumnInt(0) - 1, Rank: len(hits) + 1, Score: stmt.ColumnFloat(1)})
	}
	require.NoError(t, stmt.Err())
	return hits
}

// Both Go scorers, an image's and an index built by Open's, give FTS5's
// bm25 bit for bit: for random queries of one to eight terms, every k and
// version, the hits, their order (ties by rowid) and the float64 of every
// score equal those of FTS5's own query over an index built from the same
// texts. Under WASM too (make test-wasm).
func TestImageSearchEqualsFTS5(t *testing.T) {
	ps := synthetic(1500)
	data, err := Image(ps)
	require.NoError(t, err)
	ix, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	docs := make([]Doc, len(ps))
	for i, p := range ps {
		docs[i] = Doc{Version: p.Version, Text: p.Text}
	}
	built, err := Open(docs)
	require.NoError(t, err)
	defer built.Close()

	assert.Greater(t, equalsFTS5(t, ps, 3, built, ix, built), 10000, "the queries matched many rows")
}

// equalsFTS5 runs 300 random queries of one to eight of the first
// passages' words (and a few a tokenizer folds), drawn from seed, every k
// and version, and requires each of ranked to give the hits (ties by
// rowid) and the float64 scores of FTS5's own query over built. It
// returns how many hits were compared.
func equalsFTS5(t *testing.T, ps []corpus.Passage, seed uint64, built *Index, ranked ...*Index) int {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	words := strings.Fields(ps[0].Text + " " + ps[1].Text + " " + ps[2].Text + " cafe naive CAFÉ unheard zzz 3 12 13")
	compared := 0
	for q := 0; q < 300; q++ {
		var terms []string
		for j, m := 0, 1+r.IntN(8); j < m; j++ {
			terms = append(terms, words[r.IntN(len(words))])
		}
		query := strings.Join(terms, " ")
		if len(Terms(query)) == 0 {
			continue
		}
		k := []int{1, 3, 10, 2000}[q%4]
		version := []string{"", "3.12", "3.13", "9.9"}[(q/4)%4]
		want := fts5Search(t, built, query, k, version)
		for _, ix := range ranked {
			got, err := ix.Search(query, k, version)
			require.NoError(t, err)
			require.Equal(t, len(want), len(got), "%q k %d version %q", query, k, version)
			for i := range want {
				require.Equal(t, want[i].Doc, got[i].Doc, "%q k %d version %q rank %d", query, k, version, i+1)
				require.Equal(t, math.Float64bits(want[i].Score), math.Float64bits(got[i].Score), "%q rank %d: %v vs %v", query, i+1, want[i].Score, got[i].Score)
			}
		}
		compared += len(want)
	}
	return compared
}

// A snippet is made for each hit alone, by rowid, and is the very snippet
// FTS5 makes for that row in a query over every match; search after
// search, so each refill of the hits' table forgets the last one's.
func TestSnippetsArePerHit(t *testing.T) {
	ps := synthetic(300)
	data, err := Image(ps)
	require.NoError(t, err)
	ix, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	stmt, _, err := ix.conn.Prepare(fmt.Sprintf(`SELECT rowid, snippet(passages, 1, '%s', '%s', '%s', %d) FROM passages WHERE passages MATCH ?`,
		MarkOpen, MarkClose, Ellipsis, SnippetTokens))
	require.NoError(t, err)
	defer stmt.Close()
	for _, c := range []struct {
		query string
		k     int
	}{
		{"file path write_text Café", 5},
		{"json dumps ensure_ascii", 3},
		{"file path write_text Café", 8},
		{"naive newline", 1},
	} {
		hits, err := ix.SearchSnippets(c.query, c.k, "3.12")
		require.NoError(t, err)
		require.Len(t, hits, c.k, c.query)
		require.NoError(t, stmt.BindText(1, MatchExpression(Terms(c.query))))
		all := map[int]string{}
		for stmt.Step() {
			all[stmt.ColumnInt(0)] = stmt.ColumnText(1)
		}
		require.NoError(t, stmt.Reset())
		for _, h := range hits {
			assert.Equal(t, all[h.Doc+1], h.Snippet, c.query)
			assert.Contains(t, h.Snippet, MarkOpen, c.query)
		}
	}
}

// An image opens without reading a passage; each is read when asked, by
// rowid or source id, and whole images can still be read back.
func TestImageReadsPassagesWhenAsked(t *testing.T) {
	ps := synthetic(50)
	data, err := Image(ps)
	require.NoError(t, err)
	ix, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	assert.Equal(t, 50, ix.Len())
	doc, ok, err := ix.Lookup("p-17")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 17, doc)
	p, err := ix.Passage(doc)
	require.NoError(t, err)
	assert.Equal(t, ps[17], p)
	head, n, err := ix.Head(doc)
	require.NoError(t, err)
	assert.Equal(t, len(ps[17].Text), n)
	assert.Empty(t, head.Text)
	_, ok, err = ix.Lookup("p-999")
	require.NoError(t, err)
	assert.False(t, ok)
	st, ok := ix.Stats()
	require.True(t, ok)
	assert.Equal(t, 8, st.Pages)
	assert.Len(t, st.Bytes, 50)
	found, err := ix.HasURLs([]string{ps[3].URL, "https://example.com/nowhere"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{ps[3].URL: true}, found)
}

// Images that are not this format's are refused, each in one line.
func TestOpenImageRefusals(t *testing.T) {
	good, err := Image(fourPassages())
	require.NoError(t, err)
	_, err = OpenImage([]byte("not a database at all, not even close to one hundred bytes"))
	assert.ErrorContains(t, err, "not a SQLite database image")
	// A database without the image's tables (an FTS5 index built from text).
	built, err := Open(fourDocs())
	require.NoError(t, err)
	plain, err := serialize(built)
	require.NoError(t, err)
	built.Close()
	_, err = OpenImage(plain)
	assert.ErrorContains(t, err, "is not a ragagent-passages-sqlite/3 image")
	assert.NotNil(t, good)
}

func serialize(ix *Index) ([]byte, error) { return serdes.Serialize(ix.conn, "main") }

// FuzzOpenImage opens changed images: a file the checks let through may
// fail a search or a read, but nothing may panic.
func FuzzOpenImage(f *testing.F) {
	good, err := Image(fourPassages())
	require.NoError(f, err)
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := OpenImage(append([]byte(nil), data...))
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			return
		}
		defer ix.Close()
		for i := 0; i < ix.Len(); i++ {
			_, _, _ = ix.Head(i)
			_, _ = ix.Passage(i)
		}
		_, _, _ = ix.Lookup("path-write")
		_, _ = ix.Search("write text file path", 3, "3.12")
		_, _ = ix.SearchSnippets("json path", 2, "")
	})
}

// BenchmarkSearchSnippets is one search of a run's search tool: the
// image's scorer, then each hit's snippet.
func BenchmarkSearchSnippets(b *testing.B) {
	data, err := Image(synthetic(300))
	require.NoError(b, err)
	ix, err := OpenImage(data)
	require.NoError(b, err)
	defer ix.Close()
	for b.Loop() {
		if _, err := ix.SearchSnippets("file path write_text Café", 10, "3.12"); err != nil {
			b.Fatal(err)
		}
	}
}

// An image keeps each passage's aliases: read back with its head, in
// every head, and found by HasURLs as its URL is.
func TestImageKeepsAliases(t *testing.T) {
	ps := synthetic(20)
	page, _, _ := strings.Cut(ps[5].URL, "#")
	ps[5].Aliases = []string{page + "#re.IGNORECASE", page + "#index-3"}
	data, err := Image(ps)
	require.NoError(t, err)
	ix, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	p, err := ix.Passage(5)
	require.NoError(t, err)
	assert.Equal(t, ps[5], p)
	heads, err := ix.Heads()
	require.NoError(t, err)
	assert.Equal(t, ps[5].Aliases, heads[5].Aliases)
	assert.Nil(t, heads[4].Aliases)
	found, err := ix.HasURLs([]string{page + "#index-3", page + "#nowhere"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{page + "#index-3": true}, found)
}

// An image of format 2 (made before aliases: a pack a user built before)
// still opens, searches and reads; its passages have no aliases.
func TestImageOfFormat2StillOpens(t *testing.T) {
	ps := synthetic(20)
	data, err := Image(ps)
	require.NoError(t, err)
	old := downgradeToFormat2(t, data)
	ix, err := OpenImage(old)
	require.NoError(t, err)
	defer ix.Close()
	p, err := ix.Passage(3)
	require.NoError(t, err)
	assert.Equal(t, ps[3], p)
	heads, err := ix.Heads()
	require.NoError(t, err)
	assert.Len(t, heads, 20)
	found, err := ix.HasURLs([]string{ps[3].URL})
	require.NoError(t, err)
	assert.True(t, found[ps[3].URL])
}

// downgradeToFormat2 rewrites an image as format 2 wrote it: no aliases
// column or table, and the old tag.
func downgradeToFormat2(t *testing.T, data []byte) []byte {
	t.Helper()
	conn, err := sqlite3.Open(":memory:")
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, fts5.Register(conn))
	require.NoError(t, serdes.Deserialize(conn, "main", append([]byte(nil), data...)))
	require.NoError(t, conn.Exec(`DROP TABLE aliases; ALTER TABLE meta DROP COLUMN aliases; UPDATE format SET tag = '`+imageFormat2+`'; VACUUM`))
	got, _, err := conn.Prepare(`SELECT sql FROM sqlite_schema WHERE name = 'meta'`)
	require.NoError(t, err)
	require.True(t, got.Step())
	require.Equal(t, metaSchema2, got.ColumnText(0))
	got.Close()
	out, err := serdes.Serialize(conn, "main")
	require.NoError(t, err)
	return out
}
