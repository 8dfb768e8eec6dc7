package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// PolicyName names who decides a run's actions.
type PolicyName string

// The policies.
const (
	// Scripted is the offline rules (core/policy): nothing is sent.
	Scripted PolicyName = "scripted"
	// Gemini is the live model, through the front end's transport.
	Gemini PolicyName = "gemini"
	// Replay answers from a recorded trial.
	Replay PolicyName = "replay"
)

// Policy is a choice a front end offers for a run.
type Policy struct {
	Name  PolicyName `json:"name"`
	Label string     `json:"label"`
	// Live policies call the network with the person's key: the front end
	// shows the plan first and passes a transport.
	Live bool `json:"live"`
}

// Policies are the run choices a front end offers, in the order to show
// them (replay needs a recording, so it is offered where files are).
func Policies() []Policy {
	return []Policy{
		{Name: Scripted, Label: "Scripted rules (offline, no key, nothing sent)"},
		{Name: Gemini, Label: "Gemini " + gemini.Model + " (live, with your key)", Live: true},
	}
}

// RunRequest is one run to make.
type RunRequest struct {
	// Corpus is the pack the run searches and reads ("" is the seed).
	Corpus string
	// Config is the retrieval configuration the run searches under (a
	// built-in's name or a configuration's JSON; "" is the pack's
	// default, or for a replay the recorded trial's).
	Config string
	Task   agent.Task
	Policy PolicyName
	// Endpoint is "" for the real API or a loopback test double (Gemini).
	Endpoint string
	// Transport carries a Gemini run's requests and holds the key.
	Transport gemini.Transport
	// Trial is the recorded trial a Replay run answers from.
	Trial *recording.Trial
	// Save, for a Gemini run, gets the run's own recording after every
	// attempt (and the recording is then not kept in the session's); nil
	// keeps every attempt in the session's recording in memory.
	Save func([]byte) error
	// OnStep, if set, sees each step as soon as it is final.
	OnStep func(agent.Step, *agent.Observation)
	// Allowance, if set, counts a Gemini run's attempts instead of the
	// engine's process-wide allowance: a server that lives for days gives
	// each run its own and bounds each caller's spending in BeforeSend.
	Allowance *gemini.Allowance
	// BeforeSend, if set, is the Gemini client's BeforeSend: called once
	// per attempt after every check passed, just before it is counted and
	// sent; an error (with a reason code) refuses it, nothing sent.
	BeforeSend func(body []byte) error
}

// RunPlan is what a run will be allowed to do, shown before a live run
// starts: the model and endpoint, the request allowance left, the caps and
// the most requests it can make.
type RunPlan struct {
	Policy            Policy       `json:"policy"`
	Corpus            string       `json:"corpus"`
	SearchK           int          `json:"search_k"`
	Question          string       `json:"question"`
	Version           string       `json:"version"`
	Mode              agent.Mode   `json:"mode"`
	Limits            agent.Limits `json:"limits"`
	ModelCallsAtMost  int          `json:"model_calls_at_most"`
	WorstCaseRequests int          `json:"worst_case_requests"`
	// The rest is set for a live policy only.
	Model     string          `json:"model,omitempty"`
	Endpoint  string          `json:"endpoint,omitempty"`
	Caps      *Caps           `json:"caps,omitempty"`
	Allowance *AllowanceState `json:"allowance,omitempty"`
	Rate      *price.Rate     `json:"rate,omitempty"`
	// WorstCaseUSD bounds the cost: every request a full body at one token
	// per byte and every reply the full output allowance (an estimate).
	WorstCaseUSD *float64 `json:"worst_case_estimated_usd,omitempty"`
	// Refusal is why the live run may not be sent (nil when it may).
	Refusal *Refusal `json:"refusal,omitempty"`
}

// AllowanceState is a request allowance's use.
type AllowanceState struct {
	Limit     int `json:"limit"`
	Used      int `json:"used"`
	Remaining int `json:"remaining"`
}

func allowanceState(a *gemini.Allowance) *AllowanceState {
	used := a.Used()
	return &AllowanceState{Limit: a.Limit(), Used: used, Remaining: a.Limit() - used}
}

