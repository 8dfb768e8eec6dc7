package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/otlp"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// Where a trace's trial is recorded: the bundled comparison, the recording
// replayed last (a front end's loaded file), or this session's live runs.
const (
	SourceBundled = "bundled"
	SourceLoaded  = "loaded"
	SourceSession = "session"
)

// kept is the recording replayed last, so a front end can ask for its
// exchanges or its export without sending it again.
type kept struct {
	mu   sync.Mutex
	file *recording.File
}

func (e *Engine) keepLoaded(f *recording.File) {
	e.loaded.mu.Lock()
	defer e.loaded.mu.Unlock()
	e.loaded.file = f
}

// recordingOf is the recording a source names.
func (e *Engine) recordingOf(source string) (*recording.File, error) {
	switch source {
	case SourceBundled, "":
		return e.bundled, nil
	case SourceLoaded:
		e.loaded.mu.Lock()
		defer e.loaded.mu.Unlock()
		if e.loaded.file == nil {
			return nil, fmt.Errorf("no recording has been loaded")
		}
		return e.loaded.file, nil
	case SourceSession:
		return e.Recording(), nil
	}
	return nil, fmt.Errorf("source %q is not %s, %s or %s", source, SourceBundled, SourceLoaded, SourceSession)
}

// ExchangesRequest names a recorded trial.
type ExchangesRequest struct {
	Source string `json:"source"`
	Trial  string `json:"trial"`
}

// Exchange is one recorded model exchange as a trace viewer shows it: the
// request body exactly as sent (Python's json.dumps of the recorded
// request, the bytes the controller sends) and the reply as recorded, or
// the error kind and HTTP status of a failed attempt.
type Exchange struct {
	Call       int    `json:"call"`
	Request    string `json:"request"`
	Response   string `json:"response,omitempty"`
	Error      string `json:"error,omitempty"`
	HTTPStatus int    `json:"http_status,omitempty"`
	SentAt     string `json:"sent_at,omitempty"`
}

// ExchangesResult is a trial's exchanges with the recording's provider
// settings.
type ExchangesResult struct {
	Source    string     `json:"source"`
	Trial     string     `json:"trial"`
	Model     string     `json:"model"`
	Endpoint  string     `json:"endpoint"`
	Config    any        `json:"config"`
	Exchanges []Exchange `json:"exchanges"`
}

