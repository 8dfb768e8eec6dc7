package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/reason"
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
	var record struct {
		Trials []struct {
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
	}
	require.NoError(t, json.Unmarshal(fixtures.Published, &record))
	lib := open(t)
	seen := map[string]bool{}
	for _, trial := range record.Trials {
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
	assert.Len(t, seen, 13)
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
