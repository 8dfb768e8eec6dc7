package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProgressLines steps a progress through 767 documents, 10 ms each,
// on a clock the test moves: into a pipe it writes whole lines, one every
// two seconds and the last; on a terminal it redraws one line every half
// second and ends it when done (the goldens hold both outputs).
func TestProgressLines(t *testing.T) {
	for _, c := range []struct {
		name string
		tty  bool
	}{
		{"progress-pipe.txt", false},
		{"progress-terminal.txt", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			p := &progress{w: &out, verb: "read", tty: c.tty, now: func() time.Time { return clock }}
			for i := 1; i <= 767; i++ {
				clock = clock.Add(10 * time.Millisecond)
				p.step(i, 767)
			}
			p.done()
			golden(t, c.name, out.String())
			if !c.tty {
				assert.NotContains(t, out.String(), "\r", "no carriage return goes into a pipe")
			}
			assert.True(t, strings.HasSuffix(out.String(), "read 767/767 documents\n"), "the last count is written, its line ended")
		})
	}
}

// A short step into a pipe writes only its last count.
func TestProgressShortStepIntoAPipe(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progress{w: &out, verb: "read", now: func() time.Time { return clock }}
	for i := 1; i <= 3; i++ {
		p.step(i, 3)
	}
	p.done()
	assert.Equal(t, "read 3/3 documents\n", out.String())
}

func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w), "a pipe")
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f), "a file")
	assert.False(t, isTerminal(&bytes.Buffer{}), "a buffer")
}

// TestEvalProgressIntoAPipe: eval's progress into a file or a pipe is
// whole lines (the last count at least), never a carriage return.
func TestEvalProgressIntoAPipe(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--corpus", "python-3.11", "--cases", filepath.Join("testdata", "small-set.tsv")},
		{"eval", "--policy", "replay:" + filepath.Join("..", "..", "recordings", "agent-comparison.json")},
	} {
		code, _, stderr := ragagent(args...)
		require.Equal(t, exitOK, code, stderr)
		assert.NotContains(t, stderr, "\r", "%v: no carriage return goes into a pipe", args)
		assert.Regexp(t, `(?m)^ran (\d+)/(\d+) trials\n`, stderr, "%v: the last count, its line ended", args)
	}
}
