package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Experiment states: queued and running, then its three endings.
const (
	ExperimentQueued    = "queued"
	ExperimentRunning   = "running"
	ExperimentSucceeded = "succeeded"
	ExperimentFailed    = "failed"
	ExperimentCancelled = "cancelled"
)

// NewExperiment is an experiment to admit: its request as JSON (what it
// starts from, after a restart too) and how many rankings it makes.
type NewExperiment struct {
	ID      string
	TokenID string
	Kind    string
	Spec    string
	Total   int
	At      time.Time
}

// Experiment is a stored experiment.
type Experiment struct {
	Seq     int64
	ID      string
	TokenID string
	Kind    string
	State   string
	Spec    string
	// Done of Total rankings are kept.
	Done, Total int
	// Headline is a short JSON summary for lists once it succeeded;
	// Result the experiment's result as the command line prints it; Error
	// {"code", "message"} once it failed.
	Headline, Result, Error string
	CreatedAt               time.Time
	StartedAt, FinishedAt   time.Time
}

// Active reports whether the experiment is queued or running.
func (e Experiment) Active() bool {
	return e.State == ExperimentQueued || e.State == ExperimentRunning
}

// ExperimentOutcome is how an experiment ended.
type ExperimentOutcome struct {
	State    string
	Headline string
	Result   string
	Error    string
	At       time.Time
}

// Ranked is one ranking an experiment kept: configuration C's ranking of
// answerable case A, as the server encoded it.
type Ranked struct {
	C, A int
	Data string
}

// ExperimentEventFunc builds the event a change of an experiment appends,
// from the experiment as it is after the change, in the same transaction.
type ExperimentEventFunc func(Experiment) NewEvent

// Experiment refusals.
var (
	// ErrExperimentQuota: the token has as many queued and running
	// experiments as it may.
	ErrExperimentQuota = errors.New("store: the token's experiments are at their cap")
	// ErrNotRunning: the experiment is no longer running (cancelled
	// meanwhile); nothing was kept.
	ErrNotRunning = errors.New("store: the experiment is not running")
)

// Experiments keeps experiments, their rankings and (in the events table)
// their events. SQL and D1 (d1experiments.go) implement it; a store
// that does not offers no experiments.
type Experiments interface {
	// AddExperiment stores a queued experiment when the token has fewer
	// than perToken queued or running ones and is not revoked (one
	// statement), appending first; else ErrExperimentQuota (ErrRevoked).
	AddExperiment(ctx context.Context, n NewExperiment, perToken int, first ExperimentEventFunc) (Experiment, error)
	// StartExperiment starts the oldest queued experiment when fewer than
	// running run, appending started; false when none can start.
	StartExperiment(ctx context.Context, running int, at time.Time, started ExperimentEventFunc) (Experiment, bool, error)
	// KeepRanking keeps one ranking of a running experiment, sets its done
	// count and appends progress, in one transaction: ErrNotRunning when
	// it is not running, ErrRevoked when its token was revoked (the
	// experiment then ends; revocation happens beside a running server,
	// in its database), and an error (nothing kept) for a ranking kept
	// before.
	KeepRanking(ctx context.Context, id string, r Ranked, done int, progress NewEvent) (Event, error)
	// Rankings are the rankings an experiment kept.
	Rankings(ctx context.Context, id string) ([]Ranked, error)
	// FinishExperiment ends a queued or running experiment, appending end;
	// false when it had ended.
	FinishExperiment(ctx context.Context, id string, o ExperimentOutcome, end ExperimentEventFunc) (Experiment, bool, error)
	// Experiment finds an experiment by id.
	Experiment(ctx context.Context, id string) (Experiment, bool, error)
	// ExperimentsOf lists a token's experiments newest first, those with
	// seq below before (0: from the newest), at most limit.
	ExperimentsOf(ctx context.Context, tokenID string, before int64, limit int) ([]Experiment, error)
	// RunningExperiments lists the running experiments, oldest first:
	// what a restarted server resumes.
	RunningExperiments(ctx context.Context) ([]Experiment, error)
	// ExperimentTail is Events with the experiment's state, from one read.
	ExperimentTail(ctx context.Context, id string, after int64, limit int) (state string, events []Event, found bool, err error)
}

const experimentColumns = `seq, id, token_id, kind, state, spec, done, total, headline, result, error, created_at, started_at, finished_at`

func scanExperiment(r scanner) (Experiment, error) {
	var x Experiment
	var headline, result, xerr, created, started, finished sql.NullString
	if err := r.Scan(&x.Seq, &x.ID, &x.TokenID, &x.Kind, &x.State, &x.Spec, &x.Done, &x.Total,
		&headline, &result, &xerr, &created, &started, &finished); err != nil {
		return x, err
	}
	x.Headline, x.Result, x.Error = headline.String, result.String, xerr.String
	x.CreatedAt, x.StartedAt, x.FinishedAt = unstamp(created), unstamp(started), unstamp(finished)
	return x, nil
}

const addExperimentStmt = `INSERT INTO experiments (id, token_id, kind, state, spec, total, created_at)
SELECT ?1, ?2, ?3, 'queued', ?4, ?5, ?6
WHERE (SELECT count(*) FROM experiments WHERE token_id = ?2 AND state IN ('queued', 'running')) < ?7
  AND NOT EXISTS (SELECT 1 FROM tokens WHERE id = ?2 AND revoked_at IS NOT NULL)
RETURNING ` + experimentColumns

