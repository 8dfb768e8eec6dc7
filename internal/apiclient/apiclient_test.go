package apiclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// client.gen.go is what oapi-codegen makes of api/openapi.json today: a
// change to the document without go generate ./internal/apiclient fails
// here.
func TestGeneratedClientIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs oapi-codegen")
	}
	// The committed configuration, writing elsewhere.
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	require.NoError(t, err)
	cfg = bytes.Replace(cfg, []byte("output: client.gen.go"), []byte("output: "+out), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cfg.yaml"), cfg, 0o644))
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", filepath.Join(dir, "cfg.yaml"), "../../api/openapi.json")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, string(msg))
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile("client.gen.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "go generate ./internal/apiclient")
}
