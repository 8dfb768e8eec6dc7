package stats

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMean(t *testing.T) {
	assert.Equal(t, 0.0, Mean(nil))
	assert.Equal(t, 0.5, Mean([]float64{0, 1, 0, 1}))
	assert.InDelta(t, 1.0/3, Mean([]float64{0, 0, 1}), 1e-15)
}

// TestQuantile: type 7 against hand values (R's quantile(x, p)).
func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for p, want := range map[float64]float64{0: 1, 1: 5, 0.5: 3, 0.25: 2, 0.1: 1.4, 0.975: 4.9} {
		assert.InDelta(t, want, Quantile(xs, p), 1e-12, "p=%v", p)
	}
	assert.Equal(t, 7.0, Quantile([]float64{7}, 0.025))
}

// TestResamplingIsSeeded: the same input gives the same bytes twice;
// another seed gives other intervals.
func TestResamplingIsSeeded(t *testing.T) {
	a := []float64{1, 0, 1, 1, 0, 0, 1, 0.5, 0.25, 1}
	b := []float64{1, 1, 1, 1, 0, 1, 1, 0.5, 0.5, 1}
	run := func(s1, s2 uint64) []byte {
		bs := Resample([][]float64{a, b}, Resamples, s1, s2)
		data, err := json.Marshal([]any{bs.CI95(0), bs.CI95(1), bs.Paired(0, 1, Mean(a), Mean(b))})
		require.NoError(t, err)
		return data
	}
	first := run(Seed1, Seed2)
	assert.Equal(t, string(first), string(run(Seed1, Seed2)))
	assert.NotEqual(t, string(first), string(run(Seed1+1, Seed2)))
}

// TestIntervalsCoverTheTruth: over many synthetic sets of 100 yes/no
// questions with a true rate of 0.3, the 95% interval holds 0.3 about 95%
// of the time; and one larger set's interval holds it.
func TestIntervalsCoverTheTruth(t *testing.T) {
	const truth, sets, n = 0.3, 200, 100
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			if rng.Float64() < truth {
				xs[i] = 1
			}
		}
		return xs
	}
	covered := 0
	for s := range sets {
		ci := Resample([][]float64{draw(n)}, 2000, uint64(s), 7).CI95(0)
		if ci[0] <= truth && truth <= ci[1] {
			covered++
		}
	}
	share := float64(covered) / sets
	assert.GreaterOrEqual(t, share, 0.89, "coverage %.3f", share)
	assert.LessOrEqual(t, share, 0.99, "coverage %.3f", share)
	ci := Resample([][]float64{draw(400)}, Resamples, Seed1, Seed2).CI95(0)
	assert.True(t, ci[0] <= truth && truth <= ci[1], "%v holds %v", ci, truth)
	assert.Less(t, ci[1]-ci[0], 0.1, "400 questions give an interval narrower than 0.1: %v", ci)
}

// TestPaired: no difference gives p 1 and an interval of 0; a difference
// every question shows gives the smallest p, never 0; a noisy difference
// of zero mean is not significant; the interval holds the observed
// difference.
func TestPaired(t *testing.T) {
	zeros, ones := make([]float64, 30), make([]float64, 30)
	for i := range ones {
		ones[i] = 1
	}
	bs := Resample([][]float64{zeros, zeros, ones}, Resamples, Seed1, Seed2)
	same := bs.Paired(0, 1, 0, 0)
	assert.Equal(t, Difference{Difference: 0, CI95: Interval{0, 0}, PValue: 1}, same)
	all := bs.Paired(0, 2, 0, 1)
	assert.Equal(t, 1.0, all.Difference)
	assert.Equal(t, Interval{1, 1}, all.CI95)
	assert.Equal(t, 1.0/(Resamples+1), all.PValue, "never 0")

	a := []float64{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}
	b := []float64{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	bs = Resample([][]float64{a, b}, Resamples, Seed1, Seed2)
	d := bs.Paired(0, 1, Mean(a), Mean(b))
	assert.Equal(t, 0.0, d.Difference)
	assert.Equal(t, 1.0, d.PValue, "every resample is at least as far from 0 as 0 is")
	assert.Less(t, d.CI95[0], 0.0)
	assert.Greater(t, d.CI95[1], 0.0)

	// 8 of 20 questions better by 1, none worse: clearly significant.
	a, b = make([]float64, 20), make([]float64, 20)
	for i := range 8 {
		b[i] = 1
	}
	bs = Resample([][]float64{a, b}, Resamples, Seed1, Seed2)
	d = bs.Paired(0, 1, 0, 0.4)
	assert.Equal(t, 0.4, d.Difference)
	assert.Less(t, d.PValue, 0.01)
	assert.Greater(t, d.PValue, 0.0)
	assert.True(t, d.CI95[0] > 0 && d.CI95[0] <= 0.4 && d.CI95[1] >= 0.4, "%v", d.CI95)
}

// TestMcNemar against hand values: twice the Binomial(n, 1/2) tail.
func TestMcNemar(t *testing.T) {
	for _, c := range []struct {
		b, c int
		want float64
	}{
		{0, 0, 1},
		{0, 5, 2.0 / 32},
		{5, 0, 2.0 / 32},
		{1, 9, 2 * 11.0 / 1024},
		{3, 3, 1},
		{2, 3, 1},
		{0, 1, 1},
		{10, 30, 0.0022214337732293643}, // 2*P(X<=10), X~Bin(40, 1/2), Python: 2*sum(comb(40,i) for i in range(11))/2**40
	} {
		assert.InDelta(t, c.want, McNemar(c.b, c.c), 1e-15, "b=%d c=%d", c.b, c.c)
	}
	assert.Greater(t, McNemar(0, 1000), 0.0, "2^-999: a tiny p is not rounded to 0 early")
}

func TestIntervalEncodesAsAPair(t *testing.T) {
	data, err := json.Marshal(Interval{0.25, 0.5})
	require.NoError(t, err)
	assert.Equal(t, "[0.25,0.5]", string(data))
}
