package rerank

import (
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// The records of the reranking lab's three runs, in the reference
// records' shapes (core/reranklab makes them): the coverage run, the
// Gemini listwise run and the cross-encoder run, and a fresh
// cross-encoder run set beside the published logits. They are the
// vocabulary a front end reads, so they live here, below the lab that
// fills them.

// DevelopmentCase is one of the hybrid lab's preserved development
// questions.
type DevelopmentCase struct {
	CaseID           string `json:"case_id"`
	Query            string `json:"query"`
	RequestedVersion string `json:"requested_version"`
}

// ExpandedCase is one of the twelve frozen ranking cases: every
// version-eligible passage is a candidate, and the target sources (none for
// an unsupported question) decide the outcome.
type ExpandedCase struct {
	CaseID        string   `json:"case_id"`
	Question      string   `json:"question"`
	Version       string   `json:"version"`
	TargetSources []string `json:"target_sources"`
	Split         string   `json:"split"`
	Stratum       string   `json:"stratum"`
}

// Configuration is the first and second stage settings of a run.
type Configuration struct {
	CandidateBudget int    `json:"candidate_budget"`
	RankConstant    int    `json:"rank_constant"`
	RerankK         int    `json:"rerank_k"`
	Score           string `json:"score"`
	Tie             string `json:"tie"`
}

// MechanismCheck is a case's candidates reversed, then reranked by
// coverage, with what the check is (reranklab.MechanismScope).
type MechanismCheck struct {
	Scope  string      `json:"scope"`
	Query  string      `json:"query"`
	Before []Candidate `json:"before"`
	After  []Covered   `json:"after"`
}

// Diagnostic is the unfiltered read/write diagnostic: every chunk of every
// version as a candidate, reranked by coverage, with what it is
// (reranklab.DiagnosticScope).
type Diagnostic struct {
	Query string `json:"query"`
	// Policy is the version policy: nil (null), every version is searched.
	Policy *string     `json:"policy"`
	Before []Candidate `json:"before"`
	After  []Covered   `json:"after"`
	Scope  string      `json:"scope"`
}

// DevelopmentResult is one development case's hybrid candidates and their
// coverage order.
type DevelopmentResult struct {
	DevelopmentCase
	Before []Candidate `json:"before"`
	After  []Covered   `json:"after"`
}

// CoverageRecord is the coverage run, in the reference record's shape.
type CoverageRecord struct {
	MechanismCheck          MechanismCheck      `json:"mechanism_check"`
	ExecutionMode           string              `json:"execution_mode"`
	ModelCalled             bool                `json:"model_called"`
	LearnedReranker         bool                `json:"learned_reranker"`
	SnapshotID              string              `json:"snapshot_id"`
	Configuration           Configuration       `json:"configuration"`
	DevelopmentCases        []DevelopmentResult `json:"development_cases"`
	UnfilteredDiagnostic    Diagnostic          `json:"unfiltered_read_write_diagnostic"`
	EmptyCandidates         []Covered           `json:"empty_candidates"`
	AlteredCandidateRefusal reason.Code         `json:"altered_candidate_refusal"`
	Limit                   string              `json:"limit"`
}

// MarshalJSON lets encoding/json (the WASM bridge) write the record as
// pyjson does.
func (r *CoverageRecord) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(r) }

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
	CaseID   string        `json:"case_id"`
	Question string        `json:"question"`
	Before   []Candidate   `json:"before"`
	Coverage []Covered     `json:"coverage"`
	Proposal any           `json:"proposal"`
	Gemini   []Listed      `json:"gemini" pyjson:"nullable"`
	Error    *reason.Error `json:"error,omitempty"`
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

// Comparison is one original development case scored by the cross-encoder.
type Comparison struct {
	CaseID           string      `json:"case_id"`
	Question         string      `json:"question"`
	Candidates       []Candidate `json:"candidates"`
	Coverage         []Covered   `json:"coverage"`
	Scores           []float64   `json:"scores_in_candidate_order"`
	CrossEncoder     []Scored    `json:"cross_encoder"`
	InferenceSeconds float64     `json:"inference_seconds"`
}

