package layout_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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
		"syscall/js": "only wasm/ and worker/ talk to JS",
		"os":         "core takes bytes and a save function; files are internal/'s and cmd/'s",
		"os/exec":    "core runs nothing",
		"io/ioutil":  "core takes bytes, not paths",
		"net":        "core is given a transport; it never dials",
	}
	belowController := map[string]bool{"model": true, "gemini": true, "recording": true, "rerank": true, "pyjson": true,
		"reason": true, "corpus": true, "store": true, "tools": true, "price": true, "budget": true, "jsonfile": true,
		"builder": true, "secret": true, "reranklab": true, "retrieval": true}
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

// TestOnlyTheAdaptersTalkToJS: outside core too, syscall/js is imported
// only by wasm/ (the page's and node's adapter) and worker/ (the Workers
// adapter, which syumai/workers requires), so everything else builds and
// tests natively.
func TestOnlyTheAdaptersTalkToJS(t *testing.T) {
	allowed := map[string]bool{"wasm": true, "worker": true}
	root := filepath.Join("..", "..")
	seen := 0
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
		seen++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "syscall/js" && !allowed[strings.Split(filepath.ToSlash(rel), "/")[0]] {
				t.Errorf("%s imports syscall/js: only wasm/ and worker/ talk to JS", rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, seen, 100, "the walk found the module's files")
}
