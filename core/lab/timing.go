package lab

import (
	"context"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/recording"
)

// Timing sources.
const (
	// Measured times come from the engine's clock while the run happened.
	Measured = "measured"
	// Recorded times come from the recording's per-exchange sent times.
	Recorded = "recorded"
)

// Timing is when a trial's steps ran, in milliseconds from the run's
// start, for a waterfall: measured on the engine's clock for a run made
// now, or read from a recording that kept each exchange's sent time. A
// replay of a recording without those times has none (its report keeps
// only the trial's recorded elapsed seconds).
type Timing struct {
	Source  string     `json:"source"`
	TotalMS float64    `json:"total_ms"`
	Steps   []StepTime `json:"steps"`
}

// StepTime is one step's span. ModelMS is the model call's own latency
// when it was measured (nil for the fixed path's own retrieval, and for
// recorded times, which say when a request was sent but not when its reply
// came).
type StepTime struct {
	StartMS float64  `json:"start_ms"`
	EndMS   float64  `json:"end_ms"`
	ModelMS *float64 `json:"model_ms"`
}

// stepTimer measures a run: each model call's latency (a wrapper around
// the model) and when each step became final (a wrapper around OnStep),
// on one clock.
type stepTimer struct {
	clock   func() time.Time
	started time.Time
	last    time.Time
	calls   []float64 // model latency in ms, by call number - 1
	steps   []StepTime
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
		st := StepTime{StartMS: t.ms(t.last), EndMS: t.ms(now)}
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
func (t *stepTimer) timing(r *agent.Result, totalMS float64) *Timing {
	if r == nil || len(r.Steps) == 0 || len(t.steps) != len(r.Steps) {
		return nil
	}
	return &Timing{Source: Measured, TotalMS: totalMS, Steps: t.steps}
}

// RecordedTiming reads a replayed trial's timing from its exchanges' sent
// times: a step that made model call n starts when exchange n was sent and
// ends when the next one was (the last at the trial's elapsed time, when
// it is known and later); the fixed path's own retrieval sits at the
// start. Times count from the first exchange's. Nil when any exchange the
// steps used has no sent time.
func RecordedTiming(t recording.Trial, r *agent.Result) *Timing {
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
	out := &Timing{Source: Recorded, TotalMS: total, Steps: make([]StepTime, len(r.Steps))}
	for i, s := range r.Steps {
		if s.Call == 0 {
			continue // the fixed path's retrieval, before its one call
		}
		if s.Call > len(sent) {
			return nil
		}
		st := StepTime{StartMS: ms(sent[s.Call-1]), EndMS: total}
		if s.Call < len(sent) {
			st.EndMS = ms(sent[s.Call])
		}
		out.Steps[i] = st
	}
	return out
}
