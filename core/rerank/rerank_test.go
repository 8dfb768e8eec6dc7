package rerank_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/fixtures"
)

const (
	jsonText   = "e5455737b11664449f653280d89dfc2faaa9a14de16e9c3eb24296ca2ceea51c"
	pathRead   = "c737db948e8111ae00e3442d8a22c80c876e43446dc1ee176ffe8ce142a41900"
	pathWrite  = "c66643a4609c6ee157458bf4353f7446b9c6a200a3ef453846d6a18d5b5069a7"
	pathRead13 = "bdaeff5ae3ab88b70b12b9b6d4a0a46de45ea14520b971a7756cb03bbd384f35"

	replaceQuery = "Will write_text replace the contents of an existing file?"
)

func snapshot(t testing.TB) *rerank.Snapshot {
	t.Helper()
	s, err := rerank.ParseSnapshot(fixtures.RerankSnapshot)
	require.NoError(t, err)
	return s
}

// pool is the three 3.12 chunks as bare candidates, in snapshot order.
func pool(t testing.TB, snap *rerank.Snapshot) []rerank.Candidate {
	t.Helper()
	var out []rerank.Candidate
	for _, p := range snap.Eligible("3.12") {
		out = append(out, p.Candidate())
	}
	require.Len(t, out, 3)
	return out
}

// rows is the pool as JSON rows, each with the seven branch fields.
func rows(t testing.TB, snap *rerank.Snapshot) []any {
	t.Helper()
	var out []any
	for i, c := range pool(t, snap) {
		o := pyjson.ValueOf(c).(*pyjson.Object)
		score := 0.5
		o.Set("lexical_score", -1.25).Set("vector_score", score).Set("lexical_rank", i+1).Set("vector_rank", i+1).
			Set("lexical_contribution", 1.0/float64(61+i)).Set("vector_contribution", 1.0/float64(61+i)).Set("fused_score", 2.0/float64(61+i))
		out = append(out, o)
	}
	return out
}

func codeOf(t testing.TB, err error) reason.Code {
	t.Helper()
	require.Error(t, err)
	code, ok := reason.Of(err)
	require.True(t, ok, "error %v carries no reason code", err)
	return code
}

func TestSnapshotIsThePublishedOneAndAgreesWithTheCorpus(t *testing.T) {
	snap := snapshot(t)
	assert.Equal(t, "0615d22a3315e97c0a88c6c566c546877304f5a28a97e83f68dd36881d4bbd0e", snap.SnapshotID)
	corp, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	ps := snap.Passages()
	require.Len(t, ps, len(corp.Passages))
	for i, p := range corp.Passages {
		assert.Equal(t, p.SourceID, ps[i].SourceID)
		assert.Equal(t, p.Version, ps[i].Version)
		assert.Equal(t, p.URL, ps[i].URL)
		assert.Equal(t, p.Text, ps[i].Text)
	}
	ids := []string{ps[0].ChunkID, ps[1].ChunkID, ps[2].ChunkID, ps[3].ChunkID}
	assert.Equal(t, []string{jsonText, pathRead, pathWrite, pathRead13}, ids)
}

