// Package agent is the controller: a model proposes the next action, and this
// package admits or refuses it (limits, repeats, unissued sources, the
// citation contract) in exactly the reference lab's order of checks, so a
// run here ends with the status and reason it ends with there.
package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/core/tools"
)

// Mode selects who chooses retrieval: the model (agent) or the code (fixed).
type Mode string

// The two modes.
const (
	// Agent lets the model search and read as it sees fit.
	Agent Mode = "agent"
	// Fixed searches the question once, reads every candidate, then lets the
	// model only answer or stop.
	Fixed Mode = "fixed"
)

// SearchK is how many candidates each search issues unless the corpus
// sets its own (Controller.SearchK): the reference lab's 2.
const SearchK = corpus.DefaultSearchK

// maxCallTimeout caps one model call, whatever the deadline leaves.
const maxCallTimeout = 45 * time.Second

// maxQuestion is the question's length cap in code points.
const maxQuestion = 512

// Task is what to run.
type Task struct {
	Question string
	Version  string
	Mode     Mode
	Limits   Limits
}

// Validate refuses a task before it starts, in the reference order: limits,
// question, version, mode.
func (t Task) Validate() error {
	if err := t.Limits.Validate(); err != nil {
		return err
	}
	if err := checkQuestion(t.Question); err != nil {
		return err
	}
	if err := checkVersion(t.Version); err != nil {
		return err
	}
	return checkMode(string(t.Mode))
}

func checkQuestion(q string) error {
	if pyjson.Blank(q) || pyjson.Len(q) > maxQuestion {
		return reason.New(reason.InvalidQuestion, "the question must be non-blank and at most %d characters", maxQuestion)
	}
	return nil
}

func checkVersion(v string) error {
	if !corpus.ValidVersion(v) {
		return reason.New(reason.InvalidVersion, "version %q is not of the form 3.12", v)
	}
	return nil
}

func checkMode(m string) error {
	if Mode(m) != Agent && Mode(m) != Fixed {
		return reason.New(reason.InvalidMode, "mode %q is not agent or fixed", m)
	}
	return nil
}

// TaskFromJSON builds a task from decoded JSON fields (a recording's trial)
// as run() checks its arguments: limits, then the question's type and value,
// then the version's, then the mode's, so a wrong type is refused with the
// same code, at the same point, as a wrong value. An absent field is nil.
func TaskFromJSON(question, version, mode, limits any) (Task, error) {
	l, err := LimitsFromJSON(limits)
	if err != nil {
		return Task{}, err
	}
	q, ok := question.(string)
	if !ok {
		return Task{}, reason.New(reason.InvalidQuestion, "the question must be a string")
	}
	if err := checkQuestion(q); err != nil {
		return Task{}, err
	}
	v, ok := version.(string)
	if !ok {
		return Task{}, reason.New(reason.InvalidVersion, "the version must be a string")
	}
	if err := checkVersion(v); err != nil {
		return Task{}, err
	}
	m, ok := mode.(string)
	if !ok {
		return Task{}, reason.New(reason.InvalidMode, "the mode must be a string")
	}
	if err := checkMode(m); err != nil {
		return Task{}, err
	}
	return Task{Question: q, Version: v, Mode: Mode(m), Limits: l}, nil
}

// Controller runs tasks with its tools and model.
type Controller struct {
	Tools tools.Tools
	Model model.Model
	// Clock is the time source for the deadline; nil means time.Now.
	Clock func() time.Time
	// OnStep, if set, sees each step as soon as it is final, with the
	// observation it added (nil when it added none).
	OnStep func(Step, *Observation)
	// SearchK is how many candidates each search issues, 1 to
	// corpus.MaxSearchK: the corpus pack's setting. 0 means SearchK. It is
	// not part of the request state: a model learns it from the candidates.
	SearchK int
	// Subject is what the corpus is about, for the policy text (Policy):
	// "" sends the reference text byte for byte (Python documentation, as
	// every recording was made); a pack's title otherwise.
	Subject string
}

