package published

import (
	"context"
	"fmt"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
)

// Where the bundled recordings come from, as their config says.
const (
	listwiseSource = "Rebuilt from the reference lab's published Gemini listwise record: each request is the body this project sends for the case's frozen candidates (the published request_sha256 values are of request files the reference does not publish, and could not be reproduced), each response carries the published proposal as its one text part. No usageMetadata or modelVersion was published, so none is invented."
	encoderSource  = "Rebuilt from the reference lab's published cross-encoder record: each request is the question and the candidates' ids and texts in candidate order, each response the published logits in that order and the reported inference seconds."
)

func decodeRecord(data []byte, what string) (*pyjson.Object, error) {
	v, err := jsonfile.Value(data)
	if err != nil {
		return nil, fmt.Errorf("published %s record: %w", what, err)
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return nil, fmt.Errorf("published %s record: not an object", what)
	}
	return o, nil
}

func objects(v any) []*pyjson.Object {
	list, _ := v.([]any)
	out := make([]*pyjson.Object, 0, len(list))
	for _, x := range list {
		if o, ok := x.(*pyjson.Object); ok {
			out = append(out, o)
		}
	}
	return out
}

// sameAs fails when got differs from the published value at a path.
func sameAs(got, want any, what string) error {
	if d, same := pyjson.Diff(got, want); !same {
		return fmt.Errorf("%s differs from the published record at %s: this project has %s, the record %s", what, d.Path, d.Got, d.Want)
	}
	return nil
}

// Gemini rebuilds the listwise recording from the published Gemini
// record: one trial per development case, one exchange each. The published
// candidates must be the ones this project's retriever produces, and the
// rebuilt recording must replay to the published cases exactly, or the
// import fails.
func Gemini(ctx context.Context, s *reranklab.Suite, published []byte) (*recording.File, error) {
	rec, err := decodeRecord(published, "Gemini")
	if err != nil {
		return nil, err
	}
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	pubCases := objects(pyget(rec, "cases"))
	if len(pubCases) != len(cov.DevelopmentCases) {
		return nil, fmt.Errorf("published Gemini record: %d cases, this lab has %d development cases", len(pubCases), len(cov.DevelopmentCases))
	}
	config := pyjson.NewObject("generationConfig", gemini.Config(), "source", listwiseSource)
	file := &recording.File{Model: reranklab.ListwiseModel, Endpoint: gemini.ModelEndpoint(reranklab.ListwiseModel), Config: config}
	for i, d := range cov.DevelopmentCases {
		pc := pubCases[i]
		what := fmt.Sprintf("case %d (%s)", i+1, d.CaseID)
		if err := sameAs(pyjson.NewObject("case_id", d.CaseID, "question", d.Query, "before", pyjson.ValueOf(d.Before)),
			pyjson.NewObject("case_id", pyget(pc, "case_id"), "question", pyget(pc, "question"), "before", pyget(pc, "before")), what); err != nil {
			return nil, err
		}
		text := pyjson.Dumps(pyget(pc, "proposal"), pyjson.Options{})
		response := pyjson.NewObject("candidates", []any{pyjson.NewObject(
			"content", pyjson.NewObject("parts", []any{pyjson.NewObject("text", text)}, "role", "model"),
			"finishReason", "STOP", "index", 0)})
		request := gemini.Payload(rerank.Prompt(d.Query, d.Before))
		file.Trials = append(file.Trials, recording.Trial{ID: d.CaseID, CaseID: d.CaseID, Split: "development", Repeat: 1,
			Mode: "listwise", Question: d.Query, Version: d.RequestedVersion,
			Exchanges: []recording.Exchange{{Request: request, Response: response}}})
	}
	replayed, err := s.Gemini(ctx, reranklab.NewReplay(file), reranklab.ListwiseReplayMode, price.Rate{})
	if err != nil {
		return nil, err
	}
	if err := sameAs(pyget(pyjson.ValueOf(replayed).(*pyjson.Object), "cases"), pyget(rec, "cases"), "the replayed Gemini cases"); err != nil {
		return nil, err
	}
	return file, nil
}

// CrossEncoder rebuilds the cross-encoder recording from the
// published record: one trial per original case, then one per expanded
// case, one exchange each, in the reference's call order. The rebuilt
// recording must replay to the published record exactly (every candidate,
// order, outcome and the summary), or the import fails.
func CrossEncoder(ctx context.Context, s *reranklab.Suite, published []byte) (*recording.File, error) {
	rec, err := decodeRecord(published, "cross-encoder")
	if err != nil {
		return nil, err
	}
	file := &recording.File{
		Model:  fmt.Sprint(pyget(asObject(pyget(rec, "model")), "model")),
		Config: pyjson.NewObject("model", pyget(rec, "model"), "environment", pyget(rec, "environment"), "source", encoderSource),
	}
	calls, err := s.EncoderCalls(ctx)
	if err != nil {
		return nil, err
	}
	orig, exp := objects(pyget(rec, "original_candidate_comparison")), objects(pyget(rec, "expanded_cases"))
	if len(orig) != len(s.Development()) {
		return nil, fmt.Errorf("published cross-encoder record: %d original cases, this lab has %d development cases", len(orig), len(s.Development()))
	}
	if len(exp) != len(s.Expanded()) {
		return nil, fmt.Errorf("published cross-encoder record: %d expanded cases, this lab has %d", len(exp), len(s.Expanded()))
	}
	pub := append(orig[:len(orig):len(orig)], exp...)
	for i, c := range calls {
		pc := pub[i]
		if err := sameAs(pyjson.NewObject("question", c.Question, "candidates", pyjson.ValueOf(c.Candidates)),
			pyjson.NewObject("question", pyget(pc, "question"), "candidates", pyget(pc, "candidates")), "case "+c.ID); err != nil {
			return nil, err
		}
		file.Trials = append(file.Trials, c.Trial(reranklab.EncoderResponse(pyget(pc, "scores_in_candidate_order"), pyget(pc, "inference_seconds"))))
	}
	replayed, err := s.CrossEncoder(ctx, reranklab.NewRecordedEncoder(file))
	if err != nil {
		return nil, err
	}
	mine, theirs := pyjson.ValueOf(replayed).(*pyjson.Object), rec
	for _, k := range theirs.Keys() {
		if k == "execution_mode" {
			continue // ours says the logits are replayed
		}
		if err := sameAs(pyget(mine, k), pyget(theirs, k), "the replayed "+k); err != nil {
			return nil, err
		}
	}
	return file, nil
}

func pyget(o *pyjson.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

func asObject(v any) *pyjson.Object {
	o, _ := v.(*pyjson.Object)
	return o
}
