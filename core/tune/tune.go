// Package tune chooses a retrieval configuration for a user's own
// question set, and says honestly how the choice will do on questions
// not yet written: the choice is made by a fixed procedure (the best mean
// MRR@10 over a space of configurations, Space), and the estimate printed
// is of that procedure under cross-validation (each question scored under
// the configuration chosen without it), never of the winner's in-sample
// score, which a large space inflates. It takes per-question scores, not
// an index: the engine ranks, this package only chooses and estimates.
package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/retrieval"
)

// DefaultFolds is the number of cross-validation folds.
const DefaultFolds = 5

// MinCases is the fewest answerable questions a choice is made from: with
// fewer, a fold holds one or two questions and the estimate is noise.
const MinCases = 10

// SmallSet is the size under which tune warns whatever the intervals say:
// differences of a few hundredths need more questions than this to show.
const SmallSet = 30

// The folds' shuffle is seeded, so the same set gives the same folds
// natively and under WebAssembly (math/rand/v2's PCG is plain Go).
const (
	seed1 uint64 = 0x74756e652d666f6c // "tune-fol"
	seed2 uint64 = 0x64732d7261676167 // "ds-ragag"
)

// Space is the configurations tune chooses among, seed first: the
// offline built-ins, then a grid over the settings they are made of
// (retrieval.Spec): the seed's or the stemmed tokenizer; English or
// question stop words; the title's weight 0, 0.25, 0.5 or 1 and the
// anchor's 0 or 1 (the page title is the head of every title path, so a
// light title weight is page-level evidence); with or without the
// proximity boost; and RM3 expansion on the stemmed grid's middle. A grid
// point equal to a built-in is left out (the built-in's name says it
// better). Names say the settings: "stemmed-q-t0.25-a1-prox".
func Space() []retrieval.Spec {
	out := retrieval.Builtins()
	seen := map[string]bool{}
	for _, s := range out {
		seen[string(Settings(s))] = true
	}
	add := func(s retrieval.Spec) {
		key := string(Settings(s))
		if seen[key] {
			return
		}
		seen[key] = true
		s.Name = name(s)
		s.SecondStage = retrieval.SecondStage{Method: retrieval.StageNone}
		out = append(out, s)
	}
	for _, tok := range []string{retrieval.TokenizerSeed, retrieval.TokenizerStemmed} {
		for _, stop := range []string{retrieval.StopEnglish, retrieval.StopQuestions} {
			for _, title := range []float64{0, 0.25, 0.5, 1} {
				for _, anchor := range []float64{0, 1} {
					for _, prox := range []bool{false, true} {
						s := retrieval.Spec{Tokenizer: tok, StopWords: stop, Fields: retrieval.Fields{Text: 1, Title: title, Anchor: anchor}}
						if prox {
							s.Proximity = &retrieval.Proximity{Window: 4, Weight: 1, Depth: retrieval.DefaultDepth}
						}
						add(s)
						if tok == retrieval.TokenizerStemmed && title == 0.25 && anchor == 1 && !prox {
							s.Expansion = &retrieval.Expansion{Method: retrieval.ExpansionRM3, Docs: 10, Terms: 10, Weight: 0.5}
							add(s)
						}
					}
				}
			}
		}
	}
	return out
}

// Vectors is a vector branch a search may fuse: a sentence encoder's id
// and the pack's vectors file its passages were embedded into (`ragagent
// corpus embed` writes it).
type Vectors struct {
	Model string `json:"model"`
	File  string `json:"file"`
}

// WithModels is what the models add to a search: for each of bases (the
// pack's default and general, say; a base twice counts once), its
// reciprocal rank fusion with each vector branch (K 60, depth 100, as in
// the second document's hybrid) and its first 50 reordered by each
// cross-encoder. A model multiplies the bases only, not the grid: each
// configuration a model adds costs a model call per question or per
// candidate, and a few dozen questions cannot choose among hundreds.
// Each added spec is validated, so a model id the spec format refuses is
// refused here, naming it.
func WithModels(bases []retrieval.Spec, vecs []Vectors, crossEncoders []string) ([]retrieval.Spec, error) {
	var out []retrieval.Spec
	seen := map[string]bool{}
	for _, b := range bases {
		b.SecondStage = retrieval.SecondStage{Method: retrieval.StageNone}
		b.Fusion = nil
		key := string(Settings(b))
		if seen[key] {
			continue
		}
		seen[key] = true
		for _, v := range vecs {
			s := b
			s.Fusion = &retrieval.Fusion{Method: retrieval.FusionRRF, K: retrieval.DefaultRRFK, Depth: retrieval.DefaultFusionDepth, Model: v.Model, Vectors: v.File}
			s.Name = modelName(b.Name, "rrf", v.Model)
			s.Description = b.Name + " fused (reciprocal rank, K 60) with the vector branch of " + v.Model + " (" + v.File + ")"
			out = append(out, s)
		}
		for _, m := range crossEncoders {
			s := b
			s.SecondStage = retrieval.SecondStage{Method: retrieval.StageCrossEncoder, Depth: retrieval.DefaultDepth, Model: m}
			s.Name = modelName(b.Name, "ce", m)
			s.Description = b.Name + ", its first 50 reordered by the cross-encoder " + m
			out = append(out, s)
		}
	}
	for _, s := range out {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("tune: the configuration %s: %w", s.Name, err)
		}
	}
	return out, nil
}

