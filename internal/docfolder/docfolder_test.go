package docfolder_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/internal/docfolder"
)

// Read takes the documents the builder reads, by relative path, under the
// folders named (all when none are); hidden folders and other files are
// not read, and an oversized file is handed on unread for the builder to
// skip with its reason.
func TestReadTakesTheBuildersDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	write("guide/a.md", []byte("# A\n"))
	write("guide/b.html", []byte("<h1>B</h1>"))
	write("guide/logo.png", []byte{0x89, 'P'})
	write(".git/c.md", []byte("# hidden\n"))
	write("api/d.rst", []byte("D\n=\n"))
	write("api/big.txt", make([]byte, builder.MaxDocumentBytes+10))

	docs, err := docfolder.Read(dir, nil, nil)
	require.NoError(t, err)
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
	}
	assert.Equal(t, []string{"api/big.txt", "api/d.rst", "guide/a.md", "guide/b.html"}, paths)
	assert.Len(t, docs[0].Data, builder.MaxDocumentBytes+1, "over the cap: a placeholder the builder refuses")

	docs, err = docfolder.Read(dir, []string{"guide"}, []string{"guide/b.html"})
	require.NoError(t, err)
	assert.Len(t, docs, 1, "b.html excluded")
	_, err = docfolder.Read(dir, []string{"nowhere"}, nil)
	assert.ErrorContains(t, err, "has no .html, .md, .rst, .txt or .jsonl file under nowhere")
}
