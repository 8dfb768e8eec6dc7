package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupOf is the group commit would run for fns, each write under its ctx.
func groupOf(ctxs []context.Context, fns []func(*wtx) error) []*writeReq {
	group := make([]*writeReq, len(fns))
	for i, fn := range fns {
		group[i] = &writeReq{ctx: ctxs[i], fn: fn, result: make(chan error, 1)}
	}
	return group
}

// openSQL is a new SQL store in a file, closed at the test's end.
func openSQL(t *testing.T) *SQL {
	s, err := OpenFile(context.Background(), filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// chargeFn is Charge's write of one request to token on day "d".
func chargeFn(ctx context.Context, t *testing.T, token string) func(*wtx) error {
	q, err := chargeSQL(Requests)
	require.NoError(t, err)
	return func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, q, token, "d", 10)
		return err
	}
}

// A write whose caller's context is cancelled while its statement runs
// (an HTTP request going away) must not interrupt the group's transaction:
// once it has joined, it runs to its end, and the writes before and after
// it are committed and answered as such.
func TestCancelledCallerDoesNotUndoItsGroup(t *testing.T) {
	ctx := context.Background()
	s := openSQL(t)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := func(tx *wtx) error {
		// The caller goes away while the statement scans.
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := tx.ExecContext(cctx, `INSERT INTO allowance (token_id, day, requests, live_calls)
			WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 500000)
			SELECT 'B', 'd', 1, 0 FROM c WHERE x = 500000`)
		return err
	}
	group := groupOf([]context.Context{ctx, cctx, ctx},
		[]func(*wtx) error{chargeFn(ctx, t, "A"), slow, chargeFn(ctx, t, "C")})
	s.commit(group)
	require.Error(t, cctx.Err(), "the caller was cancelled")
	for i, tok := range []string{"A", "B", "C"} {
		assert.NoError(t, <-group[i].result, tok)
		u, err := s.Usage(ctx, tok, "d")
		require.NoError(t, err)
		assert.Equal(t, 1, u.Requests, tok)
	}
}

// A write that has not started when its caller goes away is refused and
// leaves the rest of its group alone.
func TestCallerGoneBeforeItsTurnIsRefused(t *testing.T) {
	ctx := context.Background()
	s := openSQL(t)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	group := groupOf([]context.Context{ctx, gone, ctx},
		[]func(*wtx) error{chargeFn(ctx, t, "A"), chargeFn(gone, t, "B"), chargeFn(ctx, t, "C")})
	s.commit(group)
	for i, tok := range []string{"A", "B", "C"} {
		err := <-group[i].result
		u, uerr := s.Usage(ctx, tok, "d")
		require.NoError(t, uerr)
		if tok == "B" {
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, 0, u.Requests, tok)
			continue
		}
		assert.NoError(t, err, tok)
		assert.Equal(t, 1, u.Requests, tok)
	}
}

// When a write loses the group's transaction (here by ending it itself,
// as an interrupt or an I/O error would), its savepoint cannot be rolled
// back: no write of the group may then be answered as committed, nor run
// outside a transaction.
func TestLostTransactionFailsTheWholeGroup(t *testing.T) {
	ctx := context.Background()
	s := openSQL(t)
	for _, fails := range []bool{true, false} {
		loser := func(tx *wtx) error {
			if _, err := tx.ExecContext(ctx, "ROLLBACK"); err != nil {
				return err
			}
			if fails {
				return errors.New("the write fails")
			}
			return nil
		}
		a, c := fmt.Sprint("A", fails), fmt.Sprint("C", fails)
		group := groupOf([]context.Context{ctx, ctx, ctx},
			[]func(*wtx) error{chargeFn(ctx, t, a), loser, chargeFn(ctx, t, c)})
		s.commit(group)
		for i, tok := range []string{a, "loser", c} {
			err := <-group[i].result
			assert.Error(t, err, "%s (loser fails: %v)", tok, fails)
			u, uerr := s.Usage(ctx, tok, "d")
			require.NoError(t, uerr)
			assert.Equal(t, 0, u.Requests, "%s (loser fails: %v)", tok, fails)
		}
	}
	// The writer's connection is usable afterwards.
	ok, err := s.Charge(ctx, "A", "d", Requests, 10)
	require.NoError(t, err)
	assert.True(t, ok)
}