// modelName is an added configuration's name: its base's, the stage and
// the model's name (after its owner), lowercased and within the spec
// format's 64 characters.
func modelName(base, stage, model string) string {
	if i := strings.LastIndex(model, "/"); i >= 0 {
		model = model[i+1:]
	}
	m := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, model)
	n := base + "-" + stage + "-" + m
	if len(n) > retrieval.MaxNameLength {
		n = n[:retrieval.MaxNameLength]
	}
	return n
}

// Settings are what decides a spec's ranking: its canonical form without
// its name and description.
func Settings(s retrieval.Spec) []byte {
	s.Name, s.Description = "", ""
	if s.SecondStage.Method == "" {
		s.SecondStage.Method = retrieval.StageNone
	}
	return s.Canonical()
}

// name is a grid point's name: tokenizer, stop words, weights, stages.
func name(s retrieval.Spec) string {
	parts := []string{s.Tokenizer, map[string]string{retrieval.StopEnglish: "en", retrieval.StopQuestions: "q", retrieval.StopNone: "all"}[s.StopWords],
		"t" + strconv.FormatFloat(s.Fields.Title, 'f', -1, 64), "a" + strconv.FormatFloat(s.Fields.Anchor, 'f', -1, 64)}
	if s.Proximity != nil {
		parts = append(parts, "prox")
	}
	if s.Expansion != nil {
		parts = append(parts, "rm3")
	}
	return strings.Join(parts, "-")
}

// Scores are each configuration's per-question scores on one question
// set's answerable cases, in the same order for every configuration:
// reciprocal rank within 10 (0 when no target is ranked) and recall@10
// (1 when a target is within the first 10).
type Scores struct {
	MRR    [][]float64 // [configuration][question]
	Recall [][]float64
}

// Choice is the procedure's choice on all questions and its
// cross-validated record.
type Choice struct {
	// Chosen is the configuration chosen on every question (an index of
	// the space).
	Chosen int
	// Folds is how many folds the questions were cut into.
	Folds int
	// FoldChoices are the configuration chosen without each fold's
	// questions, fold by fold.
	FoldChoices []int
	// MRR and Recall are each question's score under the configuration
	// chosen without its fold: the estimate's series.
	MRR, Recall []float64
}

// Choose picks the configuration with the best mean MRR@10 (ties: the
// better recall@10, then the earlier in the space, so seed and the
// built-ins win ties over the grid), unless it beats the pack's default
// (def, an index of the scores) by less than one standard error of their
// paired difference: then the default stays. A space of dozens of
// configurations always holds one that wins a few dozen questions by
// luck; the rule keeps a choice to what the questions can show. Choose
// cross-validates that very procedure over folds seeded shuffled folds
// of the questions.
func Choose(s Scores, def, folds int) (Choice, error) {
	if len(s.MRR) == 0 || len(s.MRR) != len(s.Recall) {
		return Choice{}, errors.New("tune: no configurations to choose among")
	}
	n := len(s.MRR[0])
	for i := range s.MRR {
		if len(s.MRR[i]) != n || len(s.Recall[i]) != n {
			return Choice{}, errors.New("tune: every configuration must score the same questions")
		}
	}
	if def < 0 || def >= len(s.MRR) {
		return Choice{}, errors.New("tune: the default is not one of the configurations")
	}
	if n < MinCases {
		return Choice{}, fmt.Errorf("tune: %d answerable questions; a choice needs at least %d (write more: each is one more data point the estimate rests on)", n, MinCases)
	}
	if folds < 2 {
		folds = DefaultFolds
	}
	folds = min(folds, n)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	c := Choice{Chosen: pick(s, def, all), Folds: folds, MRR: make([]float64, n), Recall: make([]float64, n)}
	order := rand.New(rand.NewPCG(seed1, seed2)).Perm(n)
	for f := 0; f < folds; f++ {
		var train, test []int
		for pos, q := range order {
			if pos%folds == f {
				test = append(test, q)
			} else {
				train = append(train, q)
			}
		}
		chosen := pick(s, def, train)
		c.FoldChoices = append(c.FoldChoices, chosen)
		for _, q := range test {
			c.MRR[q], c.Recall[q] = s.MRR[chosen][q], s.Recall[chosen][q]
		}
	}
	return c, nil
}

// pick is the procedure: the best mean MRR@10 over the questions, then
// recall@10, then the earliest; the default unless the best beats it by
// a standard error.
func pick(s Scores, def int, questions []int) int {
	best, bestMRR, bestRecall := 0, -1.0, -1.0
	for i := range s.MRR {
		var mrr, recall float64
		for _, q := range questions {
			mrr += s.MRR[i][q]
			recall += s.Recall[i][q]
		}
		// Sums in question order, so the same inputs tie the same way on
		// every platform; a difference below 1e-9 is a tie.
		if mrr > bestMRR+1e-9 || mrr > bestMRR-1e-9 && recall > bestRecall+1e-9 {
			best, bestMRR, bestRecall = i, mrr, recall
		}
	}
	if best == def || len(questions) < 2 {
		return best
	}
	// The paired difference's mean and standard error over the questions.
	n := float64(len(questions))
	var sum, sq float64
	for _, q := range questions {
		d := s.MRR[best][q] - s.MRR[def][q]
		sum += d
		sq += d * d
	}
	mean := sum / n
	variance := (sq - n*mean*mean) / (n - 1)
	if variance < 0 {
		variance = 0
	}
	if mean <= math.Sqrt(variance/n) {
		return def
	}
	return best
}