// PlanRun checks a run request and says what it may do. A task that would
// be refused is refused here too, with its code.
func (e *Engine) PlanRun(req RunRequest) (*RunPlan, error) {
	if err := req.Task.Validate(); err != nil {
		return nil, err
	}
	corpus, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	p, ok := findPolicy(req.Policy)
	if !ok {
		p = Policy{Name: req.Policy}
	}
	l := req.Task.Limits
	calls := lab.CallsAtMost(req.Task)
	plan := &RunPlan{Policy: p, Corpus: corpus.Pack.Manifest.ID, SearchK: corpus.SearchK, Question: req.Task.Question,
		Version: req.Task.Version, Mode: req.Task.Mode, Limits: l, ModelCallsAtMost: calls}
	if req.Policy != Gemini {
		return plan, nil
	}
	endpoint, err := gemini.ResolveEndpoint(req.Endpoint)
	if err != nil {
		return nil, err
	}
	c := caps(l.Seconds)
	plan.Model, plan.Endpoint, plan.Caps = gemini.Model, endpoint, &c
	plan.Allowance = allowanceState(e.allowance)
	plan.WorstCaseRequests = min(calls, plan.Allowance.Remaining)
	if rate, ok := e.Rate(gemini.Model); ok {
		plan.Rate = &rate
		usd := WorstCaseUSD(rate, plan.WorstCaseRequests)
		plan.WorstCaseUSD = &usd
	}
	plan.Refusal = RefusalOf(e.liveRefusal(req.Transport))
	return plan, nil
}

// liveRefusal is why a live run may not start, checked before anything is
// recorded or sent: no key (missing_api_key), then no request left in the
// allowance (batch_request_limit).
func (e *Engine) liveRefusal(t gemini.Transport) error {
	if t == nil || !t.HasKey() {
		return reason.New(reason.MissingAPIKey, "no Gemini API key; nothing was sent")
	}
	if e.allowance.Used() >= e.allowance.Limit() {
		return reason.New(reason.BatchRequestLimit, "all %d requests of the allowance are used; nothing was sent", e.allowance.Limit())
	}
	return nil
}

// WorstCaseUSD bounds the cost of requests: every one a full body at one
// token per byte, every reply the full output allowance.
func WorstCaseUSD(r price.Rate, requests int) float64 {
	return float64(requests) * r.Cost(gemini.MaxRequestBytes, gemini.MaxOutputTokens())
}

// Run makes one run and grades it when it asks an authored case's question.
// A Gemini run counts every attempt against the engine's allowance and
// records it (in req.Save's file, or the session's recording). A task
// refused before it starts is reported with its code and no result.
func (e *Engine) Run(ctx context.Context, req RunRequest) (report.Trial, error) {
	opts := lab.TrialOptions{Clock: e.clock, OnStep: req.OnStep}
	l, err := e.labUnder(req.Corpus, req.Config)
	if err != nil {
		return report.Trial{}, err
	}
	switch req.Policy {
	case Scripted:
		tr, _ := e.begin(l, req.Task)
		tr.Model = string(Scripted)
		return l.Trial(ctx, tr, req.Task, policy.Scripted{TermKey: l.Retrieval.TermKey}, opts)
	case Replay:
		if req.Trial == nil {
			return report.Trial{}, errors.New("run: a replay run needs a recorded trial")
		}
		tr, _ := e.begin(l, req.Task)
		if err := checkRecorded(l, req.Config, *req.Trial); err != nil {
			return lab.Refused(tr, err)
		}
		spec, err := l.Recorded(req.Trial.Retrieval)
		if err != nil {
			return lab.Refused(tr, err)
		}
		if l, err = l.Under(spec); err != nil {
			return lab.Refused(tr, err)
		}
		replayer := recording.NewReplayer(*req.Trial)
		tr, err = l.Trial(ctx, tr, req.Task, replayer, opts)
		tr.Exchanges, tr.ExchangesUsed = len(req.Trial.Exchanges), replayer.Used()
		return tr, err
	case Gemini:
		return e.runLive(ctx, l, req, opts)
	}
	return report.Trial{}, fmt.Errorf("run: policy %q is not scripted, gemini or replay", req.Policy)
}

