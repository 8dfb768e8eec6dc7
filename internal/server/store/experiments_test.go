package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

func xev(typ string) store.ExperimentEventFunc {
	return func(x store.Experiment) store.NewEvent {
		return store.NewEvent{Type: typ, Data: `{"state":"` + x.State + `"}`, At: t0}
	}
}

// experimentStore is a store that keeps experiments and their agent
// trials: both kinds do.
type experimentStore interface {
	store.Store
	store.Experiments
	store.AgentTrials
}

// eachExperiments runs a test on both stores (each), as experiment
// stores.
func eachExperiments(t *testing.T, test func(t *testing.T, s experimentStore)) {
	each(t, func(t *testing.T, open func(string) store.Store) {
		s, ok := open("").(experimentStore)
		require.True(t, ok, "the store keeps experiments and agent trials")
		test(t, s)
	})
}

// TestExperimentsAreKeptRankingByRanking: admission holds the per-token
// cap of queued and running experiments (a revoked token's is refused),
// they start oldest first under the running cap, each ranking is kept
// once with its progress event (a second of the same case and
// configuration is refused, nothing kept), nothing is kept once the
// experiment has ended, and the tail reads its state with its events;
// on both stores (D1's each change one batch).
func TestExperimentsAreKeptRankingByRanking(t *testing.T) {
	eachExperiments(t, testExperimentsAreKeptRankingByRanking)
}

func testExperimentsAreKeptRankingByRanking(t *testing.T, s experimentStore) {
	ctx := context.Background()
	add := func(id, token string) error {
		_, err := s.AddExperiment(ctx, store.NewExperiment{ID: id, TokenID: token, Kind: "retrieval", Spec: `{}`, Total: 4, At: t0}, 2, xev("queued"))
		return err
	}
	require.NoError(t, add("exp_a", "tok_1"))
	require.NoError(t, add("exp_b", "tok_1"))
	assert.ErrorIs(t, add("exp_c", "tok_1"), store.ErrExperimentQuota)
	require.NoError(t, add("exp_d", "tok_2"))

	first, ok, err := s.StartExperiment(ctx, 1, t0, xev("started"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "exp_a", first.ID, "oldest first")
	_, ok, err = s.StartExperiment(ctx, 1, t0, xev("started"))
	require.NoError(t, err)
	assert.False(t, ok, "one at a time")

	_, err = s.KeepRanking(ctx, "exp_a", store.Ranked{C: 0, A: 1, Data: `{"rank":1}`}, 1, store.NewEvent{Type: "progress", Data: `{}`, At: t0})
	require.NoError(t, err)
	_, err = s.KeepRanking(ctx, "exp_a", store.Ranked{C: 0, A: 1, Data: `{"rank":2}`}, 2, store.NewEvent{Type: "progress", Data: `{}`, At: t0})
	assert.Error(t, err, "a case ranked twice is refused")
	_, err = s.KeepRanking(ctx, "exp_b", store.Ranked{C: 0, A: 0, Data: `{}`}, 1, store.NewEvent{Type: "progress", Data: `{}`, At: t0})
	assert.ErrorIs(t, err, store.ErrNotRunning, "a queued experiment keeps nothing")
	kept, err := s.Rankings(ctx, "exp_a")
	require.NoError(t, err)
	assert.Equal(t, []store.Ranked{{C: 0, A: 1, Data: `{"rank":1}`}}, kept)
	x, found, err := s.Experiment(ctx, "exp_a")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 1, x.Done)

	ended, ok, err := s.FinishExperiment(ctx, "exp_a", store.ExperimentOutcome{State: store.ExperimentCancelled, At: t0}, xev("end"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, store.ExperimentCancelled, ended.State)
	_, err = s.KeepRanking(ctx, "exp_a", store.Ranked{C: 1, A: 0, Data: `{}`}, 2, store.NewEvent{Type: "progress", Data: `{}`, At: t0})
	assert.ErrorIs(t, err, store.ErrNotRunning)
	_, ok, err = s.FinishExperiment(ctx, "exp_a", store.ExperimentOutcome{State: store.ExperimentFailed, At: t0}, xev("end"))
	require.NoError(t, err)
	assert.False(t, ok, "ended once")
	state, evs, found, err := s.ExperimentTail(ctx, "exp_a", 0, 10)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, store.ExperimentCancelled, state)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	assert.Equal(t, []string{"queued", "started", "progress", "end"}, types)
	require.NoError(t, add("exp_e", "tok_1"), "the cancel freed a place")

	mine, err := s.ExperimentsOf(ctx, "tok_1", 0, 10)
	require.NoError(t, err)
	var ids []string
	for _, x := range mine {
		ids = append(ids, x.ID)
	}
	assert.Equal(t, []string{"exp_e", "exp_b", "exp_a"}, ids, "newest first, the token's own")

	tok := store.Token{ID: "tok_3", Name: "x", Hash: "00", Scopes: []string{"run"}, DailyRequests: 1, DailyLiveCalls: 1, CreatedAt: t0}
	require.NoError(t, s.AddToken(ctx, tok))
	_, _, err = s.RevokeToken(ctx, "tok_3", t0, func(r store.Run) store.NewEvent { return store.NewEvent{Type: "end", Data: `{}`, At: t0} })
	require.NoError(t, err)
	assert.ErrorIs(t, add("exp_f", "tok_3"), store.ErrRevoked)
}

