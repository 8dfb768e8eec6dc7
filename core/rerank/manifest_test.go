package rerank_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// TestParseModelManifestRefusals: one row per check, in order.
func TestParseModelManifestRefusals(t *testing.T) {
	pin := strings.Repeat("0a", 32)
	good := func(edit func(o *pyjson.Object)) string {
		o := pyjson.NewObject("format", rerank.ModelFormat, "model", "org/name", "revision", "abc123", "license", "MIT",
			"files", []any{pyjson.NewObject("path", "config.json", "sha256", pin, "bytes", 10)},
			"weights", []any{pyjson.NewObject("id", "fp32", "label", "full", "path", "onnx/model.onnx", "sha256", nil, "bytes", 100)})
		if edit != nil {
			edit(o)
		}
		return pyjson.Dumps(o, pyjson.Options{})
	}
	file := func(kv ...any) func(o *pyjson.Object) {
		return func(o *pyjson.Object) { o.Set("files", []any{pyjson.NewObject(kv...)}) }
	}
	_, err := rerank.ParseModelManifest([]byte(good(nil)))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, text, want string
	}{
		{"not JSON", "{", "not JSON"},
		{"not an object", "[1]", "not an object"},
		{"format", good(func(o *pyjson.Object) { o.Set("format", "x") }), `format is "x"`},
		{"model id", good(func(o *pyjson.Object) { o.Set("model", "no-slash") }), `model "no-slash" is not an owner/name id`},
		{"model id climbs", good(func(o *pyjson.Object) { o.Set("model", "a/..") }), "is not an owner/name id"},
		{"revision with a slash", good(func(o *pyjson.Object) { o.Set("revision", "refs/x") }), `revision "refs/x"`},
		{"revision empty", good(func(o *pyjson.Object) { o.Set("revision", "") }), `revision ""`},
		{"no licence", good(func(o *pyjson.Object) { o.Set("license", "") }), "license is required"},
		{"files not a list", good(func(o *pyjson.Object) { o.Set("files", 3) }), "files must be a list"},
		{"file not an object", good(func(o *pyjson.Object) { o.Set("files", []any{"x"}) }), "files[0] is not an object"},
		{"path climbs", good(file("path", "../etc/passwd", "sha256", pin, "bytes", 1)), `path "../etc/passwd"`},
		{"absolute path", good(file("path", "/config.json", "sha256", pin, "bytes", 1)), `path "/config.json"`},
		{"path with a query", good(file("path", "a.json?x=1", "sha256", pin, "bytes", 1)), "is not a file path"},
		{"bad pin", good(file("path", "a.json", "sha256", "ABC", "bytes", 1)), `sha256 "ABC"`},
		{"pin not a string", good(file("path", "a.json", "sha256", 5, "bytes", 1)), "sha256 must be a string or null"},
		{"no size", good(file("path", "a.json", "sha256", pin)), "bytes must be a whole number"},
		{"negative size", good(file("path", "a.json", "sha256", pin, "bytes", -1)), "bytes must be a whole number"},
		{"fractional size", good(file("path", "a.json", "sha256", pin, "bytes", 1.5)), "bytes must be a whole number"},
		{"no weights", good(func(o *pyjson.Object) { o.Set("weights", []any{}) }), "weights must list at least one ONNX file"},
		{"weights twice", good(func(o *pyjson.Object) {
			w := pyjson.NewObject("id", "fp32", "label", "full", "path", "onnx/model.onnx", "sha256", nil, "bytes", 100)
			o.Set("weights", []any{w, pyjson.NewObject("id", "fp32", "label", "again", "path", "onnx/b.onnx", "sha256", nil, "bytes", 100)})
		}), "weights[1] needs a unique id"},
		{"a path named twice", good(func(o *pyjson.Object) {
			o.Set("weights", []any{pyjson.NewObject("id", "w", "label", "l", "path", "config.json", "sha256", nil, "bytes", 1)})
		}), "config.json is named twice"},
		{"weights not onnx", good(func(o *pyjson.Object) {
			o.Set("weights", []any{pyjson.NewObject("id", "w", "label", "l", "path", "model.bin", "sha256", nil, "bytes", 1)})
		}), "an .onnx path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rerank.ParseModelManifest([]byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "model manifest: "), err.Error())
		})
	}
}

// FuzzParseModelManifest: any manifest is refused or read into paths a
// scorer can put after a resolve URL (no "..", no leading slash, no query).
func FuzzParseModelManifest(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "fixtures", "tiny-cross-encoder", "ragagent-model.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add(`{"format": "ragagent-model/1", "model": "a/b", "revision": "r", "license": "x", "files": [], "weights": [{"id": "w", "label": "l", "path": "m.onnx", "sha256": null, "bytes": 1}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		m, err := rerank.ParseModelManifest([]byte(text))
		if err != nil {
			return
		}
		if len(m.Weights) == 0 {
			t.Fatal("no weights")
		}
		for _, p := range append(m.Files, m.Weights[0].ModelFile) {
			if strings.Contains(p.Path, "..") || strings.HasPrefix(p.Path, "/") || strings.ContainsAny(p.Path, "?#%\\ ") {
				t.Fatalf("unsafe path %q", p.Path)
			}
		}
		if strings.ContainsAny(m.Revision, "/?#%") || !strings.Contains(m.Model, "/") {
			t.Fatalf("unsafe model %q or revision %q", m.Model, m.Revision)
		}
	})
}
