package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/filelock"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.json")
	require.NoError(t, Write(path, []byte("one")))
	require.NoError(t, Write(path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
}

func TestWriteIntoAMissingDirectoryFailsAndChangesNothing(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "no", "such", "dir", "f.json"), []byte("x"))
	assert.Error(t, err)
}

func TestWriteKeepsTheFilesPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	require.NoError(t, os.WriteFile(path, []byte("one"), 0o600))
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, Write(path, []byte("two")))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// TestCreateIsWholeOrNothingAndNeverOverwrites: a new file appears with
// its contents in one step; an existing one is refused and kept.
func TestCreateIsWholeOrNothingAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "recording.json")
	require.NoError(t, Create(path, []byte(`{"format": 1}`)))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `{"format": 1}`, string(got))
	err = Create(path, []byte("other"))
	assert.ErrorIs(t, err, fs.ErrExist)
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `{"format": 1}`, string(got), "kept")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

// TestCleanRemovesOnlyWhatAKilledWriterLeft: an old, unlocked temporary
// file is removed; one a live writer holds, one just made, and files not
// named as temporary files are kept.
func TestCleanRemovesOnlyWhatAKilledWriterLeft(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Minute)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o644))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
	mk(".r.json.111.ragagent.tmp", old)         // a killed writer's
	held := mk(".r.json.222.ragagent.tmp", old) // a live writer's
	mk(".r.json.333.ragagent.tmp", time.Now())  // just created
	mk(".other.tmp", old)                       // not ours
	mk("r.json", old)                           // the target
	f, err := os.Open(held)
	require.NoError(t, err)
	defer f.Close()
	ok, err := filelock.TryLock(f)
	require.NoError(t, err)
	require.True(t, ok)

	removed, err := Clean(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{".r.json.111.ragagent.tmp"}, removed)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".r.json.222.ragagent.tmp", ".r.json.333.ragagent.tmp", ".other.tmp", "r.json"}, names)
}
