// Package report is the vocabulary of graded trials that every front end
// reads: one trial's report (Trial), a set of them with the outcomes
// tallied per path (Set), a live batch in the published record's shape
// (Batch), token usage and estimated costs, and step timings. It holds no
// corpus, index or model: core/lab makes these reports, core/otlp exports
// them, core/engine hands them out, so the command line, the page and the
// server read one shape without reaching into the lab that made them.
package report

import (
	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Trial is one trial's report: a replayed, batched or single run. Result
// is nil (and Error set) when the trial was refused before it started;
// Checks is nil for a trial whose case is not among the lab's cases.
type Trial struct {
	ID             string           `json:"id"`
	CaseID         string           `json:"case_id"`
	Split          string           `json:"split"`
	Repeat         int              `json:"repeat"`
	Mode           string           `json:"mode"`
	Result         *agent.Result    `json:"result"`
	Error          *reason.Code     `json:"error"`
	ErrorDetail    string           `json:"error_detail,omitempty"`
	Checks         *evaluate.Checks `json:"checks"`
	Exchanges      int              `json:"exchanges"`
	ExchangesUsed  int              `json:"exchanges_used"`
	ElapsedSeconds *float64         `json:"elapsed_seconds"`

	// The rest are additions for a trace viewer. Timing is nil when
	// neither a clock nor the recording gave per-step times. Corpus names
	// the pack the trial ran over (nil for a bare snapshot). Model and
	// Config say who decided a run made now (a replay's are the
	// recording's). Cost is the estimate at the model's list price (nil
	// when unpriced). KeyRefused is set, and Checks nil, when a live
	// run's key was refused: a key problem, not a fixture failure.
	Timing     *Timing     `json:"timing,omitempty"`
	Corpus     *CorpusRef  `json:"corpus,omitempty"`
	Model      string      `json:"model,omitempty"`
	Config     any         `json:"config,omitempty"`
	Cost       *TrialCost  `json:"cost,omitempty"`
	KeyRefused *KeyRefusal `json:"key_refused,omitempty"`
	// Scores are, per observation, the scores of a search's candidates as
	// the pack ranks them (nil for a read, and for a candidate not found
	// again), and ScoreKind how to read them; set only for a trace viewer
	// (engine.CandidateScores), never shown to the model.
	Scores    [][]*float64 `json:"scores,omitempty"`
	ScoreKind string       `json:"score_kind,omitempty"`
}

// CorpusRef names the pack a trial ran over: its id and its title (the
// manifest's), which is also the subject its model was told about unless
// the pack is Python's documentation. A trace labels the trial's
// passages with it.
type CorpusRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Subject is the subject the policy text named: "Python
	// documentation" (the reference text) or the title.
	Subject string `json:"subject"`
}

// KeyRefusal is a live request the API answered with HTTP 400, 401 or 403:
// the key was refused (not valid, not allowed, or for another project).
type KeyRefusal struct {
	HTTPStatus int    `json:"http_status"`
	Detail     string `json:"detail"`
}

// Summary tallies outcomes per path.
type Summary struct {
	Fixed evaluate.Tally `json:"fixed"`
	Agent evaluate.Tally `json:"agent"`
}

// Set is graded trials in the order they ran, with their outcomes tallied
// per path: a replayed recording, a batch, an eval's runs.
type Set struct {
	Trials  []Trial `json:"trials"`
	Summary Summary `json:"summary"`
}

// Add appends a trial and counts its outcome on its path (a trial with no
// checks is not counted).
func (s *Set) Add(tr Trial) {
	if tr.Checks != nil {
		switch agent.Mode(tr.Mode) {
		case agent.Fixed:
			s.Summary.Fixed.Add(tr.Checks.Outcome)
		case agent.Agent:
			s.Summary.Agent.Add(tr.Checks.Outcome)
		}
	}
	s.Trials = append(s.Trials, tr)
}

// Refused is the refusal of a trial refused before it ran (no result, an
// error code), as the reason's error ("code: detail"), or nil: what a front
// end reports instead of a result.
func (t Trial) Refused() error {
	if t.Result != nil || t.Error == nil {
		return nil
	}
	return reason.New(*t.Error, "%s", t.ErrorDetail)
}
