package lab

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/recordings"
)

func bundledTrial(t *testing.T, id string) recording.Trial {
	t.Helper()
	f, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	for _, tr := range f.Trials {
		if tr.ID == id {
			return tr
		}
	}
	t.Fatalf("no trial %s", id)
	return recording.Trial{}
}

// ticking is a clock that moves 5 ms every time it is read.
func ticking() func() time.Time {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		at = at.Add(5 * time.Millisecond)
		return at
	}
}

func TestMeasuredTiming(t *testing.T) {
	l := openLab(t)
	for _, id := range []string{"overwrite-agent-1", "serialize-and-save-fixed-1"} {
		t.Run(id, func(t *testing.T) {
			trial := bundledTrial(t, id)
			task, err := agent.TaskFromJSON(trial.Question, trial.Version, trial.Mode, trial.Limits)
			require.NoError(t, err)
			var seen int
			tr, err := l.Trial(context.Background(), report.Trial{ID: trial.ID, CaseID: trial.CaseID}, task, recording.NewReplayer(trial),
				TrialOptions{Clock: ticking(), OnStep: func(agent.Step, *agent.Observation) { seen++ }})
			require.NoError(t, err)
			require.NotNil(t, tr.Timing)
			steps := tr.Result.Steps
			assert.Equal(t, len(steps), seen, "the caller's OnStep still sees every step")
			assert.Equal(t, report.Measured, tr.Timing.Source)
			require.Len(t, tr.Timing.Steps, len(steps))
			last := 0.0
			for i, st := range tr.Timing.Steps {
				assert.Equal(t, last, st.StartMS, "step %d starts where the one before ended", i)
				assert.Greater(t, st.EndMS, st.StartMS)
				if steps[i].Call == 0 {
					assert.Nil(t, st.ModelMS, "the fixed path's own retrieval makes no model call")
				} else {
					require.NotNil(t, st.ModelMS)
					assert.Equal(t, 5.0, *st.ModelMS, "one tick of the clock around the call")
				}
				last = st.EndMS
			}
			assert.GreaterOrEqual(t, tr.Timing.TotalMS, last)
			assert.InDelta(t, tr.Timing.TotalMS/1000, *tr.ElapsedSeconds, 1e-9)
		})
	}
}

func TestRecordedTiming(t *testing.T) {
	trial := bundledTrial(t, "overwrite-agent-1")
	require.Len(t, trial.Exchanges, 3)
	res := &agent.Result{Steps: []agent.Step{{Call: 1}, {Call: 2}, {Call: 3}}}
	assert.Nil(t, RecordedTiming(trial, res), "the bundled recording keeps no sent times")

	for i, at := range []string{"2026-11-30T12:00:00Z", "2026-11-30T12:00:01.5Z", "2026-11-30T12:00:04+00:00"} {
		trial.Exchanges[i].SentAt = at
	}
	elapsed := 7.5
	trial.ElapsedSeconds = &elapsed
	got := RecordedTiming(trial, res)
	require.NotNil(t, got)
	assert.Equal(t, &report.Timing{Source: report.Recorded, TotalMS: 7500, Steps: []report.StepTime{
		{StartMS: 0, EndMS: 1500}, {StartMS: 1500, EndMS: 4000}, {StartMS: 4000, EndMS: 7500}}}, got)

	fixed := &agent.Result{Steps: []agent.Step{{Call: 0}, {Call: 0}, {Call: 1}}}
	trial.Exchanges = trial.Exchanges[:1]
	got = RecordedTiming(trial, fixed)
	require.NotNil(t, got)
	assert.Equal(t, []report.StepTime{{}, {}, {StartMS: 0, EndMS: 7500}}, got.Steps, "the retrieval before the one call sits at the start")

	trial.Exchanges[0].SentAt = "yesterday"
	assert.Nil(t, RecordedTiming(trial, fixed), "an unreadable time is no timing, not a wrong one")
}

func TestCostOf(t *testing.T) {
	l := openLab(t)
	tr, err := l.ReplayTrial(context.Background(), bundledTrial(t, "serialize-and-save-fixed-1"))
	require.NoError(t, err)
	rate := priceRate()
	c := report.CostOf(tr.Result, rate)
	require.Len(t, c.StepsUSD, len(tr.Result.Steps))
	for i, s := range tr.Result.Steps {
		if s.Tokens == nil {
			assert.Nil(t, c.StepsUSD[i], "step %d has no usage, so no price", i)
			continue
		}
		require.NotNil(t, c.StepsUSD[i])
		assert.InDelta(t, rate.Cost(s.Tokens.Prompt, s.Tokens.Candidates+s.Tokens.Thoughts), *c.StepsUSD[i], 1e-15)
	}
	assert.Equal(t, *report.TokensOf(tr.Result, &rate).EstimatedUSD, c.TotalUSD)
	assert.InDelta(t, (1026*0.5+296*3.0)/1e6, c.TotalUSD, 1e-12, "the published usage at the shipped rate")
	assert.Nil(t, report.CostOf(nil, rate))
}

func priceRate() price.Rate {
	r, _ := price.Defaults().Rate("gemini-3.8-flash")
	return r
}
