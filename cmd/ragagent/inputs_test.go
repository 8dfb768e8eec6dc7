package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryInputFileIsBounded: every flag that names a file to read
// refuses, at once and in one line, a device that never ends (/dev/zero
// grew without bound), a pipe, a directory and a 200 MB file (which took
// 8.4 GB and two minutes to refuse), and --max-input-bytes lowers or
// raises the cap.
func TestEveryInputFileIsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	require.NoError(t, err)
	_, err = f.WriteString("[1,")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(200<<20))
	require.NoError(t, f.Close())
	bundled := filepath.Join("..", "..", "recordings", "agent-comparison.json")

	readers := []struct {
		name string
		args func(path string) []string
	}{
		{"replay --recording", func(p string) []string { return []string{"replay", "--recording", p} }},
		{"run --policy replay:", func(p string) []string { return []string{"run", "--policy", "replay:" + p} }},
		{"rerank --gemini", func(p string) []string { return []string{"rerank", "--gemini", p} }},
		{"rerank --cross-encoder", func(p string) []string { return []string{"rerank", "--cross-encoder", p} }},
		{"import-published --published", func(p string) []string { return []string{"import-published", "--published", p, "--check"} }},
		{"import-published --check --output", func(p string) []string { return []string{"import-published", "--output", p, "--check"} }},
	}
	for _, r := range readers {
		for _, c := range []struct {
			name, path, want string
			extra            []string
		}{
			{"/dev/zero", "/dev/zero", "not a regular file", nil},
			{"a pipe", fifo, "not a regular file", nil},
			{"a directory", dir, "not a regular file", nil},
			{"200 MB", big, "is 209715200 bytes, over the cap of 67108864 bytes on a file the lab reads; it was not read (--max-input-bytes raises the cap)", nil},
			{"a lowered cap", bundled, "over the cap of 1000 bytes", []string{"--max-input-bytes", "1000"}},
		} {
			t.Run(r.name+" "+c.name, func(t *testing.T) {
				args := append(r.args(c.path), c.extra...)
				done := make(chan struct{})
				var code int
				var out, errs string
				go func() {
					code, out, errs = ragagent(args...)
					close(done)
				}()
				select {
				case <-done:
				case <-time.After(time.Minute):
					t.Fatal("still reading after a minute")
				}
				assert.Equal(t, exitError, code)
				assert.Empty(t, out)
				assert.Contains(t, errs, c.want)
				assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			})
		}
	}
	code, _, errs := ragagent("replay", "--recording", bundled, "--max-input-bytes", "300000")
	assert.Equal(t, exitOK, code, errs)
	for _, bad := range []string{"0", "-1", "lots"} {
		code, _, _ = ragagent("replay", "--max-input-bytes", bad)
		assert.Equal(t, exitUsage, code, bad)
	}
}