// Run executes a task. A task that fails validation is refused with an error
// carrying its code; any run that starts returns a Result, whatever its
// status. An error is also returned for a fault that is nobody's decision
// (a tool failing without a reason code).
func (c *Controller) Run(ctx context.Context, t Task) (*Result, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	k := c.SearchK
	if k == 0 {
		k = SearchK
	}
	if k < 1 || k > corpus.MaxSearchK {
		return nil, fmt.Errorf("agent: search k is %d; it must be from 1 to %d", k, corpus.MaxSearchK)
	}
	clock := c.Clock
	if clock == nil {
		clock = time.Now
	}
	r := &run{c: c, ctx: ctx, task: t, k: k, clock: clock, started: clock(),
		issued: map[string]tools.Handle{}, passages: map[string]corpus.Passage{}, queries: map[string]bool{}}
	return r.exec()
}

type run struct {
	c       *Controller
	ctx     context.Context
	task    Task
	k       int
	clock   func() time.Time
	started time.Time

	usage        Usage
	decisions    []Decision
	observations []Observation
	steps        []Step
	tokens       model.Tokens

	issued      map[string]tools.Handle
	issuedOrder []string
	passages    map[string]corpus.Passage
	queries     map[string]bool
}

func (r *run) finish(status Status, code reason.Code, detail string, answer string, citations []Citation) *Result {
	if citations == nil {
		citations = []Citation{}
	}
	res := &Result{Status: status, Reason: code, Answer: answer, Citations: citations,
		Question: r.task.Question, Version: r.task.Version, Mode: r.task.Mode, Limits: r.task.Limits,
		Usage: r.usage, Decisions: append([]Decision{}, r.decisions...),
		Observations: append([]Observation{}, r.observations...),
		Steps:        append([]Step{}, r.steps...), Tokens: r.tokens, Detail: detail}
	return res
}

// incomplete ends the run as incomplete for code, with no answer.
func (r *run) incomplete(code reason.Code) *Result {
	return r.finish(Incomplete, code, "", "", nil)
}

// fail ends the run as failed when err carries a code; otherwise the fault is
// returned to the caller.
func (r *run) fail(err error) (*Result, error) {
	code, ok := reason.Of(err)
	if !ok {
		return nil, err
	}
	return r.finish(Failed, code, reason.DetailOf(err), "", nil), nil
}

func (r *run) elapsed() time.Duration { return r.clock().Sub(r.started) }

func (r *run) addStep(s Step) {
	r.steps = append(r.steps, s)
	if r.c.OnStep == nil {
		return
	}
	var obs *Observation
	if s.Observation >= 0 {
		o := r.observations[s.Observation]
		obs = &o
	}
	r.c.OnStep(s, obs)
}

// stepOf records the outcome of performing an action: admitted, refused by
// an allowance (limit), or refused with an error.
func (r *run) stepOf(s Step, admitted bool, limit reason.Code, err error) {
	s.Usage = r.usage
	s.Observation = -1
	switch {
	case err != nil:
		s.Outcome = Refused
		s.Reason, _ = reason.Of(err)
		s.Detail = reason.DetailOf(err)
	case !admitted:
		s.Outcome, s.Reason = Refused, limit
	default:
		s.Outcome = Admitted
		s.Observation = len(r.observations) - 1
	}
	r.addStep(s)
}

// exec runs the task: in fixed mode the baseline's retrieval first, then one
// decision step per allowed model call. A part that returns nil, nil lets
// the run go on; a run that outlasts its model calls ends with
// model_call_limit.
func (r *run) exec() (*Result, error) {
	if r.task.Mode == Fixed {
		if res, err := r.retrieve(); res != nil || err != nil {
			return res, err
		}
	}
	for range r.task.Limits.ModelCalls {
		if res, err := r.decide(); res != nil || err != nil {
			return res, err
		}
	}
	return r.incomplete(reason.ModelCallLimit), nil
}

// retrieve is the fixed baseline's retrieval: it searches the original
// question once and reads every candidate, in the order they were issued,
// with the same backend, context and answer contract as the agent but no
// refinement. It returns nil, nil when every action was admitted.
func (r *run) retrieve() (*Result, error) {
	if res, err := r.use(Step{Action: Search, Argument: r.task.Question}); res != nil || err != nil {
		return res, err
	}
	for _, source := range append([]string{}, r.issuedOrder...) {
		if res, err := r.use(Step{Action: Read, Argument: source}); res != nil || err != nil {
			return res, err
		}
	}
	return nil, nil
}

