package rerank

import (
	"context"
	"sort"

	"github.com/ragagentlab/ragagent/core/reason"
)

// Scorer scores (question, passage) pairs jointly, one raw relevance logit
// per candidate in candidate order: a local cross-encoder, or a recording of
// one. Its output is not trusted; AcceptScores checks it.
type Scorer interface {
	Scores(ctx context.Context, question string, cands []Candidate) (Scores, error)
}

// Scores is one scorer call's output as it came: Logits is a []float64 or a
// decoded JSON value (so a malformed recording is refused by the same
// contract as a malformed model), Seconds the inference time it reported.
type Scores struct {
	Logits  any
	Seconds float64
}

// Scored is a candidate ordered by its cross-encoder logit.
type Scored struct {
	Candidate
	IncomingRank      int     `json:"incoming_rank"`
	CrossEncoderLogit float64 `json:"cross_encoder_logit"`
	CrossEncoderRank  int     `json:"cross_encoder_rank"`
}

// AcceptScores is the reference accept_scores(): the candidates go through
// the full coverage validator, then there must be exactly one finite number
// per candidate (invalid_cross_encoder_scores); candidates are sorted by
// descending logit, the incoming rank breaking ties. A logit is not a
// probability and cannot add a candidate retrieval missed. scores is a
// []float64 or a decoded JSON value.
//
// Where the reference would crash (scores that are not a sequence, an
// integer too large for a float), this refuses with the same code.
func AcceptScores(query string, cands []Candidate, snap *Snapshot, scores any) ([]Scored, error) {
	return acceptScores(query, rows(cands), snap, scores)
}

// AcceptScoresJSON is AcceptScores over decoded JSON candidate rows, with
// every refusal the reference makes for malformed input.
func AcceptScoresJSON(query string, rows any, snap *Snapshot, scores any) ([]Scored, error) {
	return acceptScores(query, rows, snap, scores)
}

func acceptScores(query string, rows any, snap *Snapshot, scores any) ([]Scored, error) {
	_, cands, err := check(query, rows, snap)
	if err != nil {
		return nil, err
	}
	var list []any
	switch v := scores.(type) {
	case []float64:
		list = make([]any, len(v))
		for i, x := range v {
			list[i] = x
		}
	case []any:
		list = v
	default:
		return nil, reason.New(reason.InvalidCrossEncoderScores, "scores must be a list, got %s", typeName(scores))
	}
	if len(list) != len(cands) {
		return nil, reason.New(reason.InvalidCrossEncoderScores, "%d scores for %d candidates", len(list), len(cands))
	}
	ranked := make([]Scored, len(cands))
	for i, v := range list {
		x, ok := finite(v)
		if !ok {
			return nil, reason.New(reason.InvalidCrossEncoderScores, "score %d is %s, not a finite number", i+1, excerpt(v))
		}
		ranked[i] = Scored{Candidate: cands[i], IncomingRank: i + 1, CrossEncoderLogit: x}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].CrossEncoderLogit > ranked[j].CrossEncoderLogit })
	for i := range ranked {
		ranked[i].CrossEncoderRank = i + 1
	}
	return ranked, nil
}
