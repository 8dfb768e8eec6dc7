package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/tools"
)

// PackRerankRequest reranks a pack's authored cases: the lexical branch's
// candidates (the pack's bm25, its own versions) reordered by token
// coverage.
type PackRerankRequest struct {
	Corpus string
	// Candidates is how many lexical candidates each case gets (1..MaxSearchK);
	// 0 means MaxSearchK.
	Candidates int
}

// PackRerankCase is one case: the lexical order and the coverage order (as
// source ids with their URLs), and how each did against the case's target
// passages.
type PackRerankCase struct {
	CaseID   string                    `json:"case_id"`
	Question string                    `json:"question"`
	Version  string                    `json:"version"`
	Lexical  []PackCandidate           `json:"lexical"`
	Coverage []PackCandidate           `json:"coverage"`
	Outcomes map[string]rerank.Outcome `json:"outcomes"`
}

// PackCandidate is a candidate with its bm25 score and coverage.
type PackCandidate struct {
	SourceID      string   `json:"source_id"`
	URL           string   `json:"url"`
	Score         float64  `json:"bm25"`
	CoverageScore float64  `json:"coverage_score"`
	Matched       []string `json:"matched_tokens"`
}

// PackRerankResult is a pack's rerank: what ran and what could not, each
// case, and the tally per ordering over the answerable cases.
type PackRerankResult struct {
	Corpus     string                  `json:"corpus"`
	Vectors    bool                    `json:"vectors"`
	Note       string                  `json:"note"`
	Candidates int                     `json:"candidates"`
	Cases      []PackRerankCase        `json:"cases"`
	Summary    map[string]rerank.Tally `json:"summary"`
}

// NoVectorsNote says plainly what a pack without recorded vectors cannot
// do in the reranking lab.
const NoVectorsNote = "this pack records no vectors, so there is no vector branch and no reciprocal-rank fusion: " +
	"the candidates are the lexical branch's (bm25) alone, then reordered by token coverage; the Gemini listwise and " +
	"cross-encoder orders are replayed only for the lab's frozen candidates (ragagent rerank without --corpus)"

// RerankPack runs the lexical branch and coverage over a pack's authored
// cases. No pack records vectors, so it never fuses; the result says so.
func (e *Engine) RerankPack(ctx context.Context, req PackRerankRequest) (*PackRerankResult, error) {
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	n := req.Candidates
	if n == 0 {
		n = MaxSearchK
	}
	if n < 1 || n > MaxSearchK {
		return nil, fmt.Errorf("rerank: --candidates must be from 1 to %d", MaxSearchK)
	}
	out := &PackRerankResult{Corpus: l.Pack.Manifest.ID, Note: NoVectorsNote, Candidates: n, Cases: []PackRerankCase{}}
	outcomes := map[string][]rerank.Outcome{"lexical": nil, "coverage": nil}
	for _, c := range l.Cases.Cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tokens, err := rerank.QueryTokens(c.Question)
		if err != nil {
			return nil, fmt.Errorf("rerank: case %s: %w", c.ID, err)
		}
		hits, err := l.Explain(c.Question, n, c.Version) // no snippets: only the passages are used
		if err != nil {
			return nil, fmt.Errorf("rerank: case %s: %w", c.ID, err)
		}
		lex := make([]PackCandidate, len(hits))
		for i, h := range hits {
			p, err := l.Read(h.SourceID)
			if err != nil {
				return nil, err
			}
			if err := tools.Validate(p, h.Handle); err != nil {
				return nil, err
			}
			f, score := rerank.Cover(tokens, p.Text)
			lex[i] = PackCandidate{SourceID: h.SourceID, URL: p.URL, Score: h.Score, CoverageScore: score, Matched: f.MatchedTokens}
		}
		cov := append([]PackCandidate(nil), lex...)
		sort.SliceStable(cov, func(a, b int) bool { return cov[a].CoverageScore > cov[b].CoverageScore })
		pc := PackRerankCase{CaseID: c.ID, Question: c.Question, Version: c.Version, Lexical: lex, Coverage: cov,
			Outcomes: map[string]rerank.Outcome{}}
		targets := append(append([]string(nil), c.Sources...), c.TargetURLs...)
		for name, order := range map[string][]PackCandidate{"lexical": lex, "coverage": cov} {
			var keys []string
			for _, x := range order {
				if len(c.TargetURLs) > 0 {
					keys = append(keys, x.URL)
				} else {
					keys = append(keys, x.SourceID)
				}
			}
			o := rerank.Judge(keys, targets)
			pc.Outcomes[name] = o
			outcomes[name] = append(outcomes[name], o)
		}
		out.Cases = append(out.Cases, pc)
	}
	out.Summary = map[string]rerank.Tally{"lexical": rerank.Count(outcomes["lexical"]), "coverage": rerank.Count(outcomes["coverage"])}
	return out, nil
}
