package tools

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/fixtures"
)

var update = flag.Bool("update", false, "rewrite fixtures/seed-lexicon.json from the seed's index")

func seedManifest(t *testing.T) *corpus.Manifest {
	t.Helper()
	m, err := corpus.ParseManifest(fixtures.SeedManifest)
	require.NoError(t, err)
	return m
}

// openSeedLexicon is the seed as the engine opens it: from its lexicon.
func openSeedLexicon(t *testing.T) *Library {
	t.Helper()
	lib, err := OpenPackWith(seedManifest(t), fixtures.Snapshot, fixtures.SeedLexicon, nil)
	require.NoError(t, err)
	t.Cleanup(func() { lib.Close() })
	return lib
}

// The seed's lexicon is the index FTS5 builds from the seed's passages
// now: a change to the passages (or to how they are indexed) fails here
// until the lexicon is made again (-update).
func TestSeedLexiconIsTheSeedsIndex(t *testing.T) {
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	want, err := Lexicon(snap, seedManifest(t).PassagesSHA256)
	require.NoError(t, err)
	want = append(want, '\n')
	if *update {
		require.NoError(t, os.WriteFile("../../fixtures/seed-lexicon.json", want, 0o644))
		return
	}
	assert.True(t, bytes.Equal(want, fixtures.SeedLexicon), "fixtures/seed-lexicon.json is not the seed's index: go test ./core/tools -run TestSeedLexiconIsTheSeedsIndex -update")
}

// OpenPackWith refuses a lexicon it cannot trust, and any lexicon for an
// image (an image is its own).
func TestOpenPackWithRefusesAForeignLexicon(t *testing.T) {
	m := seedManifest(t)
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	other, err := Lexicon(snap, "0000000000000000000000000000000000000000000000000000000000000000")
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		lexicon []byte
		err     string
	}{
		{"not JSON", []byte("{"), "not JSON"},
		{"other passages", other, "made from passages with sha256"},
		{"inconsistent", bytes.Replace(fixtures.SeedLexicon, []byte(`"tokens":[`), []byte(`"tokens":[1`), 1), "tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenPackWith(m, fixtures.Snapshot, c.lexicon, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
			assert.Contains(t, err.Error(), "pack seed")
		})
	}
	im, data := imagePackFile(t, func([]corpus.Passage) {})
	_, err = OpenPackWith(im, data, fixtures.SeedLexicon, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pack img: a lexicon is for a pack of JSON passages")
}
