package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// Revoking a token ends what it started: with two of its Gemini runs
// running (each with a request in flight) and two queued, the revoke (made
// on the database, as ragagent tokens revoke makes it from another
// process) ends all four incomplete with reason token_revoked, each with
// its end event; the in-flight requests are aborted, nothing more is sent
// or charged, and the queued ones never start. Another token's run goes
// on. Before, all four went on after the revoke and the queued ones spent
// the server's key when they started.
func TestRevokeEndsTheTokensRunsAndSendsNothingMore(t *testing.T) {
	f := newFake(t, hanging())
	e := newEnv(t, options{endpoint: f.srv.URL, caps: storeCaps(4, 2, 8, 4)})
	alice := e.token("alice", []string{"read", "run", "live"}, 100, 100)
	bob := e.token("bob", []string{"read", "run", "live"}, 100, 100)
	gemini := `{` + overwrite + `, "policy": "gemini", "strategy": "enqueue"}`
	var runs []string
	for range 4 {
		runs = append(runs, e.start(alice, gemini))
	}
	bobs := e.start(bob, gemini)
	waitFor(t, func() bool { got, _ := f.counts(); return got == 3 }, "alice's two running runs and bob's have their requests in flight")
	for i, id := range runs {
		want := "running"
		if i >= 2 {
			want = "queued"
		}
		require.Equal(t, want, e.run(alice, id)["status"], "run %d", i)
	}

	aliceID := strings.Split(alice, "_")[1]
	revoked, ok, err := server.RevokeToken(context.Background(), e.store, aliceID, e.clock.Now())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Len(t, revoked.Dropped, 2, "the queued runs end at the revoke")
	assert.ElementsMatch(t, runs[:2], revoked.Stopping, "the running runs are asked to stop")

	ended := func(id string) store.Run {
		run, found, err := e.store.Run(context.Background(), id)
		require.NoError(t, err)
		require.True(t, found)
		return run
	}
	waitFor(t, func() bool {
		for _, id := range runs {
			if s := ended(id).Status; s == store.Queued || s == store.Running {
				return false
			}
		}
		return true
	}, "every run of the revoked token ended")
	for i, id := range runs {
		run := ended(id)
		assert.Equal(t, store.Incomplete, run.Status, "run %d", i)
		assert.Equal(t, "token_revoked", run.Reason, "run %d", i)
		evs, err := e.store.Events(context.Background(), id, 0, 100)
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		assert.Equal(t, "end", evs[len(evs)-1].Type, "run %d ends with its end event", i)
		assert.Contains(t, evs[len(evs)-1].Data, `"reason":"token_revoked"`)
		e.c.schema(t, "EndEvent", []byte(evs[len(evs)-1].Data))
		if i >= 2 {
			assert.Equal(t, []string{"queued", "end"}, []string{evs[0].Type, evs[1].Type}, "queued run %d never started", i)
		}
	}
	waitFor(t, func() bool { _, aborted := f.counts(); return aborted == 2 }, "the two in-flight requests were aborted")
	time.Sleep(200 * time.Millisecond) // ten polls: nothing more may go out
	got, _ := f.counts()
	assert.Equal(t, 3, got, "nothing more was sent")
	u, err := e.store.Usage(context.Background(), aliceID, "2026-11-29")
	require.NoError(t, err)
	assert.Equal(t, 2, u.LiveCalls, "nothing more was charged")

	r := e.do(req{method: "GET", path: "/v1/runs/" + runs[0], token: alice, valid: true})
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, "running", e.run(bob, bobs)["status"], "another token's run goes on")
	r = e.do(req{method: "POST", path: "/v1/runs/" + bobs + "/cancel", token: bob, valid: true})
	assert.Equal(t, http.StatusOK, r.status)

	_, ok, err = server.RevokeToken(context.Background(), e.store, aliceID, e.clock.Now())
	require.NoError(t, err)
	assert.False(t, ok, "a revoked token is not revoked twice")
}
