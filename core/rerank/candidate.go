package rerank

import (
	"fmt"
	"math"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Candidate is one first-stage result: a chunk's identity and exact payload
// and, for a hybrid candidate, the evidence of both branches, in the
// reference record's key order. Rerankers carry it through unchanged; only
// its position moves.
type Candidate struct {
	ChunkID  string `json:"chunk_id"`
	SourceID string `json:"source_id"`
	Version  string `json:"version"`
	URL      string `json:"url"`
	Text     string `json:"text"`
	// Fusion is nil for a candidate from an exhaustive fixture pool, which
	// has no branch evidence (and whose record has none of its keys).
	*Fusion
}

// Fusion is a hybrid candidate's branch evidence: each branch's score and
// 1-based rank (null when the branch did not return the chunk), each
// branch's reciprocal-rank contribution, and their sum.
type Fusion struct {
	LexicalScore        *float64 `json:"lexical_score"`
	VectorScore         *float64 `json:"vector_score"`
	LexicalRank         *int     `json:"lexical_rank"`
	VectorRank          *int     `json:"vector_rank"`
	LexicalContribution *float64 `json:"lexical_contribution"`
	VectorContribution  *float64 `json:"vector_contribution"`
	FusedScore          *float64 `json:"fused_score"`
}

// rankKeys and scoreKeys are the optional numeric fields, in the order the
// reference validator checks them.
var (
	rankKeys  = [...]string{"lexical_rank", "vector_rank"}
	scoreKeys = [...]string{"lexical_score", "vector_score", "fused_score", "lexical_contribution", "vector_contribution"}
)

func (f *Fusion) rank(key string) **int {
	if key == "lexical_rank" {
		return &f.LexicalRank
	}
	return &f.VectorRank
}

func (f *Fusion) score(key string) **float64 {
	switch key {
	case "lexical_score":
		return &f.LexicalScore
	case "vector_score":
		return &f.VectorScore
	case "fused_score":
		return &f.FusedScore
	case "lexical_contribution":
		return &f.LexicalContribution
	}
	return &f.VectorContribution
}

func (c Candidate) candidate() Candidate { return c }

// Sources lists the source ids of candidates or reranked rows in order, the
// form in which orders are compared and shown.
func Sources[T interface{ candidate() Candidate }](rows []T) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.candidate().SourceID
	}
	return out
}

// rows turns typed candidates into the JSON rows the validator reads, so a
// Go caller and a JSON caller go through the same checks.
func rows(cands []Candidate) []any {
	return pyjson.ValueOf(cands).([]any)
}

// admit is the reference rerank()'s candidate checks after its k, query
// and snapshot checks: candidates must be a list; each row must name a
// known chunk id (unknown_candidate), once (duplicate_candidate), with the
// snapshot's exact source id, version, url and text
// (candidate_payload_mismatch), ranks that are whole numbers of at least 1
// (invalid_candidate_rank) and finite scores (invalid_candidate_score); the
// first row to fail names the reason. in is a []Candidate or a decoded
// JSON value.
func admit(in any, snap *Snapshot) ([]Candidate, error) {
	var list []any
	switch v := in.(type) {
	case []Candidate:
		list = rows(v)
	case []any:
		list = v
	default:
		return nil, reason.New(reason.InvalidCandidates, "candidates must be a list, got %s", typeName(in))
	}
	seen := map[string]bool{}
	out := make([]Candidate, 0, len(list))
	for i, raw := range list {
		c, err := admitRow(raw, i+1, snap, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func admitRow(raw any, n int, snap *Snapshot, seen map[string]bool) (Candidate, error) {
	row, _ := raw.(*pyjson.Object)
	id, _ := get(row, "chunk_id").(string)
	known, ok := snap.Passage(id)
	if row == nil || id == "" || !ok {
		return Candidate{}, reason.New(reason.UnknownCandidate, "candidate %d: chunk_id %s is not a chunk of snapshot %s", n, excerpt(get(row, "chunk_id")), snap.SnapshotID)
	}
	if seen[id] {
		return Candidate{}, reason.New(reason.DuplicateCandidate, "candidate %d: chunk %s (%s) is already a candidate", n, id, known.SourceID)
	}
	seen[id] = true
	for _, kv := range [...][2]string{{"source_id", known.SourceID}, {"version", known.Version}, {"url", known.URL}, {"text", known.Text}} {
		if s, isStr := get(row, kv[0]).(string); !isStr || s != kv[1] {
			return Candidate{}, reason.New(reason.CandidatePayloadMismatch, "candidate %d (%s): %s is %s, the snapshot has %s", n, known.SourceID, kv[0], excerpt(get(row, kv[0])), excerpt(kv[1]))
		}
	}
	c := known.Candidate()
	var f Fusion
	present := false
	for _, key := range rankKeys {
		v, has := row.Get(key)
		present = present || has
		if v == nil {
			continue
		}
		r, ok := wholeAtLeastOne(v)
		if !ok {
			return Candidate{}, reason.New(reason.InvalidCandidateRank, "candidate %d (%s): %s is %s, not a whole number of at least 1", n, known.SourceID, key, excerpt(v))
		}
		*f.rank(key) = &r
	}
	for _, key := range scoreKeys {
		v, has := row.Get(key)
		present = present || has
		if v == nil {
			continue
		}
		x, ok := finite(v)
		if !ok {
			return Candidate{}, reason.New(reason.InvalidCandidateScore, "candidate %d (%s): %s is %s, not a finite number", n, known.SourceID, key, excerpt(v))
		}
		*f.score(key) = &x
	}
	if present {
		c.Fusion = &f
	}
	return c, nil
}

// wholeAtLeastOne is Python's `type(v) is int and v >= 1`: booleans and
// floats are refused. An integer too large for an int is refused too (the
// reference would accept it; no rank reaches 2^63).
func wholeAtLeastOne(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, n >= 1
	case pyjson.Number:
		i, ok := n.Int()
		return i, ok && i >= 1
	}
	return 0, false
}

// finite is Python's `type(v) in (int, float) and math.isfinite(v)`, with
// an integer too large for a float refused as the reference's OverflowError
// path refuses it. Booleans are not numbers here.
func finite(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case int:
		x = float64(n)
	case float64:
		x = n
	case pyjson.Number:
		x = n.Float64()
	default:
		return 0, false
	}
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

func get(o *pyjson.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case pyjson.Number, int, float64:
		return "a number"
	case *pyjson.Object:
		return "an object"
	case []any:
		return "a list"
	}
	return "a value of another type"
}

// excerpt is a short JSON rendering of a value for a refusal's detail.
func excerpt(v any) (s string) {
	defer func() {
		if recover() != nil { // a Go value outside pyjson's set: name its type rather than fail
			s = fmt.Sprintf("a %T", v)
		}
	}()
	s = pyjson.Dumps(v, pyjson.Options{Unicode: true})
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
