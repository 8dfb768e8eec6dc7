package agent

import (
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Status is how a run ended.
type Status string

// The three statuses of a finished run.
const (
	Answered   Status = "answered"
	Incomplete Status = "incomplete"
	Failed     Status = "failed"
)

// Usage counts what a run consumed; the admitted attempts count even when a
// tool then fails.
type Usage struct {
	ModelCalls  int `json:"model_calls"`
	Searches    int `json:"searches"`
	Reads       int `json:"reads"`
	SourceBytes int `json:"source_bytes"`
}

// Value is the usage as a JSON object in the published key order.
func (u Usage) Value() *pyjson.Object {
	return pyjson.NewObject("model_calls", u.ModelCalls, "searches", u.Searches, "reads", u.Reads, "source_bytes", u.SourceBytes)
}

// Candidate is a search result as the model sees it: no text, no receipt.
type Candidate struct {
	SourceID string `json:"source_id"`
	Rank     int    `json:"rank"`
	Version  string `json:"version"`
}

// SearchResult is the observation of an admitted search.
type SearchResult struct {
	Query      string      `json:"query"`
	Candidates []Candidate `json:"candidates"`
}

// ReadResult is the observation of an admitted, validated read.
type ReadResult struct {
	SourceID   string `json:"source_id"`
	Version    string `json:"version"`
	Text       string `json:"text"`
	URL        string `json:"url"`
	TextSHA256 string `json:"text_sha256"`
}

// Arguments are an action's arguments: a query for search, a source_id for read.
type Arguments struct {
	Query    *string `json:"query,omitempty"`
	SourceID *string `json:"source_id,omitempty"`
}

// Observation is a tool result the application accepted. Exactly one of
// Search and Read is set, matching Tool; it marshals as the reference lab's
// {"tool", "arguments", "result"}.
type Observation struct {
	Tool      Action    `json:"tool"`
	Arguments Arguments `json:"arguments"`
	Result    any       `json:"result"` // *SearchResult or *ReadResult
}

// SearchResult returns the search observation, if it is one.
func (o Observation) Search() (*SearchResult, bool) {
	r, ok := o.Result.(*SearchResult)
	return r, ok
}

// ReadResult returns the read observation, if it is one.
func (o Observation) Read() (*ReadResult, bool) {
	r, ok := o.Result.(*ReadResult)
	return r, ok
}

// Value is the observation as the reference lab's JSON object.
func (o Observation) Value() *pyjson.Object {
	switch r := o.Result.(type) {
	case *SearchResult:
		cands := make([]any, len(r.Candidates))
		for i, c := range r.Candidates {
			cands[i] = pyjson.NewObject("source_id", c.SourceID, "rank", c.Rank, "version", c.Version)
		}
		return pyjson.NewObject("tool", string(o.Tool), "arguments", pyjson.NewObject("query", *o.Arguments.Query),
			"result", pyjson.NewObject("query", r.Query, "candidates", cands))
	case *ReadResult:
		return pyjson.NewObject("tool", string(o.Tool), "arguments", pyjson.NewObject("source_id", *o.Arguments.SourceID),
			"result", pyjson.NewObject("source_id", r.SourceID, "version", r.Version, "text", r.Text,
				"url", r.URL, "text_sha256", r.TextSHA256))
	}
	return pyjson.NewObject("tool", string(o.Tool))
}

// MarshalJSON writes Value.
func (o Observation) MarshalJSON() ([]byte, error) { return marshal(o.Value()) }

// Outcome is what the application did with a step's action.
type Outcome string

// Step outcomes.
const (
	Admitted Outcome = "admitted" // a tool ran and its observation was kept
	Refused  Outcome = "refused"  // the reply or action was refused; the run ended
	Finished Outcome = "finished" // an answer passed the citation contract, or the model stopped
)

// Step is one entry of a run's trace: a model call (or, with Call 0, the
// fixed path's own retrieval) and what the application made of it. Steps
// sit beside the published result fields; they add, never replace.
type Step struct {
	Call       int         `json:"call"`
	Action     Action      `json:"action,omitempty"`
	Argument   string      `json:"argument,omitempty"` // the query or the source_id
	Assessment string      `json:"assessment,omitempty"`
	Outcome    Outcome     `json:"outcome"`
	Reason     reason.Code `json:"reason,omitempty"`
	Detail     string      `json:"detail,omitempty"`
	// Observation is the index in Result.Observations this step added, or -1.
	Observation   int            `json:"observation"`
	Usage         Usage          `json:"usage"`
	Tokens        *model.Tokens  `json:"tokens,omitempty"`
	ModelVersion  string         `json:"model_version,omitempty"`
	UsageMetadata *pyjson.Object `json:"usage_metadata,omitempty"`
}

// Result is a finished run. The fields up to Observations have exactly the
// reference lab's shape; Steps, Tokens and Detail are additions.
type Result struct {
	Status       Status        `json:"status"`
	Reason       reason.Code   `json:"reason"`
	Answer       string        `json:"answer"`
	Citations    []Citation    `json:"citations"`
	Question     string        `json:"question"`
	Version      string        `json:"version"`
	Mode         Mode          `json:"mode"`
	Limits       Limits        `json:"limits"`
	Usage        Usage         `json:"usage"`
	Decisions    []Decision    `json:"decisions"`
	Observations []Observation `json:"observations"`

	Steps  []Step       `json:"steps"`
	Tokens model.Tokens `json:"tokens"`
	// Detail explains a refusal for people (which check, which exchange).
	Detail string `json:"detail,omitempty"`
}

// tokensValue is the tokens as a JSON object.
func tokensValue(t model.Tokens) *pyjson.Object {
	return pyjson.NewObject("prompt", t.Prompt, "candidates", t.Candidates, "thoughts", t.Thoughts, "total", t.Total)
}

// Value is the step as a JSON object.
func (s Step) Value() *pyjson.Object {
	o := pyjson.NewObject("call", s.Call)
	if s.Action != "" {
		o.Set("action", string(s.Action))
	}
	if s.Argument != "" {
		o.Set("argument", s.Argument)
	}
	if s.Assessment != "" {
		o.Set("assessment", s.Assessment)
	}
	o.Set("outcome", string(s.Outcome))
	if s.Reason != "" {
		o.Set("reason", string(s.Reason))
	}
	if s.Detail != "" {
		o.Set("detail", s.Detail)
	}
	o.Set("observation", s.Observation).Set("usage", s.Usage.Value())
	if s.Tokens != nil {
		o.Set("tokens", tokensValue(*s.Tokens))
	}
	if s.ModelVersion != "" {
		o.Set("model_version", s.ModelVersion)
	}
	if s.UsageMetadata != nil {
		o.Set("usage_metadata", s.UsageMetadata)
	}
	return o
}

// MarshalJSON writes Value.
func (s Step) MarshalJSON() ([]byte, error) { return marshal(s.Value()) }

// Value is the result as a JSON object: the published fields in the
// published order, then the additions. Built directly (not through
// encoding/json) so a lone surrogate in model text survives.
func (r *Result) Value() *pyjson.Object {
	cites := make([]any, len(r.Citations))
	for i, c := range r.Citations {
		cites[i] = pyjson.NewObject("source_id", c.SourceID, "quote", c.Quote, "url", c.URL)
	}
	decisions := make([]any, len(r.Decisions))
	for i, d := range r.Decisions {
		decisions[i] = d.Value()
	}
	obs := make([]any, len(r.Observations))
	for i, o := range r.Observations {
		obs[i] = o.Value()
	}
	steps := make([]any, len(r.Steps))
	for i, s := range r.Steps {
		steps[i] = s.Value()
	}
	o := pyjson.NewObject("status", string(r.Status), "reason", string(r.Reason), "answer", r.Answer,
		"citations", cites, "question", r.Question, "version", r.Version, "mode", string(r.Mode),
		"limits", r.Limits.Value(), "usage", r.Usage.Value(), "decisions", decisions, "observations", obs,
		"steps", steps, "tokens", tokensValue(r.Tokens))
	if r.Detail != "" {
		o.Set("detail", r.Detail)
	}
	return o
}

// MarshalJSON writes Value.
func (r *Result) MarshalJSON() ([]byte, error) { return marshal(r.Value()) }

func marshal(v *pyjson.Object) ([]byte, error) {
	return []byte(pyjson.Dumps(v, pyjson.Options{Strict: true})), nil
}
