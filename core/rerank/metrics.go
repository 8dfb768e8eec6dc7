package rerank

import (
	"math"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Outcome is how one ordering did against a case's target sources. A case
// with no target (an unsupported question) has no hit or miss: Top1Hit is
// nil and Reason says why, so it stays out of every denominator.
type Outcome struct {
	Top1Hit        *bool       `json:"top1_hit"`
	ReciprocalRank float64     `json:"reciprocal_rank,omitempty"`
	Reason         reason.Code `json:"reason,omitempty"`
}

// Judge is the reference outcome(): top-1 hit when the first source is a
// target, reciprocal rank of the first target (0 when none is ranked).
func Judge(order []string, targets []string) Outcome {
	if len(targets) == 0 {
		return Outcome{Reason: reason.NoSupportedTarget}
	}
	target := map[string]bool{}
	for _, t := range targets {
		target[t] = true
	}
	hit := len(order) > 0 && target[order[0]]
	o := Outcome{Top1Hit: &hit}
	for i, s := range order {
		if target[s] {
			o.ReciprocalRank = 1 / float64(i+1)
			break
		}
	}
	return o
}

// MarshalPyJSON writes the outcome as the reference does: a case with a
// target has top1_hit and reciprocal_rank, the rank of nothing found being
// the integer 0 (as Python's next(..., 0) leaves it); a case without one
// has a null top1_hit and the reason. A custom shape because which keys
// appear depends on Top1Hit, and a float field holds an int, which struct
// tags cannot state.
func (o Outcome) MarshalPyJSON() any {
	if o.Top1Hit == nil {
		return pyjson.NewObject("top1_hit", nil, "reason", string(o.Reason))
	}
	var rr any = o.ReciprocalRank
	if o.ReciprocalRank == 0 {
		rr = 0
	}
	return pyjson.NewObject("top1_hit", *o.Top1Hit, "reciprocal_rank", rr)
}

// Tally is one scorer's result over the answerable cases of a split, in the
// reference key order (a null mrr when nothing is answerable).
type Tally struct {
	Answerable int      `json:"answerable"`
	Top1Hits   int      `json:"top1_hits"`
	MRR        *float64 `json:"mrr"`
}

// Count tallies outcomes: those with a verdict are answerable; MRR is their
// mean reciprocal rank (null when there are none), summed as Python 3.12's
// sum() does, with Neumaier compensation. Naive left-to-right addition
// gives 0.7777777777777777 for the published diagnostic split instead of
// its 0.7777777777777778.
func Count(outcomes []Outcome) Tally {
	var t Tally
	var rr []float64
	for _, o := range outcomes {
		if o.Top1Hit == nil {
			continue
		}
		t.Answerable++
		if *o.Top1Hit {
			t.Top1Hits++
		}
		rr = append(rr, o.ReciprocalRank)
	}
	if t.Answerable > 0 {
		mrr := Sum(rr) / float64(t.Answerable)
		t.MRR = &mrr
	}
	return t
}

// Sum is CPython 3.12's sum() over floats: Neumaier-compensated, the
// compensation added at the end only when it is finite and non-zero.
func Sum(xs []float64) float64 {
	var total, c float64
	for _, x := range xs {
		t := total + x
		if math.Abs(total) >= math.Abs(x) {
			c += (total - t) + x
		} else {
			c += (x - t) + total
		}
		total = t
	}
	if c != 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
		total += c
	}
	return total
}
