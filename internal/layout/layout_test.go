package layout_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreLayout holds the layout rules: core is plain Go (no network
// library, no JS bridge, no os: it takes bytes and a save function, never
// a path), and the packages below the controller reach model exchanges
// through core/model, never by importing the controller.
func TestCoreLayout(t *testing.T) {
	forbidden := map[string]string{
		"net/http":   "core is given a transport; it never dials",
		"syscall/js": "only wasm/, worker/ and internal/jsbridge talk to JS",
		"os":         "core takes bytes and a save function; files are internal/'s and cmd/'s",
		"os/exec":    "core runs nothing",
		"io/ioutil":  "core takes bytes, not paths",
		"net":        "core is given a transport; it never dials",
	}
	belowController := map[string]bool{"model": true, "gemini": true, "recording": true, "rerank": true, "pyjson": true,
		"reason": true, "corpus": true, "store": true, "tools": true, "price": true, "budget": true, "jsonfile": true,
		"builder": true, "secret": true, "reranklab": true}
	const module = "github.com/ragagentlab/ragagent/"
	root := filepath.Join("..", "..", "core")
	seen := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		pkg := strings.Split(filepath.ToSlash(rel), "/")[0]
		seen++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := forbidden[p]; bad {
				t.Errorf("%s imports %s: %s", rel, p, why)
			}
			if belowController[pkg] && p == module+"core/agent" {
				t.Errorf("%s imports the controller; model exchange types are in core/model", rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, seen, 40, "the walk found core's files")
}

// jsTalkers are the only packages that import syscall/js: wasm/ (the
// page's and node's adapter), worker/ (the Workers adapter, which
// syumai/workers requires) and the bridge the two share.
var jsTalkers = []string{"wasm", "worker", "internal/jsbridge"}

// jsImports lists the Go files below root, tests included, that import
// syscall/js outside jsTalkers, and how many Go files it read.
func jsImports(t *testing.T, root string) (bad []string, seen int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "site") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		seen++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "syscall/js" && !slices.ContainsFunc(jsTalkers, func(dir string) bool {
				return strings.HasPrefix(rel, dir+"/")
			}) {
				bad = append(bad, rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return bad, seen
}

// TestOnlyTheAdaptersTalkToJS: outside core too, syscall/js is imported
// only by jsTalkers, so everything else builds and tests natively.
func TestOnlyTheAdaptersTalkToJS(t *testing.T) {
	bad, seen := jsImports(t, filepath.Join("..", ".."))
	assert.Empty(t, bad, "only %v talk to JS", jsTalkers)
	assert.Greater(t, seen, 100, "the walk found the module's files")
}

// TestTheJSRuleCatchesAPlantedImport: a planted syscall/js import is seen
// anywhere outside the adapters and their bridge, in a test file too and
// in a folder whose name only starts like the bridge's.
func TestTheJSRuleCatchesAPlantedImport(t *testing.T) {
	root := t.TempDir()
	plant := map[string]bool{
		"wasm/api.go": false, "worker/d1.go": false, "internal/jsbridge/await.go": false,
		"internal/server/server.go": true, "internal/jsbridgex/x.go": true, "cmd/ragagent/main_test.go": true,
		"core/engine/engine.go": true, "site/engine/skipped.go": false,
	}
	for rel := range plant {
		path := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("package x\n\nimport _ \"syscall/js\"\n"), 0o644))
	}
	bad, seen := jsImports(t, root)
	var want []string
	for rel, caught := range plant {
		if caught {
			want = append(want, rel)
		}
	}
	assert.ElementsMatch(t, want, bad)
	assert.Equal(t, len(plant)-1, seen, "every planted file read but the site's")
}
