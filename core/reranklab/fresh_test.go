package reranklab

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// publishedPayload is the bundled recording's responses, one per call, as
// a fresh scorer would send them (edit changes a call).
func publishedPayload(t testing.TB, edit func(i int, call *pyjson.Object)) string {
	t.Helper()
	file, err := recording.Parse(recordings.RerankCrossEncoder)
	require.NoError(t, err)
	var calls []any
	for i, tr := range file.Trials {
		resp := tr.Exchanges[0].Response.(*pyjson.Object)
		scores, _ := resp.Get("scores")
		secs, _ := resp.Get("inference_seconds")
		call := pyjson.NewObject("id", tr.ID, "scores", scores, "inference_seconds", secs)
		if edit != nil {
			edit(i, call)
		}
		calls = append(calls, call)
	}
	payload := pyjson.NewObject("format", ScoresFormat,
		"model", pyjson.NewObject("model", "test/model", "revision", "r1", "license", "Apache-2.0",
			"files", pyjson.NewObject("onnx/model.onnx", strings.Repeat("ab", 32))),
		"environment", pyjson.NewObject("runtime", "test"),
		"timings", pyjson.NewObject("score_ms", 1),
		"calls", calls)
	return pyjson.Dumps(payload, pyjson.Options{})
}

// TestEncoderCallsAreTheRunsRequests: the 4 original and 12 expanded calls,
// in the order CrossEncoder asks, each request the one the bundled
// recording holds.
func TestEncoderCallsAreTheRunsRequests(t *testing.T) {
	s := openSuite(t)
	calls, err := s.EncoderCalls(context.Background())
	require.NoError(t, err)
	file, err := recording.Parse(recordings.RerankCrossEncoder)
	require.NoError(t, err)
	require.Len(t, calls, 16)
	require.Len(t, file.Trials, 16)
	pairs := 0
	for i, c := range calls {
		tr := file.Trials[i]
		assert.Equal(t, tr.ID, c.ID)
		assert.Equal(t, tr.Split, c.Split)
		sameJSON(t, c.Request(), tr.Exchanges[0].Request, c.ID)
		pairs += len(c.Candidates)
	}
	assert.Equal(t, "original/utf8-write", calls[0].ID)
	assert.Equal(t, "expanded/heldout-encoding", calls[4].ID)
	assert.Equal(t, 44, pairs, "4 x 3 original pairs and 32 expanded ones")
}

// TestFreshScoringIsAcceptedAndReplays: the published logits sent as a
// fresh payload give the published record (mode aside) and a recording
// that replays to it.
func TestFreshScoringIsAcceptedAndReplays(t *testing.T) {
	s := openSuite(t)
	ctx := context.Background()
	calls, err := s.EncoderCalls(ctx)
	require.NoError(t, err)
	sc, err := ParseScoring(publishedPayload(t, nil), calls)
	require.NoError(t, err)
	file := sc.Recording(calls, "test source", "2026-11-30T00:00:00Z")
	fresh, err := s.Fresh(ctx, file)
	require.NoError(t, err)
	assert.Equal(t, CrossEncoderLiveMode, fresh.ExecutionMode)
	want := published(t, fixtures.PublishedCrossEncoder)
	got := pyjson.ValueOf(fresh).(*pyjson.Object)
	for _, k := range []string{"original_candidate_comparison", "expanded_cases", "summary", "cases_sha256", "snapshot_id", "scope"} {
		sameJSON(t, pyget(got, k), pyget(want, k), k)
	}
	sameJSON(t, fresh.Model, pyjson.NewObject("model", "test/model", "revision", "r1", "license", "Apache-2.0",
		"files", pyjson.NewObject("onnx/model.onnx", strings.Repeat("ab", 32))), "the recorded model")

	data, err := file.Bytes()
	require.NoError(t, err)
	back, err := recording.Parse(data)
	require.NoError(t, err)
	replayed, err := s.CrossEncoder(ctx, NewRecordedEncoder(back))
	require.NoError(t, err)
	assert.Equal(t, CrossEncoderReplayMode, replayed.ExecutionMode)
	sameJSON(t, pyget(pyjson.ValueOf(replayed).(*pyjson.Object), "expanded_cases"), pyget(got, "expanded_cases"), "replayed")
	cfg := back.Config.(*pyjson.Object)
	assert.Equal(t, []string{"model", "environment", "timings", "source"}, cfg.Keys())
	assert.Equal(t, "test/model", back.Model)
}

