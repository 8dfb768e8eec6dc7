package rerank

import (
	"errors"
	"sort"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/store"
)

// MaxQueryChars caps a query in code points (Python len), as the agent caps
// a question: a query is refused before any division, never truncated.
const MaxQueryChars = 512

// errNoSnapshot is a programming error: every entry point needs the
// snapshot it checks candidates against.
var errNoSnapshot = errors.New("rerank: no snapshot to check candidates against")

// QueryTokens are a query's distinct lower-case ASCII alphanumeric tokens
// in first-seen order, the same terms the lexical branch searches for. An
// oversized query, or one with no token (whose coverage would divide by
// zero), is refused with invalid_query.
func QueryTokens(query string) ([]string, error) {
	if n := pyjson.Len(query); n > MaxQueryChars {
		return nil, reason.New(reason.InvalidQuery, "the query has %d characters; the limit is %d", n, MaxQueryChars)
	}
	tokens := store.Terms(query)
	if len(tokens) == 0 {
		return nil, reason.New(reason.InvalidQuery, "the query has no lower-case ASCII letter or digit to match")
	}
	return tokens, nil
}

// kOf reads a decoded JSON k as the reference does: a whole number (not a
// boolean, not a float) of at least 1, else invalid_k.
func kOf(v any) (int, error) {
	if k, ok := wholeAtLeastOne(v); ok {
		return k, nil
	}
	return 0, reason.New(reason.InvalidK, "k is %s, not a whole number of at least 1", excerpt(v))
}

// Features are what the coverage score was computed from, kept beside it so
// an ordering can be checked by hand.
type Features struct {
	QueryTokens     []string `json:"query_tokens"`
	MatchedTokens   []string `json:"matched_tokens"`
	MatchedCount    int      `json:"matched_count"`
	QueryTokenCount int      `json:"query_token_count"`
}

// Covered is a candidate after coverage scoring.
type Covered struct {
	Candidate
	IncomingRank  int      `json:"incoming_rank"`
	Features      Features `json:"rerank_features"`
	CoverageScore float64  `json:"coverage_score"`
	RerankRank    int      `json:"rerank_rank"`
}

// Coverage is the reference rerank(): it scores each supplied candidate by
// the share of distinct query tokens found among its exact text's tokens,
// sorts by descending coverage keeping the incoming order for ties, and
// returns the first k. It searches nothing, so a passage missing from the
// input stays missing. Checks run in the reference order: invalid_k, the
// query, the snapshot, then the candidates (see admit), which are
// validated exactly as JSON rows would be.
func Coverage(query string, cands []Candidate, snap *Snapshot, k int) ([]Covered, error) {
	return coverage(query, rows(cands), snap, k)
}

// CoverageJSON is Coverage over decoded JSON, as a request carries it: k
// must be a whole number of at least 1 (not a boolean, not a float) and
// rows a list of candidate objects, with every refusal the reference makes
// for malformed input, in its order.
func CoverageJSON(query string, rows, k any, snap *Snapshot) ([]Covered, error) {
	n, err := kOf(k)
	if err != nil {
		return nil, err
	}
	return coverage(query, rows, snap, n)
}

func coverage(query string, rows any, snap *Snapshot, k int) ([]Covered, error) {
	if k < 1 {
		return nil, reason.New(reason.InvalidK, "k is %d, not a whole number of at least 1", k)
	}
	tokens, cands, err := check(query, rows, snap)
	if err != nil {
		return nil, err
	}
	ranked := make([]Covered, len(cands))
	for i, c := range cands {
		f, score := Cover(tokens, c.Text)
		ranked[i] = Covered{Candidate: c, IncomingRank: i + 1, Features: f, CoverageScore: score}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].CoverageScore > ranked[j].CoverageScore })
	ranked = ranked[:min(k, len(ranked))]
	for i := range ranked {
		ranked[i].RerankRank = i + 1
	}
	return ranked, nil
}

// Cover is the coverage score of one text: the share of the distinct query
// tokens found among the text's tokens, with the features it came from.
func Cover(tokens []string, text string) (Features, float64) {
	passage := map[string]bool{}
	for _, t := range store.Terms(text) {
		passage[t] = true
	}
	matched := []string{}
	for _, t := range tokens {
		if passage[t] {
			matched = append(matched, t)
		}
	}
	sort.Strings(matched)
	return Features{QueryTokens: append([]string(nil), tokens...), MatchedTokens: matched, MatchedCount: len(matched),
		QueryTokenCount: len(tokens)}, float64(len(matched)) / float64(len(tokens))
}

// check is the reference rerank()'s checks after k: the query, the
// snapshot, then every candidate in order. It returns the query tokens and
// the admitted candidates in their incoming order.
func check(query string, rows any, snap *Snapshot) ([]string, []Candidate, error) {
	tokens, err := QueryTokens(query)
	if err != nil {
		return nil, nil, err
	}
	if snap == nil {
		return nil, nil, errNoSnapshot
	}
	cands, err := admit(rows, snap)
	if err != nil {
		return nil, nil, err
	}
	return tokens, cands, nil
}
