package reranklab

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

func bundledInputs() Inputs {
	return Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded}
}

func openSuite(t testing.TB) *Suite {
	t.Helper()
	s, err := Open(bundledInputs())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func published(t testing.TB, data []byte) *pyjson.Object {
	t.Helper()
	v, err := pyjson.Decode(string(data))
	require.NoError(t, err)
	o, ok := v.(*pyjson.Object)
	require.True(t, ok)
	return o
}

// sameJSON asserts Python equality, naming the first difference.
func sameJSON(t testing.TB, got, want any, what string) {
	t.Helper()
	d, same := pyjson.Diff(got, want)
	assert.True(t, same, "%s: %s", what, d)
}

// TestCoverageRecordEqualsThePublishedOne compares the whole coverage run
// with the published record, every key and number.
func TestCoverageRecordEqualsThePublishedOne(t *testing.T) {
	rec, err := openSuite(t).Coverage(context.Background())
	require.NoError(t, err)
	sameJSON(t, pyjson.ValueOf(rec), published(t, fixtures.PublishedCoverage), "coverage record")
}

// TestCoverageRecordIsThePublishedFileByteForByte writes the record as
// json.dumps(result, indent=2) does: the same bytes as the published file
// (which was extracted without its final newline).
func TestCoverageRecordIsThePublishedFileByteForByte(t *testing.T) {
	rec, err := openSuite(t).Coverage(context.Background())
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(string(fixtures.PublishedCoverage), "\n"), pyjson.Dumps(rec, pyjson.Options{Indent: 2}))
}

func TestCoverageHeadlineNumbers(t *testing.T) {
	rec, err := openSuite(t).Coverage(context.Background())
	require.NoError(t, err)
	utf8 := rec.DevelopmentCases[0]
	require.Equal(t, "utf8-write", utf8.CaseID)
	// The seed's table: equal coverage keeps the incoming reading passage first.
	assert.Equal(t, []string{"path-read", "path-write", "json-text"}, rerank.Sources(utf8.After))
	assert.Equal(t, []string{"8", "text", "utf", "when"}, utf8.After[0].Features.MatchedTokens)
	assert.Equal(t, []string{"8", "select", "text", "utf"}, utf8.After[1].Features.MatchedTokens)
	assert.Equal(t, 0.3333333333333333, utf8.After[0].CoverageScore)
	assert.Equal(t, 0.3333333333333333, utf8.After[1].CoverageScore)
	assert.Equal(t, 0.08333333333333333, utf8.After[2].CoverageScore)
	assert.Equal(t, []string{"path-write", "json-text", "path-read"}, rerank.Sources(rec.MechanismCheck.After))
	assert.Empty(t, rec.EmptyCandidates)
	assert.Equal(t, reason.CandidatePayloadMismatch, rec.AlteredCandidateRefusal)
	d := rec.UnfilteredDiagnostic
	require.Len(t, d.Before, 4)
	assert.Equal(t, 0.03252247488101534, *d.Before[0].FusedScore)
	assert.Equal(t, "path-read-3-13", d.Before[1].SourceID)
}

func bundledReplay(t testing.TB, data []byte) *Replay {
	t.Helper()
	file, err := recording.Parse(data)
	require.NoError(t, err)
	return NewReplay(file)
}

func defaultRate(t testing.TB) price.Rate {
	t.Helper()
	rate, ok := price.Defaults().Rate(ListwiseModel)
	require.True(t, ok)
	return rate
}

