package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatisticsAreTheSameForAnImageAndABuiltIndex: the accessors a
// ranking of its own reads (vocabulary, postings, token counts, versions,
// labels, texts) say the same of an image and of an index built by Open
// from the same passages, and the postings are FTS5's: a term's
// frequencies add up to its occurrences.
func TestStatisticsAreTheSameForAnImageAndABuiltIndex(t *testing.T) {
	ps := synthetic(300)
	data, err := Image(ps)
	require.NoError(t, err)
	img, err := OpenImage(data)
	require.NoError(t, err)
	defer img.Close()
	docs := make([]Doc, len(ps))
	for i, p := range ps {
		docs[i] = Doc{Version: p.Version, Text: p.Text, Title: p.Title, URL: p.URL}
	}
	built, err := Open(docs)
	require.NoError(t, err)
	defer built.Close()

	v1, err := img.Vocabulary()
	require.NoError(t, err)
	v2, err := built.Vocabulary()
	require.NoError(t, err)
	require.NotEmpty(t, v1)
	assert.Equal(t, v1, v2)
	for _, term := range v1[:min(len(v1), 200)] {
		d1, f1, err := img.Postings(term)
		require.NoError(t, err)
		d2, f2, err := built.Postings(term)
		require.NoError(t, err)
		assert.Equal(t, d1, d2, term)
		assert.Equal(t, f1, f2, term)
	}
	d, f, err := built.Postings("nosuchtermanywhere")
	require.NoError(t, err)
	assert.Empty(t, d)
	assert.Empty(t, f)
	t1, err := img.DocTokens()
	require.NoError(t, err)
	t2, err := built.DocTokens()
	require.NoError(t, err)
	assert.Equal(t, t1, t2)
	assert.Equal(t, img.DocVersions(), built.DocVersions())
	ti1, u1, err := img.Labels()
	require.NoError(t, err)
	ti2, u2, err := built.Labels()
	require.NoError(t, err)
	assert.Equal(t, ti1, ti2)
	assert.Equal(t, u1, u2)
	for _, i := range []int{0, 17, len(ps) - 1} {
		x, err := img.Text(i)
		require.NoError(t, err)
		y, err := built.Text(i)
		require.NoError(t, err)
		assert.Equal(t, ps[i].Text, x)
		assert.Equal(t, x, y)
	}
	_, err = built.Text(len(ps))
	assert.Error(t, err)
}
