// Package model says what one exchange with a language model is: the prompt
// the controller builds, the reply it gets back and what the provider said
// about the call. It sits below the controller so that the providers (the
// live Gemini client, a replayed recording, the scripted policy, the
// listwise reranker) depend on these few types and not on the controller.
package model

import (
	"context"
	"time"

	"github.com/ragagentlab/ragagent/core/pyjson"
)

// Prompt is one model request before any provider framing: the system
// instruction, the user state text and the decision schema.
type Prompt struct {
	System string
	State  string
	Schema *pyjson.Object
}

// Reply is a model's decoded decision value (not yet validated) and what the
// provider said about the call.
type Reply struct {
	Value any
	Meta  Meta
}

// Meta is a model call's accounting, kept with the step it produced.
type Meta struct {
	UsageMetadata *pyjson.Object // the provider's usageMetadata, as sent
	ModelVersion  string
}

// Tokens reads the counts from the usageMetadata; nil when the reply
// carried none (a request that failed before a reply is not priced).
func (m Meta) Tokens() *Tokens {
	if m.UsageMetadata == nil {
		return nil
	}
	n := func(k string) int {
		v, _ := m.UsageMetadata.Get(k)
		num, _ := v.(pyjson.Number)
		i, _ := num.Int()
		return i
	}
	return &Tokens{Prompt: n("promptTokenCount"), Candidates: n("candidatesTokenCount"),
		Thoughts: n("thoughtsTokenCount"), Total: n("totalTokenCount")}
}

// Tokens is one model call's token accounting, from its usageMetadata.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Candidates int `json:"candidates"`
	Thoughts   int `json:"thoughts"`
	Total      int `json:"total"`
}

// Add sums token counts.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{t.Prompt + o.Prompt, t.Candidates + o.Candidates, t.Thoughts + o.Thoughts, t.Total + o.Total}
}

// Model proposes the next decision. An error that carries a reason.Code ends
// the run as failed with that code; Reply.Meta may be set with an error (a
// reply that was paid for but refused).
type Model interface {
	Decide(ctx context.Context, p Prompt, timeout time.Duration) (Reply, error)
}
