package lab

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/fixtures"
)

var bothPaths = []agent.Mode{agent.Fixed, agent.Agent}

// TestDefaultPlanIsThePublishedBatch: four cases, two repeats, both paths
// give the published record's trial ids in its order, and 80 requests at
// worst (the seed's earlier allowance).
func TestDefaultPlanIsThePublishedBatch(t *testing.T) {
	l := openLab(t)
	plan, err := l.Plan(nil, 2, []agent.Mode{agent.Agent, agent.Fixed}, agent.DefaultLimits())
	require.NoError(t, err)
	var ids []string
	for _, pt := range plan.Trials() {
		ids = append(ids, pt.ID)
	}
	var published []string
	for _, raw := range field(decodeObject(t, fixtures.Published), "trials").([]any) {
		published = append(published, field(raw.(*pyjson.Object), "id").(string))
	}
	assert.Equal(t, published, ids)
	assert.Equal(t, 80, plan.WorstCaseRequests())
	assert.Equal(t, bothPaths, plan.Paths())
}

func TestPlanRefusals(t *testing.T) {
	l := openLab(t)
	rows := []struct {
		name    string
		cases   []string
		repeats int
		modes   []agent.Mode
		limits  agent.Limits
		want    string
	}{
		{"invalid limits", nil, 1, bothPaths, agent.Limits{ModelCalls: 13, Searches: 1, Reads: 1, SourceBytes: 1, Seconds: 1}, "invalid_limits"},
		{"no repeats", nil, 0, bothPaths, agent.DefaultLimits(), "repeats"},
		{"too many repeats", nil, MaxRepeats + 1, bothPaths, agent.DefaultLimits(), "repeats"},
		{"no mode", nil, 1, nil, agent.DefaultLimits(), "at least one mode"},
		{"unknown mode", nil, 1, []agent.Mode{"both"}, agent.DefaultLimits(), "not fixed or agent"},
		{"mode twice", nil, 1, []agent.Mode{agent.Agent, agent.Agent}, agent.DefaultLimits(), "named twice"},
		{"unknown case", []string{"nope"}, 1, bothPaths, agent.DefaultLimits(), `no case "nope"`},
		{"case twice", []string{"overwrite", "overwrite"}, 1, bothPaths, agent.DefaultLimits(), "named twice"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			_, err := l.Plan(row.cases, row.repeats, row.modes, row.limits)
			assert.ErrorContains(t, err, row.want)
		})
	}
}

// stopper is a model that always stops, with usage metadata.
type stopper struct{}

func (stopper) Decide(context.Context, model.Prompt, time.Duration) (model.Reply, error) {
	d := agent.Decision{Action: agent.Stop, Assessment: "stop", Citations: []agent.Quote{}}
	meta := model.Meta{UsageMetadata: pyjson.NewObject("promptTokenCount", pyjson.Number("1000"), "candidatesTokenCount", pyjson.Number("100"),
		"thoughtsTokenCount", pyjson.Number("50"), "totalTokenCount", pyjson.Number("1150"))}
	return model.Reply{Value: pyjson.ValueOf(d), Meta: meta}, nil
}

func TestRunBatchAndReport(t *testing.T) {
	l := openLab(t)
	plan, err := l.Plan([]string{"unsupported", "overwrite"}, 2, bothPaths, agent.DefaultLimits())
	require.NoError(t, err)
	var ended []float64
	start := func(PlannedTrial) (model.Model, func(float64) error, error) {
		return stopper{}, func(s float64) error { ended = append(ended, s); return nil }, nil
	}
	tick := time.Unix(0, 0)
	clock := func() time.Time { tick = tick.Add(time.Second); return tick }
	var seen []string
	rep, err := l.RunBatch(context.Background(), plan, start, clock, nil, func(tr report.Trial) { seen = append(seen, tr.ID) })
	require.NoError(t, err)
	require.Len(t, rep.Trials, 8)
	assert.Equal(t, []string{"unsupported-fixed-1", "unsupported-agent-1", "overwrite-fixed-1", "overwrite-agent-1",
		"unsupported-fixed-2", "unsupported-agent-2", "overwrite-fixed-2", "overwrite-agent-2"}, seen)
	assert.Len(t, ended, 8)
	// a stop passes unsupported and leaves overwrite incomplete
	assert.Equal(t, 2, rep.Summary.Fixed.Pass)
	assert.Equal(t, 2, rep.Summary.Fixed.Incomplete)
	assert.Equal(t, 2, rep.Summary.Agent.Pass)

	rate := price.Rate{Model: "m", InputPerMTok: 1, OutputPerMTok: 10}
	br := &report.Batch{Model: "m"}
	br.Fill(rep, &rate)
	require.Len(t, br.Trials, 8)
	assert.Len(t, br.Trials[0].ProviderUsage, 1)
	assert.Equal(t, 8, br.Tokens.Total.Replies)
	assert.Equal(t, 8000, br.Tokens.Total.Prompt)
	assert.Equal(t, 4, br.Tokens.Fixed.Replies)
	require.NotNil(t, br.Cost.EstimatedUSD)
	// 8 replies of 1000 input at $1/M and 150 output+thinking at $10/M
	assert.InDelta(t, 8*(1000*1.0+150*10.0)/1e6, *br.Cost.EstimatedUSD, 1e-12)
	assert.Nil(t, br.Cost.CurrencyCost)
	assert.Equal(t, report.EstimateNote, br.Cost.Note)

	unpriced := &report.Batch{Model: "m"}
	unpriced.Fill(rep, nil)
	assert.Nil(t, unpriced.Cost.EstimatedUSD)
	assert.Contains(t, unpriced.Cost.Note, "No price")
}

func TestRunBatchStops(t *testing.T) {
	l := openLab(t)
	plan, err := l.Plan(nil, 1, bothPaths, agent.DefaultLimits())
	require.NoError(t, err)
	ok := func(PlannedTrial) (model.Model, func(float64) error, error) { return stopper{}, nil, nil }

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := l.RunBatch(ctx, plan, ok, nil, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Trials, "no trial starts once stopped")

	broken := errors.New("cannot save")
	n := 0
	failing := func(PlannedTrial) (model.Model, func(float64) error, error) {
		n++
		if n == 3 {
			return nil, nil, broken
		}
		return stopper{}, nil, nil
	}
	rep, err = l.RunBatch(context.Background(), plan, failing, nil, nil, nil)
	assert.ErrorIs(t, err, broken)
	assert.Len(t, rep.Trials, 2, "the trials before the fault are kept")

	endFails := func(PlannedTrial) (model.Model, func(float64) error, error) {
		return stopper{}, func(float64) error { return broken }, nil
	}
	_, err = l.RunBatch(context.Background(), plan, endFails, nil, nil, nil)
	assert.ErrorIs(t, err, broken)
}
