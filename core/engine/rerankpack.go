package engine

import (
	"context"
	"fmt"

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

// RerankPack runs the lexical branch and coverage over a pack's authored
// cases (rerank.RerankPack). No pack records vectors, so it never fuses;
// the result says so.
func (e *Engine) RerankPack(ctx context.Context, req PackRerankRequest) (*rerank.PackRerankResult, error) {
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
	cases := make([]rerank.PackCase, len(l.Cases.Cases))
	for i := range l.Cases.Cases {
		c := &l.Cases.Cases[i]
		cases[i] = rerank.PackCase{ID: c.ID, Question: c.Question, Version: c.Version, Sources: c.Sources, TargetURLs: c.TargetURLs,
			Matches: func(id string) bool {
				p, err := l.Read(id)
				return err == nil && c.Matches(p)
			}}
	}
	// The lexical branch is the agent's search without snippets; each
	// candidate's text is read and checked against the receipt it was
	// issued with.
	lexical := func(query string, k int, version string) ([]rerank.Hit, error) {
		hits, err := l.Explain(query, k, version)
		if err != nil {
			return nil, err
		}
		out := make([]rerank.Hit, len(hits))
		for i, h := range hits {
			p, err := l.Read(h.SourceID)
			if err != nil {
				return nil, err
			}
			if err := tools.Validate(p, h.Handle); err != nil {
				return nil, err
			}
			out[i] = rerank.Hit{SourceID: h.SourceID, URL: p.URL, Score: h.Score, Text: p.Text}
		}
		return out, nil
	}
	return rerank.RerankPack(ctx, l.Pack.Manifest.ID, cases, lexical, n)
}
