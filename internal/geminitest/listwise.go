package geminitest

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/store"
)

// Rules the fake can rank a listwise request's candidates by. Coverage
// makes the fake a plausible, deterministic reranker (so a page or a
// command can be tried end to end without a key); the other two give
// orders a test can tell apart from it.
const (
	RankByCoverage = "coverage" // share of the question's tokens in each text, incoming order for ties
	RankIncoming   = "incoming" // the candidates as they came
	RankReversed   = "reversed" // the candidates last first
)

// RankingRules lists the rules Ranking accepts.
func RankingRules() []string { return []string{RankByCoverage, RankIncoming, RankReversed} }

// Ranking answers a listwise rerank request (rerank.Prompt: the question
// and each candidate's chunk_id and text as JSON in the user text) with
// {"ranked_ids": [...]}, every candidate id once, in the rule's order. A
// request that carries no candidate list gets HTTP 400, as a malformed
// request would from the real API.
func Ranking(rule string) Responder {
	return ResponderFunc(func(r Request) Reply {
		if err := rankingRule(rule); err != nil {
			return apiError(http.StatusInternalServerError, "INTERNAL", "the fake's "+err.Error())
		}
		question, cands, ok := listwiseInput(r)
		if !ok {
			return apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "the fake ranks only listwise requests: a JSON user text with a question and candidates [{chunk_id, text}]")
		}
		order := make([]int, len(cands))
		for i := range order {
			order[i] = i
		}
		switch rule {
		case RankReversed:
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		case RankByCoverage:
			matched := make([]int, len(cands))
			for i, c := range cands {
				matched[i] = overlap(question, c.text)
			}
			sort.SliceStable(order, func(a, b int) bool { return matched[order[a]] > matched[order[b]] })
		}
		ids := make([]any, len(order))
		for i, k := range order {
			ids[i] = cands[k].id
		}
		text := pyjson.Dumps(pyjson.NewObject("ranked_ids", ids), pyjson.Options{})
		return build(len(r.Body)/4, candidate("STOP", part(text)))
	})
}

// isListwise tells a listwise rerank request by its system instruction.
func isListwise(r Request) bool { return r.Prompt().System == rerank.System }

type listed struct{ id, text string }

// listwiseInput reads the question and candidates of a listwise request's
// user text.
func listwiseInput(r Request) (string, []listed, bool) {
	v, err := pyjson.Decode(r.Prompt().State)
	if err != nil {
		return "", nil, false
	}
	o := asObject(v)
	question, ok1 := field(o, "question").(string)
	list, ok2 := field(o, "candidates").([]any)
	if !ok1 || !ok2 {
		return "", nil, false
	}
	out := make([]listed, len(list))
	for i, c := range list {
		id, ok1 := field(asObject(c), "chunk_id").(string)
		text, ok2 := field(asObject(c), "text").(string)
		if !ok1 || !ok2 {
			return "", nil, false
		}
		out[i] = listed{id, text}
	}
	return question, out, true
}

// overlap counts the question's distinct tokens found in text.
func overlap(question, text string) int {
	in := map[string]bool{}
	for _, t := range store.Terms(text) {
		in[t] = true
	}
	n := 0
	for _, t := range store.Terms(question) {
		if in[t] {
			n++
		}
	}
	return n
}

// rankingRule checks a script's ranking rule.
func rankingRule(rule string) error {
	for _, r := range RankingRules() {
		if r == rule {
			return nil
		}
	}
	return fmt.Errorf("ranking is %q, want one of %v", rule, RankingRules())
}
