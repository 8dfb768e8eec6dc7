package store

import (
	"context"
	"database/sql"
	"errors"
)

// Trial is one graded trial an agent experiment kept: its index in the
// plan's order, its id (<case>-<mode>-<repeat>) and the trial as the
// server encoded it.
type Trial struct {
	Index int
	ID    string
	Data  string
}

// AgentTrials keeps the graded trials of agent experiments, beside the
// rankings of retrieval ones. SQL and D1 implement it; a store that
// keeps experiments but not it would offer retrieval experiments only.
type AgentTrials interface {
	// KeepTrial keeps one graded trial of a running experiment, sets its
	// done count and appends progress, in one transaction, as KeepRanking
	// does: ErrNotRunning when it is not running, ErrRevoked when its
	// token was revoked, and an error (nothing kept) for a trial kept
	// before.
	KeepTrial(ctx context.Context, id string, t Trial, done int, progress NewEvent) (Event, error)
	// Trials are the trials an experiment kept, by index.
	Trials(ctx context.Context, id string) ([]Trial, error)
}

// KeepTrial keeps a trial, the done count and the progress event.
func (s *SQL) KeepTrial(ctx context.Context, id string, t Trial, done int, progress NewEvent) (Event, error) {
	out := Event{RunID: id, Type: progress.Type, Data: progress.Data, At: progress.At}
	err := s.write(ctx, func(tx *wtx) error {
		if err := runningUnrevoked(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO experiment_trials (experiment_id, trial_index, trial_id, data) VALUES (?1, ?2, ?3, ?4)`,
			id, t.Index, t.ID, t.Data); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE experiments SET done = ?2 WHERE id = ?1`, id, done); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, appendStmt, id, progress.Type, progress.Data, stamp(progress.At)).Scan(&out.Seq)
	})
	return out, err
}

// runningUnrevoked is nil when the experiment is running and its token
// not revoked; else ErrNotRunning or ErrRevoked.
func runningUnrevoked(ctx context.Context, tx *wtx, id string) error {
	var state string
	revoked := false
	err := tx.QueryRowContext(ctx, `SELECT x.state, EXISTS (SELECT 1 FROM tokens t WHERE t.id = x.token_id AND t.revoked_at IS NOT NULL)
		FROM experiments x WHERE x.id = ?1`, id).Scan(&state, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotRunning
	case err != nil:
		return err
	case state != ExperimentRunning:
		return ErrNotRunning
	case revoked:
		return ErrRevoked
	}
	return nil
}

// Trials are an experiment's kept trials, by index.
func (s *SQL) Trials(ctx context.Context, id string) ([]Trial, error) {
	rows, err := s.query(ctx, `SELECT trial_index, trial_id, data FROM experiment_trials WHERE experiment_id = ?1 ORDER BY trial_index`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Trial
	for rows.Next() {
		var t Trial
		if err := rows.Scan(&t.Index, &t.ID, &t.Data); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

var _ AgentTrials = (*SQL)(nil)