// TestParseScoringRefusals: one row per check, in the parser's order.
func TestParseScoringRefusals(t *testing.T) {
	s := openSuite(t)
	calls, err := s.EncoderCalls(context.Background())
	require.NoError(t, err)
	good := publishedPayload(t, nil)
	swap := func(old, new string) string { return strings.Replace(good, old, new, 1) }
	for _, tc := range []struct {
		name, payload, want string
	}{
		{"not JSON", "{", "not JSON"},
		{"not an object", "[]", "not an object"},
		{"format", swap(ScoresFormat, "other/1"), `format is "other/1"`},
		{"model missing", swap(`"model": {"model": "test/model"`, `"modelx": {"model": "test/model"`), "model: must be an object"},
		{"model id empty", swap(`"model": "test/model"`, `"model": ""`), "model: model must be a non-empty string"},
		{"no revision", swap(`"revision": "r1"`, `"revision": 1`), "model: revision must be a non-empty string"},
		{"no license", swap(`"license": "Apache-2.0"`, `"license": null`), "model: license must be a non-empty string"},
		{"bad sha256", swap(strings.Repeat("ab", 32), "abc"), `files["onnx/model.onnx"] is "abc"`},
		{"no files", swap(`{"onnx/model.onnx": "`+strings.Repeat("ab", 32)+`"}`, "{}"), "files must name each file"},
		{"environment", swap(`"environment": {"runtime": "test"}`, `"environment": "x"`), "environment must be an object"},
		{"timings", swap(`"timings": {"score_ms": 1}`, `"timings": 5`), "timings must be an object"},
		{"verification", swap(`"timings": {"score_ms": 1}`, `"timings": {}, "verification": []`), "verification must be an object"},
		{"calls", swap(`"calls": [`, `"calls": 1, "x": [`), "calls must be a list"},
		{"too few calls", reshaped(t, func(c []any) []any { return c[1:] }), "15 calls answered, the run makes 16"},
		{"call not object", reshaped(t, func(c []any) []any { c[3] = pyjson.Number("7"); return c }), "call 4 is not an object"},
		{"wrong order", swap(`"id": "original/utf8-write"`, `"id": "original/replace-file"`), `call 1 is "original/replace-file", want "original/utf8-write"`},
		{"no scores", swap(`"id": "original/utf8-write", "scores"`, `"id": "original/utf8-write", "scorez"`), "call original/utf8-write has no scores"},
		{"negative seconds", publishedPayload(t, func(i int, c *pyjson.Object) {
			if i == 2 {
				c.Set("inference_seconds", pyjson.Number("-1"))
			}
		}), "call original/json-result-type: inference_seconds must be a finite number of at least 0"},
		{"NaN seconds", publishedPayload(t, func(i int, c *pyjson.Object) {
			if i == 0 {
				c.Set("inference_seconds", pyjson.Number("NaN"))
			}
		}), "inference_seconds must be a finite number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScoring(tc.payload, calls)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "cross-encoder scores: "), err.Error())
		})
	}
}

// reshaped is the published payload with its list of calls edited.
func reshaped(t testing.TB, edit func([]any) []any) string {
	v, err := pyjson.Decode(publishedPayload(t, nil))
	require.NoError(t, err)
	o := v.(*pyjson.Object)
	calls, _ := o.Get("calls")
	o.Set("calls", edit(calls.([]any)))
	return pyjson.Dumps(o, pyjson.Options{})
}

// TestFreshRefusesMalformedScores: the acceptance contract judges every
// call's scores; the first bad call ends the run with
// invalid_cross_encoder_scores and names its case.
func TestFreshRefusesMalformedScores(t *testing.T) {
	s := openSuite(t)
	ctx := context.Background()
	calls, err := s.EncoderCalls(ctx)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		call   int
		scores any
		want   string
	}{
		{"null (a NaN through JSON)", 0, []any{pyjson.Number("1"), nil, pyjson.Number("2")}, "original case utf8-write: invalid_cross_encoder_scores: score 2 is null"},
		{"NaN literal", 1, []any{pyjson.Number("NaN"), pyjson.Number("1"), pyjson.Number("2")}, "score 1 is NaN"},
		{"infinity", 5, []any{pyjson.Number("1"), pyjson.Number("1e999"), pyjson.Number("2")}, "expanded case heldout-existing: invalid_cross_encoder_scores: score 2"},
		{"too few", 2, []any{pyjson.Number("1"), pyjson.Number("2")}, "2 scores for 3 candidates"},
		{"too many", 12, []any{pyjson.Number("1"), pyjson.Number("2")}, "2 scores for 1 candidates"},
		{"a string", 3, []any{"1", pyjson.Number("2"), pyjson.Number("3")}, `score 1 is "1"`},
		{"not a list", 4, pyjson.NewObject("a", 1), "scores must be a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := publishedPayload(t, func(i int, c *pyjson.Object) {
				if i == tc.call {
					c.Set("scores", tc.scores)
				}
			})
			sc, err := ParseScoring(payload, calls)
			require.NoError(t, err, "the payload's shape is fine; the contract judges the scores")
			_, err = s.Fresh(ctx, sc.Recording(calls, "test", ""))
			require.Error(t, err)
			code, ok := reason.Of(err)
			require.True(t, ok, err.Error())
			assert.Equal(t, reason.InvalidCrossEncoderScores, code)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestCompareAgainstThePublishedLogits: identical logits differ by 0 and
