package inputfile_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/inputfile"
)

// TestRead: one row per refusal, then a file within the cap.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	require.NoError(t, err)
	_, err = f.WriteString("[1,")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(200<<20)) // 200 MB, sparse: refused by its size, never read
	require.NoError(t, f.Close())
	small := filepath.Join(dir, "small.json")
	require.NoError(t, os.WriteFile(small, []byte(`{"a": 1}`), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(small, link))

	for _, c := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.json"), "no such file"},
		{"a directory", dir, "not a regular file"},
		{"a device that never ends", "/dev/zero", "not a regular file"},
		{"a pipe with no writer", fifo, "not a regular file"},
		{"over the cap", big, "is 209715200 bytes, over the cap of 67108864 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := inputfile.Read(c.path, 64<<20)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	data, err := inputfile.Read(link, 8)
	require.NoError(t, err, "a link to a regular file is read")
	assert.Equal(t, `{"a": 1}`, string(data))
	_, err = inputfile.Read(small, 7)
	var tl *inputfile.TooLargeError
	assert.ErrorAs(t, err, &tl, "one byte over is over")
}
