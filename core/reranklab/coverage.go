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

// Value is the configuration in the reference key order.
func (c Configuration) Value() *pyjson.Object {
	return pyjson.NewObject("candidate_budget", c.CandidateBudget, "rank_constant", c.RankConstant,
		"rerank_k", c.RerankK, "score", c.Score, "tie", c.Tie)
}

// Reranked is a candidate list before and after coverage reranking.
type Reranked struct {
	Query  string             `json:"query"`
	Before []rerank.Candidate `json:"before"`
	After  []rerank.Covered   `json:"after"`
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
	MechanismCheck          Reranked            `json:"mechanism_check"`
	ExecutionMode           string              `json:"execution_mode"`
	ModelCalled             bool                `json:"model_called"`
	LearnedReranker         bool                `json:"learned_reranker"`
	SnapshotID              string              `json:"snapshot_id"`
	Configuration           Configuration       `json:"configuration"`
	DevelopmentCases        []DevelopmentResult `json:"development_cases"`
	UnfilteredDiagnostic    Reranked            `json:"unfiltered_read_write_diagnostic"`
	EmptyCandidates         []rerank.Covered    `json:"empty_candidates"`
	AlteredCandidateRefusal reason.Code         `json:"altered_candidate_refusal"`
	Limit                   string              `json:"limit"`
}

// values is a list of records as a JSON list value.
func values[T interface{ Value() *pyjson.Object }](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x.Value()
	}
	return out
}

// list is a list of strings or numbers as a JSON list value.
func list[T string | float64](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Value is the record as the reference writes it.
func (r *CoverageRecord) Value() *pyjson.Object {
	dev := make([]any, len(r.DevelopmentCases))
	for i, c := range r.DevelopmentCases {
		dev[i] = pyjson.NewObject("case_id", c.CaseID, "query", c.Query, "requested_version", c.RequestedVersion,
			"before", values(c.Before), "after", values(c.After))
	}
	m, d := r.MechanismCheck, r.UnfilteredDiagnostic
	return pyjson.NewObject(
		"mechanism_check", pyjson.NewObject("scope", MechanismScope, "query", m.Query,
			"before", values(m.Before), "after", values(m.After)),
		"execution_mode", r.ExecutionMode,
		"model_called", r.ModelCalled,
		"learned_reranker", r.LearnedReranker,
		"snapshot_id", r.SnapshotID,
		"configuration", r.Configuration.Value(),
		"development_cases", dev,
		// policy is null: no version policy, every version is searched.
		"unfiltered_read_write_diagnostic", pyjson.NewObject("query", d.Query, "policy", nil,
			"before", values(d.Before), "after", values(d.After), "scope", DiagnosticScope),
		"empty_candidates", values(r.EmptyCandidates),
		"altered_candidate_refusal", string(r.AlteredCandidateRefusal),
		"limit", r.Limit)
}

// MarshalJSON writes Value.
func (r *CoverageRecord) MarshalJSON() ([]byte, error) { return marshal(r.Value()) }

func marshal(v *pyjson.Object) ([]byte, error) {
	return []byte(pyjson.Dumps(v, pyjson.Options{Strict: true})), nil
}

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
	rec.MechanismCheck = Reranked{Query: s.mechanism.Query, Before: m}
	if rec.MechanismCheck.After, err = rerank.Coverage(s.mechanism.Query, m, s.snap, RerankK); err != nil {
		return nil, fmt.Errorf("mechanism check: %w", err)
	}

	q := s.diagnostic.Query
	all, err := s.retriever.Candidates(ctx, q, "", len(s.snap.Passages()))
	if err != nil {
		return nil, fmt.Errorf("unfiltered diagnostic: %w", err)
	}
	rec.UnfilteredDiagnostic = Reranked{Query: q, Before: all}
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