// TestSnapshotRefusesAnyChange changes one thing at a time in the bundled
// snapshot file and expects the first check that no longer holds.
func TestSnapshotRefusesAnyChange(t *testing.T) {
	base := string(fixtures.RerankSnapshot)
	first := `"text": "json.dumps(obj, ensure_ascii=True) returns a JSON string.`
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"format", `"ragagent-rerank-snapshot/1"`, `"ragagent-rerank-snapshot/2"`, "format is"},
		{"snapshot id not hex", `"snapshot_id": "0615`, `"snapshot_id": "X615`, "snapshot_id"},
		{"bad source id", `"source_id": "json-text"`, `"source_id": "Json-Text"`, "source_id must be"},
		{"bad version", `"version": "3.13"`, `"version": "3.13.1"`, "is not of the form"},
		{"http url", `"url": "https://docs.python.org/3.12/library/json.html#json.dumps"`, `"url": "http://docs.python.org/3.12/library/json.html#json.dumps"`, "absolute https URL"},
		{"chunk id not hex", jsonText, strings.ToUpper(jsonText), "chunk_id"},
		{"duplicate chunk id", pathRead, jsonText, "repeats chunk 1"},
		{"changed text", first, first[:len(first)-1] + "!", "text_sha256"},
		{"changed chunk id", jsonText, "f" + jsonText[1:], "documents_sha256"},
		{"changed url", `library/json.html#json.dumps`, `library/json.html#json.loads`, "documents_sha256"},
		{"unknown field", `"snapshot_id":`, `"extra": 1, "snapshot_id":`, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, base, c.old)
			_, err := rerank.ParseSnapshot([]byte(strings.Replace(base, c.old, c.new, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestDocumentsReceiptIsPythonsSortedDump(t *testing.T) {
	snap := snapshot(t)
	// sha256(json.dumps(documents, sort_keys=True)), computed by CPython
	// when the fixture was written.
	assert.Equal(t, "afad1deb422e705fe6d1eb094eadc91b10c7f3b5777ac385c1daffb18e7a9f30", rerank.DocumentsSHA256(snap.Documents))
}

// TestCoverageRefusals has one row per refusal, in the reference rerank()'s
// check order; each row's input would also fail every later check, so the
// row proves the order.
func TestCoverageRefusals(t *testing.T) {
	snap := snapshot(t)
	good := func() []any { return rows(t, snap) }
	with := func(i int, key string, v any) []any {
		r := good()
		r[i].(*pyjson.Object).Set(key, v)
		return r
	}
	unknown := append(good(), "not an object")
	for _, c := range []struct {
		name  string
		query string
		rows  any
		k     int
		want  reason.Code
	}{
		{"k zero before anything", "", "not a list", 0, reason.InvalidK},
		{"k negative", replaceQuery, good(), -1, reason.InvalidK},
		{"empty query before the candidates", "", "not a list", 3, reason.InvalidQuery},
		{"query without a token", "?!  …", good(), 3, reason.InvalidQuery},
		{"oversized query", strings.Repeat("a ", 257), good(), 3, reason.InvalidQuery},
		{"candidates not a list", replaceQuery, pyjson.NewObject("chunk_id", jsonText), 3, reason.InvalidCandidates},
		{"candidates null", replaceQuery, nil, 3, reason.InvalidCandidates},
		{"row not an object", replaceQuery, unknown, 3, reason.UnknownCandidate},
		{"chunk id missing", replaceQuery, []any{pyjson.NewObject("source_id", "json-text")}, 3, reason.UnknownCandidate},
		{"chunk id not a string", replaceQuery, with(0, "chunk_id", pyjson.Number("7")), 3, reason.UnknownCandidate},
		{"chunk id empty", replaceQuery, with(1, "chunk_id", ""), 3, reason.UnknownCandidate},
		{"chunk id unknown", replaceQuery, with(2, "chunk_id", strings.Repeat("0", 64)), 3, reason.UnknownCandidate},
		{"duplicate before its payload", replaceQuery, append(good(), with(0, "text", "changed")[0]), 3, reason.DuplicateCandidate},
		{"source id changed", replaceQuery, with(0, "source_id", "path-read"), 3, reason.CandidatePayloadMismatch},
		{"version changed", replaceQuery, with(0, "version", "3.13"), 3, reason.CandidatePayloadMismatch},
		{"version not a string", replaceQuery, with(0, "version", pyjson.Number("3.12")), 3, reason.CandidatePayloadMismatch},
		{"url changed", replaceQuery, with(1, "url", "https://example.com/"), 3, reason.CandidatePayloadMismatch},
		{"text changed", replaceQuery, with(2, "text", "Path.write_text appends."), 3, reason.CandidatePayloadMismatch},
		{"text missing before a bad rank", replaceQuery, func() []any {
			r := with(0, "lexical_rank", 0)
			o := pyjson.NewObject()
			for _, k := range r[0].(*pyjson.Object).Keys() {
				if k != "text" {
					v, _ := r[0].(*pyjson.Object).Get(k)
					o.Set(k, v)
				}
			}
			r[0] = o
			return r
		}(), 3, reason.CandidatePayloadMismatch},
		{"rank zero before a bad score", replaceQuery, func() []any {
			r := with(0, "lexical_rank", 0)
			r[0].(*pyjson.Object).Set("fused_score", pyjson.Number("NaN"))
			return r
		}(), 3, reason.InvalidCandidateRank},
		{"rank a float", replaceQuery, with(0, "vector_rank", pyjson.Number("1.0")), 3, reason.InvalidCandidateRank},
		{"rank a boolean", replaceQuery, with(1, "lexical_rank", true), 3, reason.InvalidCandidateRank},
		{"rank a string", replaceQuery, with(1, "vector_rank", "1"), 3, reason.InvalidCandidateRank},
		{"rank beyond int", replaceQuery, with(1, "vector_rank", pyjson.Number("99999999999999999999")), 3, reason.InvalidCandidateRank},
		{"score NaN", replaceQuery, with(0, "lexical_score", pyjson.Number("NaN")), 3, reason.InvalidCandidateScore},
		{"score Infinity", replaceQuery, with(0, "vector_score", pyjson.Number("Infinity")), 3, reason.InvalidCandidateScore},
		{"score -Infinity", replaceQuery, with(0, "fused_score", pyjson.Number("-Infinity")), 3, reason.InvalidCandidateScore},
		{"score overflowing literal", replaceQuery, with(1, "lexical_contribution", pyjson.Number("1e400")), 3, reason.InvalidCandidateScore},
		{"score huge integer", replaceQuery, with(1, "vector_contribution", pyjson.Number("1"+strings.Repeat("0", 400))), 3, reason.InvalidCandidateScore},
		{"score a boolean", replaceQuery, with(2, "fused_score", false), 3, reason.InvalidCandidateScore},
		{"score a string", replaceQuery, with(2, "vector_score", "0.5"), 3, reason.InvalidCandidateScore},
		{"score a Go NaN", replaceQuery, with(2, "vector_score", math.NaN()), 3, reason.InvalidCandidateScore},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := rerank.CoverageJSON(c.query, c.rows, c.k, snap)
			assert.Equal(t, c.want, codeOf(t, err))
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestCoverageAcceptsNullAndAbsentBranchFieldsAndWholeNumberScores(t *testing.T) {
	snap := snapshot(t)
	r := rows(t, snap)
	r[0].(*pyjson.Object).Set("lexical_rank", nil).Set("lexical_score", nil).Set("fused_score", pyjson.Number("1"))
	r[1] = pyjson.ValueOf(pool(t, snap)[1]) // no branch fields at all
	got, err := rerank.CoverageJSON(replaceQuery, r, 3, snap)
	require.NoError(t, err)
	require.Len(t, got, 3)
	byID := map[string]rerank.Covered{}
	for _, c := range got {
		byID[c.ChunkID] = c
	}
	assert.Nil(t, byID[pathRead].Fusion, "a row without branch fields is written back without them")
	require.NotNil(t, byID[jsonText].Fusion)
	assert.Nil(t, byID[jsonText].LexicalRank)
	assert.Equal(t, 1.0, *byID[jsonText].FusedScore)
}

func TestCoverageMechanismTieAndLimit(t *testing.T) {
	snap := snapshot(t)
	// Reversed retrieval order: json-text, path-read, path-write.
	p := pool(t, snap)
	got, err := rerank.Coverage(replaceQuery, []rerank.Candidate{p[0], p[1], p[2]}, snap, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"path-write", "json-text", "path-read"}, rerank.Sources(got))
	assert.Equal(t, []int{3, 1, 2}, []int{got[0].IncomingRank, got[1].IncomingRank, got[2].IncomingRank})
	assert.Equal(t, 0.7, got[0].CoverageScore)
	assert.Equal(t, 0.3, got[1].CoverageScore)
	assert.Equal(t, []string{"an", "existing", "file", "of", "text", "the", "write"}, got[0].Features.MatchedTokens)
	assert.Equal(t, []string{"will", "write", "text", "replace", "the", "contents", "of", "an", "existing", "file"}, got[0].Features.QueryTokens)
	assert.Equal(t, 10, got[0].Features.QueryTokenCount)

	// The tie swaps with the incoming order.
	got, err = rerank.Coverage(replaceQuery, []rerank.Candidate{p[1], p[0], p[2]}, snap, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"path-write", "path-read", "json-text"}, rerank.Sources(got))

	// Only k cuts the list; a passage that was not supplied never appears.
	got, err = rerank.Coverage(replaceQuery, []rerank.Candidate{p[0], p[1]}, snap, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"json-text"}, rerank.Sources(got))
	assert.Equal(t, 1, got[0].RerankRank)

	got, err = rerank.CoverageJSON(replaceQuery, []any{}, 3, snap)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestQueryTokensAreDistinctLowercaseASCIIInFirstSeenOrder(t *testing.T) {
	tokens, err := rerank.QueryTokens("UTF-8 utf_8 Ünïcode KELVIN \u212a 8")
	require.NoError(t, err)
	assert.Equal(t, []string{"utf", "8", "n", "code", "kelvin", "k"}, tokens)
	_, err = rerank.QueryTokens(strings.Repeat("é", rerank.MaxQueryChars) + "a")
	assert.Equal(t, reason.InvalidQuery, codeOf(t, err))
	_, err = rerank.QueryTokens(strings.Repeat("é", rerank.MaxQueryChars-1) + "a")
	assert.NoError(t, err, "the limit counts code points, not bytes")
}

func TestKFromJSON(t *testing.T) {
	for _, c := range []struct {
		in   any
		want int
	}{{pyjson.Number("2"), 2}, {1, 1}} {
		got, err := rerank.CoverageJSON(replaceQuery, rows(t, snapshot(t)), c.in, snapshot(t))
		require.NoError(t, err)
		assert.Len(t, got, c.want)
	}
	for _, bad := range []any{pyjson.Number("0"), pyjson.Number("2.0"), true, "3", nil, pyjson.Number("-1")} {
		_, err := rerank.CoverageJSON(replaceQuery, rows(t, snapshot(t)), bad, snapshot(t))
		assert.Equal(t, reason.InvalidK, codeOf(t, err), "%v", bad)
	}
}

func proposal(ids ...any) *pyjson.Object { return pyjson.NewObject("ranked_ids", ids) }

// TestApplyOrderRefusals: the candidate validator first, then the schema,
// then the permutation, one row each.
func TestApplyOrderRefusals(t *testing.T) {
	snap := snapshot(t)
	p := pool(t, snap)
	good := proposal(pathWrite, pathRead, jsonText)
	for _, c := range []struct {
		name     string
		query    string
		rows     any
		proposal any
		want     reason.Code
	}{
		{"query before the proposal", "", p, nil, reason.InvalidQuery},
		{"candidates before the proposal", replaceQuery, "nope", nil, reason.InvalidCandidates},
		{"altered candidate", replaceQuery, func() []rerank.Candidate {
			q := append([]rerank.Candidate(nil), p...)
			q[1].Text += " "
			return q
		}(), good, reason.CandidatePayloadMismatch},
		{"proposal null", replaceQuery, p, nil, reason.InvalidRankingSchema},
		{"proposal a list", replaceQuery, p, []any{pathWrite, pathRead, jsonText}, reason.InvalidRankingSchema},
		{"proposal without ranked_ids", replaceQuery, p, pyjson.NewObject("ranking", []any{}), reason.InvalidRankingSchema},
		{"proposal with an extra key", replaceQuery, p, proposal(pathWrite, pathRead, jsonText).Set("why", "x"), reason.InvalidRankingSchema},
		{"ranked_ids not a list", replaceQuery, p, pyjson.NewObject("ranked_ids", pathWrite), reason.RankingNotCandidatePermutation},
		{"non-string id", replaceQuery, p, proposal(pathWrite, pyjson.Number("1"), jsonText), reason.RankingNotCandidatePermutation},
		{"null id", replaceQuery, p, proposal(pathWrite, nil, jsonText), reason.RankingNotCandidatePermutation},
		{"missing id", replaceQuery, p, proposal(pathWrite, pathRead), reason.RankingNotCandidatePermutation},
		{"extra id", replaceQuery, p, proposal(pathWrite, pathRead, jsonText, pathRead13), reason.RankingNotCandidatePermutation},
		{"duplicate id", replaceQuery, p, proposal(pathWrite, pathRead, pathRead), reason.RankingNotCandidatePermutation},
		{"duplicate standing in for a missing one", replaceQuery, p, proposal(pathWrite, pathRead, jsonText, jsonText), reason.RankingNotCandidatePermutation},
		{"unknown id instead of a candidate", replaceQuery, p, proposal(pathWrite, pathRead, pathRead13), reason.RankingNotCandidatePermutation},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := rerank.ApplyOrderJSON(c.query, c.rows, snap, c.proposal)
			assert.Equal(t, c.want, codeOf(t, err))
		})
	}
}

func TestApplyOrderKeepsCandidatesUnchanged(t *testing.T) {
	snap := snapshot(t)
	r := rows(t, snap)
	got, err := rerank.ApplyOrderJSON(replaceQuery, r, snap, proposal(pathWrite, jsonText, pathRead))
	require.NoError(t, err)
	assert.Equal(t, []string{"path-write", "json-text", "path-read"}, rerank.Sources(got))
	for i, l := range got {
		assert.Equal(t, i+1, l.GeminiRank)
		want := r[map[string]int{jsonText: 0, pathRead: 1, pathWrite: 2}[l.ChunkID]].(*pyjson.Object)
		d, same := pyjson.Diff(pyjson.ValueOf(l.Candidate), want)
		assert.True(t, same, "%s", d)
	}
	got, err = rerank.ApplyOrderJSON(replaceQuery, []any{}, snap, proposal())
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestAcceptScoresRefusals: the candidate validator first, then one finite
// number per candidate.
func TestAcceptScoresRefusals(t *testing.T) {
	snap := snapshot(t)
	p := pool(t, snap)
	for _, c := range []struct {
		name   string
		rows   any
		scores any
		want   reason.Code
	}{
		{"candidates before the scores", append(append([]rerank.Candidate(nil), p...), p[0]), []float64{1, 2}, reason.DuplicateCandidate},
		{"too few", p, []float64{1, 2}, reason.InvalidCrossEncoderScores},
		{"too many", p, []float64{1, 2, 3, 4}, reason.InvalidCrossEncoderScores},
		{"none for some", p, []any{}, reason.InvalidCrossEncoderScores},
		{"not a list", p, pyjson.NewObject("a", 1, "b", 2, "c", 3), reason.InvalidCrossEncoderScores},
		{"null", p, nil, reason.InvalidCrossEncoderScores},
		{"NaN", p, []float64{1, math.NaN(), 3}, reason.InvalidCrossEncoderScores},
		{"+Inf", p, []float64{math.Inf(1), 2, 3}, reason.InvalidCrossEncoderScores},
		{"-Inf from JSON", p, []any{pyjson.Number("1"), pyjson.Number("-Infinity"), pyjson.Number("3")}, reason.InvalidCrossEncoderScores},
		{"boolean", p, []any{pyjson.Number("1"), true, pyjson.Number("3")}, reason.InvalidCrossEncoderScores},
		{"string", p, []any{pyjson.Number("1"), "2", pyjson.Number("3")}, reason.InvalidCrossEncoderScores},
		{"null score", p, []any{pyjson.Number("1"), nil, pyjson.Number("3")}, reason.InvalidCrossEncoderScores},
		{"integer too large for a float", p, []any{pyjson.Number("1"), pyjson.Number("9" + strings.Repeat("9", 400)), pyjson.Number("3")}, reason.InvalidCrossEncoderScores},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := rerank.AcceptScoresJSON(replaceQuery, c.rows, snap, c.scores)
			assert.Equal(t, c.want, codeOf(t, err))
		})
	}
}

