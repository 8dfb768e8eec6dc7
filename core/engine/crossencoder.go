package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reranklab"
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

// publishedModelFiles are the files transformers.js reads for the published
// cross-encoder besides its weights; the published record pins each one's
// sha256. Their sizes are the hub's listing, rounded.
func publishedModelFiles() []ModelFile {
	return []ModelFile{
		{Path: "config.json", Bytes: 800, Approximate: true},
		{Path: "tokenizer.json", Bytes: 712_000, Approximate: true},
		{Path: "tokenizer_config.json", Bytes: 1_300, Approximate: true},
	}
}

// publishedWeights are the ONNX exports in the published model's repository
// the page offers. The published record pins the safetensors weights the
// seed ran, which a browser cannot run, and no ONNX file: their sha256 is
// recorded as downloaded. Sizes are the hub's listing, rounded.
func publishedWeights() []ModelWeights {
	return []ModelWeights{
		{ID: "fp32", Label: "full precision (fp32), the seed's arithmetic", ModelFile: ModelFile{Path: "onnx/model.onnx", Bytes: 90_900_000, Approximate: true}},
		{ID: "quint8", Label: "8-bit quantized weights (smaller; the logits change)", ModelFile: ModelFile{Path: "onnx/model_quint8_avx2.onnx", Bytes: 23_000_000, Approximate: true}},
	}
}

// CrossEncoderPlan is what a fresh cross-encoder scoring fetches and scores,
// shown before anything is fetched: the model, and every call in the run's
// order with the pairs it scores.
type CrossEncoderPlan struct {
	Model ModelManifest          `json:"model"`
	Calls []CrossEncoderPlanCall `json:"calls"`
	Pairs int                    `json:"pairs"`
	// ContextTokens is the longest pair the model reads: a longer one is
	// refused (pair_exceeds_model_context), never truncated.
	ContextTokens int `json:"context_tokens"`
}

// CrossEncoderPlanCall is one call: its request ({question, candidates:
// [{chunk_id, text}]}) is scored as (question, text) pairs in candidate
// order, batched together, and recorded as it is.
type CrossEncoderPlanCall struct {
	ID      string         `json:"id"`
	CaseID  string         `json:"case_id"`
	Split   string         `json:"split"`
	Request *pyjson.Object `json:"request"`
}

// ContextTokens is the cross-encoder's context, as the seed checks it.
const ContextTokens = 512

// CrossEncoderPlan lists the calls and the model: the published
// cross-encoder (pins from the published record) when manifest is nil, else
// the given manifest (a loopback test host's, ModelFormat).
func (e *Engine) CrossEncoderPlan(manifest []byte) (*CrossEncoderPlan, error) {
	calls, err := e.encoderCalls()
	if err != nil {
		return nil, err
	}
	plan := &CrossEncoderPlan{ContextTokens: ContextTokens}
	if manifest == nil {
		plan.Model, err = e.publishedModel()
	} else {
		plan.Model, err = ParseModelManifest(manifest)
	}
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		plan.Calls = append(plan.Calls, CrossEncoderPlanCall{ID: c.ID, CaseID: c.CaseID, Split: c.Split, Request: c.Request()})
		plan.Pairs += len(c.Candidates)
	}
	return plan, nil
}

func (e *Engine) encoderCalls() ([]reranklab.EncoderCall, error) {
	r := &e.rerank
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	return r.suite.EncoderCalls(context.Background())
}

// publishedModel is the published cross-encoder's manifest: its id,
// revision, licence and pins as the bundled recording holds them (rebuilt
// from the published record), with the files transformers.js reads.
func (e *Engine) publishedModel() (ModelManifest, error) {
	r := &e.rerank
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return ModelManifest{}, err
	}
	config, _ := r.crossEncoder.Config.(*pyjson.Object)
	acq := pyObject(get(config, "model"))
	pins := pyObject(get(acq, "files"))
	m := ModelManifest{Format: ModelFormat, Description: "The cross-encoder the reference lab scored with; the published record pins its tokenizer and config files."}
	m.Model, _ = get(acq, "model").(string)
	m.Revision, _ = get(acq, "revision").(string)
	m.License, _ = get(acq, "license").(string)
	if m.Model == "" || m.Revision == "" {
		return ModelManifest{}, fmt.Errorf("the bundled cross-encoder recording names no model and revision")
	}
	for _, f := range publishedModelFiles() {
		pin, ok := get(pins, f.Path).(string)
		if !ok {
			return ModelManifest{}, fmt.Errorf("the published record pins no sha256 for %s", f.Path)
		}
		f.SHA256 = &pin
		m.Files = append(m.Files, f)
	}
	m.Weights = append(m.Weights, publishedWeights()...)
	return m, nil
}

func pyObject(v any) *pyjson.Object {
	o, _ := v.(*pyjson.Object)
	return o
}

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
	o := pyObject(v)
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
		f := pyObject(v)
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
		w.ID, _ = get(pyObject(v), "id").(string)
		w.Label, _ = get(pyObject(v), "label").(string)
		if w.ID == "" || ids[w.ID] || w.Label == "" || !strings.HasSuffix(w.Path, ".onnx") {
			return fail("%s needs a unique id, a label and an .onnx path", where)
		}
		ids[w.ID] = true
		m.Weights = append(m.Weights, w)
	}
	return m, nil
}

// CrossEncoderRun is a fresh cross-encoder scoring accepted by the core: the
// run's record (execution_mode fresh-local-cross-encoder-inference), its
// logits beside the published ones, and the recording that replays it.
type CrossEncoderRun struct {
	CrossEncoder *reranklab.CrossEncoderRecord `json:"cross_encoder"`
	Comparison   *reranklab.LogitComparison    `json:"comparison"`
	Recording    *RecordingText                `json:"recording"`
}

// freshSource says where a fresh recording's logits come from.
const freshSource = "Fresh inference outside the core (the runtime is the environment), accepted through the cross-encoder acceptance contract: each request is the question and the candidates' ids and texts in candidate order, each response the raw logits in that order and the measured inference seconds."

// AcceptCrossEncoder takes a fresh scoring's payload (reranklab.ScoresFormat)
// through the core's acceptance contract: the payload must answer every
// call of the run in order, and each call's scores must be one finite
// number per candidate (invalid_cross_encoder_scores otherwise, naming the
// case); the candidates are then sorted as the recorded path sorts them and
// summarised. It returns the record, its comparison with the published
// logits, and the recording (the bundled one's shape) that replays it
// offline: Rerank({CrossEncoder}) or `ragagent rerank --cross-encoder FILE`.
func (e *Engine) AcceptCrossEncoder(ctx context.Context, payload string) (*CrossEncoderRun, error) {
	r := &e.rerank
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	calls, err := r.suite.EncoderCalls(ctx)
	if err != nil {
		return nil, err
	}
	scoring, err := reranklab.ParseScoring(payload, calls)
	if err != nil {
		return nil, err
	}
	file := scoring.Recording(calls, freshSource, e.clock().UTC().Format(time.RFC3339Nano))
	fresh, err := r.suite.Fresh(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("cross-encoder: %w", err)
	}
	published, err := r.suite.CrossEncoder(ctx, reranklab.NewRecordedEncoder(r.crossEncoder))
	if err != nil {
		return nil, fmt.Errorf("the bundled cross-encoder recording: %w", err)
	}
	cmp, err := reranklab.Compare(fresh, published)
	if err != nil {
		return nil, err
	}
	text, err := TextOf(file)
	if err != nil {
		return nil, err
	}
	return &CrossEncoderRun{CrossEncoder: fresh, Comparison: cmp, Recording: text}, nil
}
