package lab

import (
	"context"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// stepTimer measures a run: each model call's latency (a wrapper around
// the model) and when each step became final (a wrapper around OnStep),
// on one clock.
type stepTimer struct {
	clock   func() time.Time
	started time.Time
	last    time.Time
	calls   []float64 // model latency in ms, by call number - 1
	steps   []report.StepTime
}

func newStepTimer(clock func() time.Time) *stepTimer {
	now := clock()
	return &stepTimer{clock: clock, started: now, last: now}
}

func (t *stepTimer) ms(at time.Time) float64 {
	return float64(at.Sub(t.started).Microseconds()) / 1000
}

// Decide times the inner model's call.
type timedModel struct {
	inner model.Model
	t     *stepTimer
}

func (m timedModel) Decide(ctx context.Context, p model.Prompt, timeout time.Duration) (model.Reply, error) {
	began := m.t.clock()
	reply, err := m.inner.Decide(ctx, p, timeout)
	m.t.calls = append(m.t.calls, float64(m.t.clock().Sub(began).Microseconds())/1000)
	return reply, err
}

// onStep records a step's end and then passes it on.
func (t *stepTimer) onStep(next func(agent.Step, *agent.Observation)) func(agent.Step, *agent.Observation) {
	return func(s agent.Step, o *agent.Observation) {
		now := t.clock()
		st := report.StepTime{StartMS: t.ms(t.last), EndMS: t.ms(now)}
		if s.Call > 0 && s.Call <= len(t.calls) {
			d := t.calls[s.Call-1]
			st.ModelMS = &d
		}
		t.steps = append(t.steps, st)
		t.last = now
		if next != nil {
			next(s, o)
		}
	}
}

// timing is the measured timing of a result, or nil when the steps seen
// do not match the result's (a run that ended before its first step).
func (t *stepTimer) timing(r *agent.Result, totalMS float64) *report.Timing {
	if r == nil || len(r.Steps) == 0 || len(t.steps) != len(r.Steps) {
		return nil
	}
	return &report.Timing{Source: report.Measured, TotalMS: totalMS, Steps: t.steps}
}

// RecordedTiming reads a replayed trial's timing from its exchanges' sent
// times: a step that made model call n starts when exchange n was sent and
// ends when the next one was (the last at the trial's elapsed time, when
// it is known and later); the fixed path's own retrieval sits at the
// start. Times count from the first exchange's. Nil when any exchange the
// steps used has no sent time.
func RecordedTiming(t recording.Trial, r *agent.Result) *report.Timing {
	if r == nil || len(t.Exchanges) == 0 {
		return nil
	}
	sent := make([]time.Time, len(t.Exchanges))
	for i, ex := range t.Exchanges {
		at, err := time.Parse(time.RFC3339Nano, ex.SentAt)
		if err != nil {
			return nil
		}
		sent[i] = at
	}
	ms := func(at time.Time) float64 { return float64(at.Sub(sent[0]).Microseconds()) / 1000 }
	total := ms(sent[len(sent)-1])
	if t.ElapsedSeconds != nil {
		total = max(total, *t.ElapsedSeconds*1000)
	}
	out := &report.Timing{Source: report.Recorded, TotalMS: total, Steps: make([]report.StepTime, len(r.Steps))}
	for i, s := range r.Steps {
		if s.Call == 0 {
			continue // the fixed path's retrieval, before its one call
		}
		if s.Call > len(sent) {
			return nil
		}
		st := report.StepTime{StartMS: ms(sent[s.Call-1]), EndMS: total}
		if s.Call < len(sent) {
			st.EndMS = ms(sent[s.Call])
		}
		out.Steps[i] = st
	}
	return out
}
