package retrieval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ragagentlab/ragagent/core/store"

	"github.com/stretchr/testify/assert"
)

// TestLnIsTheLogarithm: the portable logarithm agrees with math.Log to
// within an ulp or so over the range idf takes.
func TestLnIsTheLogarithm(t *testing.T) {
	for _, x := range []float64{1e-6, 0.01, 0.5, 0.7, 1, 1.5, 2, 10, 12352.5 / 0.5, 1e9} {
		assert.InDelta(t, math.Log(x), ln(x), 1e-15*math.Max(1, math.Abs(math.Log(x))), "%g", x)
	}
	assert.True(t, math.IsInf(ln(0), -1))
	assert.True(t, math.IsNaN(ln(-1)))
}

// TestStemGroupPrefix: a stem keeps all but its last two letters of its
// word, for the words whose Snowball stems are furthest from them (the
// assumption stemGroup's prefix lookup rests on).
func TestStemGroupPrefix(t *testing.T) {
	for _, w := range []string{"ability", "cried", "dying", "generalization", "relational", "happily", "skies", "sensibility",
		"hopping", "hoping", "fulness", "ugly", "early", "news", "organizer", "iteration", "conditional", "y", "ies", "yes", "abli"} {
		st := stemWord(w)
		p := st[:max(1, len(st)-2)]
		if len(st) <= 1 {
			p = st
		}
		assert.True(t, len(w) >= len(p) && w[:len(p)] == p, "%s stems to %s", w, st)
	}
}

// TestStopWords: question words and auxiliaries are stop words, content
// words are not.
func TestStopWords(t *testing.T) {
	for _, w := range []string{"how", "do", "i", "the", "what", "is", "a"} {
		assert.True(t, isStopWord(w), w)
	}
	for _, w := range []string{"file", "json", "sort", "key", "python"} {
		assert.False(t, isStopWord(w), w)
	}
}

// TestQuestionWords: the question stop list drops what a question is
// phrased in and keeps the words of relation and quantity the English list
// drops; stopList names each list's test.
func TestQuestionWords(t *testing.T) {
	for _, w := range []string{"how", "do", "i", "what", "s", "the", "way", "want", "actually", "best", "is", "a"} {
		assert.True(t, isQuestionWord(w), w)
	}
	for _, w := range []string{"between", "before", "after", "same", "only", "not", "each", "all", "up", "out", "file", "sort", "key"} {
		assert.False(t, isQuestionWord(w), w)
	}
	for _, w := range []string{"between", "same", "only"} {
		assert.True(t, isStopWord(w), "the English list drops %s", w)
	}
	q := store.Terms("How do I work out how many days there are between two dates?")
	assert.Equal(t, []string{"work", "out", "many", "days", "between", "two", "dates"}, (&Searcher{spec: Spec{StopWords: StopQuestions}}).queryTerms(q))
	assert.Equal(t, []string{"work", "many", "days", "two", "dates"}, (&Searcher{spec: Spec{StopWords: StopEnglish}}).queryTerms(q))
	assert.Equal(t, []string{"what", "s"}, (&Searcher{spec: Spec{StopWords: StopQuestions}}).queryTerms(store.Terms("What's?")),
		"a query of stop words alone keeps them")
	assert.Nil(t, stopList(StopNone))
	assert.True(t, stopList(StopQuestions)("way"))
	assert.False(t, stopList(StopEnglish)("way"))
}

// top keeps the best depth by the ranking's order, exactly what sorting
// every doc gives (ties by doc order, another version left out), for any
// depth.
func TestTopIsTheSortedPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n += 7 {
		touched := make([]int32, n)
		acc := make([]float64, n)
		ver := make([]int32, n)
		for i := range touched {
			touched[i] = int32(n - 1 - i)
			acc[i] = float64(r.IntN(5)) // many ties
			ver[i] = int32(r.IntN(2))
		}
		for _, version := range []int32{-1, 1} {
			var all []scored
			for _, d := range touched {
				if version < 0 || ver[d] == version {
					all = append(all, scored{doc: d, score: acc[d]})
				}
			}
			sortScored(all)
			for _, depth := range []int{0, 1, 3, 10, 50, 1000} {
				want := all[:min(depth, len(all))]
				got := top(touched, acc, ver, version, depth)
				if len(want) == 0 {
					assert.Empty(t, got)
					continue
				}
				assert.Equal(t, want, got, "n %d depth %d", n, depth)
			}
		}
	}
}
