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

// Arguments are an action's arguments: a query for search, a source_id for
// read. Only the one that is set is written.
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

// MarshalJSON lets encoding/json (the WASM bridge's step reports) write
// the observation as pyjson does, so a lone surrogate in model text survives.
func (o Observation) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(o) }

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

// MarshalJSON lets encoding/json (the WASM bridge's step reports) write
// the step as pyjson does.
func (s Step) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(s) }

// Result is a finished run. The fields up to Observations have exactly the
// reference lab's shape, in its key order; Steps, Tokens and Detail are
// additions.
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

// MarshalJSON lets encoding/json (the lab's reports, the CLI's --json, the
// WASM bridge) write the result as pyjson does, so a lone surrogate in
// model text survives.
func (r *Result) MarshalJSON() ([]byte, error) { return pyjson.MarshalJSON(r) }