// runLive runs with the live model: a task refused before it starts, or a
// run without a key, records and sends nothing; otherwise the trial is
// begun in the recording and every attempt recorded as it happens. A key
// the API refused (HTTP 400, 401 or 403) is reported as such, ungraded: a
// key problem, not a fixture failure.
func (e *Engine) runLive(ctx context.Context, l *lab.Lab, req RunRequest, opts lab.TrialOptions) (report.Trial, error) {
	if req.Transport == nil {
		return report.Trial{}, errors.New("run: a gemini run needs a transport")
	}
	if err := req.Task.Validate(); err != nil {
		tr, _ := e.begin(l, req.Task)
		return lab.Refused(tr, err)
	}
	if !req.Transport.HasKey() {
		tr, _ := e.begin(l, req.Task)
		return lab.Refused(tr, reason.New(reason.MissingAPIKey, "no Gemini API key; nothing was sent or recorded"))
	}
	endpoint, err := gemini.ResolveEndpoint(req.Endpoint)
	if err != nil {
		return report.Trial{}, err
	}
	rec := e.sessionRecorder(endpoint)
	if req.Save != nil {
		if rec, err = recording.NewRecorder(e.header(gemini.Model, endpoint, gemini.Config()), req.Save); err != nil {
			return report.Trial{}, err
		}
	}
	tr, _ := e.begin(l, req.Task)
	record := trialRecord(tr, req.Task)
	record.Retrieval = l.RetrievalRecord()
	client, live, err := e.startLive(rec, record, LiveModel{Model: gemini.Model, Transport: req.Transport, Endpoint: endpoint,
		Allowance: req.Allowance, BeforeSend: req.BeforeSend})
	if err != nil {
		return report.Trial{}, err
	}
	opts.OnEnd = live.Log.Finish
	tr.Model, tr.Config = gemini.Model, gemini.Config()
	tr, err = l.Trial(ctx, tr, req.Task, client, opts)
	tr.Exchanges, tr.ExchangesUsed = live.Attempts(), live.Attempts()
	if err == nil {
		if rate, ok := e.Rate(gemini.Model); ok {
			tr.Cost = report.CostOf(tr.Result, rate)
		}
		if refusal := keyRefusal(tr.Result, live.Last()); refusal != nil {
			tr.KeyRefused, tr.Checks = refusal, nil
		}
	}
	return tr, err
}

// keyRefusal is a run that ended on an HTTP 400, 401 or 403: the API
// refused the key (not valid, not allowed, or for another project).
func keyRefusal(r *agent.Result, last gemini.Attempt) *report.KeyRefusal {
	if r == nil || r.Reason != reason.Transport(gemini.HTTPError) {
		return nil
	}
	switch last.HTTPStatus {
	case 400, 401, 403:
		return &report.KeyRefusal{HTTPStatus: last.HTTPStatus, Detail: r.Detail}
	}
	return nil
}

// begin numbers a run and finds its case in the lab (by question and
// version).
func (e *Engine) begin(l *lab.Lab, task agent.Task) (report.Trial, *evaluate.Case) {
	c, known := caseFor(l, task)
	s := &e.session
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs++
	key := string(task.Mode)
	if known {
		key = c.ID + "/" + key
	}
	s.repeat[key]++
	tr := report.Trial{ID: fmt.Sprintf("run-%d-%s", s.runs, task.Mode), Repeat: s.repeat[key], Mode: string(task.Mode)}
	if known {
		tr.CaseID, tr.Split = c.ID, c.Split
	}
	return tr, c
}

// caseFor finds the authored case a task asks, by question and version.
func caseFor(l *lab.Lab, t agent.Task) (*evaluate.Case, bool) {
	cs := l.Cases.Cases
	for i := range cs {
		if cs[i].Question == t.Question && cs[i].Version == t.Version {
			return &cs[i], true
		}
	}
	return nil, false
}

// trialRecord is a run's header in a recording (no exchanges yet).
func trialRecord(tr report.Trial, t agent.Task) recording.Trial {
	return recording.Trial{ID: tr.ID, CaseID: tr.CaseID, Split: tr.Split, Repeat: tr.Repeat,
		Question: t.Question, Version: t.Version, Mode: string(t.Mode), Limits: pyjson.ValueOf(t.Limits)}
}

// sessionRecorder is the session's in-memory recording, started by its
// first live run.
func (e *Engine) sessionRecorder(endpoint string) *recording.Recorder {
	s := &e.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		s.rec = recording.NewMemoryRecorder(e.header(gemini.Model, endpoint, gemini.Config()))
	}
	return s.rec
}

// Recording is a copy of the session's recording so far: every attempt of
// its live runs kept in memory, in order. It has no trials before the
// first such run.
func (e *Engine) Recording() *recording.File {
	s := &e.session
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec == nil {
		return &recording.File{Model: gemini.Model, Endpoint: gemini.Endpoint, Config: gemini.Config()}
	}
	return rec.File()
}

// Exchanges counts a recording's exchanges.
func Exchanges(f *recording.File) int {
	n := 0
	for _, t := range f.Trials {
		n += len(t.Exchanges)
	}
	return n
}

var _ model.Model = policy.Scripted{}

// RecordingText is a recording as ragagent-recording/1 text, ready to
// download, with its trial and exchange counts.
type RecordingText struct {
	Trials    int    `json:"trials"`
	Exchanges int    `json:"exchanges"`
	Text      string `json:"text"`
}

// TextOf writes a recording as text.
func TextOf(f *recording.File) (*RecordingText, error) {
	text, err := f.Bytes()
	if err != nil {
		return nil, err
	}
	return &RecordingText{Trials: len(f.Trials), Exchanges: Exchanges(f), Text: string(text)}, nil
}