// TestGeminiReplayReproducesThePublishedCases replays the bundled listwise
// recording and compares every published case field: candidates, coverage
// order, proposal and the Gemini order.
func TestGeminiReplayReproducesThePublishedCases(t *testing.T) {
	replay := bundledReplay(t, recordings.RerankGemini)
	rec, err := openSuite(t).Gemini(context.Background(), replay, ListwiseReplayMode, defaultRate(t))
	require.NoError(t, err)
	assert.Zero(t, replay.Unused(), "every recorded exchange is used")
	assert.Empty(t, rec.Failed())
	pub := published(t, fixtures.PublishedGemini)
	got := pyjson.ValueOf(rec).(*pyjson.Object)
	for _, k := range []string{"model", "cases", "scope"} {
		a, _ := got.Get(k)
		b, _ := pub.Get(k)
		sameJSON(t, a, b, k)
	}
	orders := map[string][]string{}
	for _, c := range rec.Cases {
		orders[c.CaseID] = rerank.Sources(c.Gemini)
	}
	assert.Equal(t, map[string][]string{
		"utf8-write":       {"path-write", "path-read", "json-text"},
		"replace-file":     {"path-write", "path-read", "json-text"},
		"json-result-type": {"json-text", "path-read", "path-write"},
		"backup-schedule":  {"json-text", "path-read", "path-write"},
	}, orders)
	require.Len(t, rec.Calls, 4)
	for _, c := range rec.Calls {
		assert.Len(t, c.RequestSHA256, 64)
	}
	// The reservation for the first request: its 1776 body bytes as input
	// tokens at $0.25/M plus 1024 output tokens at $1.50/M.
	assert.Equal(t, 1776, rec.Calls[0].RequestBytes)
	assert.InDelta(t, 0.00198, rec.Calls[0].EstimatedUSD, 1e-18)
}

// TestListwiseCallsAreTheRunsRequests: the calls shown before a live run
// are the requests (bytes, sha256, reservation) the run makes, at any rate.
func TestListwiseCallsAreTheRunsRequests(t *testing.T) {
	s := openSuite(t)
	for _, rate := range []price.Rate{defaultRate(t), {Model: ListwiseModel, InputPerMTok: 1, OutputPerMTok: 2}} {
		calls, err := s.ListwiseCalls(context.Background(), rate)
		require.NoError(t, err)
		rec, err := s.Gemini(context.Background(), bundledReplay(t, recordings.RerankGemini), ListwiseReplayMode, rate)
		require.NoError(t, err)
		assert.Equal(t, rec.Calls, calls)
	}
}

// TestCrossEncoderReplayReproducesThePublishedRecord compares the whole
// cross-encoder record (every candidate, logit, order, outcome and the
// summary) with the published one; only the execution mode differs.
func TestCrossEncoderReplayReproducesThePublishedRecord(t *testing.T) {
	file, err := recording.Parse(recordings.RerankCrossEncoder)
	require.NoError(t, err)
	enc := NewRecordedEncoder(file)
	rec, err := openSuite(t).CrossEncoder(context.Background(), enc)
	require.NoError(t, err)
	assert.Zero(t, enc.Unused())
	pub := published(t, fixtures.PublishedCrossEncoder)
	got := pyjson.ValueOf(rec).(*pyjson.Object)
	assert.Equal(t, pub.Keys(), got.Keys())
	for _, k := range pub.Keys() {
		if k == "execution_mode" {
			continue
		}
		a, _ := got.Get(k)
		b, _ := pub.Get(k)
		sameJSON(t, a, b, k)
	}
	assert.Equal(t, CrossEncoderReplayMode, rec.ExecutionMode)
	assert.Equal(t, "eb643fd24b37db16f49180f72c6267134feba22fed7e53a968633ab509bfc364", rec.CasesSHA256)

	s := rec.Summary
	for _, c := range []struct {
		name       string
		tally      rerank.Tally
		answerable int
		hits       int
		mrr        float64
	}{
		{"diagnostic coverage", s.Diagnostic.Coverage, 3, 2, 0.7777777777777778},
		{"diagnostic cross-encoder", s.Diagnostic.CrossEncoder, 3, 3, 1.0},
		{"validation coverage", s.Validation.Coverage, 6, 6, 1.0},
		{"validation cross-encoder", s.Validation.CrossEncoder, 6, 6, 1.0},
	} {
		assert.Equal(t, c.answerable, c.tally.Answerable, c.name)
		assert.Equal(t, c.hits, c.tally.Top1Hits, c.name)
		require.NotNil(t, c.tally.MRR, c.name)
		assert.Equal(t, c.mrr, *c.tally.MRR, c.name)
	}
	// Unsupported questions are outside the denominator.
	unsupported := 0
	for _, c := range rec.Expanded {
		if len(c.TargetSources) == 0 {
			unsupported++
			assert.Nil(t, c.Outcome.Coverage.Top1Hit)
			assert.Equal(t, reason.NoSupportedTarget, c.Outcome.CrossEncoder.Reason)
		}
	}
	assert.Equal(t, 3, unsupported)
	assert.Equal(t, 12, len(rec.Expanded))
}

