package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
)

// A run request is parsed here and nowhere else: the page's spec, the
// server's request body (and the spec it stored) and the command line's
// flags are each mapped onto a JSON object and read by RunParser.Parse, so
// the defaults, the corpus list and the policy list are the engine's, and
// a field a run gains is added to runFields, Parse and Spec alone.

// runFields are a run request's fields, in the order Parse checks them
// after an unknown field: the task's in the controller's order (limits,
// question, version, mode), then the policy, the corpus, the endpoint and
// the replayed trial.
var runFields = []string{"question", "version", "mode", "limits", "policy", "corpus", "endpoint", "trial"}

// RunParser reads run requests for one front end.
type RunParser struct {
	// Packs are the corpora a request may name, each with its default
	// version; nil means the seed alone (a server whose engine opens only
	// when a run starts).
	Packs []PackSummary
	// Endpoint admits the endpoint field: a person pointing a live run made
	// with their own key at a loopback test double (the page, the command
	// line). A server sends with its own key and refuses the field.
	Endpoint bool
	// Recording is the recording a replay run answers from (the command
	// line's --policy replay:FILE). With one, the policy replay and the
	// trial field are admitted.
	Recording *recording.File
	// Own are the front end's own fields (the server's strategy, stream and
	// on_disconnect; the page's hasKey), left for it to read. Any other
	// field a run does not have is refused with unknown_field.
	Own []string
}

// RunParser is the engine's parser for a front end of one person (the
// page, the command line): the engine's packs, the endpoint admitted, and
// own as the front end's fields.
func (e *Engine) RunParser(own ...string) RunParser {
	return RunParser{Packs: e.Packs(), Endpoint: true, Own: own}
}

// The codes of a run request refused for its shape rather than its task.
const (
	// UnknownField is a field no run has (and the front end does not read).
	UnknownField reason.Code = "unknown_field"
	// InvalidPolicy names no policy the front end offers.
	InvalidPolicy reason.Code = "invalid_policy"
	// InvalidField is a field of the wrong type or value.
	InvalidField reason.Code = "invalid_field"
	// UnknownCorpus names no pack the front end offers.
	UnknownCorpus reason.Code = "unknown_corpus"
)

// ParseText reads a run request from JSON text.
func (p RunParser) ParseText(text string) (RunRequest, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return RunRequest{}, fmt.Errorf("run: the spec is not JSON: %v", err)
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return RunRequest{}, errors.New("run: the spec is not an object")
	}
	return p.Parse(o)
}

// Parse reads a run request, in this order: a field that is neither a
// run's nor the front end's (unknown_field); the task, exactly as a
// recorded trial's is read (a wrong type gets the same code as a wrong
// value: invalid_limits, invalid_question, invalid_version, invalid_mode);
// the policy (invalid_policy); the corpus (invalid_field, unknown_corpus);
// the endpoint (loopback only). An absent field takes its default: the
// corpus's default version, the agent path, the default limits, the
// scripted policy, the seed; null is a value (and refused) everywhere but
// limits, where it means the defaults. A replay request's trial is picked
// from the parser's recording by its id, or as the first whose question,
// version and mode match the ones given, and fills in the task's fields
// left out (limits given replace the trial's).
func (p RunParser) Parse(o *pyjson.Object) (RunRequest, error) {
	allowed := map[string]bool{}
	for _, f := range runFields {
		allowed[f] = true
	}
	allowed["endpoint"] = p.Endpoint
	allowed["trial"] = p.Recording != nil
	for _, f := range p.Own {
		allowed[f] = true
	}
	for _, k := range o.Keys() {
		if !allowed[k] {
			return RunRequest{}, reason.New(UnknownField, "unknown field %q", k)
		}
	}
	packs := p.Corpora()
	field := func(k string, def any) any {
		if v, ok := o.Get(k); ok {
			return v
		}
		return def
	}
	// The corpus is checked after the task, as the server always did, but
	// its default version is the task's: a corpus the parser cannot name
	// gets the seed's until it is refused.
	id, isString := field("corpus", SeedPack).(string)
	pack := findPack(packs, id)
	var defaultVersion string
	if pack != nil {
		defaultVersion = pack.Manifest.DefaultVersion
	} else {
		defaultVersion = seedSummary().Manifest.DefaultVersion
	}
	policyName, policyIsString := field("policy", string(Scripted)).(string)

	var req RunRequest
	var err error
	if policyIsString && PolicyName(policyName) == Replay && p.Recording != nil {
		req.Trial, err = pickTrial(p.Recording, o)
		if err != nil {
			return RunRequest{}, err
		}
		t := req.Trial
		req.Task, err = agent.TaskFromJSON(t.Question, t.Version, t.Mode, field("limits", t.Limits))
		if err != nil {
			return RunRequest{}, fmt.Errorf("trial %s cannot run: %v", t.ID, err)
		}
	} else {
		req.Task, err = agent.TaskFromJSON(field("question", nil), field("version", defaultVersion),
			field("mode", string(agent.Agent)), field("limits", nil))
		if err != nil {
			return RunRequest{}, err
		}
	}
	policies := p.Policies()
	if !policyIsString || !slices.ContainsFunc(policies, func(x Policy) bool { return string(x.Name) == policyName }) {
		names := make([]string, len(policies))
		for i, x := range policies {
			names[i] = string(x.Name)
		}
		return RunRequest{}, reason.New(InvalidPolicy, "policy %s is not one of %s", short(field("policy", nil)), strings.Join(names, ", "))
	}
	req.Policy = PolicyName(policyName)
	if !isString {
		return RunRequest{}, reason.New(InvalidField, "corpus must be a string")
	}
	if pack == nil {
		known := make([]string, len(packs))
		for i, x := range packs {
			known[i] = x.Manifest.ID
		}
		return RunRequest{}, reason.New(UnknownCorpus, "no corpus pack %q; the packs are %s", id, strings.Join(known, ", "))
	}
	req.Corpus = id
	if v, ok := o.Get("endpoint"); ok {
		if req.Endpoint, ok = v.(string); !ok {
			return RunRequest{}, reason.New(InvalidField, "endpoint must be a string")
		}
		if _, err := gemini.ResolveEndpoint(req.Endpoint); err != nil {
			return RunRequest{}, err
		}
	}
	if _, ok := o.Get("trial"); ok && req.Trial == nil {
		return RunRequest{}, reason.New(InvalidField, "trial goes with the replay policy")
	}
	return req, nil
}

