package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

const listwiseSpec = `{"name": "lw", "tokenizer": "stemmed", "second_stage": {"method": "listwise", "depth": 3}}`
const firstStageSpec = `{"name": "lw", "tokenizer": "stemmed"}`

func ledgerWith(t *testing.T, usd float64) *budget.Memory {
	t.Helper()
	s := budget.NewMemory(nil)
	l, err := budget.Open(s, func() time.Time { return now })
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(usd))
	return s
}

func ranks(t *testing.T, res *engine.RetrievalResult, config string) []any {
	t.Helper()
	for _, c := range res.Configs {
		if c.Name == config {
			out := []any{}
			for _, r := range c.Cases {
				if r.Rank == nil {
					out = append(out, nil)
				} else {
					out = append(out, *r.Rank)
				}
			}
			return out
		}
	}
	t.Fatalf("no configuration %s", config)
	return nil
}

func listwiseRequest(spec string, run *engine.ListwiseRun) engine.RetrievalRequest {
	return engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(spec)}}, Listwise: run}
}

// TestListwiseStageReservesRecordsAndReplays: the plan names every
// request before any is sent; each is reserved and settled in the ledger;
// the stage applies Gemini's order (the fake's "incoming" order leaves the
// first stage's ranks, "reversed" changes them); the recording replays to
// the same result, and a changed configuration does not replay.
func TestListwiseStageReservesRecordsAndReplays(t *testing.T) {
	first, err := open(t, 20).Retrieval(context.Background(), engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(firstStageSpec)}}})
	require.NoError(t, err)

	e := open(t, 20)
	store := ledgerWith(t, 0.05)
	incoming := &inProcess{key: true, responder: geminitest.Ranking(geminitest.RankIncoming)}
	var plan *engine.ListwisePlan
	var calls []int
	res, err := e.Retrieval(context.Background(), listwiseRequest(listwiseSpec, &engine.ListwiseRun{Transport: incoming, Ledger: store,
		OnPlan: func(p *engine.ListwisePlan) error {
			plan = p
			assert.Zero(t, incoming.calls(), "the plan comes first")
			return nil
		},
		OnCall: func(done, total int) { calls = append(calls, done); assert.Equal(t, 3, total) }}))
	require.NoError(t, err)
	require.NotNil(t, plan)
	require.Len(t, plan.Calls, 3, "one request per answerable case")
	assert.Equal(t, "lw: overwrite", plan.Calls[0].CaseID)
	assert.Positive(t, plan.TotalUSD)
	assert.Equal(t, []int{1, 2, 3}, calls)
	assert.Equal(t, 3, incoming.calls())
	assert.Equal(t, ranks(t, first, "lw"), ranks(t, res, "lw"), "Gemini's incoming order keeps the first stage's ranks")
	require.NotNil(t, res.Listwise)
	assert.Equal(t, 3, res.Listwise.Requests)
	assert.Empty(t, res.Listwise.Refused)
	require.Len(t, res.Listwise.Ledger.Entries, 3)
	for _, en := range res.Listwise.Ledger.Entries {
		assert.Equal(t, budget.Completed, en.Outcome)
	}

	rec := res.Listwise.Recording
	require.NotNil(t, rec)
	require.Len(t, rec.Trials, 1)
	assert.Len(t, rec.Trials[0].Exchanges, 3)
	replayed, err := open(t, 20).Retrieval(context.Background(), listwiseRequest(listwiseSpec, &engine.ListwiseRun{Replay: rec}))
	require.NoError(t, err)
	want, _ := json.Marshal(res)
	got, _ := json.Marshal(replayed)
	assert.JSONEq(t, string(want), string(got), "the recording replays to the same result")
	_, err = open(t, 20).Retrieval(context.Background(), listwiseRequest(`{"name": "lw", "tokenizer": "stemmed", "second_stage": {"method": "listwise", "depth": 2}}`, &engine.ListwiseRun{Replay: rec}))
	code, _ := reason.Of(err)
	assert.Equal(t, reason.ReplayRequestMismatch, code, "other candidates are other requests: %v", err)

	reversed := &inProcess{key: true, responder: geminitest.Ranking(geminitest.RankReversed)}
	rev, err := open(t, 20).Retrieval(context.Background(), listwiseRequest(listwiseSpec, &engine.ListwiseRun{Transport: reversed, Ledger: ledgerWith(t, 0.05)}))
	require.NoError(t, err)
	assert.NotEqual(t, ranks(t, res, "lw"), ranks(t, rev, "lw"), "Gemini's order is applied")
}

// TestListwiseStageRefusals: checked in the reranking lab's order before
// anything is reserved or sent; without a run the stage is refused as
// offline; a reply that is no permutation leaves that case in first-stage
// order and is reported.
func TestListwiseStageRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       bool
		allowance int
		store     *budget.Memory
		code      reason.Code
		says      string
	}{
		{"no key first", false, 2, budget.NewMemory(nil), reason.MissingAPIKey, "no Gemini API key"},
		{"then the allowance", true, 2, budget.NewMemory(nil), reason.BatchRequestLimit, "3 requests are needed and 2"},
		{"then a budget", true, 3, budget.NewMemory(nil), "", "set a budget first"},
		{"then all of them within it", true, 3, ledgerWith(t, 0.0001), reason.BudgetExceeded, "nothing was sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &inProcess{key: tc.key, responder: geminitest.Ranking(geminitest.RankIncoming)}
			_, err := open(t, tc.allowance).Retrieval(context.Background(), listwiseRequest(listwiseSpec, &engine.ListwiseRun{Transport: tr, Ledger: tc.store}))
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, err.Error(), tc.says)
			assert.Zero(t, tr.calls(), "nothing sent")
			l, err := budget.Open(tc.store, func() time.Time { return now })
			require.NoError(t, err)
			assert.Empty(t, l.Statement().Entries, "nothing reserved")
		})
	}
	t.Run("no run", func(t *testing.T) {
		_, err := open(t, 3).Retrieval(context.Background(), listwiseRequest(listwiseSpec, nil))
		code, _ := reason.Of(err)
		assert.Equal(t, reason.UnknownConfig, code)
		assert.ErrorContains(t, err, "`ragagent retrieval --live` plans and sends them through the ledger")
	})
	t.Run("a reply that is no permutation", func(t *testing.T) {
		first, err := open(t, 3).Retrieval(context.Background(), engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(firstStageSpec)}}})
		require.NoError(t, err)
		bad := &inProcess{key: true, responder: geminitest.ResponderFunc(func(geminitest.Request) geminitest.Reply {
			return geminitest.Decision(pyjson.NewObject("ranked_ids", []any{"p1"}))
		})}
		res, err := open(t, 3).Retrieval(context.Background(), listwiseRequest(listwiseSpec, &engine.ListwiseRun{Transport: bad, Ledger: ledgerWith(t, 0.05)}))
		require.NoError(t, err)
		require.Len(t, res.Listwise.Refused, 3)
		assert.Equal(t, reason.RankingNotCandidatePermutation, res.Listwise.Refused[0].Code)
		assert.Equal(t, "overwrite", res.Listwise.Refused[0].CaseID)
		assert.Equal(t, ranks(t, first, "lw"), ranks(t, res, "lw"), "refused cases keep the first stage's order")
	})
}
