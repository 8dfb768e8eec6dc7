package reranklab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/recordings"
)

// reply is one canned transport answer.
type reply struct {
	status int
	body   string
	err    error
}

// fakeTransport answers from a script and checks, at every Post, that the
// ledger already holds a saved reservation for this very request.
type fakeTransport struct {
	t       *testing.T
	key     bool
	script  []reply
	posts   [][]byte
	store   *budget.Memory
	reserve []int // number of saved reservations seen at each Post
}

func (f *fakeTransport) HasKey() bool { return f.key }

func (f *fakeTransport) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	assert.Equal(f.t, gemini.ModelEndpoint(ListwiseModel), endpoint)
	deadline, ok := ctx.Deadline()
	assert.True(f.t, ok, "every request has a deadline")
	assert.LessOrEqual(f.t, time.Until(deadline), gemini.MaxCallTimeout)
	if f.store != nil {
		l, err := budget.Open(f.store, fixedClock)
		require.NoError(f.t, err)
		entries := l.Entries()
		require.NotEmpty(f.t, entries, "a request was sent before its reservation was saved")
		assert.Equal(f.t, budget.Reserved, entries[len(entries)-1].Outcome)
		f.reserve = append(f.reserve, len(entries))
	}
	f.posts = append(f.posts, body)
	if len(f.posts) > len(f.script) {
		f.t.Fatalf("unexpected request %d", len(f.posts))
	}
	r := f.script[len(f.posts)-1]
	return r.status, []byte(r.body), r.err
}

func fixedClock() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// okBody is a generateContent reply carrying a proposal.
func okBody(ids ...string) string {
	list := make([]any, len(ids))
	for i, id := range ids {
		list[i] = id
	}
	text := pyjson.Dumps(pyjson.NewObject("ranked_ids", list), pyjson.Options{})
	return pyjson.Dumps(pyjson.NewObject("candidates", []any{pyjson.NewObject(
		"content", pyjson.NewObject("parts", []any{pyjson.NewObject("text", text)}, "role", "model"),
		"finishReason", "STOP")}, "usageMetadata", pyjson.NewObject("promptTokenCount", 360)), pyjson.Options{})
}

// publishedBodies are the bundled recording's replies, in case order.
func publishedBodies(t *testing.T) []reply {
	t.Helper()
	file, err := recording.Parse(recordings.RerankGemini)
	require.NoError(t, err)
	var out []reply
	for _, tr := range file.Trials {
		out = append(out, reply{status: 200, body: pyjson.Dumps(tr.Exchanges[0].Response, pyjson.Options{})})
	}
	return out
}

// liveRun is a live listwise model over a fake transport, with its
// attempts kept as exchanges.
type liveRun struct {
	live      *LiveRanker
	transport *fakeTransport
	ledger    *budget.Ledger
	exchanges []recording.Exchange
}

func liveSetup(t *testing.T, budgetUSD float64, key bool, script []reply) *liveRun {
	t.Helper()
	return liveWith(t, budgetUSD, 200, key, script)
}

func liveWith(t *testing.T, budgetUSD float64, allowance int, key bool, script []reply) *liveRun {
	t.Helper()
	store := budget.NewMemory(nil)
	ledger, err := budget.Open(store, fixedClock)
	require.NoError(t, err)
	require.NoError(t, ledger.SetBudget(budgetUSD))
	a, err := gemini.NewAllowance(allowance)
	require.NoError(t, err)
	r := &liveRun{transport: &fakeTransport{t: t, key: key, script: script, store: store}, ledger: ledger}
	r.live, err = NewLiveRanker(LiveRankerConfig{Transport: r.transport, Allowance: a, Ledger: ledger, Rate: defaultRate(t),
		Record: func(at gemini.Attempt) error {
			if !at.Pending { // the write-ahead record before sending is replaced by this one
				r.exchanges = append(r.exchanges, recording.ExchangeOf(at))
			}
			return nil
		}})
	require.NoError(t, err)
	return r
}

func outcomes(l *budget.Ledger) []string {
	var out []string
	for _, e := range l.Entries() {
		out = append(out, e.Outcome)
	}
	return out
}

