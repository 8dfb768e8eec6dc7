package reranklab

import (
	"context"
	"fmt"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// Descriptions the coverage record carries, as the reference states them.
const (
	CoverageMode      = "offline-transparent-coverage-reranking"
	MechanismScope    = "controlled candidate-order contract check; not an evaluation case or quality gain"
	DiagnosticScope   = "read/write lexical overlap diagnostic, not a new evaluation case"
	CoverageLimit     = "Token overlap does not establish that a passage answers the question; it does not understand write versus read or unsupported requests."
	alteredTextSuffix = " (altered)"
)

// Configuration is the first and second stage settings of a run.
type Configuration struct {
	CandidateBudget int    `json:"candidate_budget"`
	RankConstant    int    `json:"rank_constant"`
	RerankK         int    `json:"rerank_k"`
	Score           string `json:"score"`
	Tie             string `json:"tie"`
}

// MechanismCheck is a case's candidates reversed, then reranked by
// coverage, with what the check is (MechanismScope).
type MechanismCheck struct {
	Scope  string             `json:"scope"`
	Query  string             `json:"query"`
	Before []rerank.Candidate `json:"before"`
	After  []rerank.Covered   `json:"after"`
}

// Diagnostic is the unfiltered read/write diagnostic: every chunk of every
// version as a candidate, reranked by coverage, with what it is
// (DiagnosticScope).
type Diagnostic struct {
	Query string `json:"query"`
	// Policy is the version policy: nil (null), every version is searched.
	Policy *string            `json:"policy"`
	Before []rerank.Candidate `json:"before"`
	After  []rerank.Covered   `json:"after"`
	Scope  string             `json:"scope"`
}

// DevelopmentResult is one development case's hybrid candidates and their
// coverage order.
type DevelopmentResult struct {
	DevelopmentCase
	Before []rerank.Candidate `json:"before"`
	After  []rerank.Covered   `json:"after"`
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
	EmptyCandidates         []rerank.Covered    `json:"empty_candidates"`
	AlteredCandidateRefusal reason.Code         `json:"altered_candidate_refusal"`
	Limit                   string              `json:"limit"`
}

// MarshalJSON lets encoding/json (the WASM bridge) write the record as
// pyjson does.
func (r *CoverageRecord) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(r) }

// Coverage runs the coverage lab: each development case's hybrid
// candidates (version-filtered, candidate budget 3) reranked by coverage
// (k 3); the mechanism check (a case's candidates reversed, then
// reranked); the unfiltered diagnostic (every version, every chunk as a
// candidate, every candidate kept); an empty candidate list; and a
// candidate whose text was altered, which must be refused.
func (s *Suite) Coverage(ctx context.Context) (*CoverageRecord, error) {
	rec := &CoverageRecord{
		ExecutionMode: CoverageMode, SnapshotID: s.snap.SnapshotID, Limit: CoverageLimit,
		Configuration: Configuration{CandidateBudget: CandidateBudget, RankConstant: rerank.RankConstant,
			RerankK: RerankK, Score: ScoreRule, Tie: TieRule},
	}
	for _, c := range s.dev {
		before, err := s.candidates(ctx, c)
		if err != nil {
			return nil, err
		}
		after, err := rerank.Coverage(c.Query, before, s.snap, RerankK)
		if err != nil {
			return nil, fmt.Errorf("case %s: coverage: %w", c.CaseID, err)
		}
		rec.DevelopmentCases = append(rec.DevelopmentCases, DevelopmentResult{DevelopmentCase: c, Before: before, After: after})
	}

	m, err := s.candidates(ctx, s.mechanism)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
	rec.MechanismCheck = MechanismCheck{Scope: MechanismScope, Query: s.mechanism.Query, Before: m}
	if rec.MechanismCheck.After, err = rerank.Coverage(s.mechanism.Query, m, s.snap, RerankK); err != nil {
		return nil, fmt.Errorf("mechanism check: %w", err)
	}

	q := s.diagnostic.Query
	all, err := s.retriever.Candidates(ctx, q, "", len(s.snap.Passages()))
	if err != nil {
		return nil, fmt.Errorf("unfiltered diagnostic: %w", err)
	}
	rec.UnfilteredDiagnostic = Diagnostic{Query: q, Before: all, Scope: DiagnosticScope}
	if rec.UnfilteredDiagnostic.After, err = rerank.Coverage(q, all, s.snap, max(1, len(all))); err != nil {
		return nil, fmt.Errorf("unfiltered diagnostic: %w", err)
	}

	if rec.EmptyCandidates, err = rerank.Coverage(q, []rerank.Candidate{}, s.snap, RerankK); err != nil {
		return nil, fmt.Errorf("empty candidates: %w", err)
	}

	if len(rec.DevelopmentCases) > 0 && len(rec.DevelopmentCases[0].Before) > 0 {
		first := rec.DevelopmentCases[0]
		altered := append([]rerank.Candidate(nil), first.Before...)
		altered[0].Text += alteredTextSuffix
		_, err := rerank.Coverage(first.Query, altered, s.snap, RerankK)
		code, refused := reason.Of(err)
		if !refused {
			return nil, fmt.Errorf("altered candidate: the reranker accepted a candidate whose text was changed (%v)", err)
		}
		rec.AlteredCandidateRefusal = code
	}
	return rec, nil
}
