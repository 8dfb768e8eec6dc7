package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/fixtures"
)

func open(t *testing.T) *Library {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := Open(snap)
	require.NoError(t, err)
	t.Cleanup(func() { lib.Close() })
	return lib
}

// TestEveryPublishedSearchIsReproduced runs each distinct search of the
// published comparison and expects the same candidates in the same ranks.
func TestEveryPublishedSearchIsReproduced(t *testing.T) {
	var record struct{ Trials []publishedTrial }
	require.NoError(t, json.Unmarshal(fixtures.Published, &record))
	for name, lib := range map[string]*Library{"built": open(t), "lexicon": openSeedLexicon(t)} {
		t.Run(name, func(t *testing.T) {
			assert.Len(t, publishedSearches(t, lib, record.Trials), 13)
		})
	}
}

// publishedTrial is what a published trial says of its searches.
type publishedTrial struct {
	Result struct {
		Version      string
		Observations []struct {
			Tool      string
			Arguments struct{ Query string }
			Result    struct {
				Candidates []struct {
					SourceID string `json:"source_id"`
					Rank     int
					Version  string
				}
			}
		}
	}
}

// publishedSearches searches lib with each distinct published search and
// checks its candidates and ranks; it returns the searches made.
func publishedSearches(t *testing.T, lib *Library, trials []publishedTrial) map[string]bool {
	seen := map[string]bool{}
	for _, trial := range trials {
		for _, o := range trial.Result.Observations {
			key := trial.Result.Version + "\x00" + o.Arguments.Query
			if o.Tool != "search" || seen[key] {
				continue
			}
			seen[key] = true
			handles, err := lib.Search(o.Arguments.Query, 2, trial.Result.Version)
			require.NoError(t, err)
			require.Len(t, handles, len(o.Result.Candidates), o.Arguments.Query)
			for i, c := range o.Result.Candidates {
				assert.Equal(t, c.SourceID, handles[i].SourceID, o.Arguments.Query)
				assert.Equal(t, c.Rank, handles[i].Rank, o.Arguments.Query)
				assert.Equal(t, c.Version, handles[i].Version, o.Arguments.Query)
			}
		}
	}
	return seen
}

func TestHandlesCarryBytesAndReceipts(t *testing.T) {
	lib := open(t)
	handles, err := lib.Search("Path.write_text", 2, "3.12")
	require.NoError(t, err)
	require.NotEmpty(t, handles)
	h := handles[0]
	assert.Equal(t, Handle{SourceID: "path-write", Rank: 1, Version: "3.12", Bytes: 224,
		TextSHA256: "a48b4b9f763cd6309ebe32af19c5a814adcf810c2259683da9f328ccee46948e"}, h)
	assert.Equal(t, 224, lib.ReadCost(h))
	p, err := lib.Read(h)
	require.NoError(t, err)
	assert.NoError(t, lib.ValidateRead(p, h))

	scored, err := lib.Explain("Path.write_text", 2, "3.12")
	require.NoError(t, err)
	assert.Less(t, scored[0].Score, scored[1].Score, "bm25 is lower for the better match")
}

func TestValidateRefusesAChangedRead(t *testing.T) {
	lib := open(t)
	handles, err := lib.Search("Path.write_text", 1, "3.12")
	require.NoError(t, err)
	h := handles[0]
	good, err := lib.Read(h)
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		change func(p *corpus.Passage)
	}{
		{"text edited after issue", func(p *corpus.Passage) { p.Text += " Edited." }},
		{"receipt swapped with the text", func(p *corpus.Passage) { p.Text += "!"; p.TextSHA256 = corpus.SHA256(p.Text) }},
		{"another source", func(p *corpus.Passage) { p.SourceID = "path-read" }},
		{"another version", func(p *corpus.Passage) { p.Version = "3.13" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.change(&p)
			code, ok := reason.Of(lib.ValidateRead(p, h))
			require.True(t, ok)
			assert.Equal(t, reason.ChangedRead, code)
		})
	}
}

