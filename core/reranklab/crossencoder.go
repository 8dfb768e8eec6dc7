package reranklab

import (
	"context"
	"fmt"

	"github.com/ragagentlab/ragagent/core/rerank"
)

// Execution modes of a cross-encoder run, and its scope as the reference
// states it.
const (
	CrossEncoderReplayMode = "recorded-local-cross-encoder-inference"
	CrossEncoderLiveMode   = "fresh-local-cross-encoder-inference"
	CrossEncoderScope      = "Raw logits are not calibrated probabilities. Original hybrid candidates are unchanged. Expanded cases use all version-eligible passages in a four-document fixture; diagnostic and validation questions remain separate. This does not establish general retrieval quality, answer truth or support for unsupported questions."
)

// Encoder is a cross-encoder for a run: its scores, and what it is (the
// model's acquisition record and the runtime environment), as recorded.
type Encoder interface {
	rerank.Scorer
	Model() any
	Environment() any
	Mode() string
}

// CrossEncoder runs the cross-encoder comparison, in the reference's call
// order: first the original development cases' frozen hybrid candidates
// (beside their coverage order), then each expanded case over every
// version-eligible passage, with both scorers' top-1 and reciprocal-rank
// outcomes and the summary by split. Any refused score list ends the run:
// a summary is only worth the whole set of cases.
func (s *Suite) CrossEncoder(ctx context.Context, enc Encoder) (*rerank.CrossEncoderRecord, error) {
	cov, err := s.Coverage(ctx)
	if err != nil {
		return nil, err
	}
	rec := &rerank.CrossEncoderRecord{ExecutionMode: enc.Mode(), Model: enc.Model(), Environment: enc.Environment(),
		CasesSHA256: s.casesSHA256, SnapshotID: s.snap.SnapshotID, Scope: CrossEncoderScope}
	for _, d := range cov.DevelopmentCases {
		scores, ranked, err := s.score(ctx, enc, d.Query, d.Before)
		if err != nil {
			return nil, fmt.Errorf("original case %s: %w", d.CaseID, err)
		}
		rec.Original = append(rec.Original, rerank.Comparison{CaseID: d.CaseID, Question: d.Query, Candidates: d.Before,
			Coverage: d.After, Scores: acceptedLogits(ranked), CrossEncoder: ranked, InferenceSeconds: scores.Seconds})
	}
	var diag, val [2][]rerank.Outcome
	for _, c := range s.expanded {
		pool := s.Pool(c)
		scores, ranked, err := s.score(ctx, enc, c.Question, pool)
		if err != nil {
			return nil, fmt.Errorf("expanded case %s: %w", c.CaseID, err)
		}
		coverage, err := rerank.Coverage(c.Question, pool, s.snap, max(1, len(pool)))
		if err != nil {
			return nil, fmt.Errorf("expanded case %s: coverage: %w", c.CaseID, err)
		}
		out := rerank.Outcomes{Coverage: rerank.Judge(rerank.Sources(coverage), c.TargetSources),
			CrossEncoder: rerank.Judge(rerank.Sources(ranked), c.TargetSources)}
		rec.Expanded = append(rec.Expanded, rerank.ExpandedResult{ExpandedCase: c, Candidates: pool, Coverage: coverage,
			Scores: acceptedLogits(ranked), CrossEncoder: ranked, InferenceSeconds: scores.Seconds, Outcome: out})
		switch c.Split {
		case "diagnostic":
			diag[0], diag[1] = append(diag[0], out.Coverage), append(diag[1], out.CrossEncoder)
		case "validation":
			val[0], val[1] = append(val[0], out.Coverage), append(val[1], out.CrossEncoder)
		}
	}
	rec.Summary = rerank.Summary{
		Diagnostic: rerank.SplitSummary{Coverage: rerank.Count(diag[0]), CrossEncoder: rerank.Count(diag[1])},
		Validation: rerank.SplitSummary{Coverage: rerank.Count(val[0]), CrossEncoder: rerank.Count(val[1])},
	}
	return rec, nil
}

func (s *Suite) score(ctx context.Context, enc Encoder, question string, cands []rerank.Candidate) (rerank.Scores, []rerank.Scored, error) {
	scores, err := enc.Scores(ctx, question, cands)
	if err != nil {
		return rerank.Scores{}, nil, err
	}
	ranked, err := rerank.AcceptScores(question, cands, s.snap, scores.Logits)
	return scores, ranked, err
}

// acceptedLogits are the scores in candidate order, as accepted.
func acceptedLogits(ranked []rerank.Scored) []float64 {
	out := make([]float64, len(ranked))
	for _, r := range ranked {
		out[r.IncomingRank-1] = r.CrossEncoderLogit
	}
	return out
}
