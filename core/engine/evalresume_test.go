package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
)

// pythonEval is a scripted eval of the python pack's question set file.
func pythonEval(t *testing.T) engine.EvalRequest {
	t.Helper()
	cases, err := os.ReadFile("../../fixtures/python-3.11-cases.json")
	require.NoError(t, err)
	return engine.EvalRequest{Corpus: "python-3.11", Cases: cases, Policy: engine.Scripted}
}

// unmeasuredJSON is the result's `ragagent eval --json` bytes with the
// measured durations zeroed.
func unmeasuredJSON(t *testing.T, r *engine.EvalResult) string {
	t.Helper()
	data, err := r.Unmeasured().JSON()
	require.NoError(t, err)
	return string(data)
}

// TestAnEvalResumesWithoutRepeatingATrial: a scripted eval that gives
// each graded trial to OnGraded and one that resumes from any part of
// them (Done, kept as JSON as a server keeps them) run every trial
// exactly once between them and give the result of the eval run whole,
// but for the measured seconds.
func TestAnEvalResumesWithoutRepeatingATrial(t *testing.T) {
	e := packEngine(t)
	req := pythonEval(t)
	whole, err := e.Eval(context.Background(), req)
	require.NoError(t, err)
	want := unmeasuredJSON(t, whole)
	plan, err := e.PlanEval(req)
	require.NoError(t, err)
	total := len(plan.Trials)
	require.Equal(t, 2*plan.Cases, total, "each case on both paths")
	require.Equal(t, whole.Summary.Trials, total)
	for _, keep := range []int{0, 1, total / 2, total - 1, total} {
		t.Run(fmt.Sprint(keep, " of ", total, " done"), func(t *testing.T) {
			// The first eval stops after keep trials, as a crash would.
			kept := map[int]report.Trial{}
			first := req
			stop := errors.New("crash")
			first.OnGraded = func(i int, tr report.Trial) error {
				if len(kept) == keep {
					return stop
				}
				assert.Equal(t, plan.Trials[i], tr.ID, "index %d is the plan's trial", i)
				data, err := json.Marshal(tr)
				require.NoError(t, err)
				var back report.Trial
				require.NoError(t, json.Unmarshal(data, &back))
				kept[i] = back
				return nil
			}
			_, err := e.Eval(context.Background(), first)
			if keep < total {
				require.ErrorIs(t, err, stop)
			}
			require.Len(t, kept, keep)
			resumed := req
			resumed.Done = kept
			ran := map[int]int{}
			var progress []int
			resumed.OnGraded = func(i int, tr report.Trial) error { ran[i]++; return nil }
			resumed.OnTrial = func(done, total int, _ string) { progress = append(progress, done) }
			res, err := e.Eval(context.Background(), resumed)
			require.NoError(t, err)
			assert.Len(t, ran, total-keep, "only the rest is run")
			for i, n := range ran {
				assert.Equal(t, 1, n, "trial %d once", i)
				_, before := kept[i]
				assert.False(t, before, "trial %d was run before", i)
			}
			require.Len(t, progress, total)
			assert.Equal(t, total, progress[len(progress)-1])
			assert.Equal(t, want, unmeasuredJSON(t, res))
			if keep == total {
				// Every trial kept: even the measured seconds are the
				// first run's, summed in the same order.
				data, err := res.JSON()
				require.NoError(t, err)
				assert.NotEqual(t, want, string(data), "the kept trials' seconds are measured, not zero")
			}
		})
	}
}