func TestSearchWithoutTermsIsAnInvalidQuery(t *testing.T) {
	_, err := open(t).Search("??? ...", 2, "3.12")
	code, ok := reason.Of(err)
	require.True(t, ok)
	assert.Equal(t, reason.InvalidQuery, code)
}

// imagePack is the seed's passages as an image pack, each changed by edit
// first (the image holds what it is given; a pack is checked when used).
func imagePack(t *testing.T, edit func([]corpus.Passage)) *Library {
	t.Helper()
	m, data := imagePackFile(t, edit)
	lib, err := OpenPack(m, data, nil)
	require.NoError(t, err, "an image opens without reading its passages")
	t.Cleanup(func() { lib.Close() })
	return lib
}

// imagePackFile is imagePack's manifest and passages file.
func imagePackFile(t *testing.T, edit func([]corpus.Passage)) (*corpus.Manifest, []byte) {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	ps := append([]corpus.Passage(nil), snap.Passages...)
	edit(ps)
	data, err := store.Image(ps)
	require.NoError(t, err)
	m := &corpus.Manifest{Format: corpus.PackFormat, ID: "img", Title: "t", Language: "en", Versions: []string{"3.12", "3.13"},
		DefaultVersion: "3.12", SearchK: 2, Licence: "l", Attribution: "a", Source: "s", MadeBy: "m", Passages: len(ps),
		PassagesSHA256: corpus.SHA256(string(data)), PassagesEncoding: corpus.EncodingSQLite, PassagesFile: "passages.sqlite", PassagesBytes: len(data)}
	require.NoError(t, m.Validate())
	return m, data
}

// An image pack's passages are checked when first used: a search that
// issues a malformed one fails naming it, a read of a text that no longer
// matches its receipt is refused as changed_read, and Verify reads them all.
func TestImagePackChecksPassagesWhenUsed(t *testing.T) {
	good := imagePack(t, func([]corpus.Passage) {})
	require.NoError(t, good.Verify())
	hs, err := good.Search("write_text overwrite existing file", 2, "3.12")
	require.NoError(t, err)
	require.Equal(t, "path-write", hs[0].SourceID)
	p, err := good.Read(hs[0])
	require.NoError(t, err)
	require.NoError(t, good.ValidateRead(p, hs[0]))
	_, err = good.Read(Handle{SourceID: "nowhere"})
	assert.Equal(t, reason.UnissuedSource, mustCode(t, err))

	badURL := imagePack(t, func(ps []corpus.Passage) { ps[2].URL = "http://docs.python.org/x" })
	_, err = badURL.Search("write_text overwrite existing file", 2, "3.12")
	assert.ErrorContains(t, err, `pack img: passage 3 ("path-write"): url "http://docs.python.org/x" is not an absolute https URL`)
	assert.ErrorContains(t, badURL.Verify(), `passage 3 ("path-write")`)

	changed := imagePack(t, func(ps []corpus.Passage) { ps[2].Text = "An existing file is kept." })
	hs, err = changed.Search("write_text overwrite existing file", 2, "3.12")
	require.NoError(t, err, "a search reads no text")
	p, err = changed.Read(hs[0])
	require.NoError(t, err)
	assert.Equal(t, reason.ChangedRead, mustCode(t, changed.ValidateRead(p, hs[0])))
	assert.ErrorContains(t, changed.Verify(), `pack img: passage 3 ("path-write"): text_sha256`)

	// A repeated id cannot even be written: meta's source id is unique.
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	ps := append([]corpus.Passage(nil), snap.Passages...)
	ps[1].SourceID = ps[0].SourceID
	_, err = store.Image(ps)
	assert.ErrorContains(t, err, "UNIQUE constraint failed: meta.source_id")
}

func mustCode(t *testing.T, err error) reason.Code {
	t.Helper()
	code, ok := reason.Of(err)
	require.True(t, ok, "%v", err)
	return code
}
