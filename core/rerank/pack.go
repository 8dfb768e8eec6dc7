package rerank

import (
	"context"
	"fmt"
	"sort"
)

// PackCase is one authored case of a corpus pack to rerank: its question
// and version, and the passages that answer it, by URL when it names any
// (TargetURLs), else by source id.
type PackCase struct {
	ID         string
	Question   string
	Version    string
	Sources    []string
	TargetURLs []string
	// Matches, when set, is the lab's own judgement of whether the
	// passage with this source id answers the case (evaluate.Case.Matches:
	// its URL or an alias, or a page-level target's page), so the reranking
	// lab judges as the experiments do; without it a candidate's URL must
	// equal a target URL.
	Matches func(sourceID string) bool
}

// Hit is one candidate of a pack's lexical branch, best first: its bm25
// score and its passage's text, read and checked against the receipt the
// search issued.
type Hit struct {
	SourceID string
	URL      string
	Score    float64
	Text     string
}

// Lexical is a pack's lexical branch: the agent's literal search with its
// scores, k hits at most, in one version.
type Lexical func(query string, k int, version string) ([]Hit, error)

// PackRerankCase is one case: the lexical order and the coverage order (as
// source ids with their URLs), and how each did against the case's target
// passages.
type PackRerankCase struct {
	CaseID   string             `json:"case_id"`
	Question string             `json:"question"`
	Version  string             `json:"version"`
	Lexical  []PackCandidate    `json:"lexical"`
	Coverage []PackCandidate    `json:"coverage"`
	Outcomes map[string]Outcome `json:"outcomes"`
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
	Corpus     string           `json:"corpus"`
	Vectors    bool             `json:"vectors"`
	Note       string           `json:"note"`
	Candidates int              `json:"candidates"`
	Cases      []PackRerankCase `json:"cases"`
	Summary    map[string]Tally `json:"summary"`
}

// NoVectorsNote says plainly what a pack without recorded vectors cannot
// do in the reranking lab.
const NoVectorsNote = "this pack records no vectors, so there is no vector branch and no reciprocal-rank fusion: " +
	"the candidates are the lexical branch's alone (the pack's search, under its retrieval configuration), then reordered by token coverage; the Gemini listwise and " +
	"cross-encoder orders are replayed only for the lab's frozen candidates (ragagent rerank without --corpus)"

// RerankPack reranks a pack's cases: n lexical candidates each, reordered by
// token coverage (stable: ties keep the lexical order), each order judged
// against the case's targets and tallied. No pack records vectors, so it
// never fuses; the result says so.
func RerankPack(ctx context.Context, corpus string, cases []PackCase, search Lexical, n int) (*PackRerankResult, error) {
	out := &PackRerankResult{Corpus: corpus, Note: NoVectorsNote, Candidates: n, Cases: []PackRerankCase{}}
	outcomes := map[string][]Outcome{"lexical": nil, "coverage": nil}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tokens, err := QueryTokens(c.Question)
		if err != nil {
			return nil, fmt.Errorf("rerank: case %s: %w", c.ID, err)
		}
		hits, err := search(c.Question, n, c.Version)
		if err != nil {
			return nil, fmt.Errorf("rerank: case %s: %w", c.ID, err)
		}
		lex := make([]PackCandidate, len(hits))
		for i, h := range hits {
			f, score := Cover(tokens, h.Text)
			lex[i] = PackCandidate{SourceID: h.SourceID, URL: h.URL, Score: h.Score, CoverageScore: score, Matched: f.MatchedTokens}
		}
		cov := append([]PackCandidate(nil), lex...)
		sort.SliceStable(cov, func(a, b int) bool { return cov[a].CoverageScore > cov[b].CoverageScore })
		pc := PackRerankCase{CaseID: c.ID, Question: c.Question, Version: c.Version, Lexical: lex, Coverage: cov,
			Outcomes: map[string]Outcome{}}
		targets := append(append([]string(nil), c.Sources...), c.TargetURLs...)
		for name, order := range map[string][]PackCandidate{"lexical": lex, "coverage": cov} {
			var keys []string
			for _, x := range order {
				switch {
				case c.Matches != nil && c.Matches(x.SourceID):
					keys = append(keys, targets[0]) // a match names a target
				case c.Matches != nil:
					keys = append(keys, "")
				case len(c.TargetURLs) > 0:
					keys = append(keys, x.URL)
				default:
					keys = append(keys, x.SourceID)
				}
			}
			o := Judge(keys, targets)
			pc.Outcomes[name] = o
			outcomes[name] = append(outcomes[name], o)
		}
		out.Cases = append(out.Cases, pc)
	}
	out.Summary = map[string]Tally{"lexical": Count(outcomes["lexical"]), "coverage": Count(outcomes["coverage"])}
	return out, nil
}