// TestD1KeepsNoExperimentRowOverItsLimit: D1 keeps at most 2,000,000
// bytes in a row (Cloudflare's limit; the local D1 does not enforce it),
// so the D1 store refuses a request, or a result beside its request, that
// would pass it, with a TooLargeError, and keeps nothing of it: the
// experiment stays as it was, to be ended another way.
func TestD1KeepsNoExperimentRowOverItsLimit(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBatcher(ctx, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	s, err := store.NewD1(ctx, b, 0)
	require.NoError(t, err)
	var tooLarge *store.TooLargeError
	_, err = s.AddExperiment(ctx, store.NewExperiment{ID: "exp_big", TokenID: "tok_1", Kind: "retrieval",
		Spec: `{"cases": "` + strings.Repeat("x", store.D1MaxRow) + `"}`, Total: 1, At: t0}, 2, xev("queued"))
	require.ErrorAs(t, err, &tooLarge)
	assert.Contains(t, err.Error(), "a row of D1 keeps at most")
	_, found, err := s.Experiment(ctx, "exp_big")
	require.NoError(t, err)
	assert.False(t, found, "nothing kept")

	spec := `{"cases": "` + strings.Repeat("x", store.D1MaxRow/2) + `"}`
	_, err = s.AddExperiment(ctx, store.NewExperiment{ID: "exp_a", TokenID: "tok_1", Kind: "retrieval", Spec: spec, Total: 1, At: t0}, 2, xev("queued"))
	require.NoError(t, err, "half the row is kept")
	_, ok, err := s.StartExperiment(ctx, 1, t0, xev("started"))
	require.NoError(t, err)
	require.True(t, ok)
	_, ended, err := s.FinishExperiment(ctx, "exp_a", store.ExperimentOutcome{State: store.ExperimentSucceeded,
		Result: strings.Repeat("r", store.D1MaxRow/2), At: t0}, xev("end"))
	require.ErrorAs(t, err, &tooLarge, "the result beside the request is over the row")
	assert.False(t, ended)
	x, found, err := s.Experiment(ctx, "exp_a")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, store.ExperimentRunning, x.State, "nothing changed")
	_, ended, err = s.FinishExperiment(ctx, "exp_a", store.ExperimentOutcome{State: store.ExperimentFailed, Error: `{"code": "too_many_cases"}`, At: t0}, xev("end"))
	require.NoError(t, err)
	assert.True(t, ended, "a failure instead is kept")
}