// TestLiveRerankSendsTheRecordedBytesAfterReservingEach runs the live path
// against a transport that answers with the published proposals: it sends
// exactly the bytes the bundled recording holds, reserves (and saves) before
// each request, and its own recording replays to the same record.
func TestLiveRerankSendsTheRecordedBytesAfterReservingEach(t *testing.T) {
	s := openSuite(t)
	r := liveSetup(t, 0.05, true, publishedBodies(t))
	ft, ledger := r.transport, r.ledger
	assert.Equal(t, gemini.ModelEndpoint(ListwiseModel), r.live.Endpoint())
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	assert.Empty(t, rec.Failed())
	assert.Equal(t, []int{1, 2, 3, 4}, ft.reserve)

	file, err := recording.Parse(recordings.RerankGemini)
	require.NoError(t, err)
	require.Len(t, ft.posts, 4)
	for i, body := range ft.posts {
		assert.Equal(t, string(gemini.Body(file.Trials[i].Exchanges[0].Request)), string(body), "request %d", i+1)
	}
	assert.Equal(t, []string{budget.Completed, budget.Completed, budget.Completed, budget.Completed}, outcomes(ledger))
	for i, e := range ledger.Entries() {
		assert.Equal(t, rec.Calls[i].EstimatedUSD, e.EstimatedUSD)
		assert.Equal(t, rec.Calls[i].RequestSHA256, e.RequestSHA256)
		assert.Equal(t, ListwiseModel, e.Model)
	}
	assert.Contains(t, ledger.Entries()[0].Label, "How do I explicitly select UTF-8")

	saved := &recording.File{Trials: []recording.Trial{{ID: "live", Exchanges: r.exchanges}}}
	replaysTo(t, s, saved, rec, "live cases replayed from the live recording")
}

// replaysTo asserts that file replays to the cases of the live run rec.
func replaysTo(t *testing.T, s *Suite, file *recording.File, rec *rerank.GeminiRecord, what string) {
	t.Helper()
	replayed, err := s.Gemini(context.Background(), NewReplay(file), ListwiseReplayMode, defaultRate(t))
	require.NoError(t, err)
	a, _ := pyjson.ValueOf(rec).(*pyjson.Object).Get("cases")
	b, _ := pyjson.ValueOf(replayed).(*pyjson.Object).Get("cases")
	sameJSON(t, a, b, what)
}

// TestLiveRecordingReplays: the file a live run's recorder keeps (saved after
// every attempt) parses and replays to the live run's cases.
func TestLiveRecordingReplays(t *testing.T) {
	s := openSuite(t)
	var saves [][]byte
	head := recording.File{Model: ListwiseModel, Endpoint: gemini.ModelEndpoint(ListwiseModel), Config: LiveConfig(),
		RecordedAt: "2026-11-29T12:00:00Z"}
	rec0, err := recording.NewRecorder(head, func(data []byte) error {
		saves = append(saves, data)
		return nil
	})
	require.NoError(t, err)
	log, err := rec0.Begin(LiveTrial())
	require.NoError(t, err)
	r := liveSetup(t, 0.05, true, publishedBodies(t))
	allowance, err := gemini.NewAllowance(4)
	require.NoError(t, err)
	r.live, err = NewLiveRanker(LiveRankerConfig{Transport: r.transport, Allowance: allowance, Ledger: r.ledger,
		Rate: defaultRate(t), Record: log.Record})
	require.NoError(t, err)
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	require.Equal(t, 10, len(saves), "saved at the start, at the trial, and before and after each of the 4 attempts")

	file, err := recording.Parse(saves[len(saves)-1])
	require.NoError(t, err)
	assert.Equal(t, ListwiseModel, file.Model)
	assert.Equal(t, gemini.ModelEndpoint(ListwiseModel), file.Endpoint)
	assert.Equal(t, "2026-11-29T12:00:00Z", file.RecordedAt)
	require.Len(t, file.Trials, 1)
	assert.Equal(t, LiveTrialID, file.Trials[0].ID)
	replaysTo(t, s, file, rec, "live cases replayed from the live recording")
}

