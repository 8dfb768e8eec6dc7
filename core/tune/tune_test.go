package tune

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/retrieval"
)

// TestSpace: seed first, then the built-ins under their names, then the
// grid, every name unique and every spec valid, no two alike.
func TestSpace(t *testing.T) {
	space := Space()
	builtins := retrieval.Builtins()
	require.Greater(t, len(space), len(builtins))
	names, settings := map[string]bool{}, map[string]bool{}
	for i, s := range space {
		if i < len(builtins) {
			assert.Equal(t, builtins[i].Name, s.Name)
		}
		require.NoError(t, s.Validate(), s.Name)
		assert.False(t, names[s.Name], "name %s repeats", s.Name)
		assert.False(t, settings[string(Settings(s))], "%s repeats another's settings", s.Name)
		names[s.Name], settings[string(Settings(s))] = true, true
	}
	assert.True(t, names["general"], "the default is a built-in")
	assert.True(t, names["stemmed-en-t0.25-a0"], "a light title weight is in the grid")

	assert.True(t, names["stemmed-q-t0.25-a1-rm3"], "and expansion")
}

// scores makes a table of configurations × questions from rows of
// reciprocal ranks (recall: rank within 10, so any rr > 0).
func scores(rows ...[]float64) Scores {
	var s Scores
	for _, r := range rows {
		recall := make([]float64, len(r))
		for i, x := range r {
			if x > 0 {
				recall[i] = 1
			}
		}
		s.MRR, s.Recall = append(s.MRR, r), append(s.Recall, recall)
	}
	return s
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestChoose: one row per rule of the procedure, in the order pick applies
// them.
func TestChoose(t *testing.T) {
	n := 20
	lucky := repeat(0, n) // right on one question only, by chance
	lucky[7] = 1
	for _, c := range []struct {
		name        string
		s           Scores
		def, chosen int
	}{
		{"the best mean MRR@10", scores(repeat(0.2, n), repeat(0.5, n), repeat(0.4, n)), 0, 1},
		{"a tie goes to recall@10", scores(append(repeat(0, n/2), repeat(1, n/2)...), repeat(0.5, n)), 1, 1},
		{"then to the earlier", scores(repeat(0.3, n), repeat(0.3, n), repeat(0.1, n)), 2, 0},
		{"a win over the default within a standard error keeps the default", scores(repeat(0.04, n), lucky), 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(c.s, c.def, 0)
			require.NoError(t, err)
			assert.Equal(t, c.chosen, got.Chosen)
			assert.Equal(t, DefaultFolds, got.Folds)
			assert.Len(t, got.FoldChoices, DefaultFolds)
		})
	}
	// The estimate is of the procedure: a configuration that won on the
	// questions it was chosen on is scored on others.
	s := scores(repeat(0.04, n), lucky)
	got, err := Choose(s, 1, 0) // the lucky one is the default: no standard-error rule
	require.NoError(t, err)
	require.NoError(t, err)
	assert.Equal(t, 1, got.Chosen, "in sample the lucky one wins (0.05 against 0.04)")
	var cv float64
	for _, x := range got.MRR {
		cv += x / float64(n)
	}
	assert.Less(t, cv, 0.04, "cross-validated, its luck does not carry over to the folds it was not chosen on")
	again, err := Choose(s, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, got, again, "folds are seeded")
}

// TestChooseRefusals: too few questions, and ragged tables.
func TestChooseRefusals(t *testing.T) {
	_, err := Choose(scores(repeat(0.5, MinCases-1)), 0, 0)
	assert.ErrorContains(t, err, "at least 10")
	_, err = Choose(Scores{}, 0, 0)
	assert.ErrorContains(t, err, "no configurations")
	_, err = Choose(scores(repeat(0.5, 12), repeat(0.5, 11)), 0, 0)
	assert.ErrorContains(t, err, "same questions")
	_, err = Choose(scores(repeat(0.5, 12)), 3, 0)
	assert.ErrorContains(t, err, "default")
}

// TestWithModelsMultipliesTheBasesOnly: each base once (by settings), a
// fusion per vector branch and a cross-encoder stage per scorer, each a
// valid spec named after its base and model; a model id the spec format
// refuses is refused, naming the configuration.
func TestWithModelsMultipliesTheBasesOnly(t *testing.T) {
	general, err := retrieval.Lookup(retrieval.General)
	require.NoError(t, err)
	seed, err := retrieval.Lookup(retrieval.Seed)
	require.NoError(t, err)
	vecs := []Vectors{{Model: "sentence-transformers/all-MiniLM-L6-v2", File: "vectors-all-MiniLM-L6-v2.bin"}}
	ces := []string{"cross-encoder/ms-marco-MiniLM-L-6-v2"}
	for _, tc := range []struct {
		name  string
		bases []retrieval.Spec
		vecs  []Vectors
		ces   []string
		want  []string
		err   string
	}{
		{"one base twice", []retrieval.Spec{general, general}, vecs, ces, []string{"general-rrf-all-minilm-l6-v2", "general-ce-ms-marco-minilm-l-6-v2"}, ""},
		{"two bases", []retrieval.Spec{seed, general}, vecs, nil, []string{"seed-rrf-all-minilm-l6-v2", "general-rrf-all-minilm-l6-v2"}, ""},
		{"no models", []retrieval.Spec{general}, nil, nil, nil, ""},
		{"a model id the format refuses", []retrieval.Spec{general}, nil, []string{"not a model"}, nil, "general-ce-not-a-model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WithModels(tc.bases, tc.vecs, tc.ces)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
				assert.NoError(t, s.Validate())
				if s.Fusion != nil {
					assert.Equal(t, retrieval.StageNone, s.SecondStage.Method)
					assert.Equal(t, retrieval.DefaultRRFK, s.Fusion.K)
				} else {
					assert.Equal(t, retrieval.StageCrossEncoder, s.SecondStage.Method)
				}
			}
			assert.Equal(t, tc.want, names)
		})
	}
}
