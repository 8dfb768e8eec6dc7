package engine

import (
	"context"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// CrossEncoderPlan is what a fresh cross-encoder scoring fetches and scores,
// shown before anything is fetched: the model, and every call in the run's
// order with the pairs it scores.
type CrossEncoderPlan struct {
	Model rerank.ModelManifest   `json:"model"`
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

// CrossEncoderPlan lists the calls and the model: the published
// cross-encoder (pins from the published record) when manifest is nil, else
// the given manifest (a loopback test host's, rerank.ModelFormat).
func (e *Engine) CrossEncoderPlan(manifest []byte) (*CrossEncoderPlan, error) {
	calls, err := e.rerank.EncoderCalls(context.Background())
	if err != nil {
		return nil, err
	}
	plan := &CrossEncoderPlan{ContextTokens: rerank.ContextTokens}
	if manifest == nil {
		plan.Model, err = e.rerank.PublishedModel()
	} else {
		plan.Model, err = rerank.ParseModelManifest(manifest)
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

// CrossEncoderRun is a fresh cross-encoder scoring accepted by the core: the
// run's record (execution_mode fresh-local-cross-encoder-inference), its
// logits beside the published ones, and the recording that replays it.
type CrossEncoderRun struct {
	CrossEncoder *rerank.CrossEncoderRecord `json:"cross_encoder"`
	Comparison   *rerank.LogitComparison    `json:"comparison"`
	Recording    *RecordingText             `json:"recording"`
}

// AcceptCrossEncoder takes a fresh scoring's payload (reranklab.ScoresFormat)
// through the core's acceptance contract (reranklab.Bench.Accept) and
// returns the record, its comparison with the published logits, and the
// recording that replays it offline: Rerank({CrossEncoder}) or `ragagent
// rerank --cross-encoder FILE`.
func (e *Engine) AcceptCrossEncoder(ctx context.Context, payload string) (*CrossEncoderRun, error) {
	a, err := e.rerank.Accept(ctx, payload)
	if err != nil {
		return nil, err
	}
	text, err := TextOf(a.Recording)
	if err != nil {
		return nil, err
	}
	return &CrossEncoderRun{CrossEncoder: a.CrossEncoder, Comparison: a.Comparison, Recording: text}, nil
}
