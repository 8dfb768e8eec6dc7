package geminitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// ScriptFormat is the format tag of a script file.
const ScriptFormat = "ragagent-fake/1"

// ScriptFile is a script file: replies handed out in order, then what
// answers once they are used up.
//
//	{"format": "ragagent-fake/1",
//	 "replies": [
//	   {"decision": {"action": "stop", "assessment": "...", "query": "", "source_id": "", "answer": "", "citations": []}},
//	   {"text": "not json"},
//	   {"text": "{...}", "finish_reason": "MAX_TOKENS"},
//	   {"text": "{...}", "candidates": 2},
//	   {"text": "{...}", "thought": "thinking..."},
//	   {"status": 429},
//	   {"redirect": "http://127.0.0.1:9/elsewhere"},
//	   {"oversized": true},
//	   {"status": 200, "body": "raw bytes"},
//	   {"decision": {...}, "delay_ms": 60000},
//	   {"decision": {"ranked_ids": ["c1", "c2"]}},
//	   {"ranking": "reversed"}
//	 ],
//	 "then": "policy"}
//
// A decision may be any JSON value (a listwise reply is {"ranked_ids":
// [...]}); ranking answers a listwise rerank request with its own
// candidates ranked by a rule (coverage, incoming or reversed; see
// Ranking). then is "policy" (answer as Policy does) or "exhausted" (HTTP
// 500 for every further request, the default).
type ScriptFile struct {
	Format  string        `json:"format"`
	Replies []ScriptReply `json:"replies"`
	Then    string        `json:"then"`
}

// ScriptReply is one scripted reply; exactly one of Decision, Text,
// Status (alone), Redirect, Oversized, Body or Ranking chooses its kind.
type ScriptReply struct {
	Decision     json.RawMessage `json:"decision,omitempty"`
	Text         *string         `json:"text,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Candidates   int             `json:"candidates,omitempty"`
	Thought      string          `json:"thought,omitempty"`
	Status       int             `json:"status,omitempty"`
	Body         *string         `json:"body,omitempty"`
	Redirect     string          `json:"redirect,omitempty"`
	Oversized    bool            `json:"oversized,omitempty"`
	Ranking      string          `json:"ranking,omitempty"`
	DelayMS      int             `json:"delay_ms,omitempty"`
}

// ParseScript reads a script file into a responder.
func ParseScript(data []byte) (Responder, error) {
	var f ScriptFile
	if err := jsonfile.Decode(data, &f); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if f.Format != ScriptFormat {
		return nil, fmt.Errorf("script: format is %q, want %q", f.Format, ScriptFormat)
	}
	var then Responder
	switch f.Then {
	case "", "exhausted":
	case "policy":
		then = Policy()
	default:
		return nil, fmt.Errorf("script: then is %q, want \"policy\" or \"exhausted\"", f.Then)
	}
	steps := make([]Responder, len(f.Replies))
	for i, r := range f.Replies {
		step, err := r.responder()
		if err != nil {
			return nil, fmt.Errorf("script: reply %d: %w", i+1, err)
		}
		steps[i] = step
	}
	return Steps(then, steps...), nil
}

// responder is the entry as a step of the script: a fixed reply, or a
// ranking of the request's candidates.
func (r ScriptReply) responder() (Responder, error) {
	if r.Ranking == "" {
		reply, err := r.reply()
		return constant(reply), err
	}
	if err := r.only(true); err != nil {
		return nil, err
	}
	if err := rankingRule(r.Ranking); err != nil {
		return nil, err
	}
	delay, rank := time.Duration(r.DelayMS)*time.Millisecond, Ranking(r.Ranking)
	return ResponderFunc(func(req Request) Reply { return Slow(delay, rank.Reply(req)) }), nil
}

// only checks that exactly one kind is set (extra, the ranking, counts as
// one) and that the numbers are in range.
func (r ScriptReply) only(extra bool) error {
	kinds := 0
	for _, set := range []bool{r.Decision != nil, r.Text != nil, r.Body != nil, r.Redirect != "", r.Oversized, extra} {
		if set {
			kinds++
		}
	}
	if kinds == 0 && r.Status != 0 {
		kinds = 1
	}
	if kinds != 1 {
		return fmt.Errorf("needs exactly one of decision, text, status, body, redirect, oversized, ranking")
	}
	if r.DelayMS < 0 || r.Candidates < 0 || r.Candidates > 8 {
		return fmt.Errorf("delay_ms must not be negative and candidates must be 0 to 8")
	}
	return nil
}

func (r ScriptReply) reply() (Reply, error) {
	if err := r.only(false); err != nil {
		return Reply{}, err
	}
	var out Reply
	switch {
	case r.Decision != nil:
		v, err := pyjson.Decode(string(r.Decision))
		if err != nil {
			return Reply{}, fmt.Errorf("decision: %w", err)
		}
		out = r.candidates(pyjson.Dumps(v, pyjson.Options{}))
	case r.Text != nil:
		out = r.candidates(*r.Text)
	case r.Body != nil:
		status := r.Status
		if status == 0 {
			status = http.StatusOK
		}
		out = Raw(status, *r.Body)
	case r.Redirect != "":
		out = Redirect(r.Redirect)
	case r.Oversized:
		out = Oversized()
	default:
		out = Status(r.Status)
	}
	return Slow(time.Duration(r.DelayMS)*time.Millisecond, out), nil
}

// candidates builds a generation reply of text with the entry's finish
// reason, candidate count and thought part.
func (r ScriptReply) candidates(text string) Reply {
	finish := r.FinishReason
	if finish == "" {
		finish = "STOP"
	}
	parts := []any{part(text)}
	if r.Thought != "" {
		parts = append([]any{pyjson.NewObject("text", r.Thought, "thought", true)}, parts...)
	}
	n := max(r.Candidates, 1)
	cands := make([]any, n)
	for i := range cands {
		cands[i] = candidate(finish, parts...)
	}
	return Candidates(cands...)
}
