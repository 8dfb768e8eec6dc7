package geminitest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

const key = "dummy-test-key-not-a-real-key"

func post(t *testing.T, url string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

// TestAPIChecks: what the real API refuses before generating never reaches
// the responder. One row per check, in the fake's order.
func TestAPIChecks(t *testing.T) {
	good := map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}
	rows := []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   string
		status int
	}{
		{"GET", http.MethodGet, "/v1beta/models/m:generateContent", good, "", 405},
		{"another method of the API", http.MethodPost, "/v1beta/models/m:countTokens", good, "{}", 404},
		{"no key", http.MethodPost, "/v1beta/models/m:generateContent", map[string]string{"Content-Type": "application/json"}, "{}", 403},
		{"not JSON content", http.MethodPost, "/v1beta/models/m:generateContent", map[string]string{"X-Goog-Api-Key": key, "Content-Type": "text/plain"}, "{}", 400},
		{"body not a JSON object", http.MethodPost, "/v1beta/models/m:generateContent", good, "[1]", 400},
		{"accepted", http.MethodPost, "/v1beta/models/m:generateContent", good, "{}", 200},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			s := NewServer(Sequence(nil, Text("{}")))
			defer s.Close()
			req, err := http.NewRequest(row.method, s.URL()+row.path, strings.NewReader(row.body))
			require.NoError(t, err)
			for k, v := range row.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, row.status, resp.StatusCode)
			assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
			assert.Len(t, s.Requests(), 1)
			assert.Equal(t, row.status == 200, len(s.Generations()) == 1)
		})
	}
}

// TestPreflight: a browser may send only Content-Type and x-goog-api-key.
func TestPreflight(t *testing.T) {
	rows := []struct {
		headers string
		method  string
		allowed bool
	}{
		{"content-type, x-goog-api-key", "POST", true},
		{"X-Goog-Api-Key", "POST", true},
		{"", "POST", true},
		{"content-type, x-goog-api-key, x-goog-api-client", "POST", false},
		{"authorization", "POST", false},
		{"content-type", "PUT", false},
	}
	s := NewServer(Sequence(nil))
	defer s.Close()
	for _, row := range rows {
		req, err := http.NewRequest(http.MethodOptions, s.Endpoint(), nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://127.0.0.1:8000")
		req.Header.Set("Access-Control-Request-Method", row.method)
		if row.headers != "" {
			req.Header.Set("Access-Control-Request-Headers", row.headers)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if row.allowed {
			assert.Equal(t, http.StatusNoContent, resp.StatusCode, row.headers)
			assert.Equal(t, "content-type, x-goog-api-key", resp.Header.Get("Access-Control-Allow-Headers"))
			assert.Equal(t, "POST", resp.Header.Get("Access-Control-Allow-Methods"))
			assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
		} else {
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, row.headers)
			assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), row.headers)
		}
	}
	assert.Empty(t, s.Generations())
}

// TestReplies: each reply builder produces the wire shape its name says.
func TestReplies(t *testing.T) {
	decision := `{"action": "stop"}`
	rows := []struct {
		name   string
		reply  Reply
		status int
		check  func(t *testing.T, body *pyjson.Object, raw string)
	}{
		{"text", Text(decision), 200, func(t *testing.T, b *pyjson.Object, _ string) {
			c := candidates(t, b)
			require.Len(t, c, 1)
			assert.Equal(t, "STOP", field(c[0], "finishReason"))
			assert.Equal(t, decision, partText(c[0], 0))
			assert.Equal(t, ModelVersion, field(b, "modelVersion"))
		}},
		{"finished", Finished("SAFETY", ""), 200, func(t *testing.T, b *pyjson.Object, _ string) {
			assert.Equal(t, "SAFETY", field(candidates(t, b)[0], "finishReason"))
		}},
		{"two candidates", TwoCandidates(decision), 200, func(t *testing.T, b *pyjson.Object, _ string) {
			assert.Len(t, candidates(t, b), 2)
		}},
		{"thought", WithThought("hmm", decision), 200, func(t *testing.T, b *pyjson.Object, _ string) {
			c := candidates(t, b)[0]
			parts := field(field(c, "content").(*pyjson.Object), "parts").([]any)
			require.Len(t, parts, 2)
			assert.Equal(t, true, field(parts[0].(*pyjson.Object), "thought"))
			assert.Equal(t, decision, partText(c, 1))
		}},
		{"429", Status(429), 429, func(t *testing.T, b *pyjson.Object, _ string) {
			assert.Equal(t, "RESOURCE_EXHAUSTED", field(field(b, "error").(*pyjson.Object), "status"))
		}},
		{"oversized", Oversized(), 200, func(t *testing.T, b *pyjson.Object, raw string) {
			assert.Equal(t, gemini.MaxResponseBytes+1, len(raw))
		}},
		{"raw", Raw(200, "not json"), 200, func(t *testing.T, b *pyjson.Object, raw string) {
			assert.Nil(t, b)
			assert.Equal(t, "not json", raw)
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			s := NewServer(Sequence(nil, row.reply))
			defer s.Close()
			resp, raw := post(t, s.Endpoint(), map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}, "{}")
			assert.Equal(t, row.status, resp.StatusCode)
			v, _ := pyjson.Decode(raw)
			b, _ := v.(*pyjson.Object)
			row.check(t, b, raw)
		})
	}
}

