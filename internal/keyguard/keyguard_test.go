package keyguard_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/keyguard"
)

const key = "AIzaSyTEST-key-0123456789abcdef"

// Lines are passed on whole once checked, however they are written; a line
// holding the key is replaced by the notice and the guard remembers it.
func TestLinesWithholdWhatHoldsTheKey(t *testing.T) {
	var out bytes.Buffer
	g := keyguard.New(" " + key + "\n")
	w := g.Writer(&out)
	for _, part := range []string{"first li", "ne\nthe key ", key[:5], key[5:] + " leaked\nlast, unterminated"} {
		_, err := w.Write([]byte(part))
		require.NoError(t, err)
	}
	assert.Equal(t, "first line\n"+keyguard.Withheld, out.String(), "the last line waits for Flush")
	require.NoError(t, w.Flush())
	assert.Equal(t, "first line\n"+keyguard.Withheld+"last, unterminated", out.String())
	assert.True(t, g.Leaked())

	quiet := keyguard.New("")
	assert.NoError(t, quiet.Check("anything", []byte(key)), "no key, nothing to guard")
	assert.False(t, quiet.Leaked())
}

// A file holding the key is not written; one that does not is written
// whole, and a fresh one is never written over.
func TestWriteFileRefusesTheKey(t *testing.T) {
	g := keyguard.New(key)
	path := filepath.Join(t.TempDir(), "out.json")
	assert.ErrorContains(t, g.WriteFile(path, []byte(`{"k": "`+key+`"}`), true), "it contains the API key; nothing was written")
	assert.NoFileExists(t, path)
	require.NoError(t, g.WriteFile(path, []byte("{}"), true))
	assert.Error(t, g.WriteFile(path, []byte("[]"), true), "a fresh file that exists is refused")
	require.NoError(t, g.WriteFile(path, []byte("[]"), false))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(data))
}