// agree everywhere; a nudge shows per pair; a swap that changes one order
// and the summary is reported as such.
func TestCompareAgainstThePublishedLogits(t *testing.T) {
	s := openSuite(t)
	ctx := context.Background()
	calls, err := s.EncoderCalls(ctx)
	require.NoError(t, err)
	pub, err := s.CrossEncoder(ctx, NewRecordedEncoder(mustParse(t, recordings.RerankCrossEncoder)))
	require.NoError(t, err)
	run := func(edit func(i int, c *pyjson.Object)) *rerank.CrossEncoderRecord {
		sc, err := ParseScoring(publishedPayload(t, edit), calls)
		require.NoError(t, err)
		rec, err := s.Fresh(ctx, sc.Recording(calls, "test", ""))
		require.NoError(t, err)
		return rec
	}

	same, err := Compare(run(nil), pub)
	require.NoError(t, err)
	assert.Equal(t, 44, same.Pairs)
	assert.Zero(t, same.MaxAbsDiff)
	assert.Zero(t, same.MeanAbsDiff)
	assert.Equal(t, 16, same.OrdersAgree)
	assert.True(t, same.AllOrdersSame)
	assert.True(t, same.Summary.Agrees)

	// Nudge one logit of utf8-write by 0.25: the order stays.
	nudged, err := Compare(run(func(i int, c *pyjson.Object) {
		if i == 0 {
			c.Set("scores", []any{pyjson.Number("2.964599847793579"), pyjson.Number("5.457228660583496"), pyjson.Number("-11.016639709472656")})
		}
	}), pub)
	require.NoError(t, err)
	assert.InDelta(t, 0.25, nudged.MaxAbsDiff, 1e-12)
	assert.InDelta(t, 0.25/44, nudged.MeanAbsDiff, 1e-12)
	assert.InDelta(t, 0.25, nudged.Calls[0].Pairs[1].Diff, 1e-12)
	assert.Equal(t, "path-write", nudged.Calls[0].Pairs[1].SourceID)
	assert.True(t, nudged.AllOrdersSame)

	// Reverse heldout-encoding's logits: its top-1 misses, so its order and
	// the diagnostic summary disagree.
	flipped, err := Compare(run(func(i int, c *pyjson.Object) {
		if i == 4 {
			scores, _ := c.Get("scores")
			list := scores.([]any)
			c.Set("scores", []any{list[2], list[1], list[0]})
		}
	}), pub)
	require.NoError(t, err)
	assert.False(t, flipped.Calls[4].OrderAgrees)
	assert.Equal(t, 15, flipped.OrdersAgree)
	assert.False(t, flipped.AllOrdersSame)
	assert.False(t, flipped.Summary.Agrees, fmt.Sprint(flipped.Summary.Fresh.Diagnostic.CrossEncoder))
}

func mustParse(t testing.TB, data []byte) *recording.File {
	t.Helper()
	f, err := recording.Parse(data)
	require.NoError(t, err)
	return f
}

func pyget(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

// FuzzParseScoring: any payload is refused with an error or parsed into one
// response per call; neither panics, and a parsed one always makes a
// recording the contract can judge.
func FuzzParseScoring(f *testing.F) {
	s, err := Open(bundledInputs())
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	calls, err := s.EncoderCalls(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(publishedPayload(f, nil))
	f.Add(`{"format": "ragagent-cross-encoder-scores/1", "model": {}, "calls": []}`)
	f.Add(`{"format": "ragagent-cross-encoder-scores/1"}`)
	f.Fuzz(func(t *testing.T, payload string) {
		sc, err := ParseScoring(payload, calls)
		if err != nil {
			return
		}
		if len(sc.Responses) != len(calls) {
			t.Fatalf("%d responses for %d calls", len(sc.Responses), len(calls))
		}
		file := sc.Recording(calls, "fuzz", "")
		if _, err := s.Fresh(context.Background(), file); err != nil {
			if code, ok := reason.Of(err); !ok || code != reason.InvalidCrossEncoderScores {
				t.Fatalf("a parsed payload failed outside the contract: %v", err)
			}
		}
	})
}
