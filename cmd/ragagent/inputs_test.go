package main

import (
	"encoding/json"
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
	// A --corpus folder's manifest.json that is a directory.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "manifest.json"), 0o755))
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
	readers = append(readers, corpusReaders...)
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
			t.Run(r.name+" "+c.name, func(t *testing.T) { refusedInOneLine(t, c.want, withFlags(r.args(c.path), c.path, c.extra)...) })
		}
	}
	code, _, errs := ragagent("replay", "--recording", bundled, "--max-input-bytes", "300000")
	assert.Equal(t, exitOK, code, errs)
	code, _, errs = ragagent("search", "--corpus", "python-3.11", "--max-input-bytes", "1000", "write", "text") // an embedded pack is not a file read
	assert.Equal(t, exitOK, code, errs)
	code, _, errs = ragagent("search", "--corpus", packWith(t, "", nil), "--max-input-bytes", "20000000", "write", "text")
	assert.Equal(t, exitOK, code, errs)
	for _, bad := range []string{"0", "-1", "lots"} {
		code, _, _ = ragagent("replay", "--max-input-bytes", bad)
		assert.Equal(t, exitUsage, code, bad)
	}
}

// corpusReaders are the commands that read a --corpus pack folder or
// manifest.
var corpusReaders = []struct {
	name string
	args func(path string) []string
}{
	{"search --corpus", func(p string) []string { return []string{"search", "--corpus", p, "write"} }},
	{"corpus info", func(p string) []string { return []string{"corpus", "info", p} }},
	{"run --corpus", func(p string) []string { return []string{"run", "--corpus", p, "--question", "How do I write a file?"} }},
	{"live --corpus", func(p string) []string { return []string{"live", "--corpus", p} }},
	{"eval --corpus", func(p string) []string { return []string{"eval", "--corpus", p} }},
	{"rerank --corpus", func(p string) []string { return []string{"rerank", "--corpus", p} }},
}

// packWith is a copy of the Python pack's folder whose passages file is
// made by passages (nil: the pack's own) and whose manifest has change
// applied to it (a JSON object's fields replaced; "" for none).
func packWith(t *testing.T, change string, passages func(path string)) string {
	t.Helper()
	src := filepath.Join("..", "..", "fixtures", "packs", "python-3.11")
	data, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	if change != "" {
		require.NoError(t, json.Unmarshal([]byte(change), &m))
	}
	data, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644))
	file := filepath.Join(dir, m["passages_file"].(string))
	if passages != nil {
		passages(file)
		return dir
	}
	gz, err := os.ReadFile(filepath.Join(src, m["passages_file"].(string)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, gz, 0o644))
	return dir
}

// TestEveryCorpusPackIsBounded: a --corpus pack folder's passages file is
// read as every input is (a pipe hung the command, /dev/zero was read up
// to the manifest's size), and a manifest claiming more passages bytes
// than the cap is refused before anything is read (200 GiB was a fatal
// out-of-memory), in one line naming it.
func TestEveryCorpusPackIsBounded(t *testing.T) {
	fifo := packWith(t, "", func(p string) { require.NoError(t, syscall.Mkfifo(p, 0o600)) })
	zero := packWith(t, "", func(p string) { require.NoError(t, os.Symlink("/dev/zero", p)) })
	folder := packWith(t, "", func(p string) { require.NoError(t, os.Mkdir(p, 0o755)) })
	huge := packWith(t, `{"passages_bytes": 214748364800}`, nil)
	for _, r := range corpusReaders {
		for _, c := range []struct {
			name, path, want string
			extra            []string
		}{
			{"passages in a pipe", fifo, "not a regular file", nil},
			{"passages from /dev/zero", zero, "not a regular file", nil},
			{"passages in a directory", folder, "not a regular file", nil},
			{"passages_bytes of 200 GiB", huge, filepath.Join(huge, "manifest.json") + ": passages_bytes 214748364800 is over the cap of 67108864 bytes on a file the lab reads; nothing was read (--max-input-bytes raises the cap)", nil},
			{"passages_bytes over a lowered cap", packWith(t, "", nil), "passages_bytes 17580032 is over the cap of 10000000 bytes", []string{"--max-input-bytes", "10000000"}},
		} {
			t.Run(r.name+" "+c.name, func(t *testing.T) { refusedInOneLine(t, c.want, withFlags(r.args(c.path), c.path, c.extra)...) })
		}
	}
}

// refusedInOneLine runs the command line and checks it refused at once
// (within a minute: a read that never ends fails), printing nothing on
// stdout and one line holding want on stderr.
func refusedInOneLine(t *testing.T, want string, args ...string) {
	t.Helper()
	code, out, errs := within(t, time.Minute, args...)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, want)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
}

// within runs the command line, failing the test if it takes longer than
// d (a read that never ends).
func within(t *testing.T, d time.Duration, args ...string) (code int, out, errs string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		code, out, errs = ragagent(args...)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("still reading after", d)
	}
	return code, out, errs
}

// withFlags puts extra right after path in args (before a query that ends
// them), or at the end.
func withFlags(args []string, path string, extra []string) []string {
	i := len(args)
	for j, a := range args {
		if a == path {
			i = j + 1
		}
	}
	return append(append(append([]string{}, args[:i]...), extra...), args[i:]...)
}
