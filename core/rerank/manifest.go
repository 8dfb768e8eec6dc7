package rerank

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ragagentlab/ragagent/core/pyjson"
)

// ModelFormat tags a model manifest: what a scorer outside the core fetches
// and how it checks each file.
const ModelFormat = "ragagent-model/1"

// ModelFile is a file a scorer fetches: its path in the model's repository,
// the sha256 it must have (nil when nothing pins it: then the scorer records
// the sha256 it got), and its size in bytes, approximate when the exact
// count is not known before the download (the hub lists sizes rounded).
type ModelFile struct {
	Path        string  `json:"path"`
	SHA256      *string `json:"sha256"`
	Bytes       int64   `json:"bytes"`
	Approximate bool    `json:"approximate"`
}

// ModelWeights is one set of ONNX weights the scorer may use, the first
// being the default.
type ModelWeights struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	ModelFile
}

// ModelManifest is the model a front end scores with, named in full before
// anything is fetched: id, revision, licence, and each file with its pin
// and size. Files are what transformers.js reads besides the weights.
type ModelManifest struct {
	Format      string         `json:"format"`
	Model       string         `json:"model"`
	Revision    string         `json:"revision"`
	License     string         `json:"license"`
	Description string         `json:"description"`
	Files       []ModelFile    `json:"files"`
	Weights     []ModelWeights `json:"weights"`
}

// ContextTokens is the cross-encoder's context, as the seed checks it: a
// longer (question, passage) pair is refused (pair_exceeds_model_context),
// never truncated.
const ContextTokens = 512

var (
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// filePath is a relative path of plain segments: what the hub's resolve
	// URLs and transformers.js's file names use.
	filePath = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	modelID  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// ParseModelManifest reads a model manifest (ModelFormat), refusing, with
// the field named, anything a scorer could not fetch safely: a model id
// that is not owner/name, a revision with a slash or a space, a path that
// climbs out of the repository, a pin that is not a sha256, a negative or
// absurd size, no weights, or a path named twice.
func ParseModelManifest(data []byte) (ModelManifest, error) {
	fail := func(format string, args ...any) (ModelManifest, error) {
		return ModelManifest{}, fmt.Errorf("model manifest: "+format, args...)
	}
	v, err := pyjson.Decode(string(data))
	if err != nil {
		return fail("not JSON: %v", err)
	}
	o := objectOf(v)
	if o == nil {
		return fail("not an object")
	}
	var m ModelManifest
	m.Format, _ = get(o, "format").(string)
	if m.Format != ModelFormat {
		return fail("format is %q, want %q", m.Format, ModelFormat)
	}
	m.Model, _ = get(o, "model").(string)
	m.Revision, _ = get(o, "revision").(string)
	m.License, _ = get(o, "license").(string)
	m.Description, _ = get(o, "description").(string)
	switch {
	case !modelID.MatchString(m.Model) || strings.Contains(m.Model, ".."):
		return fail("model %q is not an owner/name id", m.Model)
	case m.Revision == "" || strings.ContainsAny(m.Revision, "/ \\?#%") || m.Revision == "." || m.Revision == "..":
		return fail("revision %q is not a revision name", m.Revision)
	case m.License == "":
		return fail("license is required: the page names it before anything is fetched")
	}
	seen := map[string]bool{}
	file := func(v any, where string) (ModelFile, error) {
		f := objectOf(v)
		if f == nil {
			return ModelFile{}, fmt.Errorf("%s is not an object", where)
		}
		var mf ModelFile
		mf.Path, _ = get(f, "path").(string)
		if !filePath.MatchString(mf.Path) || strings.Contains(mf.Path, "..") || len(mf.Path) > 200 {
			return ModelFile{}, fmt.Errorf("%s: path %q is not a file path in the repository", where, mf.Path)
		}
		if seen[mf.Path] {
			return ModelFile{}, fmt.Errorf("%s: %s is named twice", where, mf.Path)
		}
		seen[mf.Path] = true
		switch pin := get(f, "sha256").(type) {
		case nil:
		case string:
			if !hexSHA256.MatchString(pin) {
				return ModelFile{}, fmt.Errorf("%s: sha256 %q is not a lower-case hex sha256", where, pin)
			}
			mf.SHA256 = &pin
		default:
			return ModelFile{}, fmt.Errorf("%s: sha256 must be a string or null", where)
		}
		n, ok := get(f, "bytes").(pyjson.Number)
		size, isInt := n.Int()
		if !ok || !isInt || size < 0 || size > 4<<30 {
			return ModelFile{}, fmt.Errorf("%s: bytes must be a whole number from 0 to 4 GiB", where)
		}
		mf.Bytes = int64(size)
		mf.Approximate, _ = get(f, "approximate").(bool)
		return mf, nil
	}
	files, ok := get(o, "files").([]any)
	if !ok {
		return fail("files must be a list")
	}
	for i, v := range files {
		f, err := file(v, fmt.Sprintf("files[%d]", i))
		if err != nil {
			return fail("%v", err)
		}
		m.Files = append(m.Files, f)
	}
	weights, ok := get(o, "weights").([]any)
	if !ok || len(weights) == 0 {
		return fail("weights must list at least one ONNX file")
	}
	ids := map[string]bool{}
	for i, v := range weights {
		where := fmt.Sprintf("weights[%d]", i)
		f, err := file(v, where)
		if err != nil {
			return fail("%v", err)
		}
		w := ModelWeights{ModelFile: f}
		w.ID, _ = get(objectOf(v), "id").(string)
		w.Label, _ = get(objectOf(v), "label").(string)
		if w.ID == "" || ids[w.ID] || w.Label == "" || !strings.HasSuffix(w.Path, ".onnx") {
			return fail("%s needs a unique id, a label and an .onnx path", where)
		}
		ids[w.ID] = true
		m.Weights = append(m.Weights, w)
	}
	return m, nil
}

func objectOf(v any) *pyjson.Object {
	o, _ := v.(*pyjson.Object)
	return o
}
