package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The D1 store keeps experiments with the SQL store's schema and
// semantics: each change and its event one batch, under one condition
// that the batch checks again, so that what was decided from a read is
// written only while that read still holds.

func experimentOfRow(row []any) (Experiment, error) {
	r, err := rowOf(row, 14)
	if err != nil {
		return Experiment{}, err
	}
	return Experiment{Seq: number(r[0]), ID: text(r[1]), TokenID: text(r[2]), Kind: text(r[3]), State: text(r[4]), Spec: text(r[5]),
		Done: int(number(r[6])), Total: int(number(r[7])), Headline: text(r[8]), Result: text(r[9]), Error: text(r[10]),
		CreatedAt: when(r[11]), StartedAt: when(r[12]), FinishedAt: when(r[13])}, nil
}

func experimentsOfRows(rows Rows) ([]Experiment, error) {
	var out []Experiment
	for _, row := range rows {
		x, err := experimentOfRow(row)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// D1MaxRow is the most bytes Cloudflare's D1 keeps in one row (its limit
// on a string, BLOB or row: 2,000,000 bytes), which an experiment's
// request and result share. The local D1 (workerd's SQLite) does not
// enforce it, so the D1 store does, the same on this machine as on
// Cloudflare.
const D1MaxRow = 2_000_000

// d1RowRoom is what the row's other columns are left.
const d1RowRoom = 16 << 10

// TooLargeError is a value the store cannot keep in its row.
type TooLargeError struct {
	What       string
	Bytes, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("store: %s is %d bytes; a row of D1 keeps at most %d", e.What, e.Bytes, e.Max)
}

// AddExperiment stores a queued experiment under the token's cap: the SQL
// store's conditional insert, its first event (on condition that the
// insert made the row: a refused experiment has none) and whether the token is
// revoked (what a refusal says), in one batch; a request over the row's limit is a TooLargeError.
func (d *D1) AddExperiment(ctx context.Context, n NewExperiment, perToken int, first ExperimentEventFunc) (Experiment, error) {
	if len(n.Spec) > d.rowLimit() {
		return Experiment{}, &TooLargeError{What: "the experiment's request", Bytes: len(n.Spec), Max: d.rowLimit()}
	}
	x := Experiment{ID: n.ID, TokenID: n.TokenID, Kind: n.Kind, State: ExperimentQueued, Spec: n.Spec, Total: n.Total, CreatedAt: n.At}
	e := first(x)
	rs, err := d.db.Batch(ctx, []Statement{
		stmt(addExperimentStmt, n.ID, n.TokenID, n.Kind, n.Spec, n.Total, stamp(n.At), perToken),
		stmt(guardedEventStmt+`changes() = 1 AND EXISTS (SELECT 1 FROM experiments WHERE id = ?1)`, n.ID, e.Type, e.Data, stamp(e.At)),
		stmt(`SELECT `+revokedToken, n.TokenID),
	})
	if err != nil {
		return Experiment{}, err
	}
	if len(rs) != 3 || len(rs[2]) != 1 || len(rs[2][0]) != 1 {
		return Experiment{}, errors.New("store: an experiment's admission returned no verdict")
	}
	if len(rs[0]) == 0 {
		if number(rs[2][0][0]) == 1 {
			return Experiment{}, ErrRevoked
		}
		return Experiment{}, ErrExperimentQuota
	}
	return experimentOfRow(rs[0][0])
}

// nextExperiment is the seq of the experiment StartExperiment starts (the
// SQL store's choice), the running cap as ?N.
func nextExperiment(n string) string {
	return `SELECT q.seq FROM experiments q WHERE q.state = 'queued'
    AND (SELECT count(*) FROM experiments WHERE state = 'running') < ` + n + `
  ORDER BY q.seq LIMIT 1`
}

// StartExperiment starts the oldest queued experiment if one may run:
// read which one, then its started event and its start in one batch on
// condition that it is still the one the SQL store's statement picks.
func (d *D1) StartExperiment(ctx context.Context, running int, at time.Time, started ExperimentEventFunc) (Experiment, bool, error) {
	for range promoteTries {
		rows, err := d.one(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE seq = (`+nextExperiment("?1")+`)`, running)
		if err != nil || len(rows) == 0 {
			return Experiment{}, false, err
		}
		x, err := experimentOfRow(rows[0])
		if err != nil {
			return Experiment{}, false, err
		}
		x.State, x.StartedAt = ExperimentRunning, at
		out, ok, err := d.experimentChange(ctx, started(x), `?5 = (`+nextExperiment("?6")+`)`,
			`UPDATE experiments SET state = 'running', started_at = ?7`, x.ID, x.Seq, running, stamp(at))
		if err != nil || ok {
			return out, ok, err
		}
	}
	return Experiment{}, false, fmt.Errorf("store: the experiments' queue changed under %d tries to start one", promoteTries)
}

// experimentChange writes a change of experiment ?1 decided from a read:
// the event made from the experiment as the change leaves it, then the
// change, both under cond (SQL over ?1 and args from ?5 on). The
// experiment comes back from the change's RETURNING; false when cond no
// longer held, and then nothing was written.
func (d *D1) experimentChange(ctx context.Context, e NewEvent, cond, update string, args ...any) (Experiment, bool, error) {
	ev := append([]any{args[0], e.Type, e.Data, stamp(e.At)}, args[1:]...)
	rs, err := d.db.Batch(ctx, []Statement{
		stmt(guardedEventStmt+cond, ev...),
		stmt(update+` WHERE id = ?1 AND `+cond+` RETURNING `+experimentColumns, ev...),
	})
	if err != nil {
		return Experiment{}, false, err
	}
	if len(rs) != 2 || len(rs[1]) == 0 {
		return Experiment{}, false, nil
	}
	x, err := experimentOfRow(rs[1][0])
	return x, err == nil, err
}

// keptUnder is true while experiment ?1 runs and its token is not
// revoked: what KeepRanking and KeepTrial write under.
const keptUnder = `EXISTS (SELECT 1 FROM experiments x WHERE x.id = ?1 AND x.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.id = x.token_id AND t.revoked_at IS NOT NULL))`

// keep writes one unit of work of a running experiment (insert: SQL over
// ?1 and ?5 on, ending in a WHERE the condition completes), its done count
// and its progress event in one batch, all under keptUnder, then reads
// the experiment's state and whether its token is revoked (which refusal
// it was when nothing was kept). A unit kept before fails the batch on
// the table's key: nothing is kept.
func (d *D1) keep(ctx context.Context, id, insert string, done int, progress NewEvent, args ...any) (Event, error) {
	all := append([]any{id, progress.Type, progress.Data, stamp(progress.At), done}, args...)
	rs, err := d.db.Batch(ctx, []Statement{
		stmt(insert+keptUnder, all...),
		stmt(`UPDATE experiments SET done = ?5 WHERE id = ?1 AND `+keptUnder, all...),
		stmt(guardedEventStmt+keptUnder+` RETURNING seq`, all...),
		stmt(`SELECT x.state, EXISTS (SELECT 1 FROM tokens t WHERE t.id = x.token_id AND t.revoked_at IS NOT NULL)
		FROM experiments x WHERE x.id = ?1`, id),
	})
	if err != nil {
		return Event{}, err
	}
	if len(rs) != 4 {
		return Event{}, fmt.Errorf("store: a batch of 4 returned %d results", len(rs))
	}
	if len(rs[2]) == 1 && len(rs[2][0]) == 1 {
		return Event{RunID: id, Seq: number(rs[2][0][0]), Type: progress.Type, Data: progress.Data, At: progress.At}, nil
	}
	if len(rs[3]) == 1 && len(rs[3][0]) == 2 && text(rs[3][0][0]) == ExperimentRunning && number(rs[3][0][1]) == 1 {
		return Event{}, ErrRevoked
	}
	return Event{}, ErrNotRunning
}

// KeepRanking keeps a ranking, the done count and the progress event in
// one batch.
func (d *D1) KeepRanking(ctx context.Context, id string, r Ranked, done int, progress NewEvent) (Event, error) {
	return d.keep(ctx, id, `INSERT INTO experiment_rankings (experiment_id, config, case_index, data) SELECT ?1, ?6, ?7, ?8 WHERE `,
		done, progress, r.C, r.A, r.Data)
}

// KeepTrial keeps a graded trial, the done count and the progress event
// in one batch.
func (d *D1) KeepTrial(ctx context.Context, id string, t Trial, done int, progress NewEvent) (Event, error) {
	return d.keep(ctx, id, `INSERT INTO experiment_trials (experiment_id, trial_index, trial_id, data) SELECT ?1, ?6, ?7, ?8 WHERE `,
		done, progress, t.Index, t.ID, t.Data)
}

// Rankings are an experiment's kept rankings, by configuration and case.
func (d *D1) Rankings(ctx context.Context, id string) ([]Ranked, error) {
	rows, err := d.one(ctx, `SELECT config, case_index, data FROM experiment_rankings WHERE experiment_id = ?1 ORDER BY config, case_index`, id)
	if err != nil {
		return nil, err
	}
	var out []Ranked
	for _, row := range rows {
		r, err := rowOf(row, 3)
		if err != nil {
			return nil, err
		}
		out = append(out, Ranked{C: int(number(r[0])), A: int(number(r[1])), Data: text(r[2])})
	}
	return out, nil
}

// Trials are an experiment's kept trials, by index.
func (d *D1) Trials(ctx context.Context, id string) ([]Trial, error) {
	rows, err := d.one(ctx, `SELECT trial_index, trial_id, data FROM experiment_trials WHERE experiment_id = ?1 ORDER BY trial_index`, id)
	if err != nil {
		return nil, err
	}
	var out []Trial
	for _, row := range rows {
		r, err := rowOf(row, 3)
		if err != nil {
			return nil, err
		}
		out = append(out, Trial{Index: int(number(r[0])), ID: text(r[1]), Data: text(r[2])})
	}
	return out, nil
}

// FinishExperiment ends an experiment that has not ended: read it, then
// its end event and its end in one batch on condition that it is as read
// (still queued or running, with the same done count, so that the event
// says what the row holds). An outcome that with the request would pass
// the row's limit is a TooLargeError, and nothing changes.
func (d *D1) FinishExperiment(ctx context.Context, id string, o ExperimentOutcome, end ExperimentEventFunc) (Experiment, bool, error) {
	for range promoteTries {
		x, found, err := d.Experiment(ctx, id)
		if err != nil || !found || !x.Active() {
			return Experiment{}, false, err
		}
		if n := len(x.Spec) + len(o.Result) + len(o.Error) + len(o.Headline); n > d.rowLimit() {
			return Experiment{}, false, &TooLargeError{What: "the experiment's request and result", Bytes: n, Max: d.rowLimit()}
		}
		was := x.State
		x.State, x.Headline, x.Result, x.Error, x.FinishedAt = o.State, o.Headline, o.Result, o.Error, o.At
		out, ok, err := d.experimentChange(ctx, end(x), `EXISTS (SELECT 1 FROM experiments WHERE id = ?1 AND state = ?5 AND done = ?6)`,
			`UPDATE experiments SET state = ?7, headline = ?8, result = ?9, error = ?10, finished_at = ?11`,
			id, was, x.Done, o.State, nullable(o.Headline), nullable(o.Result), nullable(o.Error), stamp(o.At))
		if err != nil || ok {
			return out, ok, err
		}
	}
	return Experiment{}, false, fmt.Errorf("store: experiment %s changed under %d tries to end it", id, promoteTries)
}

// Experiment finds an experiment by id.
func (d *D1) Experiment(ctx context.Context, id string) (Experiment, bool, error) {
	rows, err := d.one(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE id = ?1`, id)
	if err != nil || len(rows) == 0 {
		return Experiment{}, false, err
	}
	x, err := experimentOfRow(rows[0])
	return x, err == nil, err
}

// ExperimentsOf lists a token's experiments newest first.
func (d *D1) ExperimentsOf(ctx context.Context, tokenID string, before int64, limit int) ([]Experiment, error) {
	if before <= 0 {
		before = 1<<53 - 1 // a JavaScript number holds it exactly
	}
	rows, err := d.one(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE token_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3`,
		tokenID, before, limit)
	if err != nil {
		return nil, err
	}
	return experimentsOfRows(rows)
}

// RunningExperiments lists the running experiments, oldest first.
func (d *D1) RunningExperiments(ctx context.Context) ([]Experiment, error) {
	rows, err := d.one(ctx, `SELECT `+experimentColumns+` FROM experiments WHERE state = 'running' ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	return experimentsOfRows(rows)
}

// ExperimentTail reads an experiment's state and its events after seq in
// one statement (the SQL store's).
func (d *D1) ExperimentTail(ctx context.Context, id string, after int64, limit int) (string, []Event, bool, error) {
	rows, err := d.one(ctx, experimentTailStmt, id, after, limit)
	if err != nil || len(rows) == 0 {
		return "", nil, false, err
	}
	evs, err := eventsOf(id, rows, 1)
	if err != nil {
		return "", nil, false, err
	}
	return text(rows[0][0]), evs, true, nil
}

var (
	_ Experiments = (*D1)(nil)
	_ AgentTrials = (*D1)(nil)
)