func TestLiveRerankRefusesPastTheBudgetWithoutSending(t *testing.T) {
	s := openSuite(t)
	// Room for two reservations of about $0.00198 each.
	r := liveSetup(t, 0.0045, true, publishedBodies(t))
	ft, ledger := r.transport, r.ledger
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	assert.Len(t, ft.posts, 2)
	failed := rec.Failed()
	require.Len(t, failed, 2)
	for _, c := range failed {
		assert.Equal(t, reason.BudgetExceeded, c.Error.Code)
	}
	assert.Len(t, ledger.Entries(), 2)
	assert.LessOrEqual(t, ledger.Spent(), 0.0045)
}

func TestLiveRerankWithoutAKeySendsAndReservesNothing(t *testing.T) {
	s := openSuite(t)
	r := liveSetup(t, 1, false, nil)
	ft, ledger := r.transport, r.ledger
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	assert.Empty(t, ft.posts)
	assert.Empty(t, ledger.Entries())
	require.Len(t, rec.Failed(), 4)
	assert.Equal(t, reason.MissingAPIKey, rec.Failed()[0].Error.Code)
}

// TestLiveRerankKeepsFailedReservationsAndNeverRetries: each case is one
// attempt whatever happens; every reservation stays.
func TestLiveRerankKeepsFailedReservationsAndNeverRetries(t *testing.T) {
	s := openSuite(t)
	pw, pr, jt := "c66643a4609c6ee157458bf4353f7446b9c6a200a3ef453846d6a18d5b5069a7", "c737db948e8111ae00e3442d8a22c80c876e43446dc1ee176ffe8ce142a41900", "e5455737b11664449f653280d89dfc2faaa9a14de16e9c3eb24296ca2ceea51c"
	script := []reply{
		{err: &gemini.TransportError{Kind: "URLError", Err: errors.New("connection refused")}},
		{status: 429, body: `{"error": {"code": 429}}`},
		{status: 200, body: okBody(jt, pr)}, // leaves one out
		{status: 200, body: okBody(jt, pr, pw)},
	}
	r := liveSetup(t, 1, true, script)
	ft, ledger := r.transport, r.ledger
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	assert.Len(t, ft.posts, 4, "no retries")
	codes := []reason.Code{}
	for _, c := range rec.Cases {
		if c.Error != nil {
			codes = append(codes, c.Error.Code)
		} else {
			codes = append(codes, "ok")
		}
	}
	assert.Equal(t, []reason.Code{"model_transport_failed:URLError", "model_transport_failed:HTTPError", reason.RankingNotCandidatePermutation, "ok"}, codes)
	assert.Equal(t, []string{"model_transport_failed:URLError", "model_transport_failed:HTTPError", budget.Completed, budget.Completed}, outcomes(ledger))
	assert.InDelta(t, rec.Calls[0].EstimatedUSD+rec.Calls[1].EstimatedUSD+rec.Calls[2].EstimatedUSD+rec.Calls[3].EstimatedUSD, ledger.Spent(), 1e-18)
	require.Len(t, r.exchanges, 4)
	assert.Equal(t, "URLError", r.exchanges[0].Error)
	assert.Equal(t, "HTTPError", r.exchanges[1].Error)
	assert.Equal(t, 429, r.exchanges[1].HTTPStatus)
	assert.NotNil(t, rec.Cases[2].Proposal, "a refused proposal is still shown")
	assert.Nil(t, rec.Cases[2].Gemini)
}

