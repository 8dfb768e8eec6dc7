package reranklab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// ListwiseModel is the model the reference listwise run used.
const ListwiseModel = "gemini-3.1-flash-lite"

// Execution modes of a listwise run, and its scope as the reference states it.
const (
	ListwiseReplayMode = "recorded-gemini-listwise-reranking"
	ListwiseLiveMode   = "fresh-gemini-listwise-reranking"
	ListwiseScope      = "Original development cases and identical frozen hybrid candidates; no tuning, new retrieval or held-out quality claim. Gemini is a pretrained generative scorer, not a dedicated cross-encoder. Missing candidates cannot be recovered."
)

// RequestCall describes the request a prompt becomes: its body's sha256
// and size, and the reservation budget.Estimate makes for it at rate.
func RequestCall(caseID string, p model.Prompt, rate price.Rate) rerank.Call {
	body := gemini.Body(gemini.Payload(p))
	sum := sha256.Sum256(body)
	return rerank.Call{CaseID: caseID, RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(rate, len(body), gemini.MaxOutputTokens())}
}

// ListwiseCalls are the requests a listwise run over the development
// cases makes, in case order, each with the reservation rate gives it:
// what a live run will reserve, to be shown (and checked against the
// ledger) before anything is sent.
func (s *Suite) ListwiseCalls(ctx context.Context, rate price.Rate) ([]rerank.Call, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	calls := make([]rerank.Call, len(cov.DevelopmentCases))
	for i, d := range cov.DevelopmentCases {
		calls[i] = RequestCall(d.CaseID, rerank.Prompt(d.Query, d.Before), rate)
	}
	return calls, nil
}

// Gemini runs the listwise reranker over the development cases' frozen
// hybrid candidates with model (a replay of a recording, or a live model
// through a transport and a ledger), one request per case, in case order.
// A case whose request or proposal is refused keeps its error and the run
// goes on to the next case (each case is its own request; nothing is
// retried). mode is ListwiseReplayMode or ListwiseLiveMode; rate prices the
// calls' reservations.
func (s *Suite) Gemini(ctx context.Context, model model.Model, mode string, rate price.Rate) (*rerank.GeminiRecord, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	rec := &rerank.GeminiRecord{ExecutionMode: mode, Model: ListwiseModel, Cases: []rerank.GeminiCase{}, Calls: []rerank.Call{}, Scope: ListwiseScope}
	for _, d := range cov.DevelopmentCases {
		c := rerank.GeminiCase{CaseID: d.CaseID, Question: d.Query, Before: d.Before, Coverage: d.After}
		prompt := rerank.Prompt(d.Query, d.Before)
		rec.Calls = append(rec.Calls, RequestCall(d.CaseID, prompt, rate))
		reply, err := model.Decide(ctx, prompt, gemini.MaxCallTimeout)
		if err == nil {
			c.Proposal = reply.Value
			c.Gemini, err = rerank.ApplyOrder(d.Query, d.Before, s.snap, reply.Value)
		}
		if err != nil {
			code, refused := reason.Of(err)
			if !refused || ctx.Err() != nil {
				// Not a refusal of this case (a ledger that cannot be
				// saved, a cancelled run): stop here.
				return nil, fmt.Errorf("case %s: %w", d.CaseID, err)
			}
			c.Error = &reason.Error{Code: code, Detail: reason.DetailOf(err)}
		}
		rec.Cases = append(rec.Cases, c)
	}
	return rec, nil
}
