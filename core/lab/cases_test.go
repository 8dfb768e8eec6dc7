package lab

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/fixtures"
)

// TestCasesAreCheckedAgainstThePack: a case without a version takes the
// pack's default; a page-level target needs some passage of its page; an
// unknown version, source or URL is an invalid_cases refusal naming the
// case and the field.
func TestCasesAreCheckedAgainstThePack(t *testing.T) {
	const head = `{"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "q?"`
	l, err := OpenPack(fixtures.SeedManifest, fixtures.Snapshot, []byte(head+`, "target_urls": ["https://docs.python.org/3.12/library/json.html"]}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "3.12", l.Cases.Cases[0].Version, "the seed's default version")
	l.Close()
	for _, c := range []struct{ name, tail, want string }{
		{"page nobody has", `, "target_urls": ["https://docs.python.org/3.12/library/nowhere.html"]}]}`, `case 1 ("a"): target_urls: no passage is on the page`},
		{"anchor nobody has", `, "target_urls": ["https://docs.python.org/3.12/library/json.html#nowhere"]}]}`, `case 1 ("a"): target_urls: no passage has the URL`},
		{"unknown source", `, "sources": ["nowhere"]}]}`, `case 1 ("a"): sources: "nowhere"`},
		{"unknown version", `, "version": "3.9"}]}`, `case 1 ("a"): version: 3.9 is not one of the corpus's versions (3.12, 3.13)`},
		{"an alias of another page", `, "target_urls": ["https://docs.python.org/3.12/library/nowhere.html#json-text"]}]}`, `case 1 ("a"): target_urls: no passage has the URL`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenPack(fixtures.SeedManifest, fixtures.Snapshot, []byte(head+c.tail), nil)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, reason.InvalidCases, code)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestCasesNameAPassageByAlias: a target naming an alias is accepted, for
// a JSON pack as for an image, and matches the passage as its canonical
// URL does (experiment.Rank matches a ranking's heads by Case.Matches).
func TestCasesNameAPassageByAlias(t *testing.T) {
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	passages := append([]corpus.Passage(nil), snap.Passages...)
	page, _, _ := strings.Cut(passages[0].URL, "#")
	alias := page + "#an-alias"
	passages[0].Aliases = []string{alias}
	for _, encoding := range []string{corpus.EncodingJSON, corpus.EncodingSQLite} {
		t.Run(encoding, func(t *testing.T) {
			manifest, file := packFiles(t, passages, encoding)
			ideals := map[string][]int{}
			for _, target := range []string{passages[0].URL, alias} {
				cases := `{"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "q?", "target_urls": ["` + target + `"]}]}`
				l, err := OpenPack(manifest, file, []byte(cases), nil)
				require.NoError(t, err, target)
				require.NoError(t, l.Ranking(func(_ *retrieval.Base, heads []corpus.Passage, _ func(func() error) error) error {
					assert.True(t, l.Cases.Cases[0].Matches(heads[0]), target)
					ideals[target] = experiment.Ideals([]*evaluate.Case{&l.Cases.Cases[0]}, heads, 10)
					return nil
				}))
				l.Close()
			}
			assert.Equal(t, []int{1}, ideals[alias])
			assert.Equal(t, ideals[passages[0].URL], ideals[alias])
		})
	}
}

// packFiles are a pack's manifest and passages file of passages in an
// encoding.
func packFiles(t *testing.T, passages []corpus.Passage, encoding string) ([]byte, []byte) {
	t.Helper()
	var data []byte
	var err error
	name := "passages.json"
	if encoding == corpus.EncodingSQLite {
		data, err = store.Image(passages)
		name = "passages.sqlite"
	} else {
		data, err = corpus.EncodeJSON("", passages)
	}
	require.NoError(t, err)
	m := &corpus.Manifest{Format: corpus.PackFormat, ID: "aliases", Title: "t", Language: "en", Versions: []string{"3.12", "3.13"},
		DefaultVersion: "3.12", SearchK: 2, Licence: "l", Attribution: "a", Source: "s", MadeBy: "m", Passages: len(passages),
		PassagesSHA256: corpus.SHA256(string(data)), PassagesEncoding: encoding, PassagesFile: name, PassagesBytes: len(data)}
	manifest, err := corpus.EncodeManifest(m)
	require.NoError(t, err)
	return manifest, data
}
