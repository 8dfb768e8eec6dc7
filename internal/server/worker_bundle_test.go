package server_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cloudflareScriptLimit is the compressed size up to which Cloudflare
// takes a Worker's script on the paid plan (10 MiB; the free plan's is
// 3 MiB): `wrangler deploy` refuses a larger one.
const cloudflareScriptLimit = 10 << 20

// dryRunGzip is the compressed size `wrangler deploy --dry-run` reports
// for the Worker whose script is build/worker.mjs under dir (wrangler's
// own measure, offline): bytes.
func dryRunGzip(t *testing.T, root, dir string) int {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(root, "worker", "wrangler.toml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wrangler.toml"), conf, 0o644))
	cmd := exec.Command(filepath.Join(root, "node_modules", ".bin", "wrangler"), "deploy", "--dry-run", "--outdir", filepath.Join(dir, "out"))
	cmd.Dir = dir
	cmd.Env = wranglerOffline(t, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stop := supervise(t, cmd)
	err = cmd.Wait()
	stop()
	require.NoError(t, err, "wrangler deploy --dry-run: %s", out.String())
	m := regexp.MustCompile(`Total Upload: [\d.]+ KiB / gzip: ([\d.]+) KiB`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "wrangler's size line: %s", out.String())
	kib, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return int(kib * 1024)
}

// TestTheWorkerBundleFitsCloudflare: the Worker as `make worker
// WORKER_PACKS=` builds it (the seed only: what the README deploys,
// uploading larger packs to R2) is within Cloudflare's script limit by
// wrangler's own measure, with room for what it says; the bundle as
// built here, with the packs WORKER_PACKS gave it, is measured and
// logged (the default, python-3.11, is over the limit: a local build).
func TestTheWorkerBundleFitsCloudflare(t *testing.T) {
	if testing.Short() {
		t.Skip("wrangler's dry run takes seconds: not in -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "node_modules", ".bin", "wrangler")); err != nil {
		t.Skip("the Worker tests need wrangler: npm ci installs it")
	}
	built := filepath.Join(root, "worker", "build")
	if _, err := os.Stat(filepath.Join(built, "app.wasm")); err != nil {
		t.Skip("the Worker tests need the built Worker: make worker")
	}
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "build"), 0o755))
	entries, err := os.ReadDir(built)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || e.Name() == "packs.mjs" {
			continue // the packs, and the module naming them
		}
		data, err := os.ReadFile(filepath.Join(built, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "build", e.Name()), data, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "build", "packs.mjs"), []byte("export const packs = [\n\n];\n"), 0o644))
	seed := dryRunGzip(t, root, dir)
	t.Logf("the seed-only Worker: %d KiB compressed, %.0f%% of the %d KiB limit", seed>>10, 100*float64(seed)/cloudflareScriptLimit, cloudflareScriptLimit>>10)
	assert.Less(t, seed, cloudflareScriptLimit, "the seed-only Worker is over Cloudflare's script limit: wrangler deploy refuses it")

	packs, err := os.ReadFile(filepath.Join(built, "packs.mjs"))
	require.NoError(t, err)
	names := regexp.MustCompile(`"\./packs/([^"]+)\.passages\.sqlite\.gz"`).FindAllStringSubmatch(string(packs), -1)
	if len(names) == 0 {
		return
	}
	var ids []string
	for _, n := range names {
		ids = append(ids, n[1])
	}
	whole := t.TempDir()
	require.NoError(t, os.Symlink(built, filepath.Join(whole, "build")))
	all := dryRunGzip(t, root, whole)
	verdict := "within the limit"
	if all >= cloudflareScriptLimit {
		verdict = "over the limit: wrangler deploy refuses it (a local build; deploy with WORKER_PACKS= and upload the packs)"
	}
	t.Logf("as built, with %s: %d KiB compressed of %d KiB, %s", strings.Join(ids, ", "), all>>10, cloudflareScriptLimit>>10, verdict)
}