// decide is one decision step, its checks in the reference order (the
// first that fires names the reason the run reports): the context is not
// cancelled, the deadline has not passed, the model is called and its reply
// validated, the deadline still has not passed, and then act carries out
// the decision. It returns nil, nil when the run goes on.
func (r *run) decide() (*Result, error) {
	if r.ctx.Err() != nil {
		return r.incomplete(reason.Cancelled), nil
	}
	seconds := time.Duration(r.task.Limits.Seconds) * time.Second
	remaining := seconds - r.elapsed()
	if remaining <= 0 {
		return r.incomplete(reason.Deadline), nil
	}
	prompt := model.Prompt{System: InstructionFor(r.c.Subject, r.task.Mode), State: r.state(), Schema: Schema()}
	r.usage.ModelCalls++
	reply, err := r.c.Model.Decide(r.ctx, prompt, min(maxCallTimeout, remaining))
	step := Step{Call: r.usage.ModelCalls, Usage: r.usage, Observation: -1,
		Tokens: reply.Meta.Tokens(), ModelVersion: reply.Meta.ModelVersion, UsageMetadata: reply.Meta.UsageMetadata}
	if step.Tokens != nil {
		r.tokens = r.tokens.Add(*step.Tokens)
	}
	var d Decision
	if err == nil {
		d, err = ValidateDecision(reply.Value)
	}
	if err != nil {
		return r.refuseReply(step, err)
	}
	r.decisions = append(r.decisions, d)
	step.Action, step.Assessment = d.Action, d.Assessment
	step.Argument = d.Query + d.SourceID // at most one is non-empty
	if r.elapsed() >= seconds {
		step.Outcome, step.Reason = Refused, reason.Deadline
		r.addStep(step)
		return r.incomplete(reason.Deadline), nil
	}
	return r.act(step, d)
}

// refuseReply records a model call that produced no decision (the call
// failed or its reply was invalid) and ends the run: incomplete when the
// context was cancelled meanwhile, whatever the call reported; failed with
// the error's code otherwise.
func (r *run) refuseReply(step Step, err error) (*Result, error) {
	if r.ctx.Err() != nil {
		err = reason.New(reason.Cancelled, "stopped during model call %d", r.usage.ModelCalls)
	}
	step.Outcome = Refused
	step.Reason, _ = reason.Of(err)
	step.Detail = reason.DetailOf(err)
	r.addStep(step)
	if step.Reason == reason.Cancelled {
		return r.finish(Incomplete, reason.Cancelled, step.Detail, "", nil), nil
	}
	return r.fail(err)
}

// act carries out a decision that arrived in time: stop ends the run; an
// answer ends it answered if its citations pass the contract, failed if
// not; in fixed mode a search or read is refused; otherwise the tool action
// goes to admission (use).
func (r *run) act(step Step, d Decision) (*Result, error) {
	switch d.Action {
	case Stop:
		step.Outcome, step.Reason = Finished, reason.ModelStopped
		r.addStep(step)
		return r.incomplete(reason.ModelStopped), nil
	case Answer:
		citations, err := r.checkCitations(d)
		if err != nil {
			step.Outcome, step.Reason, step.Detail = Refused, reason.UnreadOrChangedCitation, reason.DetailOf(err)
			r.addStep(step)
			return r.fail(err)
		}
		step.Outcome, step.Reason = Finished, reason.CitationContractPassed
		r.addStep(step)
		return r.finish(Answered, reason.CitationContractPassed, "", d.Answer, citations), nil
	}
	if r.task.Mode == Fixed {
		err := reason.New(reason.FixedPolicyToolRequest, "the fixed path admits only answer or stop, not %s", d.Action)
		step.Outcome, step.Reason, step.Detail = Refused, reason.FixedPolicyToolRequest, reason.DetailOf(err)
		r.addStep(step)
		return r.fail(err)
	}
	return r.use(step)
}

