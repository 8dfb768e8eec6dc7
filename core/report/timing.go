package report

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