func TestLiveReplyRefusals(t *testing.T) {
	prompt := model.Prompt{System: "s", State: `{"question": "q", "candidates": []}`, Schema: pyjson.NewObject()}
	for _, c := range []struct {
		name string
		r    reply
		want reason.Code
	}{
		{"oversized reply", reply{status: 200, body: strings.Repeat(" ", gemini.MaxResponseBytes+1)}, reason.ProviderResponseBytesLimit},
		{"not JSON", reply{status: 200, body: "<html>"}, reason.InvalidModelJSON},
		{"unfinished", reply{status: 200, body: `{"candidates": [{"finishReason": "MAX_TOKENS"}]}`}, reason.UnfinishedModelReply},
		{"reply text not JSON", reply{status: 200, body: `{"candidates": [{"finishReason": "STOP", "content": {"parts": [{"text": "{"}]}}]}`}, reason.InvalidModelJSON},
		{"redirect", reply{status: 302}, "model_transport_failed:HTTPError"},
		{"timeout", reply{err: &gemini.TransportError{Kind: "TimeoutError"}}, "model_transport_failed:TimeoutError"},
		{"untyped error", reply{err: errors.New("boom")}, "model_transport_failed:URLError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := liveSetup(t, 1, true, []reply{c.r})
			ft, ledger := r.transport, r.ledger
			_, err := r.live.Decide(context.Background(), prompt, time.Second)
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.want, code)
			assert.Len(t, ft.posts, 1)
			assert.Equal(t, []string{string(c.want)}, outcomes(ledger), "the reservation stays, with the failure")
		})
	}
}

func TestLiveRefusesAnOversizedBodyBeforeReserving(t *testing.T) {
	r := liveSetup(t, 1, true, nil)
	ft, ledger := r.transport, r.ledger
	_, err := r.live.Decide(context.Background(), model.Prompt{System: "s", State: strings.Repeat("x", gemini.MaxRequestBytes), Schema: pyjson.NewObject()}, time.Second)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.ProviderInputBytesLimit, code)
	assert.Empty(t, ft.posts)
	assert.Empty(t, ledger.Entries())
}

func TestLiveStopsWhenTheLedgerCannotBeSaved(t *testing.T) {
	s := openSuite(t)
	r := liveSetup(t, 1, true, nil)
	r.transport.store.FailSaves(errors.New("read-only file system"))
	_, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	assert.ErrorContains(t, err, "read-only file system")
	assert.Empty(t, r.transport.posts)
}

func TestLiveAllowanceRefusalsReserveNothing(t *testing.T) {
	s := openSuite(t)
	r := liveWith(t, 1, 2, true, publishedBodies(t))
	rec, err := s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	require.NoError(t, err)
	assert.Len(t, r.transport.posts, 2)
	require.Len(t, rec.Failed(), 2)
	assert.Equal(t, reason.BatchRequestLimit, rec.Failed()[0].Error.Code)
	assert.Len(t, r.ledger.Entries(), 2, "a request the allowance refuses is not paid for")
}

func TestLiveStopsWhenAnAttemptCannotBeRecorded(t *testing.T) {
	s := openSuite(t)
	r := liveSetup(t, 1, true, publishedBodies(t))
	a, err := gemini.NewAllowance(10)
	require.NoError(t, err)
	r.live, err = NewLiveRanker(LiveRankerConfig{Transport: r.transport, Allowance: a, Ledger: r.ledger, Rate: defaultRate(t),
		Record: func(gemini.Attempt) error { return errors.New("disk full") }})
	require.NoError(t, err)
	_, err = s.Gemini(context.Background(), r.live, ListwiseLiveMode, defaultRate(t))
	assert.ErrorContains(t, err, "disk full")
	assert.Empty(t, r.transport.posts, "a request that cannot be recorded before it is sent is not sent; the run stops")
	require.Len(t, r.ledger.Entries(), 1)
	assert.Contains(t, r.ledger.Entries()[0].Outcome, "failed: ", "the reservation stays, marked failed")
}

func TestNewLiveNeedsItsParts(t *testing.T) {
	a, err := gemini.NewAllowance(1)
	require.NoError(t, err)
	_, err = NewLiveRanker(LiveRankerConfig{Transport: &fakeTransport{}, Allowance: a})
	assert.ErrorContains(t, err, "ledger")
	l, err := budget.Open(budget.NewMemory(nil), fixedClock)
	require.NoError(t, err)
	_, err = NewLiveRanker(LiveRankerConfig{Allowance: a, Ledger: l})
	assert.Error(t, err)
	_, err = NewLiveRanker(LiveRankerConfig{Transport: &fakeTransport{}, Allowance: a, Ledger: l, Endpoint: "http://example.com"})
	assert.ErrorContains(t, err, "loopback")
}
