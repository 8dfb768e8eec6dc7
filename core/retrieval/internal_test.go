package retrieval

import (
	"math"
	"testing"

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
