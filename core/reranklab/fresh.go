package reranklab

import (
	"context"
	"fmt"
	"math"
	"regexp"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// ScoresFormat tags a fresh cross-encoder scoring's payload: what a scorer
// outside the core (transformers.js in the page or under node) hands back.
const ScoresFormat = "ragagent-cross-encoder-scores/1"

// EncoderCall is one cross-encoder call of the run: a question and its
// candidates, scored together as one padded batch, in candidate order.
type EncoderCall struct {
	ID         string             `json:"id"`
	CaseID     string             `json:"case_id"`
	Split      string             `json:"split"`
	Version    string             `json:"version"`
	Question   string             `json:"question"`
	Candidates []rerank.Candidate `json:"-"`
}

// Request is what the call sends and a recording keeps: the question and
// each candidate's chunk id and exact text, in candidate order.
func (c EncoderCall) Request() *pyjson.Object { return rerank.Input(c.Question, c.Candidates) }

// Trial is the call as a recording's trial answered with response ({"scores":
// [...], "inference_seconds": s}): one source for the shape of every
// cross-encoder recording, published or fresh.
func (c EncoderCall) Trial(response any) recording.Trial {
	return recording.Trial{ID: c.ID, CaseID: c.CaseID, Split: c.Split, Repeat: 1, Mode: "cross-encoder",
		Question: c.Question, Version: c.Version,
		Exchanges: []recording.Exchange{{Request: c.Request(), Response: response}}}
}

// EncoderResponse is a recorded cross-encoder response.
func EncoderResponse(scores, seconds any) *pyjson.Object {
	return pyjson.NewObject("scores", scores, "inference_seconds", seconds)
}

// EncoderCalls lists the run's calls in the reference's call order (the
// order CrossEncoder asks in): each original development case's frozen
// hybrid candidates ("original/<case>"), then each expanded case's pool of
// every version-eligible passage ("expanded/<case>").
func (s *Suite) EncoderCalls(ctx context.Context) ([]EncoderCall, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	var calls []EncoderCall
	for _, d := range cov.DevelopmentCases {
		calls = append(calls, EncoderCall{ID: "original/" + d.CaseID, CaseID: d.CaseID, Split: "development",
			Version: d.RequestedVersion, Question: d.Query, Candidates: d.Before})
	}
	for _, c := range s.expanded {
		calls = append(calls, EncoderCall{ID: "expanded/" + c.CaseID, CaseID: c.CaseID, Split: c.Split,
			Version: c.Version, Question: c.Question, Candidates: s.Pool(c)})
	}
	return calls, nil
}

// Scoring is a fresh scoring's payload, decoded: what was scored with (the
// model's acquisition record in the published record's shape, the runtime,
// the timings) and each call's raw output, kept as decoded so that the
// acceptance contract (rerank.AcceptScores) judges the scores themselves.
type Scoring struct {
	Model       *pyjson.Object
	Environment *pyjson.Object
	Timings     *pyjson.Object // nil when the payload has none
	// Verification says how each file was checked (against a pin, or its
	// sha256 recorded as downloaded); nil when the payload has none.
	Verification *pyjson.Object
	Responses    []*pyjson.Object
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseScoring reads a fresh scoring's payload (ScoresFormat) for calls:
//
//	{"format": "ragagent-cross-encoder-scores/1",
//	 "model": {"model", "revision", "license", "files": {name: sha256}},
//	 "environment": {...}, "timings": {...}?, "verification": {...}?,
//	 "calls": [{"id", "scores": [...], "inference_seconds"}, ...]}
//
// The payload must answer every call once, in order, with a non-negative
// finite inference time; the scores are not judged here (AcceptScores
// does, with invalid_cross_encoder_scores). Each refusal names the field.
func ParseScoring(text string, calls []EncoderCall) (*Scoring, error) {
	fail := func(format string, args ...any) (*Scoring, error) {
		return nil, fmt.Errorf("cross-encoder scores: "+format, args...)
	}
	v, err := pyjson.Decode(text)
	if err != nil {
		return fail("not JSON: %v", err)
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return fail("the payload is not an object")
	}
	if f, _ := o.Get("format"); f != ScoresFormat {
		return fail("format is %s, want %q", brief(f), ScoresFormat)
	}
	sc := &Scoring{}
	if sc.Model, err = acquisition(get(o, "model")); err != nil {
		return fail("model: %v", err)
	}
	if sc.Environment = objectOf(get(o, "environment")); sc.Environment == nil {
		return fail("environment must be an object naming the runtime")
	}
	for _, opt := range []struct {
		key string
		to  **pyjson.Object
	}{{"timings", &sc.Timings}, {"verification", &sc.Verification}} {
		if v, present := o.Get(opt.key); present {
			if *opt.to = objectOf(v); *opt.to == nil {
				return fail("%s must be an object", opt.key)
			}
		}
	}
	list, ok := get(o, "calls").([]any)
	if !ok {
		return fail("calls must be a list")
	}
	if len(list) != len(calls) {
		return fail("%d calls answered, the run makes %d", len(list), len(calls))
	}
	for i, item := range list {
		call := objectOf(item)
		if call == nil {
			return fail("call %d is not an object", i+1)
		}
		if id := get(call, "id"); id != calls[i].ID {
			return fail("call %d is %s, want %q (calls answer in the run's order)", i+1, brief(id), calls[i].ID)
		}
		scores, present := call.Get("scores")
		if !present {
			return fail("call %s has no scores", calls[i].ID)
		}
		n, ok := get(call, "inference_seconds").(pyjson.Number)
		if x := n.Float64(); !ok || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fail("call %s: inference_seconds must be a finite number of at least 0", calls[i].ID)
		}
		sc.Responses = append(sc.Responses, EncoderResponse(scores, n))
	}
	return sc, nil
}

// acquisition checks a model acquisition record: the published record's
// shape, a model id and revision, a licence and every file's sha256.
func acquisition(v any) (*pyjson.Object, error) {
	m := objectOf(v)
	if m == nil {
		return nil, fmt.Errorf("must be an object")
	}
	for _, k := range []string{"model", "revision", "license"} {
		if s, ok := get(m, k).(string); !ok || s == "" {
			return nil, fmt.Errorf("%s must be a non-empty string", k)
		}
	}
	files := objectOf(get(m, "files"))
	if files == nil || files.Len() == 0 {
		return nil, fmt.Errorf("files must name each file read with its sha256")
	}
	for _, name := range files.Keys() {
		if h, _ := get(files, name).(string); !sha256Hex.MatchString(h) {
			return nil, fmt.Errorf("files[%q] is %s, not a lower-case hex sha256", name, brief(get(files, name)))
		}
	}
	return m, nil
}

// Recording is the scoring as a cross-encoder recording, in the bundled
// one's shape: the model's acquisition record and the runtime in its
// config (with the timings, how each file was verified and where the
// scores came from), one trial per call. It replays like the published logits (RecordedEncoder).
func (sc *Scoring) Recording(calls []EncoderCall, source, recordedAt string) *recording.File {
	config := pyjson.NewObject("model", sc.Model, "environment", sc.Environment)
	if sc.Timings != nil {
		config.Set("timings", sc.Timings)
	}
	if sc.Verification != nil {
		config.Set("verification", sc.Verification)
	}
	config.Set("source", source)
	file := &recording.File{Model: get(sc.Model, "model").(string), Config: config, RecordedAt: recordedAt}
	for i, c := range calls {
		file.Trials = append(file.Trials, c.Trial(sc.Responses[i]))
	}
	return file
}

// freshEncoder replays a fresh scoring's recording and says the logits are
// fresh inference.
type freshEncoder struct{ RecordedEncoder }

func (freshEncoder) Mode() string { return CrossEncoderLiveMode }

// Fresh runs the cross-encoder comparison over a fresh scoring's recording
// (Scoring.Recording): every call's scores go through rerank.AcceptScores,
// so a NaN, an infinity, a string or a wrong count is refused with
// invalid_cross_encoder_scores and nothing is summarised. The record says
// fresh-local-cross-encoder-inference; a later replay of the same file says
// it was recorded.
func (s *Suite) Fresh(ctx context.Context, file *recording.File) (*rerank.CrossEncoderRecord, error) {
	return s.CrossEncoder(ctx, freshEncoder{NewRecordedEncoder(file)})
}

func brief(v any) string {
	s := pyjson.Dumps(v, pyjson.Options{Unicode: true})
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