// Outcomes are both scorers' outcomes for an expanded case.
type Outcomes struct {
	Coverage     Outcome `json:"coverage"`
	CrossEncoder Outcome `json:"cross_encoder"`
}

// ExpandedResult is one expanded case scored by both scorers.
type ExpandedResult struct {
	ExpandedCase
	Candidates       []Candidate `json:"candidates"`
	Coverage         []Covered   `json:"coverage"`
	Scores           []float64   `json:"scores_in_candidate_order"`
	CrossEncoder     []Scored    `json:"cross_encoder"`
	InferenceSeconds float64     `json:"inference_seconds"`
	Outcome          Outcomes    `json:"outcome"`
}

// SplitSummary is both scorers' tallies over one split.
type SplitSummary struct {
	Coverage     Tally `json:"coverage"`
	CrossEncoder Tally `json:"cross_encoder"`
}

// Summary is the tallies by split. Only the diagnostic and validation
// splits are summarized, as in the reference.
type Summary struct {
	Diagnostic SplitSummary `json:"diagnostic"`
	Validation SplitSummary `json:"validation"`
}

// CrossEncoderRecord is a cross-encoder run, in the reference record's shape.
type CrossEncoderRecord struct {
	ExecutionMode string           `json:"execution_mode"`
	Model         any              `json:"model"`
	Environment   any              `json:"environment"`
	CasesSHA256   string           `json:"cases_sha256"`
	SnapshotID    string           `json:"snapshot_id"`
	Original      []Comparison     `json:"original_candidate_comparison"`
	Expanded      []ExpandedResult `json:"expanded_cases"`
	Summary       Summary          `json:"summary"`
	Scope         string           `json:"scope"`
}

// MarshalJSON lets encoding/json (the WASM bridge) write the record as
// pyjson does.
func (r *CrossEncoderRecord) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(r) }

// PairDiff is one (question, passage) pair's logit in two runs.
type PairDiff struct {
	ChunkID   string  `json:"chunk_id"`
	SourceID  string  `json:"source_id"`
	Published float64 `json:"published"`
	Fresh     float64 `json:"fresh"`
	Diff      float64 `json:"diff"` // fresh - published
}

// CallDiff is one call's pairs in candidate order and whether the two runs
// order its candidates the same way.
type CallDiff struct {
	ID             string     `json:"id"`
	Split          string     `json:"split"`
	Pairs          []PairDiff `json:"pairs"`
	PublishedOrder []string   `json:"published_order"`
	FreshOrder     []string   `json:"fresh_order"`
	OrderAgrees    bool       `json:"order_agrees"`
}

// SummaryDiff is the twelve-case summary of both runs, the cross-encoder's
// tallies only (coverage does not depend on the logits).
type SummaryDiff struct {
	Published Summary `json:"published"`
	Fresh     Summary `json:"fresh"`
	// Agrees: the same answerable count, top-1 hits and MRR in both splits.
	Agrees bool `json:"agrees"`
}

// LogitComparison sets a fresh cross-encoder run beside the published logits:
// per pair the difference, per call whether the order agrees, the largest
// and mean absolute difference, and whether the summary agrees. Logits from
// other weights (quantized, or another runtime's arithmetic) differ; the
// comparison says by how much and whether it changes any order.
type LogitComparison struct {
	Calls         []CallDiff  `json:"calls"`
	Pairs         int         `json:"pairs"`
	MaxAbsDiff    float64     `json:"max_abs_diff"`
	MeanAbsDiff   float64     `json:"mean_abs_diff"`
	OrdersAgree   int         `json:"orders_agree"`
	Summary       SummaryDiff `json:"summary"`
	AllOrdersSame bool        `json:"all_orders_agree"`
}