// Corpora are the packs a request may name, the seed first: the parser's
// Packs, or the seed alone when it was given none (a front end that opens
// its engine only once a run starts). The server lists these, so what it
// lists is what it runs.
func (p RunParser) Corpora() []PackSummary {
	if p.Packs == nil {
		return []PackSummary{seedSummary()}
	}
	return p.Packs
}

// Policies are the policies a request to this parser may name: the ones
// every front end offers, and replay where there is a recording.
func (p RunParser) Policies() []Policy {
	out := Policies()
	if p.Recording != nil {
		out = append(out, replayPolicy())
	}
	return out
}

// replayPolicy is offered where a front end holds a recording.
func replayPolicy() Policy {
	return Policy{Name: Replay, Label: "A recorded trial (offline, nothing sent)"}
}

// Spec is a parsed request as JSON, every default filled in, in runFields'
// order (the endpoint and trial only when set): what a server stores with
// a run and Parse reads back.
func (r RunRequest) Spec() *pyjson.Object {
	o := pyjson.NewObject("question", r.Task.Question, "version", r.Task.Version, "mode", string(r.Task.Mode),
		"limits", r.Task.Limits, "policy", string(r.Policy), "corpus", r.Corpus)
	if r.Endpoint != "" {
		o.Set("endpoint", r.Endpoint)
	}
	if r.Trial != nil {
		o.Set("trial", r.Trial.ID)
	}
	return o
}

// pickTrial finds the trial to replay: by the trial field's id, or the
// first whose question, version and mode match those given (a field not
// given matches any).
func pickTrial(f *recording.File, o *pyjson.Object) (*recording.Trial, error) {
	if v, ok := o.Get("trial"); ok {
		id, ok := v.(string)
		if !ok {
			return nil, reason.New(InvalidField, "trial must be a trial id")
		}
		for i, t := range f.Trials {
			if t.ID == id {
				return &f.Trials[i], nil
			}
		}
		return nil, fmt.Errorf("the recording has no trial %q", id)
	}
	matches := func(k string, recorded any) bool {
		v, given := o.Get(k)
		return !given || pyjson.Equal(v, recorded)
	}
	for i, t := range f.Trials {
		if matches("question", t.Question) && matches("version", t.Version) && matches("mode", t.Mode) {
			return &f.Trials[i], nil
		}
	}
	return nil, errors.New("the recording has no trial with that question, version and mode")
}

// findPolicy is a policy any parser may admit, by name.
func findPolicy(name PolicyName) (Policy, bool) {
	for _, p := range append(Policies(), replayPolicy()) {
		if p.Name == name {
			return p, true
		}
	}
	return Policy{}, false
}

// get is o's value for k (nil when absent, or for a nil o).
func get(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

func findPack(packs []PackSummary, id string) *PackSummary {
	for i := range packs {
		if packs[i].Manifest.ID == id {
			return &packs[i]
		}
	}
	return nil
}

// seedSummary is the seed as a pack list names it, before any engine is
// opened.
func seedSummary() PackSummary {
	m, err := corpus.ParseManifest(fixtures.SeedManifest)
	if err != nil {
		panic(fmt.Sprintf("the embedded seed manifest: %v", err)) // a build mistake: Open would refuse it too
	}
	return PackSummary{Manifest: m}
}

// short is a value as JSON for a message, cut at 40 characters.
func short(v any) string {
	s := pyjson.Dumps(v, pyjson.Options{})
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}
