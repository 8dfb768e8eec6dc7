package store

import (
	"testing"

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
	ix, ps, err := OpenImage(data)
	require.NoError(t, err)
	defer ix.Close()
	assert.Equal(t, fourPassages(), ps)
	built, err := Open(fourDocs())
	require.NoError(t, err)
	defer built.Close()
	for _, version := range []string{"3.12", ""} {
		want, err := built.Search("Will write_text replace the contents of an existing file?", 3, version)
		require.NoError(t, err)
		got, err := ix.Search("Will write_text replace the contents of an existing file?", 3, version)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
