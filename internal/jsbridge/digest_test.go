//go:build js && wasm

package jsbridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// The platform's sha256 is Go's, byte for byte, for empty, short and
// large inputs.
func TestPlatformSHA256IsGos(t *testing.T) {
	for _, in := range []string{"", "abc", strings.Repeat("passage ⟦text⟧\n", 200000)} {
		got, err := SHA256([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, corpus.SHA256(in), got, "%d bytes", len(in))
	}
}