// use performs the search or read a step names and records the step. A
// refusal ends the run: failed for a check (or a fault, returned as the
// error), incomplete for a spent allowance. It returns nil, nil when the
// action was admitted.
func (r *run) use(step Step) (*Result, error) {
	ok, err := r.perform(step.Action, step.Argument)
	limit := reason.SearchLimit
	if step.Action == Read {
		limit = reason.ReadOrByteLimit
	}
	r.stepOf(step, ok, limit, err)
	if err != nil {
		return r.fail(err)
	}
	if !ok {
		return r.incomplete(limit), nil
	}
	return nil, nil
}

// state is the user text of the next request: json.dumps(state, sort_keys=True).
func (r *run) state() string {
	state := map[string]any{"question": r.task.Question, "version": r.task.Version, "observations": r.observations,
		"usage": r.usage, "limits": r.task.Limits, "schema": Schema()}
	return pyjson.Dumps(state, pyjson.Options{SortKeys: true})
}

// QueryKey is the equivalence class of a query: its sorted distinct terms.
// Two searches with the same key are the same search (duplicate_query).
func QueryKey(q string) string {
	terms := store.Terms(q)
	sort.Strings(terms)
	return strings.Join(terms, " ")
}

// perform admits and executes one tool action. It returns false when an
// allowance refuses it, and an error when a check or the tool fails.
func (r *run) perform(action Action, arg string) (bool, error) {
	t := r.task
	if action == Search {
		key := QueryKey(arg)
		if r.queries[key] {
			return false, reason.New(reason.DuplicateQuery, "%q repeats the terms of an earlier search", arg)
		}
		if r.usage.Searches >= t.Limits.Searches {
			return false, nil
		}
		r.queries[key] = true
		r.usage.Searches++ // an admitted attempt counts even if the tool fails
		handles, err := r.c.Tools.Search(arg, r.k, t.Version)
		if err != nil {
			return false, err
		}
		result := &SearchResult{Query: arg, Candidates: make([]Candidate, len(handles))}
		for i, h := range handles {
			if _, seen := r.issued[h.SourceID]; !seen {
				r.issuedOrder = append(r.issuedOrder, h.SourceID)
			}
			r.issued[h.SourceID] = h
			result.Candidates[i] = Candidate{SourceID: h.SourceID, Rank: h.Rank, Version: h.Version}
		}
		r.observations = append(r.observations, Observation{Tool: Search, Arguments: Arguments{Query: &arg}, Result: result})
		return true, nil
	}
	h, issued := r.issued[arg]
	if !issued {
		return false, reason.New(reason.UnissuedSource, "%q was not issued by a search", arg)
	}
	if _, read := r.passages[arg]; read {
		return false, reason.New(reason.DuplicateRead, "%q was already read", arg)
	}
	size := r.c.Tools.ReadCost(h)
	if r.usage.Reads >= t.Limits.Reads || r.usage.SourceBytes+size > t.Limits.SourceBytes {
		return false, nil
	}
	r.usage.Reads++
	r.usage.SourceBytes += size
	p, err := r.c.Tools.Read(h)
	if err != nil {
		return false, err
	}
	if err := r.c.Tools.ValidateRead(p, h); err != nil {
		return false, err
	}
	r.passages[arg] = p
	r.observations = append(r.observations, Observation{Tool: Read, Arguments: Arguments{SourceID: &arg},
		Result: &ReadResult{SourceID: p.SourceID, Version: p.Version, Text: p.Text, URL: p.URL, TextSHA256: p.TextSHA256}})
	return true, nil
}

// checkCitations admits an answer only if every quote is an exact substring
// of a passage this run read; the URL is the read record's.
func (r *run) checkCitations(d Decision) ([]Citation, error) {
	out := make([]Citation, 0, len(d.Citations))
	for i, q := range d.Citations {
		p, read := r.passages[q.SourceID]
		if !read {
			return nil, reason.New(reason.UnreadOrChangedCitation, "citation %d names %q, which was not read", i+1, q.SourceID)
		}
		if !strings.Contains(p.Text, q.Quote) {
			return nil, reason.New(reason.UnreadOrChangedCitation, "citation %d quote is not in %q as read", i+1, q.SourceID)
		}
		out = append(out, Citation{SourceID: q.SourceID, Quote: q.Quote, URL: p.URL})
	}
	return out, nil
}
