package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
)

func checked(o evaluate.Outcome) *evaluate.Checks { return &evaluate.Checks{Outcome: o} }

// A set keeps every trial in order and tallies only the graded ones, each
// on its own path.
func TestSetTalliesGradedTrialsPerPath(t *testing.T) {
	var s report.Set
	for _, tr := range []report.Trial{
		{ID: "a", Mode: "fixed", Checks: checked(evaluate.Pass)},
		{ID: "b", Mode: "agent", Checks: checked(evaluate.Fail)},
		{ID: "c", Mode: "agent", Checks: checked(evaluate.IncompleteRun)},
		{ID: "d", Mode: "agent"}, // no authored case: listed, not counted
		{ID: "e", Mode: "listwise", Checks: checked(evaluate.Pass)},
	} {
		s.Add(tr)
	}
	require.Len(t, s.Trials, 5)
	assert.Equal(t, "d", s.Trials[3].ID)
	assert.Equal(t, evaluate.Tally{Pass: 1}, s.Summary.Fixed)
	assert.Equal(t, evaluate.Tally{Fail: 1, Incomplete: 1}, s.Summary.Agent)
}

// Tokens are summed over the replies that reported usage and priced with
// output and thinking at the output rate; a missing price stays missing.
func TestTokensAndCost(t *testing.T) {
	r := &agent.Result{Steps: []agent.Step{
		{Call: 0},
		{Call: 1, Tokens: &model.Tokens{Prompt: 1000, Candidates: 100, Thoughts: 50, Total: 1150}},
		{Call: 2, Tokens: &model.Tokens{Prompt: 2000, Candidates: 10, Total: 2010}},
	}}
	rate := price.Rate{Model: "m", InputPerMTok: 1, OutputPerMTok: 10}
	tk := report.TokensOf(r, &rate)
	assert.Equal(t, 2, tk.Replies)
	assert.Equal(t, model.Tokens{Prompt: 3000, Candidates: 110, Thoughts: 50, Total: 3160}, tk.Tokens)
	require.NotNil(t, tk.EstimatedUSD)
	assert.InDelta(t, (3000*1.0+160*10.0)/1e6, *tk.EstimatedUSD, 1e-15)

	unpriced := report.TokensOf(r, nil)
	assert.Nil(t, unpriced.EstimatedUSD)
	assert.Nil(t, tk.Add(unpriced).EstimatedUSD, "a sum with an unpriced part has no price")
	assert.Equal(t, 4, tk.Add(unpriced).Replies)

	c := report.CostOf(r, rate)
	require.Len(t, c.StepsUSD, 3)
	assert.Nil(t, c.StepsUSD[0], "a step without usage has no cost")
	assert.InDelta(t, (1000*1.0+150*10.0)/1e6, *c.StepsUSD[1], 1e-15)
	assert.InDelta(t, *tk.EstimatedUSD, c.TotalUSD, 1e-15)
	assert.Nil(t, report.CostOf(nil, rate), "no result, no cost")
}

// TestRefused: a trial refused before it ran reports its reason as an
// error; one that ran, or failed while running, reports none.
func TestRefused(t *testing.T) {
	code := reason.InvalidQuestion
	assert.NoError(t, report.Trial{Result: &agent.Result{}}.Refused())
	assert.NoError(t, report.Trial{}.Refused())
	err := report.Trial{Error: &code, ErrorDetail: "the question is blank"}.Refused()
	got, ok := reason.Of(err)
	require.True(t, ok)
	assert.Equal(t, code, got)
	assert.EqualError(t, err, "invalid_question: the question is blank")
}
