package gemini

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

const stopText = `{\"action\": \"stop\", \"assessment\": \"a\", \"query\": \"\", \"source_id\": \"\", \"answer\": \"\", \"citations\": []}`

// TestDecode has one row per rule of the reference decode(), plus the reply
// shapes on which the reference would crash and we refuse instead.
func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name     string
		response string
		want     reason.Code // "" means a decision value comes back
	}{
		{"one finished candidate", `{"candidates": [{"content": {"parts": [{"text": "` + stopText + `"}]}, "finishReason": "STOP"}]}`, ""},
		{"thought parts skipped, others joined", `{"candidates": [{"content": {"parts": [{"thought": true, "text": "not json"}, {"text": "{\"action\": \"stop\", "}, {"text": "\"assessment\": \"a\", \"query\": \"\", \"source_id\": \"\", \"answer\": \"\", \"citations\": []}"}]}, "finishReason": "STOP"}]}`, ""},
		{"a part without text adds nothing", `{"candidates": [{"content": {"parts": [{"inlineData": {}}, {"text": "` + stopText + `"}]}, "finishReason": "STOP"}]}`, ""},
		{"no candidates key", `{"promptFeedback": {"blockReason": "SAFETY"}}`, reason.UnfinishedModelReply},
		{"two candidates", `{"candidates": [{"finishReason": "STOP"}, {"finishReason": "STOP"}]}`, reason.UnfinishedModelReply},
		{"MAX_TOKENS", `{"candidates": [{"content": {"parts": [{"text": "{"}]}, "finishReason": "MAX_TOKENS"}]}`, reason.UnfinishedModelReply},
		{"SAFETY", `{"candidates": [{"finishReason": "SAFETY"}]}`, reason.UnfinishedModelReply},
		{"finishReason missing", `{"candidates": [{"content": {"parts": [{"text": "` + stopText + `"}]}}]}`, reason.UnfinishedModelReply},
		{"no content is empty text", `{"candidates": [{"finishReason": "STOP"}]}`, reason.InvalidModelJSON},
		{"empty parts object is empty text", `{"candidates": [{"content": {"parts": {}}, "finishReason": "STOP"}]}`, reason.InvalidModelJSON},
		{"prose around JSON", `{"candidates": [{"content": {"parts": [{"text": "Here: {}"}]}, "finishReason": "STOP"}]}`, reason.InvalidModelJSON},
		{"only thoughts", `{"candidates": [{"content": {"parts": [{"thought": true, "text": "{}"}]}, "finishReason": "STOP"}]}`, reason.InvalidModelJSON},
		// where the reference decode() would raise AttributeError or TypeError
		{"response not an object", `[]`, reason.UnfinishedModelReply},
		{"candidates not a list", `{"candidates": "S"}`, reason.UnfinishedModelReply},
		{"candidate not an object", `{"candidates": ["STOP"]}`, reason.UnfinishedModelReply},
		{"content not an object", `{"candidates": [{"content": [], "finishReason": "STOP"}]}`, reason.UnfinishedModelReply},
		{"parts a non-empty string", `{"candidates": [{"content": {"parts": "x"}, "finishReason": "STOP"}]}`, reason.UnfinishedModelReply},
		{"part not an object", `{"candidates": [{"content": {"parts": ["x"]}, "finishReason": "STOP"}]}`, reason.UnfinishedModelReply},
		{"text not a string", `{"candidates": [{"content": {"parts": [{"text": 1}]}, "finishReason": "STOP"}]}`, reason.UnfinishedModelReply},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := pyjson.Decode(c.response)
			require.NoError(t, err)
			reply, err := Decode(v)
			if c.want == "" {
				require.NoError(t, err)
				_, err := agent.ValidateDecision(reply.Value)
				assert.NoError(t, err)
				return
			}
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.want, code)
		})
	}
}

func TestDecodeKeepsUsageAndModelVersion(t *testing.T) {
	v, err := pyjson.Decode(`{"candidates": [{"finishReason": "MAX_TOKENS"}], "usageMetadata": {"promptTokenCount": 471, "candidatesTokenCount": 72, "thoughtsTokenCount": 41, "totalTokenCount": 584}, "modelVersion": "gemini-3.8-flash-001"}`)
	require.NoError(t, err)
	reply, err := Decode(v)
	require.Error(t, err, "a refused reply still reports what it cost")
	assert.Equal(t, "gemini-3.8-flash-001", reply.Meta.ModelVersion)
	assert.Equal(t, &model.Tokens{Prompt: 471, Candidates: 72, Thoughts: 41, Total: 584}, reply.Meta.Tokens())
}

func TestPayloadIsTheReferenceBody(t *testing.T) {
	p := model.Prompt{System: "sys", State: `{"question": "<\u00e9>"}`, Schema: pyjson.NewObject("type", "object")}
	body := string(Body(Payload(p)))
	assert.Equal(t, `{"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [{"role": "user", "parts": [{"text": "{\"question\": \"<\\u00e9>\"}"}]}], "generationConfig": {"maxOutputTokens": 1024, "temperature": 0, "thinkingConfig": {"thinkingLevel": "LOW"}, "responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}}}`, body)
}

// FuzzDecode: any response text that parses yields a decision value or a
// coded refusal, never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"candidates": [{"content": {"parts": [{"text": "{}"}]}, "finishReason": "STOP"}]}`,
		`{"candidates": [{"content": {"parts": [{"thought": 1, "text": 2}]}, "finishReason": "STOP"}]}`,
		`{"candidates": [{"content": {"parts": ""}, "finishReason": "STOP"}], "usageMetadata": []}`,
		`{"candidates": {}, "modelVersion": 5}`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := pyjson.Decode(text)
		if err != nil {
			return
		}
		reply, err := Decode(v)
		if err != nil {
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			require.True(t, code == reason.UnfinishedModelReply || code == reason.InvalidModelJSON, code)
			return
		}
		_, err = agent.ValidateDecision(reply.Value)
		if err != nil {
			_, ok := reason.Of(err)
			require.True(t, ok)
		}
	})
}