func TestRedirectAndExhaustion(t *testing.T) {
	s := NewServer(Sequence(nil, Redirect("/elsewhere:generateContent")))
	defer s.Close()
	h := map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}
	resp, _ := post(t, s.Endpoint(), h, "{}")
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Equal(t, "/elsewhere:generateContent", resp.Header.Get("Location"))
	resp, body := post(t, s.Endpoint(), h, "{}")
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, body, "exhausted")
}

// TestSlowReplyEndsWithItsClient: a slow reply does not hold the server
// once the client has given up.
func TestSlowReplyEndsWithItsClient(t *testing.T) {
	s := NewServer(Sequence(nil, Slow(time.Hour, Text("{}"))))
	client := &http.Client{Timeout: 20 * time.Millisecond}
	req, _ := http.NewRequest(http.MethodPost, s.Endpoint(), bytes.NewReader([]byte("{}")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Goog-Api-Key", key)
	_, err := client.Do(req)
	require.Error(t, err)
	s.Close() // returns: the handler saw its client go
}

func TestParseScript(t *testing.T) {
	script := `{"format": "ragagent-fake/1", "replies": [
		{"decision": {"action": "stop", "assessment": "x", "query": "", "source_id": "", "answer": "", "citations": []}},
		{"text": "{bad", "finish_reason": "MAX_TOKENS"},
		{"text": "{}", "candidates": 2, "thought": "t"},
		{"status": 503},
		{"redirect": "http://127.0.0.1:1/x"},
		{"oversized": true},
		{"status": 200, "body": "plain"},
		{"status": 429, "delay_ms": 1},
		{"ranking": "reversed", "delay_ms": 1}
	], "then": "exhausted"}`
	r, err := ParseScript([]byte(script))
	require.NoError(t, err)
	s := NewServer(r)
	defer s.Close()
	h := map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}
	var statuses []int
	for range 10 {
		resp, _ := post(t, s.Endpoint(), h, "{}")
		statuses = append(statuses, resp.StatusCode)
	}
	// The ranking step gets a body with no candidates: 400, as the real
	// API answers a malformed request.
	assert.Equal(t, []int{200, 200, 200, 503, 302, 200, 200, 429, 400, 500}, statuses)

	for _, bad := range []string{
		`{"format": "other", "replies": []}`,
		`{"format": "ragagent-fake/1", "replies": [{}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"text": "a", "oversized": true}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"decision": {bad}}]}`,
		`{"format": "ragagent-fake/1", "replies": [], "then": "forever"}`,
		`{"format": "ragagent-fake/1", "replies": [], "unknown": 1}`,
		`{"format": "ragagent-fake/1", "replies": [{"status": 429, "delay_ms": -1}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"text": "x", "candidates": 1000000000}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"ranking": "best"}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"ranking": "reversed", "text": "x"}]}`,
		`{"format": "ragagent-fake/1", "replies": [{"ranking": "reversed", "delay_ms": -5}]}`,
	} {
		_, err := ParseScript([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// TestPolicyResponder answers with the scripted policy's decision for the
// prompt the request carries.
func TestPolicyResponder(t *testing.T) {
	s := NewServer(Policy())
	defer s.Close()
	body := `{"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [{"role": "user", "parts": [{"text": "{\"question\": \"Does Path.write_text overwrite?\", \"version\": \"3.12\", \"observations\": [], \"usage\": {\"model_calls\": 0, \"searches\": 0, \"reads\": 0, \"source_bytes\": 0}, \"limits\": {\"model_calls\": 9, \"searches\": 3, \"reads\": 4, \"source_bytes\": 4096, \"seconds\": 180}}"}]}]}`
	resp, raw := post(t, s.Endpoint(), map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}, body)
	require.Equal(t, 200, resp.StatusCode)
	v, err := pyjson.Decode(raw)
	require.NoError(t, err)
	text := partText(candidates(t, v.(*pyjson.Object))[0], 0)
	assert.Contains(t, text, `"action": "search"`)
	assert.Contains(t, text, `"query": "path write text overwrite"`)
}

func candidates(t *testing.T, b *pyjson.Object) []*pyjson.Object {
	t.Helper()
	list, ok := field(b, "candidates").([]any)
	require.True(t, ok)
	out := make([]*pyjson.Object, len(list))
	for i, c := range list {
		out[i] = c.(*pyjson.Object)
	}
	return out
}

func partText(c *pyjson.Object, i int) string {
	parts := field(field(c, "content").(*pyjson.Object), "parts").([]any)
	s, _ := field(parts[i].(*pyjson.Object), "text").(string)
	return s
}

// FuzzParseScript: a script file is refused or read, never a panic.
func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"format": "ragagent-fake/1", "replies": [{"status": 429}, {"text": "x", "candidates": 3}], "then": "policy"}`))
	f.Add([]byte(`{"format": "ragagent-fake/1", "replies": [{"decision": [1, {"a": NaN}]}]}`))
	f.Add([]byte(`{"format": "ragagent-fake/1", "replies": [{"ranking": "coverage", "delay_ms": 5}, {"decision": {"ranked_ids": ["a"]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseScript(data)
		if err == nil {
			assert.NotNil(t, r)
		}
	})
}