// TestReplayRefusesAChangedRequest edits one recorded request and expects
// replay_request_mismatch naming the path, for both recordings.
func TestReplayRefusesAChangedRequest(t *testing.T) {
	s := openSuite(t)
	ctx := context.Background()
	gem := strings.Replace(string(recordings.RerankGemini), `\"question\": \"Will write_text`, `\"question\": \"Shall write_text`, 1)
	require.NotEqual(t, string(recordings.RerankGemini), gem)
	rec, err := s.Gemini(ctx, bundledReplay(t, []byte(gem)), ListwiseReplayMode, defaultRate(t))
	require.NoError(t, err)
	failed := rec.Failed()
	require.NotEmpty(t, failed)
	assert.Equal(t, "replace-file", failed[0].CaseID)
	assert.Equal(t, reason.ReplayRequestMismatch, failed[0].Error.Code)
	assert.Contains(t, failed[0].Error.Detail, "$.contents[0].parts[0].text")
	assert.Nil(t, failed[0].Gemini)

	ce := strings.ReplaceAll(string(recordings.RerankCrossEncoder), `"question": "What Python type does JSON`, `"question": "Which Python type does JSON`)
	require.NotEqual(t, string(recordings.RerankCrossEncoder), ce)
	file, err := recording.Parse([]byte(ce))
	require.NoError(t, err)
	_, err = s.CrossEncoder(ctx, NewRecordedEncoder(file))
	code, ok := reason.Of(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, reason.ReplayRequestMismatch, code)
	assert.Contains(t, err.Error(), "expanded/heldout-json")
}

// TestCrossEncoderRefusesBadRecordedScores: a recording whose logits break
// the acceptance contract ends the run with invalid_cross_encoder_scores.
func TestCrossEncoderRefusesBadRecordedScores(t *testing.T) {
	for _, c := range []struct{ name, old, new string }{
		{"non-finite", `5.207228660583496`, `NaN`},
		{"wrong length", "5.207228660583496,", ""},
		{"not numbers", `5.207228660583496`, `"5.2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(string(recordings.RerankCrossEncoder), c.old, c.new, 1)
			require.NotEqual(t, string(recordings.RerankCrossEncoder), data)
			file, err := recording.Parse([]byte(data))
			require.NoError(t, err)
			_, err = openSuite(t).CrossEncoder(context.Background(), NewRecordedEncoder(file))
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, reason.InvalidCrossEncoderScores, code)
		})
	}
}

func TestOpenRefusesInconsistentInputs(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Inputs)
		want string
	}{
		{"vectors of another snapshot", func(in *Inputs) {
			in.Vectors = []byte(strings.Replace(string(in.Vectors), `"snapshot_id": "0615`, `"snapshot_id": "1615`, 1))
		}, "snapshot"},
		{"unknown mechanism case", func(in *Inputs) {
			in.Development = []byte(strings.Replace(string(in.Development), `"mechanism_check_case": "replace-file"`, `"mechanism_check_case": "nope"`, 1))
		}, "must name cases"},
		{"target not in the snapshot", func(in *Inputs) {
			in.Expanded = []byte(strings.Replace(string(in.Expanded), `"json-text"`, `"json-txt"`, 1))
		}, "not in the snapshot"},
		{"expanded not a list", func(in *Inputs) { in.Expanded = []byte(`{}`) }, "not a list"},
		{"query without tokens", func(in *Inputs) {
			in.Development = []byte(strings.Replace(string(in.Development), `"query": "Does json.dumps produce text or a bytes object?"`, `"query": "?"`, 1))
		}, "invalid_query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := bundledInputs()
			c.edit(&in)
			_, err := Open(in)
			assert.ErrorContains(t, err, c.want)
		})
	}
}
