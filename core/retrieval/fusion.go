package retrieval

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// Models are what a configuration that needs a model is given: for a
// vector branch the pack's passage vectors and an embedder of their
// model, for a cross-encoder second stage its scorer; and the context
// their calls run under (a Searcher's Search has none of its own: it has
// store.Index's method set).
type Models struct {
	Ctx      context.Context
	Vectors  *vectors.Set
	Embedder vectors.Embedder
	Scorer   Scorer
	Lister   Lister
}

// Lister is a listwise reranker (a Gemini call): given a query and its
// candidates, their order, best first, as a permutation of their
// indexes.
type Lister interface {
	Order(ctx context.Context, query string, cands []Candidate) ([]int, error)
}

// Candidate is what a listwise reranker sees of a passage: an id that
// names it within the request, and its text.
type Candidate struct {
	ID   string
	Text string
}

// Scorer is a cross-encoder: one relevance logit per (query, text) pair,
// higher is more relevant.
type Scorer interface {
	// Model is the model the scorer loaded.
	Model() vectors.Model
	Score(ctx context.Context, query string, texts []string) ([]float64, error)
}

// queryBatch is how many queries Prefetch embeds per call.
const queryBatch = 32

// OpenModels is Open for a spec that may need a model: a vector branch
// (m's vectors must be of this index's passages, one per passage, and of
// the spec's model, and m's embedder that very model, vectors.Model.Same)
// or a cross-encoder stage (m's scorer the stage's model); a mismatch is
// refused with reason.InvalidConfig saying which, a missing model with
// reason.UnknownConfig. A spec that needs neither ignores m.
func (bs *Base) OpenModels(spec Spec, m Models) (*Searcher, error) {
	cross := spec.SecondStage.Method == StageCrossEncoder
	listwise := spec.SecondStage.Method == StageListwise
	if spec.Fusion == nil && !cross && !listwise {
		return bs.Open(spec)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return reason.New(reason.InvalidConfig, "configuration %s: %s", spec.Name, fmt.Sprintf(format, a...))
	}
	if f := spec.Fusion; f != nil {
		if m.Vectors == nil || m.Embedder == nil {
			return nil, spec.Runnable()
		}
		h := m.Vectors.Header
		switch got := m.Embedder.Model(); {
		case m.Vectors.Len() != bs.n:
			return nil, bad("the vectors file %s holds %d vectors; the pack has %d passages", f.Vectors, m.Vectors.Len(), bs.n)
		case h.Model.ID != f.Model:
			return nil, bad("the vectors file %s was made by model %s, not %s", f.Vectors, h.Model.ID, f.Model)
		case !got.Same(h.Model):
			return nil, bad("the vectors file %s was made by model %s (%d dimensions, files %s); the embedder loaded %s (%d dimensions, files %s): a query must be embedded by the model its passages were",
				f.Vectors, h.Model.ID, h.Model.Dimensions, fileList(h.Model), got.ID, got.Dimensions, fileList(got))
		}
	}
	if cross {
		if m.Scorer == nil {
			return nil, reason.New(reason.UnknownConfig, "configuration %s reranks with the cross-encoder %s, which needs the model: `ragagent retrieval --model DIR` runs it", spec.Name, spec.SecondStage.Model)
		}
		if got := m.Scorer.Model().ID; got != spec.SecondStage.Model {
			return nil, bad("the second stage's model is %s; the scorer loaded %s", spec.SecondStage.Model, got)
		}
	}
	if listwise && m.Lister == nil {
		return nil, spec.Runnable()
	}
	if m.Ctx == nil {
		m.Ctx = context.Background()
	}
	s, err := bs.open(spec)
	if err != nil {
		return nil, err
	}
	s.models, s.queries = &m, map[string][]float32{}
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
	if s.models == nil || s.models.Embedder == nil {
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
	got, err := vectors.EmbedAll(s.models.Ctx, s.models.Embedder, missing, queryBatch, nil)
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
	near, err := s.models.Vectors.Nearest(q, func(d int32) bool { return want < 0 || verID[d] == want }, f.Depth)
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

// crossEncode reorders cands (the first stage's first depth) by the
// cross-encoder's logit for (query, passage text), higher first, ties in
// first-stage order; each candidate's score becomes its logit.
func (s *Searcher) crossEncode(query string, cands []scored) error {
	if len(cands) == 0 {
		return nil
	}
	texts := make([]string, len(cands))
	for i, c := range cands {
		t, err := s.base.ix.Text(int(c.doc))
		if err != nil {
			return err
		}
		texts[i] = t
	}
	logits, err := s.models.Scorer.Score(s.models.Ctx, query, texts)
	if err != nil {
		return fmt.Errorf("the cross-encoder: %w", err)
	}
	if len(logits) != len(cands) {
		return fmt.Errorf("the cross-encoder returned %d scores for %d passages", len(logits), len(cands))
	}
	for i, l := range logits {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return fmt.Errorf("the cross-encoder's score for passage %d is %v", i+1, l)
		}
		cands[i].score = l
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	return nil
}

// listwise reorders cands (the first stage's first depth) in the order
// the lister gives; the lister's value must be a permutation of them.
func (s *Searcher) listwise(query string, cands []scored) error {
	if len(cands) == 0 {
		return nil
	}
	in := make([]Candidate, len(cands))
	for i, c := range cands {
		t, err := s.base.ix.Text(int(c.doc))
		if err != nil {
			return err
		}
		in[i] = Candidate{ID: fmt.Sprintf("p%d", c.doc+1), Text: t}
	}
	order, err := s.models.Lister.Order(s.models.Ctx, query, in)
	if err != nil {
		return fmt.Errorf("the listwise stage: %w", err)
	}
	if len(order) != len(cands) {
		return fmt.Errorf("the listwise stage ordered %d of %d passages", len(order), len(cands))
	}
	seen := make([]bool, len(cands))
	out := make([]scored, len(cands))
	for r, i := range order {
		if i < 0 || i >= len(cands) || seen[i] {
			return fmt.Errorf("the listwise stage's order is not a permutation of its %d passages", len(cands))
		}
		seen[i] = true
		out[r] = scored{doc: cands[i].doc, score: float64(len(cands) - r)}
	}
	copy(cands, out)
	return nil
}
