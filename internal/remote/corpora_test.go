package remote_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/remote"
)

// entries are an archive's files by name, in order.
func entries(t *testing.T, archive []byte) (names []string, data map[string]string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	data = map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, data
		}
		require.NoError(t, err)
		assert.Equal(t, byte(tar.TypeReg), h.Typeflag, h.Name)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		names, data[h.Name] = append(names, h.Name), string(b)
	}
}

// TestPackArchiveHoldsTheManifestAndItsPassagesFile: a pack folder's
// archive is its manifest and the passages file it names, nothing else
// (the folder's other files stay out: the server refuses a file the pack
// does not name); a manifest that is not one, or whose passages_file is
// not a plain name beside it, is refused before anything is sent.
func TestPackArchiveHoldsTheManifestAndItsPassagesFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("passages.json", `{"passages": []}`)
	write("notes.txt", "not the pack's")
	for _, tc := range []struct {
		name, manifest, refused string
	}{
		{"a pack", `{"format": "ragagent-corpus/1", "passages_file": "passages.json"}`, ""},
		{"not JSON", `{"format":`, "not a pack's manifest"},
		{"no passages file", `{"format": "ragagent-corpus/1"}`, "passages_file must be a plain file name"},
		{"a path out of the folder", `{"passages_file": "../passages.json"}`, "passages_file must be a plain file name"},
		{"a hidden file", `{"passages_file": ".passages.json"}`, "passages_file must be a plain file name"},
		{"a Windows path", `{"passages_file": "a\\passages.json"}`, "passages_file must be a plain file name"},
		{"a file that is not there", `{"passages_file": "gone.json"}`, "gone.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("manifest.json", tc.manifest)
			archive, err := remote.PackArchive(dir, os.ReadFile)
			if tc.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refused)
				return
			}
			require.NoError(t, err)
			names, data := entries(t, archive)
			assert.Equal(t, []string{"manifest.json", "passages.json"}, names)
			assert.Equal(t, tc.manifest, data["manifest.json"])
			assert.Equal(t, `{"passages": []}`, data["passages.json"])
		})
	}
	_, err := remote.PackArchive(filepath.Join(dir, "none"), os.ReadFile)
	assert.ErrorContains(t, err, "manifest.json", "no manifest")
}

// FuzzPackArchive: whatever the manifest holds, PackArchive refuses it or
// archives exactly two files, the second a plain name in the folder.
func FuzzPackArchive(f *testing.F) {
	f.Add(`{"passages_file": "passages.json"}`)
	f.Add(`{"passages_file": "../../etc/passwd"}`)
	f.Add(`{"passages_file": "/etc/passwd"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, manifest string) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "passages.json"), []byte("{}"), 0o644))
		read := func(path string) ([]byte, error) {
			if filepath.Dir(path) != dir {
				t.Fatalf("read %s, outside the folder", path)
			}
			return os.ReadFile(path)
		}
		archive, err := remote.PackArchive(dir, read)
		if err != nil {
			return
		}
		names, _ := entries(t, archive)
		require.Len(t, names, 2)
		assert.Equal(t, "manifest.json", names[0])
		assert.Equal(t, filepath.Base(names[1]), names[1])
	})
}
