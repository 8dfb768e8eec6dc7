package server_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ragagentlab/ragagent/internal/server"
)

// A pepper that does not look random is refused, saying how to make one;
// what openssl rand -hex 32 or 32 random bytes in base64 make is accepted,
// every time.
func TestPepperMustLookRandom(t *testing.T) {
	for _, row := range []struct{ name, pepper, want string }{
		{"empty", "", "0 bytes"},
		{"sixteen a's", strings.Repeat("a", 16), "16 bytes"},
		{"64 a's", strings.Repeat("a", 64), "repeated"},
		{"a short string repeated", strings.Repeat("0123456789abcdef", 4), "repeated"},
		{"a repeated string cut short", strings.Repeat("secret!", 6)[:40], "repeated"},
		{"an English sentence", "test pepper, sixteen bytes or more", "does not look random"},
		{"a longer one", "a pepper for the command tests, long enough", "does not look random"},
		{"32 hex digits: at most 128 bits", "3f9a1c07d2e84b6590acf1e2d3b4c5a6", "does not look random"},
	} {
		t.Run(row.name, func(t *testing.T) {
			err := server.CheckPepper([]byte(row.pepper))
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), row.want)
				assert.Contains(t, err.Error(), "openssl rand -hex 32")
			}
		})
	}
	for range 200 {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		assert.NoError(t, server.CheckPepper([]byte(hex.EncodeToString(b))))
		assert.NoError(t, server.CheckPepper([]byte(base64.StdEncoding.EncodeToString(b))))
	}
	assert.NoError(t, server.CheckPepper(pepper), "the tests' own")
}
