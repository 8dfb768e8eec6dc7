package reranklab

import (
	"context"
	"fmt"

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

// Coverage runs the coverage lab: each development case's hybrid
// candidates (version-filtered, candidate budget 3) reranked by coverage
// (k 3); the mechanism check (a case's candidates reversed, then
// reranked); the unfiltered diagnostic (every version, every chunk as a
// candidate, every candidate kept); an empty candidate list; and a
// candidate whose text was altered, which must be refused.
func (s *Suite) Coverage(ctx context.Context) (*rerank.CoverageRecord, error) {
	rec := &rerank.CoverageRecord{
		ExecutionMode: CoverageMode, SnapshotID: s.snap.SnapshotID, Limit: CoverageLimit,
		Configuration: rerank.Configuration{CandidateBudget: CandidateBudget, RankConstant: rerank.RankConstant,
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
		rec.DevelopmentCases = append(rec.DevelopmentCases, rerank.DevelopmentResult{DevelopmentCase: c, Before: before, After: after})
	}

	m, err := s.candidates(ctx, s.mechanism)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
	rec.MechanismCheck = rerank.MechanismCheck{Scope: MechanismScope, Query: s.mechanism.Query, Before: m}
	if rec.MechanismCheck.After, err = rerank.Coverage(s.mechanism.Query, m, s.snap, RerankK); err != nil {
		return nil, fmt.Errorf("mechanism check: %w", err)
	}

	q := s.diagnostic.Query
	all, err := s.retriever.Candidates(ctx, q, "", len(s.snap.Passages()))
	if err != nil {
		return nil, fmt.Errorf("unfiltered diagnostic: %w", err)
	}
	rec.UnfilteredDiagnostic = rerank.Diagnostic{Query: q, Before: all, Scope: DiagnosticScope}
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
