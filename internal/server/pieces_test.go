package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server"
)

// pieceRound is one round of an owner's experiments (what a Worker's run
// object does at its alarm): how many still run after it, and how many
// units it kept.
func pieceRound(t testing.TB, ownerURL string) (running, kept int) {
	t.Helper()
	res, err := http.Post(ownerURL+"/runner/experiments/piece", "application/json", nil)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var got struct{ Running, Kept int }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	return got.Running, got.Kept
}

// On a Worker experiments run in pieces at their owner (a run object),
// a round per call (its alarm), never on a goroutine of their own: the
// front admits and starts the experiment and tells its owner; each round
// keeps at most ExperimentPiece.Units from what the store kept, and the
// last ends it with the command's result. Midway the owner is replaced
// by a fresh one over the same store (an object evicted, or its process
// killed, between two rounds): the fresh one goes on from what was
// kept, and the progress events go 1..total once each, nothing lost or
// repeated. The front streams the events from the owner. Both kinds.
func TestExperimentsRunInPiecesAtTheirOwner(t *testing.T) {
	rows := []struct {
		name, body  string
		total, unit int
		want        func(t *testing.T) string
		got         func(t testing.TB, body []byte) string
	}{
		{"retrieval", "", 68, 10, func(t *testing.T) string { return string(wantRetrieval(t, "seed", "general")) },
			func(_ testing.TB, body []byte) string { return string(body) }},
		{"agent", "", pythonTrials, 20, func(t *testing.T) string { return wantEval(t, "") }, unmeasured},
	}
	rows[0].body = experimentBody(t, `["seed", "general"]`)
	rows[1].body = agentBody(t, "")
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			piece := server.ExperimentPiece{Units: row.unit, Time: time.Minute}
			e := newEnv(t, options{packs: true, owner: true, piece: piece})
			tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
			want := row.want(t)
			posted := e.postExperiment(tok, row.body)
			id := idOf(t, posted)
			assert.Equal(t, "running", posted.json(t)["state"], "the front started it and told its owner")
			time.Sleep(50 * time.Millisecond)
			assert.Equal(t, 0.0, e.experiment(tok, id)["progress"].(map[string]any)["done"], "nothing runs between rounds")

			ownerURL := e.ownerURL
			done, rounds := 0, 0
			for {
				if rounds == 2 {
					// A fresh owner over the same store, as after an eviction.
					fresh, err := server.New(server.Config{Engine: e.engine, Store: e.store, Pepper: pepper, Clock: e.clock.Now,
						Dispatch: ownsAll{}, ExperimentPiece: piece, Poll: time.Hour, Log: slog.New(slog.NewTextHandler(e.log, nil))})
					require.NoError(t, err)
					srv := httptest.NewServer(fresh.RunnerHandler())
					defer srv.Close()
					ownerURL = srv.URL
				}
				running, kept := pieceRound(t, ownerURL)
				rounds++
				assert.LessOrEqual(t, kept, row.unit, "round %d", rounds)
				done += kept
				x := e.experiment(tok, id)
				assert.Equal(t, float64(done), x["progress"].(map[string]any)["done"], "round %d", rounds)
				if running == 0 {
					require.Equal(t, "succeeded", x["state"], x["error"])
					break
				}
				require.Less(t, rounds, 2*row.total/row.unit, "the experiment did not end")
			}
			assert.Equal(t, row.total, done)
			assert.Equal(t, (row.total+row.unit-1)/row.unit, rounds, "each round kept its units, the last what was left")

			r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
			require.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, want, row.got(t, r.body), "the command's result")
			checkProgress(t, e.experimentEvents(tok, id, nil), row.total)
		})
	}
}

// unreachableOwners is a front's Dispatch to owners that check
// experiments but cannot be told that one runs.
type unreachableOwners struct{ *ownerDispatch }

func (unreachableOwners) Experiment(context.Context, string) error {
	return errors.New("the owner cannot be reached")
}

// An experiment whose owner could not be told that it runs ends failed,
// internal_error, at once with its end event, as a run that could not be
// handed over does: not left running with nobody to run it.
func TestAnExperimentNotHandedOverFails(t *testing.T) {
	e := newEnv(t, options{packs: true, owner: true})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	front, err := server.New(server.Config{Engine: e.engine, Store: e.store, Pepper: pepper, Clock: e.clock.Now,
		Dispatch: unreachableOwners{&ownerDispatch{base: e.ownerURL}}, Log: slog.New(slog.NewTextHandler(e.log, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(front.Handler())
	defer srv.Close()
	e.base = srv.URL
	id := idOf(t, e.postExperiment(tok, experimentBody(t, `["seed"]`)))
	x := e.experiment(tok, id)
	require.Equal(t, "failed", x["state"])
	assert.Equal(t, "internal_error", x["error"].(map[string]any)["code"])
	evs, err := e.store.Events(context.Background(), id, 0, 10)
	require.NoError(t, err)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"queued", "started", "end"}, types)
	assert.Contains(t, e.log.String(), "handing an experiment to its runner")
}
