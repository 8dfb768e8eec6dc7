// Package gemini frames agent prompts as generateContent requests and decodes
// the replies, byte-compatible with the reference lab's provider.py: the same
// body bytes, the same caps, the same refusals.
package gemini

import (
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Model is the model the reference lab pinned.
const Model = "gemini-3.8-flash"

// Endpoint is the generateContent URL for Model.
const Endpoint = "https://generativelanguage.googleapis.com/v1beta/models/" + Model + ":generateContent"

// Caps on what is sent and received, in bytes.
const (
	MaxRequestBytes  = 30000
	MaxResponseBytes = 262144
)

// Config is the generation config without the schema, in the reference
// insertion order. Each call returns a new value.
func Config() *pyjson.Object {
	return pyjson.NewObject("maxOutputTokens", MaxOutputTokens(), "temperature", 0,
		"thinkingConfig", pyjson.NewObject("thinkingLevel", "LOW"),
		"responseMimeType", "application/json")
}

// MaxOutputTokens is the generation config's output cap, which bounds what
// one reply can cost.
func MaxOutputTokens() int { return 1024 }

// Payload is the request body for a prompt: payload(messages, schema).
func Payload(p model.Prompt) *pyjson.Object {
	config := Config().Set("responseJsonSchema", p.Schema)
	return pyjson.NewObject(
		"systemInstruction", pyjson.NewObject("parts", []any{pyjson.NewObject("text", p.System)}),
		"contents", []any{pyjson.NewObject("role", "user", "parts", []any{pyjson.NewObject("text", p.State)})},
		"generationConfig", config)
}

// Body is the wire form of a payload, json.dumps(body): the bytes that are
// sent and that the input cap measures.
func Body(payload any) []byte {
	return []byte(pyjson.Dumps(payload, pyjson.Options{}))
}

// Decode turns a generateContent response into a decision value: exactly one
// candidate, finishReason STOP, the text of its non-thought parts joined and
// parsed as JSON. The reply's usageMetadata and modelVersion are returned
// even when the reply is refused.
//
// Where the reference decode would crash on a reply of the wrong shape (a
// response or candidate that is not an object, a part whose text is not a
// string, parts that cannot be iterated), this refuses the reply with
// unfinished_model_reply instead; where Python iterates harmlessly (an empty
// object or string for parts) it does too.
func Decode(response any) (model.Reply, error) {
	var reply model.Reply
	unfinished := func(format string, args ...any) (model.Reply, error) {
		return reply, reason.New(reason.UnfinishedModelReply, format, args...)
	}
	resp, ok := response.(*pyjson.Object)
	if !ok {
		return unfinished("the response is not an object")
	}
	if u, ok := resp.Get("usageMetadata"); ok {
		reply.Meta.UsageMetadata, _ = u.(*pyjson.Object)
	}
	if v, ok := resp.Get("modelVersion"); ok {
		reply.Meta.ModelVersion, _ = v.(string)
	}
	raw, present := resp.Get("candidates")
	var candidates []any
	if present {
		if candidates, ok = raw.([]any); !ok {
			return unfinished("candidates is not a list")
		}
	}
	if len(candidates) != 1 {
		return unfinished("%d candidates, want exactly 1", len(candidates))
	}
	cand, ok := candidates[0].(*pyjson.Object)
	if !ok {
		return unfinished("the candidate is not an object")
	}
	if fr, _ := cand.Get("finishReason"); fr != "STOP" {
		return unfinished("finishReason is %s, not STOP", pyjson.Dumps(fr, pyjson.Options{Unicode: true}))
	}
	parts, err := partsOf(cand)
	if err != nil {
		return unfinished("%s", err.Error())
	}
	var text []byte
	for i, p := range parts {
		part, ok := p.(*pyjson.Object)
		if !ok {
			return unfinished("part %d is not an object", i+1)
		}
		if thought, _ := part.Get("thought"); pyjson.Truthy(thought) {
			continue
		}
		t, present := part.Get("text")
		if !present {
			continue
		}
		s, ok := t.(string)
		if !ok {
			return unfinished("part %d text is not a string", i+1)
		}
		text = append(text, s...)
	}
	value, err := pyjson.Decode(string(text))
	if err != nil {
		return reply, reason.New(reason.InvalidModelJSON, "%s", err.Error())
	}
	reply.Value = value
	return reply, nil
}

type shapeError string

func (e shapeError) Error() string { return string(e) }

func partsOf(cand *pyjson.Object) ([]any, error) {
	content, present := cand.Get("content")
	if !present {
		return nil, nil
	}
	c, ok := content.(*pyjson.Object)
	if !ok {
		return nil, shapeError("content is not an object")
	}
	parts, present := c.Get("parts")
	if !present {
		return nil, nil
	}
	switch p := parts.(type) {
	case []any:
		return p, nil
	case *pyjson.Object:
		if p.Len() == 0 {
			return nil, nil
		}
	case string:
		if p == "" {
			return nil, nil
		}
	}
	return nil, shapeError("parts is not a list")
}