// TestUnmeasuredZeroesOnlyTheDurations: two whole runs of one eval differ
// at most in the paths' seconds, and Unmeasured zeroes exactly those (the
// result itself is left as it was).
func TestUnmeasuredZeroesOnlyTheDurations(t *testing.T) {
	e := packEngine(t)
	res, err := e.Eval(context.Background(), pythonEval(t))
	require.NoError(t, err)
	u := res.Unmeasured()
	require.Len(t, u.Experiment.Paths, 2)
	for i, p := range u.Experiment.Paths {
		assert.Zero(t, p.Seconds)
		assert.Zero(t, p.MeanSeconds)
		assert.Positive(t, res.Experiment.Paths[i].Seconds, "the original keeps its measure")
		p.Seconds, p.MeanSeconds = res.Experiment.Paths[i].Seconds, res.Experiment.Paths[i].MeanSeconds
		assert.Equal(t, res.Experiment.Paths[i], p, "nothing else changed")
	}
	for _, tr := range u.Trials {
		assert.Nil(t, tr.ElapsedSeconds)
		assert.Nil(t, tr.Timing)
	}
	assert.Equal(t, res.Cases, u.Cases)
	assert.Equal(t, res.Summary, u.Summary)
	assert.Equal(t, res.Experiment.Comparisons, u.Experiment.Comparisons)
}

// TestAResumedEvalRefusesWhatIsNotItsPlan: trials done that are not the
// plan's at their index, and resume hooks on a replay, are refused before
// anything runs.
func TestAResumedEvalRefusesWhatIsNotItsPlan(t *testing.T) {
	e := packEngine(t)
	req := pythonEval(t)
	plan, err := e.PlanEval(req)
	require.NoError(t, err)
	for name, done := range map[string]map[int]report.Trial{
		"another trial's id":    {0: {ID: plan.Trials[1]}},
		"an index past the end": {len(plan.Trials): {ID: plan.Trials[0]}},
		"a negative index":      {-1: {ID: plan.Trials[0]}},
	} {
		r := req
		r.Done = done
		ran := 0
		r.OnGraded = func(int, report.Trial) error { ran++; return nil }
		_, err := e.Eval(context.Background(), r)
		assert.ErrorContains(t, err, "is not the plan's", name)
		assert.Zero(t, ran, name)
	}
	replay := engine.EvalRequest{Corpus: "python-3.11", Policy: engine.Replay, OnGraded: func(int, report.Trial) error { return nil }}
	_, err = e.Eval(context.Background(), replay)
	assert.ErrorContains(t, err, "only a scripted eval is resumed")
}

// TestPlanEvalChecksWhatEvalRuns: PlanEval counts a set's cases and lists
// its trials (each case on the fixed path, then the agent path) and
// refuses, with Eval's codes, what Eval refuses.
func TestPlanEvalChecksWhatEvalRuns(t *testing.T) {
	e := packEngine(t)
	one := `{"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "What does Path.write_text do?", "target_urls": []}]}`
	plan, err := e.PlanEval(engine.EvalRequest{Corpus: "python-3.11", Cases: []byte(one), Policy: engine.Scripted})
	require.NoError(t, err)
	assert.Equal(t, engine.EvalPlan{Corpus: "python-3.11", Cases: 1, Trials: []string{"a-fixed-1", "a-agent-1"}}, plan)
	for name, tc := range map[string]struct {
		req  engine.EvalRequest
		code reason.Code
	}{
		"no cases":       {engine.EvalRequest{Corpus: "python-3.11", Cases: []byte(`{"format": "ragagent-cases/1", "cases": []}`)}, reason.InvalidCases},
		"a bad set":      {engine.EvalRequest{Corpus: "python-3.11", Cases: []byte(`{"format": "ragagent-cases/9", "cases": []}`)}, reason.InvalidCases},
		"unknown config": {engine.EvalRequest{Corpus: "python-3.11", Config: "nope"}, reason.UnknownConfig},
	} {
		tc.req.Policy = engine.Scripted
		_, err := e.PlanEval(tc.req)
		code, _ := reason.Of(err)
		assert.Equal(t, tc.code, code, "%s: %v", name, err)
		_, err = e.Eval(context.Background(), tc.req)
		code, _ = reason.Of(err)
		assert.Equal(t, tc.code, code, "Eval, %s: %v", name, err)
	}
}
