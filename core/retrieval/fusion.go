package retrieval

import (
	"context"
	"fmt"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// Vector is what a configuration's vector branch needs: the pack's
// passage vectors and an embedder of the same model, and the context the
// embedder's calls run under (a Searcher's Search has none of its own:
// it has store.Index's method set).
type Vector struct {
	Ctx      context.Context
	Set      *vectors.Set
	Embedder vectors.Embedder
}

// queryBatch is how many queries Prefetch embeds per call.
const queryBatch = 32

// OpenVector is Open for a spec that may fuse a vector branch: v's
// vectors must be of this index's passages (one per passage) and of the
// spec's model, and v's embedder that very model (vectors.Model.Same),
// or it is refused with reason.InvalidConfig saying which. A spec with no
// fusion ignores v.
func (bs *Base) OpenVector(spec Spec, v Vector) (*Searcher, error) {
	if spec.Fusion == nil {
		return bs.Open(spec)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := spec.RunnableWithModels(); err != nil {
		return nil, err
	}
	if v.Set == nil || v.Embedder == nil {
		return nil, spec.Runnable()
	}
	h := v.Set.Header
	bad := func(format string, a ...any) error {
		return reason.New(reason.InvalidConfig, "configuration %s: %s", spec.Name, fmt.Sprintf(format, a...))
	}
	switch got := v.Embedder.Model(); {
	case v.Set.Len() != bs.n:
		return nil, bad("the vectors file %s holds %d vectors; the pack has %d passages", spec.Fusion.Vectors, v.Set.Len(), bs.n)
	case h.Model.ID != spec.Fusion.Model:
		return nil, bad("the vectors file %s was made by model %s, not %s", spec.Fusion.Vectors, h.Model.ID, spec.Fusion.Model)
	case !got.Same(h.Model):
		return nil, bad("the vectors file %s was made by model %s (%d dimensions, files %s); the embedder loaded %s (%d dimensions, files %s): a query must be embedded by the model its passages were",
			spec.Fusion.Vectors, h.Model.ID, h.Model.Dimensions, fileList(h.Model), got.ID, got.Dimensions, fileList(got))
	}
	if v.Ctx == nil {
		v.Ctx = context.Background()
	}
	s, err := bs.open(spec)
	if err != nil {
		return nil, err
	}
	s.vec, s.queries = &v, map[string][]float32{}
	return s, nil
}

func fileList(m vectors.Model) string {
	out := ""
	for i, f := range m.Files {
		if i > 0 {
			out += ", "
		}
		out += f.Path + " " + f.SHA256[:min(12, len(f.SHA256))]
	}
	return out
}

// Prefetch embeds the queries the searcher will be asked (an experiment's
// questions) in a few calls rather than one per search. A searcher without
// a vector branch does nothing.
func (s *Searcher) Prefetch(queries []string) error {
	if s.vec == nil {
		return nil
	}
	var missing []string
	seen := map[string]bool{}
	for _, q := range queries {
		if _, ok := s.queries[q]; !ok && !seen[q] {
			seen[q] = true
			missing = append(missing, q)
		}
	}
	got, err := vectors.EmbedAll(s.vec.Ctx, s.vec.Embedder, missing, queryBatch, nil)
	if err != nil {
		return fmt.Errorf("the vector branch: %w", err)
	}
	for i, q := range missing {
		s.queries[q] = got[i]
	}
	return nil
}

// queryVector is the query's vector, embedded now unless Prefetch did.
func (s *Searcher) queryVector(query string) ([]float32, error) {
	if v, ok := s.queries[query]; ok {
		return v, nil
	}
	if err := s.Prefetch([]string{query}); err != nil {
		return nil, err
	}
	return s.queries[query], nil
}

// fuse is reciprocal rank fusion of the lexical ranking (its first depth)
// with the vector branch's first depth of the wanted version (want < 0:
// any): a passage's score is the sum of 1/(K+rank) over the branches that
// rank it, best first, ties by doc order.
func (s *Searcher) fuse(query string, lexical []scored, want int32) ([]scored, error) {
	f := s.spec.Fusion
	q, err := s.queryVector(query)
	if err != nil {
		return nil, err
	}
	verID := s.base.verID
	near, err := s.vec.Set.Nearest(q, func(d int32) bool { return want < 0 || verID[d] == want }, f.Depth)
	if err != nil {
		return nil, err
	}
	score := map[int32]float64{}
	for i, c := range lexical[:min(len(lexical), f.Depth)] {
		score[c.doc] += 1 / float64(f.K+i+1)
	}
	for i, n := range near {
		score[n.Doc] += 1 / float64(f.K+i+1)
	}
	out := make([]scored, 0, len(score))
	for d, v := range score {
		out = append(out, scored{doc: d, score: v})
	}
	sortScored(out)
	return out, nil
}
