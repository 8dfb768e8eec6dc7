package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/fixtures"
)

// snapshotImage opens an image of the bundled snapshot's passages, closed
// when the test ends.
func snapshotImage(t *testing.T) (*corpus.Snapshot, *Index) {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	data, err := Image(snap.Passages)
	require.NoError(t, err)
	ix, err := OpenImage(data)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return snap, ix
}

// TestHasPages: a page is found when a passage's URL is the page or the
// page with a #fragment, never a longer page that starts with it.
func TestHasPages(t *testing.T) {
	_, ix := snapshotImage(t)
	found, err := ix.HasPages([]string{"https://docs.python.org/3.12/library/json.html", "https://docs.python.org/3.12/library/json.htm",
		"https://docs.python.org/3.12/library/pathlib.html", "https://docs.python.org/3.12/library/nowhere.html"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"https://docs.python.org/3.12/library/json.html": true, "https://docs.python.org/3.12/library/pathlib.html": true}, found)
}

// TestHeadsAreThePassagesWithoutText: an image's heads are its passages,
// in order, without their text.
func TestHeadsAreThePassagesWithoutText(t *testing.T) {
	snap, ix := snapshotImage(t)
	heads, err := ix.Heads()
	require.NoError(t, err)
	require.Len(t, heads, len(snap.Passages))
	for i, p := range snap.Passages {
		p.Text = ""
		assert.Equal(t, p, heads[i])
	}
}