func TestAcceptScoresSortsByLogitWithIncomingRankForTies(t *testing.T) {
	snap := snapshot(t)
	p := pool(t, snap)
	got, err := rerank.AcceptScores(replaceQuery, p, snap, []any{pyjson.Number("2"), pyjson.Number("2.0"), pyjson.Number("7.5")})
	require.NoError(t, err)
	assert.Equal(t, []string{"path-write", "json-text", "path-read"}, rerank.Sources(got))
	assert.Equal(t, []int{3, 1, 2}, []int{got[0].IncomingRank, got[1].IncomingRank, got[2].IncomingRank})
	assert.Equal(t, []int{1, 2, 3}, []int{got[0].CrossEncoderRank, got[1].CrossEncoderRank, got[2].CrossEncoderRank})

	// -0.0 and 0.0 tie, as they do in Python.
	got, err = rerank.AcceptScores(replaceQuery, p, snap, []float64{math.Copysign(0, -1), 0, -1})
	require.NoError(t, err)
	assert.Equal(t, []string{"json-text", "path-read", "path-write"}, rerank.Sources(got))

	// A candidate removed upstream stays removed.
	got, err = rerank.AcceptScores(replaceQuery, p[:2], snap, []float64{-3, 9})
	require.NoError(t, err)
	assert.Equal(t, []string{"path-read", "json-text"}, rerank.Sources(got))

	got, err = rerank.AcceptScores(replaceQuery, []rerank.Candidate{}, snap, []float64{})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestJudgeAndCount(t *testing.T) {
	hit := rerank.Judge([]string{"path-write", "path-read"}, []string{"path-write"})
	miss := rerank.Judge([]string{"json-text", "path-read", "path-write"}, []string{"path-write"})
	absent := rerank.Judge([]string{"json-text"}, []string{"path-write"})
	empty := rerank.Judge(nil, []string{"path-write"})
	none := rerank.Judge([]string{"json-text"}, nil)
	assert.True(t, *hit.Top1Hit)
	assert.Equal(t, 1.0, hit.ReciprocalRank)
	assert.False(t, *miss.Top1Hit)
	assert.Equal(t, 1.0/3, miss.ReciprocalRank)
	assert.Equal(t, `{"top1_hit": false, "reciprocal_rank": 0}`, pyjson.Dumps(absent, pyjson.Options{}))
	assert.False(t, *empty.Top1Hit)
	assert.Nil(t, none.Top1Hit)
	assert.Equal(t, `{"top1_hit": null, "reason": "no_supported_target"}`, pyjson.Dumps(none, pyjson.Options{}))

	tally := rerank.Count([]rerank.Outcome{hit, miss, none, hit})
	assert.Equal(t, 3, tally.Answerable)
	assert.Equal(t, 2, tally.Top1Hits)
	require.NotNil(t, tally.MRR)
	assert.Equal(t, 0.7777777777777778, *tally.MRR, "Python 3.12 sum(), not naive addition")
	naive := 0.0
	for _, rr := range []float64{hit.ReciprocalRank, miss.ReciprocalRank, hit.ReciprocalRank} {
		naive += rr
	}
	assert.Equal(t, 0.7777777777777777, naive/3, "the naive sum really differs here")
	assert.Nil(t, rerank.Count([]rerank.Outcome{none}).MRR)
}

func TestSumIsCPythonsCompensatedSum(t *testing.T) {
	// Python 3.12's What's New: sum([0.1] * 10) == 1.0, where naive
	// addition gives 0.9999999999999999.
	tenths := make([]float64, 10)
	naive := 0.0
	for i := range tenths {
		tenths[i] = 0.1
		naive += 0.1
	}
	assert.Equal(t, 1.0, rerank.Sum(tenths))
	assert.Equal(t, 0.9999999999999999, naive)
	assert.Equal(t, 2.3333333333333335, rerank.Sum([]float64{1, 1.0 / 3, 1}))
	assert.Equal(t, 0.0, rerank.Sum(nil))
	assert.True(t, math.IsInf(rerank.Sum([]float64{math.MaxFloat64, math.MaxFloat64}), 1))
}

func retriever(t testing.TB) *rerank.Retriever {
	t.Helper()
	snap := snapshot(t)
	vec, err := rerank.ParseVectors(fixtures.RerankVectors, snap)
	require.NoError(t, err)
	r, err := rerank.NewRetriever(snap, vec)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func TestHybridFusionAndBudget(t *testing.T) {
	r := retriever(t)
	ctx := context.Background()
	got, err := r.Candidates(ctx, replaceQuery, "3.12", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"path-write", "path-read", "json-text"}, rerank.Sources(got))
	top := got[0].Fusion
	assert.Equal(t, -2.3976548397386743, *top.LexicalScore, "FTS5 bm25, bit for bit")
	assert.Equal(t, 0.6357498076122466, *top.VectorScore)
	assert.Equal(t, 1.0/61, *top.LexicalContribution)
	assert.Equal(t, 0.03278688524590164, *top.FusedScore)

	got, err = r.Candidates(ctx, replaceQuery, "3.12", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"path-write", "path-read"}, rerank.Sources(got))

	// No lexical match: null score and rank, a 0.0 contribution.
	got, err = r.Candidates(ctx, "How frequently does our cloud provider back up these files?", "3.12", 3)
	require.NoError(t, err)
	assert.Nil(t, got[1].LexicalRank)
	assert.Nil(t, got[1].LexicalScore)
	assert.Equal(t, 0.0, *got[1].LexicalContribution)
	assert.Equal(t, *got[1].VectorContribution, *got[1].FusedScore)

	// A version with no chunk has no candidates.
	got, err = r.Candidates(ctx, replaceQuery, "2.7", 3)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestHybridRefusals(t *testing.T) {
	r := retriever(t)
	ctx := context.Background()
	_, err := r.Candidates(ctx, "How do I read a file?", "3.12", 3)
	assert.Equal(t, reason.UnrecordedQuery, codeOf(t, err))
	// A recorded query, but never recorded against the 3.13 chunk.
	_, err = r.Candidates(ctx, replaceQuery, "", 4)
	assert.Equal(t, reason.UnrecordedQuery, codeOf(t, err))
	assert.Contains(t, err.Error(), "path-read-3-13")
	_, err = r.Candidates(ctx, "…", "3.12", 3)
	assert.Equal(t, reason.InvalidQuery, codeOf(t, err))
	_, err = r.Candidates(ctx, replaceQuery, "3.x", 3)
	assert.ErrorContains(t, err, "version")
	_, err = r.Candidates(ctx, replaceQuery, "3.12", 0)
	assert.ErrorContains(t, err, "budget")
}

// fixedVectors is a vector branch that gives every chunk the same score.
type fixedVectors float64

func (f fixedVectors) Similarities(_ context.Context, _ string, chunks []rerank.Passage) ([]float64, error) {
	out := make([]float64, len(chunks))
	for i := range out {
		out[i] = float64(f)
	}
	return out, nil
}

func TestHybridTiesKeepSnapshotOrder(t *testing.T) {
	r, err := rerank.NewRetriever(snapshot(t), fixedVectors(0.5))
	require.NoError(t, err)
	defer r.Close()
	// No lexical match and equal cosines: every fused score ties.
	got, err := r.Candidates(context.Background(), "zzz qqq", "", 4)
	require.NoError(t, err)
	assert.Equal(t, []string{"json-text", "path-read", "path-write", "path-read-3-13"}, rerank.Sources(got))
	assert.Equal(t, []int{1, 2, 3, 4}, []int{*got[0].VectorRank, *got[1].VectorRank, *got[2].VectorRank, *got[3].VectorRank})

	bad, err := rerank.NewRetriever(snapshot(t), fixedVectors(math.NaN()))
	require.NoError(t, err)
	defer bad.Close()
	_, err = bad.Candidates(context.Background(), "zzz", "", 4)
	assert.ErrorContains(t, err, "not finite")
}

func TestVectorsFileIsChecked(t *testing.T) {
	snap := snapshot(t)
	base := string(fixtures.RerankVectors)
	for _, c := range []struct{ name, old, new, want string }{
		{"format", `"ragagent-vectors/1"`, `"ragagent-vectors/0"`, "format"},
		{"metric", `"metric": "cosine"`, `"metric": "dot"`, "metric"},
		{"snapshot", `"snapshot_id": "0615`, `"snapshot_id": "1615`, "snapshot"},
		{"unknown chunk", `"chunk_id": "e545`, `"chunk_id": "f545`, "not in the snapshot"},
		{"wrong source", `"source_id": "json-text"`, `"source_id": "path-read"`, "in the snapshot, not"},
		{"cosine out of range", `"cosine": 0.4948350231504922`, `"cosine": 1.5`, "cosine"},
		{"cosine missing", `"cosine": 0.4948350231504922`, `"cosine": null`, "cosine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, base, c.old)
			_, err := rerank.ParseVectors([]byte(strings.Replace(base, c.old, c.new, 1)), snap)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestPromptCarriesOnlyQuestionIdsAndTexts(t *testing.T) {
	snap := snapshot(t)
	p := rerank.Prompt("Q?", pool(t, snap)[:1])
	assert.Equal(t, rerank.System, p.System)
	assert.Equal(t, `{"question": "Q?", "candidates": [{"chunk_id": "`+jsonText+`", "text": "json.dumps(obj, ensure_ascii=True) returns a JSON string. Setting ensure_ascii=False leaves non-ASCII characters in that string. It does not write a file or select the encoding used by a file writer."}]}`, p.State)
	assert.Equal(t, `{"type": "object", "properties": {"ranked_ids": {"type": "array", "items": {"type": "string"}}}, "required": ["ranked_ids"], "additionalProperties": false}`,
		pyjson.Dumps(p.Schema, pyjson.Options{}))
}

// FuzzCandidateValidator feeds arbitrary JSON to the three entry points:
// none may panic, and whatever Coverage admits must be the snapshot's own
// chunks, each once.
func FuzzCandidateValidator(f *testing.F) {
	snap, err := rerank.ParseSnapshot(fixtures.RerankSnapshot)
	if err != nil {
		f.Fatal(err)
	}
	var seed strings.Builder
	seed.WriteString("[")
	for i, p := range snap.Passages() {
		if i > 0 {
			seed.WriteString(", ")
		}
		seed.WriteString(pyjson.Dumps(p.Candidate(), pyjson.Options{}))
	}
	seed.WriteString("]")
	f.Add(seed.String(), `{"ranked_ids": []}`, `[1, 2, 3, 4]`, replaceQuery, 3)
	f.Add(`[{"chunk_id": "`+jsonText+`", "lexical_rank": true}]`, `{"ranked_ids": ["x"]}`, `[NaN]`, "a", 1)
	f.Add(`[null, [], {}]`, `[]`, `{}`, "", 0)
	f.Add(`[{"chunk_id": "`+pathRead+`", "source_id": "path-read", "version": "3.12", "url": 1e999, "text": "\ud800"}]`, `null`, `[1e400]`, "x", -5)
	f.Fuzz(func(t *testing.T, rowsText, proposalText, scoresText, query string, k int) {
		rows, err := pyjson.Decode(rowsText)
		if err != nil {
			return
		}
		prop, _ := pyjson.Decode(proposalText)
		scores, _ := pyjson.Decode(scoresText)
		got, err := rerank.CoverageJSON(query, rows, k, snap)
		if err == nil {
			seen := map[string]bool{}
			for _, c := range got {
				p, ok := snap.Passage(c.ChunkID)
				if !ok || seen[c.ChunkID] || p.Text != c.Text || p.URL != c.URL || p.SourceID != c.SourceID || p.Version != c.Version {
					t.Fatalf("admitted a candidate that is not the snapshot's: %+v", c.Candidate)
				}
				seen[c.ChunkID] = true
			}
		} else if _, coded := reason.Of(err); !coded {
			t.Fatalf("refusal without a reason code: %v", err)
		}
		_, _ = rerank.ApplyOrderJSON(query, rows, snap, prop)
		_, _ = rerank.AcceptScoresJSON(query, rows, snap, scores)
		for _, v := range []any{rows, prop, scores} {
			_, _ = rerank.CoverageJSON(query, rows, v, snap)
		}
	})
}