// AddExperiment stores a queued experiment under the token's cap.
func (s *SQL) AddExperiment(ctx context.Context, n NewExperiment, perToken int, first ExperimentEventFunc) (Experiment, error) {
	var x Experiment
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		x, err = scanExperiment(tx.QueryRowContext(ctx, addExperimentStmt, n.ID, n.TokenID, n.Kind, n.Spec, n.Total, stamp(n.At), perToken))
		if errors.Is(err, sql.ErrNoRows) {
			revoked := false
			if err := tx.QueryRowContext(ctx, `SELECT `+revokedToken, n.TokenID).Scan(&revoked); err != nil {
				return err
			}
			if revoked {
				return ErrRevoked
			}
			return ErrExperimentQuota
		}
		if err != nil {
			return err
		}
		return appendTx(ctx, tx, x.ID, first(x))
	})
	return x, err
}

const startExperimentStmt = `UPDATE experiments SET state = 'running', started_at = ?1
WHERE seq = (SELECT q.seq FROM experiments q WHERE q.state = 'queued'
    AND (SELECT count(*) FROM experiments WHERE state = 'running') < ?2
  ORDER BY q.seq LIMIT 1)
RETURNING ` + experimentColumns

// StartExperiment starts the oldest queued experiment if one may run.
func (s *SQL) StartExperiment(ctx context.Context, running int, at time.Time, started ExperimentEventFunc) (Experiment, bool, error) {
	return s.experimentTransition(ctx, started, startExperimentStmt, stamp(at), running)
}

// KeepRanking keeps a ranking, the done count and the progress event.
func (s *SQL) KeepRanking(ctx context.Context, id string, r Ranked, done int, progress NewEvent) (Event, error) {
	out := Event{RunID: id, Type: progress.Type, Data: progress.Data, At: progress.At}
	err := s.write(ctx, func(tx *wtx) error {
		if err := runningUnrevoked(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE experiments SET done = ?2 WHERE id = ?1`, id, done); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO experiment_rankings (experiment_id, config, case_index, data) VALUES (?1, ?2, ?3, ?4)`,
			id, r.C, r.A, r.Data); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, appendStmt, id, progress.Type, progress.Data, stamp(progress.At)).Scan(&out.Seq)
	})
	return out, err
}

// Rankings are an experiment's kept rankings, by configuration and case.
func (s *SQL) Rankings(ctx context.Context, id string) ([]Ranked, error) {
	rows, err := s.query(ctx, `SELECT config, case_index, data FROM experiment_rankings WHERE experiment_id = ?1 ORDER BY config, case_index`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Ranked
	for rows.Next() {
		var r Ranked
		if err := rows.Scan(&r.C, &r.A, &r.Data); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

const finishExperimentStmt = `UPDATE experiments SET state = ?2, headline = ?3, result = ?4, error = ?5, finished_at = ?6
WHERE id = ?1 AND state IN ('queued', 'running')
RETURNING ` + experimentColumns

// FinishExperiment ends an experiment that has not ended.
func (s *SQL) FinishExperiment(ctx context.Context, id string, o ExperimentOutcome, end ExperimentEventFunc) (Experiment, bool, error) {
	return s.experimentTransition(ctx, end, finishExperimentStmt, id, o.State, nullable(o.Headline), nullable(o.Result), nullable(o.Error), stamp(o.At))
}

func (s *SQL) experimentTransition(ctx context.Context, event ExperimentEventFunc, stmt string, args ...any) (Experiment, bool, error) {
	var x Experiment
	found := false
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		x, err = scanExperiment(tx.QueryRowContext(ctx, stmt, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return appendTx(ctx, tx, x.ID, event(x))
	})
	return x, found, err
}

// Experiment finds an experiment by id.
func (s *SQL) Experiment(ctx context.Context, id string) (Experiment, bool, error) {
	x, err := scanExperiment(s.queryRow(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE id = ?1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Experiment{}, false, nil
	}
	return x, err == nil, err
}

// ExperimentsOf lists a token's experiments newest first.
func (s *SQL) ExperimentsOf(ctx context.Context, tokenID string, before int64, limit int) ([]Experiment, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	return s.experiments(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE token_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3`,
		tokenID, before, limit)
}

// RunningExperiments lists the running experiments, oldest first.
func (s *SQL) RunningExperiments(ctx context.Context) ([]Experiment, error) {
	return s.experiments(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE state = 'running' ORDER BY seq`)
}

func (s *SQL) experiments(ctx context.Context, q string, args ...any) ([]Experiment, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Experiment
	for rows.Next() {
		x, err := scanExperiment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

const experimentTailStmt = `SELECT x.state, e.seq, e.type, e.data, e.at FROM experiments x
		LEFT JOIN (SELECT * FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3) e ON e.run_id = x.id
		WHERE x.id = ?1 ORDER BY e.seq`

// ExperimentTail reads an experiment's state and its events after seq in
// one statement.
func (s *SQL) ExperimentTail(ctx context.Context, id string, after int64, limit int) (string, []Event, bool, error) {
	rows, err := s.query(ctx, experimentTailStmt, id, after, limit)
	if err != nil {
		return "", nil, false, err
	}
	defer rows.Close()
	var state string
	var out []Event
	found := false
	for rows.Next() {
		var seq sql.NullInt64
		var typ, data, at sql.NullString
		if err := rows.Scan(&state, &seq, &typ, &data, &at); err != nil {
			return "", nil, false, err
		}
		found = true
		if seq.Valid {
			out = append(out, Event{RunID: id, Seq: seq.Int64, Type: typ.String, Data: data.String, At: unstamp(at)})
		}
	}
	return state, out, found, rows.Err()
}

var _ Experiments = (*SQL)(nil)
