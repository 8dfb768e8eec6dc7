package rerank

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/store"
)

// RankConstant is the reciprocal rank fusion constant: a branch's rank r
// contributes 1/(RankConstant+r).
const RankConstant = 60

// Vectors gives a query's cosine similarity to each of a list of chunks, in
// the same order. The recorded implementation is an allowlist of preserved
// scores; a live embedding provider plugs in here.
type Vectors interface {
	Similarities(ctx context.Context, query string, chunks []Passage) ([]float64, error)
}

// Retriever is the first stage: a lexical branch (FTS5 bm25 over the chunk
// texts with the agent's literal OR query) and a vector branch, fused by
// reciprocal rank. It is not safe for concurrent use (one SQLite
// connection).
type Retriever struct {
	snap    *Snapshot
	chunks  []Passage
	index   *store.Index
	vectors Vectors
}

// NewRetriever indexes the snapshot's chunks in snapshot order.
func NewRetriever(snap *Snapshot, vectors Vectors) (*Retriever, error) {
	if snap == nil {
		return nil, errNoSnapshot
	}
	if vectors == nil {
		return nil, fmt.Errorf("rerank: the retriever needs a vector branch")
	}
	chunks := snap.Passages()
	docs := make([]store.Doc, len(chunks))
	for i, c := range chunks {
		docs[i] = store.Doc{Version: c.Version, Text: c.Text}
	}
	ix, err := store.Open(docs)
	if err != nil {
		return nil, err
	}
	return &Retriever{snap: snap, chunks: chunks, index: ix, vectors: vectors}, nil
}

// Close releases the index.
func (r *Retriever) Close() error { return r.index.Close() }

// Snapshot is the snapshot the retriever searches.
func (r *Retriever) Snapshot() *Snapshot { return r.snap }

// Candidates returns up to budget candidates for query among the chunks of
// the given version ("" for every version, the unfiltered diagnostic). Each
// branch ranks every eligible chunk it scores (the lexical branch only
// those that match a term; the vector branch all of them, by descending
// cosine); a candidate's fused score is the sum of its branches'
// contributions, a missing branch contributing 0.0. Candidates are sorted
// by descending fused score; ties keep snapshot order. The query is
// checked as the reranker checks it (invalid_query).
func (r *Retriever) Candidates(ctx context.Context, query, version string, budget int) ([]Candidate, error) {
	if _, err := QueryTokens(query); err != nil {
		return nil, err
	}
	if version != "" && !corpus.ValidVersion(version) {
		return nil, fmt.Errorf("rerank: version %q is not of the form 3.12", version)
	}
	if budget < 1 {
		return nil, fmt.Errorf("rerank: the candidate budget is %d; it must be at least 1", budget)
	}
	eligible := r.snap.Eligible(version)
	if len(eligible) == 0 {
		return []Candidate{}, nil
	}
	fusion := make(map[string]*Fusion, len(eligible))
	for _, c := range eligible {
		zero := 0.0
		fusion[c.ChunkID] = &Fusion{LexicalContribution: &zero, VectorContribution: &zero}
	}

	if err := r.lexical(fusion, query, version); err != nil {
		return nil, err
	}
	if err := r.vector(ctx, fusion, query, eligible); err != nil {
		return nil, err
	}

	out := make([]Candidate, 0, len(eligible))
	for _, c := range eligible {
		f := fusion[c.ChunkID]
		fused := *f.LexicalContribution + *f.VectorContribution
		f.FusedScore = &fused
		cand := c.Candidate()
		cand.Fusion = f
		out = append(out, cand)
	}
	// eligible is in snapshot order, so a stable sort keeps it for ties.
	sort.SliceStable(out, func(a, b int) bool { return *out[a].FusedScore > *out[b].FusedScore })
	return out[:min(budget, len(out))], nil
}

// lexical is the lexical branch: it ranks the chunks of the version that
// match a query term by bm25 and records each one's score, rank and
// contribution in its fusion entry.
func (r *Retriever) lexical(fusion map[string]*Fusion, query, version string) error {
	hits, err := r.index.Search(query, len(r.chunks), version)
	if err != nil {
		return fmt.Errorf("rerank: lexical branch: %w", err)
	}
	for _, h := range hits {
		f := fusion[r.chunks[h.Doc].ChunkID]
		if f == nil { // the index filters by version; this cannot happen
			return fmt.Errorf("rerank: lexical branch returned chunk %s outside version %q", r.chunks[h.Doc].ChunkID, version)
		}
		score, rank, contribution := h.Score, h.Rank, reciprocal(h.Rank)
		f.LexicalScore, f.LexicalRank, f.LexicalContribution = &score, &rank, &contribution
	}
	return nil
}

// vector is the vector branch: it ranks every eligible chunk by descending
// cosine similarity to the query (ties in snapshot order) and records each
// one's score, rank and contribution in its fusion entry.
func (r *Retriever) vector(ctx context.Context, fusion map[string]*Fusion, query string, eligible []Passage) error {
	sims, err := r.vectors.Similarities(ctx, query, eligible)
	if err != nil {
		return err
	}
	if len(sims) != len(eligible) {
		return fmt.Errorf("rerank: vector branch returned %d scores for %d chunks", len(sims), len(eligible))
	}
	order := make([]int, len(eligible))
	for i := range order {
		order[i] = i
		if math.IsNaN(sims[i]) || math.IsInf(sims[i], 0) {
			return fmt.Errorf("rerank: vector branch: the score for chunk %s (%s) is not finite", eligible[i].ChunkID, eligible[i].SourceID)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return sims[order[a]] > sims[order[b]] })
	for rank0, i := range order {
		f := fusion[eligible[i].ChunkID]
		score, rank, contribution := sims[i], rank0+1, reciprocal(rank0+1)
		f.VectorScore, f.VectorRank, f.VectorContribution = &score, &rank, &contribution
	}
	return nil
}

func reciprocal(rank int) float64 { return 1 / float64(RankConstant+rank) }
