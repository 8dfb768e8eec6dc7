package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// budgeted is a ledger store with the budget set (none when usd < 0).
func budgeted(t *testing.T, e *engine.Engine, usd float64) *budget.Memory {
	t.Helper()
	s := budget.NewMemory(nil)
	if usd >= 0 {
		_, err := e.SetBudget(s, usd)
		require.NoError(t, err)
	}
	return s
}

func TestPlanLiveEvalRefusesWhole(t *testing.T) {
	e := open(t, 60)
	probe, err := e.PlanLiveEval(engine.LiveEvalRequest{Transport: &inProcess{key: true}, Ledger: budget.NewMemory(nil)})
	require.NoError(t, err)
	require.NotNil(t, probe.WorstCaseUSD)
	worst := *probe.WorstCaseUSD
	assert.Equal(t, 2*len(probe.Cases), probe.Trials, "one trial per case and path")
	assert.Equal(t, []string{"fixed", "agent"}, probe.Modes)
	for _, tc := range []struct {
		name    string
		key     bool
		usd     float64
		code    reason.Code
		message string
	}{
		{"no key first", false, 1e6, reason.MissingAPIKey, "no Gemini API key"},
		{"then a budget", true, -1, "", "set a budget first"},
		{"then the worst case within it", true, worst * 0.99, reason.BudgetExceeded, "nothing was sent"},
		{"allowed", true, worst, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.PlanLiveEval(engine.LiveEvalRequest{Transport: &inProcess{key: tc.key}, Ledger: budgeted(t, e, tc.usd)})
			require.NoError(t, err)
			if tc.message == "" {
				assert.Nil(t, p.Refusal)
				return
			}
			require.NotNil(t, p.Refusal)
			assert.Equal(t, tc.code, p.Refusal.Code)
			assert.Contains(t, p.Refusal.Message, tc.message)
		})
	}
	t.Run("a refused eval sends and reserves nothing", func(t *testing.T) {
		transport := &inProcess{key: true}
		store := budgeted(t, e, worst*0.5)
		_, err := e.EvalLive(context.Background(), engine.LiveEvalRequest{Transport: transport, Ledger: store, Save: func([]byte) error { return nil }})
		code, _ := reason.Of(err)
		assert.Equal(t, reason.BudgetExceeded, code)
		assert.Zero(t, transport.calls())
		st, err := e.Ledger(store)
		require.NoError(t, err)
		assert.Empty(t, st.Entries)
	})
}

func TestEvalLiveReservesEveryRequestAndGrades(t *testing.T) {
	e := open(t, 60)
	transport := &inProcess{key: true}
	store := budgeted(t, e, 1000)
	var saved []byte
	var seen []int
	res, err := e.EvalLive(context.Background(), engine.LiveEvalRequest{Transport: transport, Ledger: store,
		Save:    func(b []byte) error { saved = b; return nil },
		OnTrial: func(done, total int, _ string) { seen = append(seen, done) }})
	require.NoError(t, err)
	assert.False(t, res.Cancelled)
	assert.Equal(t, res.Planned, res.Summary.Trials)
	assert.Len(t, seen, res.Planned)
	assert.Equal(t, engine.Gemini, res.Policy)
	require.Len(t, res.Experiment.Paths, 2)
	assert.Equal(t, transport.calls(), res.Requests)
	require.Len(t, res.Ledger.Entries, transport.calls(), "one reservation per request sent")
	for _, en := range res.Ledger.Entries {
		assert.Equal(t, budget.Completed, en.Outcome)
	}
	file, err := engine.ParseRecording(saved)
	require.NoError(t, err)
	assert.Len(t, file.Trials, res.Planned)

	// The recording replays to the same grades, offline.
	replayed, err := e.Eval(context.Background(), engine.EvalRequest{Policy: engine.Replay, File: file})
	require.NoError(t, err)
	assert.Equal(t, res.Summary, replayed.Summary)
}

func TestEvalLiveCancelHoldsTheLedgerUntilItStops(t *testing.T) {
	e := open(t, 60)
	transport := &inProcess{key: true, block: true}
	store := budgeted(t, e, 1000)
	job := engine.Start(e, func(ctx context.Context) (*engine.LiveEvalResult, error) {
		return e.EvalLive(ctx, engine.LiveEvalRequest{Transport: transport, Ledger: store, Save: func([]byte) error { return nil }})
	})
	require.Eventually(t, func() bool { return transport.calls() == 1 }, 5*time.Second, time.Millisecond)
	_, err := e.SetBudget(store, 1)
	assert.Error(t, err, "no budget change while the eval spends")
	_, err = e.EvalLive(context.Background(), engine.LiveEvalRequest{Transport: transport, Ledger: store})
	assert.ErrorIs(t, err, engine.ErrLedgerBusy)
	require.True(t, e.Cancel(job.ID))
	res, err := job.Wait()
	require.NoError(t, err)
	assert.True(t, res.Cancelled)
	assert.Equal(t, 1, res.Summary.Trials, "no trial starts after the cancel")
	assert.Less(t, res.Summary.Trials, res.Planned)
	require.Len(t, res.Ledger.Entries, 1)
	assert.Equal(t, string(reason.Cancelled), res.Ledger.Entries[0].Outcome)
	_, err = e.SetBudget(store, 1)
	assert.NoError(t, err)
}
