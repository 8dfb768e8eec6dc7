package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// TestAgentTrialsAreKeptTrialByTrial: a running experiment keeps each
// graded trial once with its done count and progress event (a second of
// the same index is refused, nothing kept); a queued, ended or revoked
// token's experiment keeps nothing; Trials reads them back by index; on
// both stores.
func TestAgentTrialsAreKeptTrialByTrial(t *testing.T) {
	eachExperiments(t, testAgentTrialsAreKeptTrialByTrial)
}

func testAgentTrialsAreKeptTrialByTrial(t *testing.T, s experimentStore) {
	ctx := context.Background()
	require.NoError(t, s.AddToken(ctx, store.Token{ID: "tok_1", Name: "a", Hash: "01", Scopes: []string{"run"}, DailyRequests: 1, DailyLiveCalls: 1, CreatedAt: t0}))
	add := func(id string) {
		_, err := s.AddExperiment(ctx, store.NewExperiment{ID: id, TokenID: "tok_1", Kind: "agent", Spec: `{}`, Total: 4, At: t0}, 9, xev("queued"))
		require.NoError(t, err)
	}
	add("exp_a")
	add("exp_b")
	_, ok, err := s.StartExperiment(ctx, 1, t0, xev("started"))
	require.NoError(t, err)
	require.True(t, ok)
	progress := store.NewEvent{Type: "progress", Data: `{}`, At: t0}

	_, err = s.KeepTrial(ctx, "exp_a", store.Trial{Index: 2, ID: "c-agent-1", Data: `{"id":"c-agent-1"}`}, 1, progress)
	require.NoError(t, err)
	_, err = s.KeepTrial(ctx, "exp_a", store.Trial{Index: 0, ID: "a-fixed-1", Data: `{"id":"a-fixed-1"}`}, 2, progress)
	require.NoError(t, err)
	_, err = s.KeepTrial(ctx, "exp_a", store.Trial{Index: 0, ID: "a-fixed-1", Data: `{}`}, 3, progress)
	assert.Error(t, err, "a trial kept twice is refused")
	_, err = s.KeepTrial(ctx, "exp_b", store.Trial{Index: 0, ID: "a-fixed-1", Data: `{}`}, 1, progress)
	assert.ErrorIs(t, err, store.ErrNotRunning, "a queued experiment keeps nothing")

	kept, err := s.Trials(ctx, "exp_a")
	require.NoError(t, err)
	assert.Equal(t, []store.Trial{{Index: 0, ID: "a-fixed-1", Data: `{"id":"a-fixed-1"}`}, {Index: 2, ID: "c-agent-1", Data: `{"id":"c-agent-1"}`}}, kept)
	x, _, err := s.Experiment(ctx, "exp_a")
	require.NoError(t, err)
	assert.Equal(t, 2, x.Done, "the refused trial left the count")
	_, evs, _, err := s.ExperimentTail(ctx, "exp_a", 0, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 4, "queued, started, two progress")
	none, err := s.Trials(ctx, "exp_b")
	require.NoError(t, err)
	assert.Empty(t, none)

	_, _, err = s.RevokeToken(ctx, "tok_1", t0, func(r store.Run) store.NewEvent { return store.NewEvent{Type: "end", Data: `{}`, At: t0} })
	require.NoError(t, err)
	_, err = s.KeepTrial(ctx, "exp_a", store.Trial{Index: 1, ID: "a-agent-1", Data: `{}`}, 3, progress)
	assert.ErrorIs(t, err, store.ErrRevoked)
	_, ok, err = s.FinishExperiment(ctx, "exp_a", store.ExperimentOutcome{State: store.ExperimentCancelled, At: t0}, xev("end"))
	require.NoError(t, err)
	require.True(t, ok)
	_, err = s.KeepTrial(ctx, "exp_a", store.Trial{Index: 1, ID: "a-agent-1", Data: `{}`}, 3, progress)
	assert.ErrorIs(t, err, store.ErrNotRunning)
	kept, err = s.Trials(ctx, "exp_a")
	require.NoError(t, err)
	assert.Len(t, kept, 2, "nothing kept after the revoke or the end")
}
