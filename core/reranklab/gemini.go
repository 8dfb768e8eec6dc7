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
	"github.com/ragagentlab/ragagent/core/pyjson"
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

// Call is one listwise request: the hash and size of the body this project
// sends, and the amount a live run reserves for it before sending (the
// same figure in a replay, where nothing is spent).
type Call struct {
	CaseID        string  `json:"case_id"`
	RequestSHA256 string  `json:"request_sha256"`
	RequestBytes  int     `json:"request_bytes"`
	EstimatedUSD  float64 `json:"estimated_usd"`
}

// GeminiCase is one development case's listwise result: the frozen
// candidates, their coverage order, the model's proposal and the
// candidates in the proposed order. Error is set (and Gemini nil, written
// as null) when the request or the proposal was refused.
type GeminiCase struct {
	CaseID   string             `json:"case_id"`
	Question string             `json:"question"`
	Before   []rerank.Candidate `json:"before"`
	Coverage []rerank.Covered   `json:"coverage"`
	Proposal any                `json:"proposal"`
	Gemini   []rerank.Listed    `json:"gemini" pyjson:"nullable"`
	Error    *reason.Error      `json:"error,omitempty"`
}

// GeminiRecord is a listwise run, in the reference record's shape (its
// calls describe this project's requests).
type GeminiRecord struct {
	ExecutionMode string       `json:"execution_mode"`
	Model         string       `json:"model"`
	Cases         []GeminiCase `json:"cases"`
	Calls         []Call       `json:"calls"`
	Scope         string       `json:"scope"`
}

// Failed lists the cases that ended in an error.
func (r *GeminiRecord) Failed() []GeminiCase {
	var out []GeminiCase
	for _, c := range r.Cases {
		if c.Error != nil {
			out = append(out, c)
		}
	}
	return out
}

// MarshalJSON lets encoding/json (the WASM bridge) write the record as
// pyjson does.
func (r *GeminiRecord) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(r) }

// RequestCall describes the request a prompt becomes: its body's sha256
// and size, and the reservation budget.Estimate makes for it at rate.
func RequestCall(caseID string, p model.Prompt, rate price.Rate) Call {
	body := gemini.Body(gemini.Payload(p))
	sum := sha256.Sum256(body)
	return Call{CaseID: caseID, RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(rate, len(body), gemini.MaxOutputTokens())}
}

// ListwiseCalls are the requests a listwise run over the development
// cases makes, in case order, each with the reservation rate gives it:
// what a live run will reserve, to be shown (and checked against the
// ledger) before anything is sent.
func (s *Suite) ListwiseCalls(ctx context.Context, rate price.Rate) ([]Call, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	calls := make([]Call, len(cov.DevelopmentCases))
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
func (s *Suite) Gemini(ctx context.Context, model model.Model, mode string, rate price.Rate) (*GeminiRecord, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	rec := &GeminiRecord{ExecutionMode: mode, Model: ListwiseModel, Cases: []GeminiCase{}, Calls: []Call{}, Scope: ListwiseScope}
	for _, d := range cov.DevelopmentCases {
		c := GeminiCase{CaseID: d.CaseID, Question: d.Query, Before: d.Before, Coverage: d.After}
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