// Exchanges returns a recorded trial's exchanges: exchange n answered
// model call n (a live run never retries). A run of the scripted policy
// sends nothing and has none.
func (e *Engine) Exchanges(req ExchangesRequest) (*ExchangesResult, error) {
	f, err := e.recordingOf(req.Source)
	if err != nil {
		return nil, err
	}
	for _, t := range f.Trials {
		if t.ID != req.Trial {
			continue
		}
		out := &ExchangesResult{Source: req.Source, Trial: t.ID, Model: f.Model, Endpoint: f.Endpoint, Config: f.Config,
			Exchanges: make([]Exchange, len(t.Exchanges))}
		for i, ex := range t.Exchanges {
			x := Exchange{Call: i + 1, Request: string(gemini.Body(ex.Request)), Error: ex.Error, HTTPStatus: ex.HTTPStatus, SentAt: ex.SentAt}
			if ex.Error == "" {
				x.Response = pyjson.Dumps(ex.Response, pyjson.Options{})
			}
			out.Exchanges[i] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("the %s recording has no trial %q", req.Source, req.Trial)
}

// ExportRequest names the trials to export ("" exports every trial of
// the source's recording).
type ExportRequest struct {
	Source string `json:"source"`
	Trial  string `json:"trial"`
	// Corpus is the pack the trials were run over ("" is the seed): they
	// are replayed, and their candidates described, from its index.
	Corpus string `json:"corpus"`
	// Annotations are the page's annotations of the trials exported, each
	// an event on its run span (core/otlp); when one trial is exported
	// they need not name it.
	Annotations []otlp.Annotation `json:"annotations"`
}

// annotationsOf is notes with each one that names no trial given id (the
// one trial an export holds).
func annotationsOf(notes []otlp.Annotation, id string) []otlp.Annotation {
	if len(notes) == 0 || id == "" {
		return notes
	}
	out := make([]otlp.Annotation, len(notes))
	for i, a := range notes {
		if a.Trial == "" {
			a.Trial = id
		}
		out[i] = a
	}
	return out
}

// ExportOTLP replays a source's trials (or one) and exports them as
// OTLP/JSON with OpenInference attributes (core/otlp).
func (e *Engine) ExportOTLP(ctx context.Context, req ExportRequest) ([]byte, error) {
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	f, err := e.recordingOf(req.Source)
	if err != nil {
		return nil, err
	}
	if req.Trial != "" {
		kept := *f
		kept.Trials = nil
		for _, t := range f.Trials {
			if t.ID == req.Trial {
				kept.Trials = append(kept.Trials, t)
			}
		}
		if len(kept.Trials) == 0 {
			return nil, fmt.Errorf("the %s recording has no trial %q", req.Source, req.Trial)
		}
		f = &kept
	}
	rep, err := l.Replay(ctx, f, nil)
	if err != nil {
		return nil, err
	}
	return otlpOf(l, f, rep.Trials, annotationsOf(req.Annotations, req.Trial))
}

// OTLP exports replayed trials of f, made over the seed; each search's
// candidates are listed with their passage text and bm25 score from the
// seed's index.
func (e *Engine) OTLP(f *recording.File, trials []report.Trial) ([]byte, error) {
	return otlpOf(e.lab, f, trials, nil)
}

func otlpOf(l *lab.Lab, f *recording.File, trials []report.Trial, notes []otlp.Annotation) ([]byte, error) {
	return otlp.Export(otlp.Input{File: f, Reports: trials, Documents: documentsOf(l), Annotations: notes})
}

// documentsOf describes a search's candidates from l: each passage's text,
// its bm25 score for the query (lower is better; the search is run again
// with the pack's k, which gives the same ranks) and where it comes from.
func documentsOf(l *lab.Lab) func(query, version string, cands []agent.Candidate) []otlp.Document {
	return func(query, version string, cands []agent.Candidate) []otlp.Document {
		return documents(l, query, version, cands)
	}
}

func documents(l *lab.Lab, query, version string, cands []agent.Candidate) []otlp.Document {
	scores := map[string]float64{}
	if hits, err := l.Explain(query, l.SearchK, version); err == nil {
		for _, h := range hits {
			scores[h.SourceID] = h.Score
		}
	}
	out := make([]otlp.Document, len(cands))
	for i, c := range cands {
		d := otlp.Document{ID: c.SourceID, Metadata: map[string]any{"rank": c.Rank, "version": c.Version, "score_kind": "bm25 (lower is better)"}}
		if p, err := l.Read(c.SourceID); err == nil {
			d.Content = p.Text
			d.Metadata["url"] = p.URL
		}
		if s, ok := scores[c.SourceID]; ok {
			d.Score = &s
		}
		out[i] = d
	}
	return out
}

// RunExport is a run kept outside the engine (the page keeps its runs in
// the browser, so a later session can export one the engine never saw):
// the run as it was asked, and a live run's own recording. A scripted run
// is made again (the policy is deterministic on the same pack), a live one
// replayed from its recording, and either exported as OTLP/JSON as a
// recorded trial is.
type RunExport struct {
	Run RunRequest
	// File is a live run's recording (its one trial); nil for a scripted run.
	File *recording.File
	// ID and Repeat are the kept trial's, so the export names it as the
	// page does; RecordedAt is when it ran (RFC 3339), the spans' start.
	ID         string
	Repeat     int
	RecordedAt string
	// Annotations are the page's annotations of the run, events on its
	// run span; they need not name its trial.
	Annotations []otlp.Annotation
}

// ExportRun exports a kept run as OTLP/JSON (core/otlp): a live run's
// recording replayed over its pack, or a scripted run made again with
// the scripted policy, without counting it among the session's runs.
func (e *Engine) ExportRun(ctx context.Context, req RunExport) ([]byte, error) {
	l, err := e.labFor(req.Run.Corpus)
	if err != nil {
		return nil, err
	}
	if req.File != nil {
		rep, err := l.Replay(ctx, req.File, nil)
		if err != nil {
			return nil, err
		}
		id := ""
		if len(rep.Trials) == 1 {
			id = rep.Trials[0].ID
		}
		return otlpOf(l, req.File, rep.Trials, annotationsOf(req.Annotations, id))
	}
	if req.Run.Policy != Scripted {
		return nil, fmt.Errorf("export: a %s run is exported from its recording, and none was given", req.Run.Policy)
	}
	if err := req.Run.Task.Validate(); err != nil {
		return nil, err
	}
	tr := report.Trial{ID: req.ID, Repeat: max(req.Repeat, 1), Mode: string(req.Run.Task.Mode), Model: string(Scripted)}
	if tr.ID == "" {
		tr.ID = "run-" + string(req.Run.Task.Mode)
	}
	if c, known := caseFor(l, req.Run.Task); known {
		tr.CaseID, tr.Split = c.ID, c.Split
	}
	tr, err = l.Trial(ctx, tr, req.Run.Task, policy.Scripted{}, lab.TrialOptions{})
	if err != nil {
		return nil, err
	}
	f := &recording.File{Model: string(Scripted), Endpoint: "", Config: nil, RecordedAt: req.RecordedAt, Trials: []recording.Trial{trialRecord(tr, req.Run.Task)}}
	return otlpOf(l, f, []report.Trial{tr}, annotationsOf(req.Annotations, tr.ID))
}

// ParseExport reads a front end's request to export a kept run, JSON
// {run, recording?, recorded_at, trial: {id, repeat}, annotations?}: run is
// the run's spec, read by p as the run was; recording a live run's own
// recording; annotations the page's of the run (otlp.Annotation).
func (p RunParser) ParseExport(text string) (RunExport, error) {
	var o struct {
		Run        json.RawMessage `json:"run"`
		Recording  *string         `json:"recording"`
		RecordedAt string          `json:"recorded_at"`
		Trial      struct {
			ID     string `json:"id"`
			Repeat int    `json:"repeat"`
		} `json:"trial"`
		Annotations []otlp.Annotation `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		return RunExport{}, fmt.Errorf("export: give {corpus, run, recording?, recorded_at, trial: {id, repeat}, annotations?}: %v", err)
	}
	run, err := p.ParseText(string(o.Run))
	if err != nil {
		return RunExport{}, err
	}
	x := RunExport{Run: run, ID: o.Trial.ID, Repeat: o.Trial.Repeat, RecordedAt: o.RecordedAt, Annotations: o.Annotations}
	if o.Recording != nil {
		if x.File, err = ParseRecording([]byte(*o.Recording)); err != nil {
			return RunExport{}, err
		}
	}
	return x, nil
}
