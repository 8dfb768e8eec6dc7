package geminitest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// listwiseBody is the body a live listwise rerank sends (rerank.Prompt
// through the agent's payload), for candidates given as id/text pairs.
func listwiseBody(question string, pairs ...string) string {
	var cands []rerank.Candidate
	for i := 0; i+1 < len(pairs); i += 2 {
		cands = append(cands, rerank.Candidate{ChunkID: pairs[i], Text: pairs[i+1]})
	}
	return string(gemini.Body(gemini.Payload(rerank.Prompt(question, cands))))
}

// rankedIDs posts body to a fake answering with r and reads the reply's
// ranked_ids.
func rankedIDs(t *testing.T, r Responder, body string) (int, []any) {
	t.Helper()
	s := NewServer(r)
	defer s.Close()
	resp, raw := post(t, s.Endpoint(), map[string]string{"Content-Type": "application/json", "X-Goog-Api-Key": key}, body)
	if resp.StatusCode != 200 {
		return resp.StatusCode, nil
	}
	reply, err := gemini.Decode(mustDecode(t, raw))
	require.NoError(t, err, "the reply decodes as the live model decodes it")
	ids, _ := field(asObject(reply.Value), "ranked_ids").([]any)
	return resp.StatusCode, ids
}

func mustDecode(t *testing.T, raw string) any {
	t.Helper()
	v, err := pyjson.Decode(raw)
	require.NoError(t, err)
	return v
}

func TestRankingRules(t *testing.T) {
	body := listwiseBody("How do I select UTF-8 when writing text?",
		"read", "read_text opens a file and returns its text",
		"json", "json.dumps returns a string",
		"write", "write_text writes text; set encoding to select UTF-8")
	for _, c := range []struct {
		rule string
		want []any
	}{
		// write has text, select, utf and 8 of the question; read has text; json none
		{RankByCoverage, []any{"write", "read", "json"}},
		{RankIncoming, []any{"read", "json", "write"}},
		{RankReversed, []any{"write", "json", "read"}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			status, ids := rankedIDs(t, Ranking(c.rule), body)
			require.Equal(t, 200, status)
			assert.Equal(t, c.want, ids)
		})
	}
}

func TestRankingTiesKeepTheIncomingOrder(t *testing.T) {
	body := listwiseBody("alpha beta", "x", "nothing here", "y", "alpha", "z", "beta", "w", "none either")
	_, ids := rankedIDs(t, Ranking(RankByCoverage), body)
	assert.Equal(t, []any{"y", "z", "x", "w"}, ids)
}

func TestRankingRefusals(t *testing.T) {
	for _, c := range []struct {
		name, rule, body string
		status           int
	}{
		{"not listwise", RankByCoverage, `{"contents": [{"parts": [{"text": "{\"question\": \"q\"}"}]}]}`, 400},
		{"not JSON text", RankByCoverage, `{"contents": [{"parts": [{"text": "rank these"}]}]}`, 400},
		{"a candidate without text", RankIncoming, `{"contents": [{"parts": [{"text": "{\"question\": \"q\", \"candidates\": [{\"chunk_id\": \"a\"}]}"}]}]}`, 400},
		{"unknown rule", "best", listwiseBody("q", "a", "b"), 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _ := rankedIDs(t, Ranking(c.rule), c.body)
			assert.Equal(t, c.status, status)
		})
	}
}

// TestPolicyRanksListwiseRequests: the default fake (cmd/fakegemini with no
// script) answers a listwise request with a permutation of its candidates
// and an agent request with a decision.
func TestPolicyRanksListwiseRequests(t *testing.T) {
	body := listwiseBody("Will write_text replace an existing file?",
		"r", "read_text returns the text", "w", "write_text: an existing file is overwritten")
	status, ids := rankedIDs(t, Policy(), body)
	require.Equal(t, 200, status)
	assert.Equal(t, []any{"w", "r"}, ids)
}
