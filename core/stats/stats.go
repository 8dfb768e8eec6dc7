// Package stats is the arithmetic of an experiment over questions: means
// of per-question values with 95% confidence intervals from a percentile
// bootstrap, paired differences between two configurations (or two paths)
// with their interval and a two-sided p-value from the same resamples, and
// the exact McNemar test for paired yes/no outcomes.
//
// Every resampling draws from math/rand/v2's PCG with a fixed seed, and
// every series of one experiment is resampled with the same draws (the
// same questions in each resample), so the same input gives the same
// bytes, natively and under WebAssembly, and a difference between two
// configurations is a paired one by construction. Why these methods:
// docs/retrieval.md, "The statistics".
package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
)

// Resamples is how many bootstrap resamples an experiment draws.
const Resamples = 10000

// The PCG seed every resampling starts from ("RAGAgent", "lab:ci95").
const (
	Seed1 uint64 = 0x5241474167656e74
	Seed2 uint64 = 0x6c61623a63693935
)

// Interval is a confidence interval, [low, high]; it encodes as a JSON
// array of two numbers.
type Interval [2]float64

// Mean is the arithmetic mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Bootstrap holds the resampled means of several series of per-question
// values, every series resampled with the same draws of questions.
type Bootstrap struct {
	// Means[s][r] is series s's mean in resample r.
	Means [][]float64
}

// Resample draws resamples resamples of n = len(series[i]) questions
// with replacement (the same draws for every series) from PCG(seed1,
// seed2), and keeps each series' mean in each. Every series must have
// the same length n ≥ 1.
func Resample(series [][]float64, resamples int, seed1, seed2 uint64) *Bootstrap {
	b := &Bootstrap{Means: make([][]float64, len(series))}
	if len(series) == 0 {
		return b
	}
	n := len(series[0])
	for _, s := range series {
		if len(s) != n || n == 0 {
			panic("stats: the series of a resampling must have one equal, non-zero length")
		}
	}
	// rows[j] holds question j's value in every series, contiguous, so a
	// draw adds one short row.
	width := len(series)
	rows := make([]float64, n*width)
	for s, xs := range series {
		for j, x := range xs {
			rows[j*width+s] = x
		}
	}
	for s := range b.Means {
		b.Means[s] = make([]float64, resamples)
	}
	rng := rand.New(rand.NewPCG(seed1, seed2))
	sums := make([]float64, width)
	for r := range resamples {
		clear(sums)
		for range n {
			j := rng.IntN(n)
			row := rows[j*width : (j+1)*width]
			for s, x := range row {
				sums[s] += x
			}
		}
		for s := range sums {
			b.Means[s][r] = sums[s] / float64(n)
		}
	}
	return b
}

// CI95 is the 95% percentile interval of series s's resampled means.
func (b *Bootstrap) CI95(s int) Interval { return percentileCI(b.Means[s]) }

// Difference is a paired comparison of two series: the observed
// difference of means (b minus a), its 95% interval and the two-sided
// p-value of "no difference", both from the same resamples.
type Difference struct {
	Difference float64  `json:"difference"`
	CI95       Interval `json:"ci95"`
	PValue     float64  `json:"p_value"`
}

// Paired compares series b with series a (observed means ma and mb):
// each resample's difference is its mean of b minus its mean of a (the
// same questions in both: a paired resampling). The interval is the
// percentile interval of those differences; the p-value counts the
// resamples whose difference lies at least as far from the observed one
// as the observed one lies from zero (the bootstrap distribution shifted
// to the null of no difference), as (hits + 1) / (resamples + 1), so it is
// never 0.
func (bs *Bootstrap) Paired(a, b int, ma, mb float64) Difference {
	observed := mb - ma
	ds := make([]float64, len(bs.Means[a]))
	hits := 0
	for r := range ds {
		ds[r] = bs.Means[b][r] - bs.Means[a][r]
		if math.Abs(ds[r]-observed) >= math.Abs(observed) {
			hits++
		}
	}
	return Difference{Difference: observed, CI95: percentileCI(ds),
		PValue: float64(hits+1) / float64(len(ds)+1)}
}

// percentileCI is the 2.5th and 97.5th percentiles of xs (a copy sorted).
func percentileCI(xs []float64) Interval {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Interval{Quantile(s, 0.025), Quantile(s, 0.975)}
}

// Quantile is the p-quantile of sorted by linear interpolation between
// order statistics (Hyndman and Fan's type 7, R's and NumPy's default).
func Quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := p * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// McNemar is the exact two-sided McNemar test of paired yes/no outcomes:
// of the pairs that disagree, b went one way and c the other; under "no
// difference" each disagreement goes either way with probability 1/2, so
// the p-value is twice the binomial tail of the smaller count, at most 1
// (1 when no pair disagrees). It is computed in exact rational arithmetic
// (math.Exp has machine code on some platforms and not on others; this
// gives the same bytes everywhere).
func McNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	tail, term := new(big.Int), big.NewInt(1) // term is C(n, i)
	for i := 0; i <= k; i++ {
		if i > 0 {
			term.Mul(term, big.NewInt(int64(n-i+1)))
			term.Quo(term, big.NewInt(int64(i)))
		}
		tail.Add(tail, term)
	}
	p := new(big.Rat).SetFrac(tail.Lsh(tail, 1), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	if p.Cmp(big.NewRat(1, 1)) > 0 {
		return 1
	}
	f, _ := p.Float64()
	return f
}
