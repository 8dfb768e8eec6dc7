package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// ReplayRequest is a recording to replay.
type ReplayRequest struct {
	// Corpus is the pack the recording was made over ("" is the seed).
	Corpus string
	// File is the recording; nil replays the bundled comparison.
	File *recording.File
	// Case keeps only that case's trials ("" keeps every trial). A case no
	// trial has is refused with the cases the recording does have.
	Case string
	// OnTrial, if set, sees each trial as it is done: how many are done, of
	// how many, and the trial's id.
	OnTrial func(done, total int, id string)
}

// ReplayResult is a replayed recording: every trial's report, the summary
// per path, and how many recorded exchanges the trials used.
type ReplayResult struct {
	// Source is "bundled" or "loaded".
	Source        string         `json:"source"`
	Model         string         `json:"model"`
	Config        any            `json:"config"`
	Endpoint      string         `json:"endpoint"`
	RecordedAt    string         `json:"recorded_at"`
	Trials        []report.Trial `json:"trials"`
	Summary       report.Summary `json:"summary"`
	Exchanges     int            `json:"exchanges"`
	ExchangesUsed int            `json:"exchanges_used"`
	ElapsedMS     float64        `json:"elapsed_ms"`
}

// Report is the result as the lab's report (trials and summary).
func (r *ReplayResult) Report() *report.Set {
	return &report.Set{Trials: r.Trials, Summary: r.Summary}
}

// Replay replays a recording through the controller, the index and the
// graders. The error is for a case filter that keeps nothing or a fault
// outside every trial's own outcome; a trial refused or failed is a
// report, not an error.
func (e *Engine) Replay(ctx context.Context, req ReplayRequest) (*ReplayResult, error) {
	started := e.clock()
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	file, source := req.File, "loaded"
	if file == nil {
		file, source = e.bundled, "bundled"
	} else {
		e.keepLoaded(file)
	}
	file, err = FilterCase(file, req.Case)
	if err != nil {
		return nil, err
	}
	total, done := len(file.Trials), 0
	rep, err := l.Replay(ctx, file, func(tr report.Trial) {
		done++
		if req.OnTrial != nil {
			req.OnTrial(done, total, tr.ID)
		}
	})
	if err != nil {
		return nil, err
	}
	out := &ReplayResult{Source: source, Model: file.Model, Config: file.Config, Endpoint: file.Endpoint, RecordedAt: file.RecordedAt,
		Trials: rep.Trials, Summary: rep.Summary}
	e.price(out.Trials, file.Model)
	out.Exchanges, out.ExchangesUsed = ExchangeTotals(rep.Trials)
	out.ElapsedMS = e.since(started)
	return out, nil
}

// FilterCase keeps the trials of one case ("" keeps all). A case no trial
// has is an error naming the cases the recording has.
func FilterCase(f *recording.File, caseID string) (*recording.File, error) {
	if caseID == "" {
		return f, nil
	}
	kept := *f
	kept.Trials = nil
	for _, t := range f.Trials {
		if t.CaseID == caseID {
			kept.Trials = append(kept.Trials, t)
		}
	}
	if len(kept.Trials) == 0 {
		return nil, &NoCaseError{Case: caseID, Known: CaseIDs(f)}
	}
	return &kept, nil
}

// NoCaseError is a case filter that keeps no trial.
type NoCaseError struct {
	Case  string
	Known []string
}

func (e *NoCaseError) Error() string {
	return fmt.Sprintf("no trial has case %q; cases in the recording: %s", e.Case, strings.Join(e.Known, ", "))
}

// CaseIDs lists the distinct case ids of a recording's trials, sorted.
func CaseIDs(f *recording.File) []string {
	seen := map[string]bool{}
	var ids []string
	for _, t := range f.Trials {
		if !seen[t.CaseID] {
			seen[t.CaseID] = true
			ids = append(ids, t.CaseID)
		}
	}
	sort.Strings(ids)
	return ids
}

// ExchangeTotals is how many exchanges the trials recorded and how many
// their replays used.
func ExchangeTotals(trials []report.Trial) (total, used int) {
	for _, t := range trials {
		total += t.Exchanges
		used += t.ExchangesUsed
	}
	return total, used
}

// price sets each trial's estimated cost at the model's list price (none
// when the table has no price for it).
func (e *Engine) price(trials []report.Trial, model string) {
	rate, ok := e.Rate(model)
	if !ok {
		return
	}
	for i := range trials {
		trials[i].Cost = report.CostOf(trials[i].Result, rate)
	}
}
