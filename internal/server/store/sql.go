package store

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

//go:embed schema.sql
var schema string

// SQL is the Store over a database/sql handle in SQLite's dialect. Reads
// go to the pool (WAL lets them run beside the writer). Writes go to one
// goroutine holding one connection, which commits them in groups: every
// write waiting when a transaction begins joins it, each in its own
// savepoint (so each is still all or nothing, and runs after the ones
// before it, as if alone), and all are answered after the one commit. A
// commit's fsync is the cost of a write; shared, it is paid once per group
// instead of once per write, and no write is answered before it is on disk.
type SQL struct {
	db     *sql.DB
	w      *sql.Conn // the one connection that writes
	writes chan *writeReq
	done   chan struct{}
	once   sync.Once
	stmts  sync.Map // SQL text -> *sql.Stmt: SQLite parses each statement once
}

// writeReq is a write waiting for the writer.
type writeReq struct {
	ctx    context.Context
	fn     func(*wtx) error
	result chan error
}

// maxGroup bounds the writes one commit carries.
const maxGroup = 128

// New wraps db and creates the schema when it is missing.
func New(ctx context.Context, db *sql.DB) (*SQL, error) {
	for _, stmt := range schemaStatements() {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("store: schema: %w", err)
		}
	}
	w, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &SQL{db: db, w: w, writes: make(chan *writeReq), done: make(chan struct{})}
	go s.writer()
	return s, nil
}

// schemaStatements are schema.sql's statements, one by one.
func schemaStatements() []string {
	var out []string
	for _, stmt := range strings.Split(stripComments(schema), ";") {
		if strings.TrimSpace(stmt) != "" {
			out = append(out, strings.TrimSpace(stmt))
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// stmt is the prepared statement for q, prepared on first use.
func (s *SQL) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *SQL) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// errRow is a row whose statement could not be prepared.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

func (s *SQL) queryRow(ctx context.Context, q string, args ...any) scanner {
	st, err := s.stmt(ctx, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// wtx is a write transaction using the prepared statements. Its
// statements run under their caller's context without its cancellation:
// the transaction is the whole group's, and SQLite answers an interrupted
// write by rolling all of it back, so a caller going away (an HTTP request
// cancelled) once its write has begun must not interrupt it. The writer
// checks the caller's context before the write begins instead.
type wtx struct {
	tx *sql.Tx
	s  *SQL
}

func (t *wtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	st, err := t.s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st), nil
}

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = context.WithoutCancel(ctx)
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = context.WithoutCancel(ctx)
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	ctx = context.WithoutCancel(ctx)
	st, err := t.stmt(ctx, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// Close stops the writer (a write after Close fails) and closes the
// database.
func (s *SQL) Close() error {
	s.once.Do(func() { close(s.done) })
	s.stmts.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	return s.db.Close()
}

// stamp is how times are stored: RFC 3339 UTC with nanoseconds.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func unstamp(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, s.String)
	return t
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// errClosed answers writes after Close.
var errClosed = errors.New("store: closed")

// write runs fn in a transaction of the writer and returns once that
// transaction is committed (or fn failed, its savepoint rolled back).
func (s *SQL) write(ctx context.Context, fn func(*wtx) error) error {
	req := &writeReq{ctx: ctx, fn: fn, result: make(chan error, 1)}
	select {
	case s.writes <- req:
	case <-s.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.result
}

// writer commits the waiting writes in groups until Close.
func (s *SQL) writer() {
	defer s.w.Close()
	for {
		var group []*writeReq
		select {
		case req := <-s.writes:
			group = append(group, req)
		case <-s.done:
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case req := <-s.writes:
				group = append(group, req)
			default:
				break more
			}
		}
		s.commit(group)
	}
}

// commit runs a group in one transaction, each write in a savepoint. A
// write whose caller has gone away before its turn is refused; once begun
// it runs to its end (see wtx). If a savepoint cannot be opened, rolled
// back or released, the transaction is lost or in doubt: the group is
// rolled back and every write in it fails, rather than the rest running
// outside any transaction and earlier ones being answered as committed.
func (s *SQL) commit(group []*writeReq) {
	results := make([]error, len(group))
	ctx := context.Background()
	answer := func() {
		for i, req := range group {
			req.result <- results[i]
		}
	}
	fail := func(err error) {
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		answer()
		return
	}
	for i, req := range group {
		if err := req.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if err := s.inSavepoint(ctx, tx, req.fn); err != nil {
			var lost lostTx
			if errors.As(err, &lost) {
				_ = tx.Rollback()
				fail(fmt.Errorf("store: write group rolled back: %w", lost.err))
				answer()
				return
			}
			results[i] = err
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
	answer()
}

// lostTx is a savepoint that could not be opened, rolled back or released:
// the group's transaction can no longer be trusted.
type lostTx struct{ err error }

func (l lostTx) Error() string { return l.err.Error() }

// inSavepoint runs fn in a savepoint of tx: its error undoes fn's writes
// alone; a lostTx means the savepoint itself failed.
func (s *SQL) inSavepoint(ctx context.Context, tx *sql.Tx, fn func(*wtx) error) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
		return lostTx{err}
	}
	ferr := fn(&wtx{tx: tx, s: s})
	if ferr != nil {
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
			return lostTx{err}
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
		return lostTx{err}
	}
	return ferr
}

// AddToken stores a new token.
func (s *SQL) AddToken(ctx context.Context, t Token) error {
	return s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, name, hash, scopes, daily_requests, daily_live_calls, created_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
			t.ID, t.Name, t.Hash, strings.Join(t.Scopes, " "), t.DailyRequests, t.DailyLiveCalls, stamp(t.CreatedAt))
		return err
	})
}

const tokenColumns = `id, name, hash, scopes, daily_requests, daily_live_calls, created_at, revoked_at`

type scanner interface{ Scan(...any) error }

func scanToken(r scanner) (Token, error) {
	var t Token
	var scopes string
	var created, revoked sql.NullString
	if err := r.Scan(&t.ID, &t.Name, &t.Hash, &scopes, &t.DailyRequests, &t.DailyLiveCalls, &created, &revoked); err != nil {
		return t, err
	}
	t.Scopes = strings.Fields(scopes)
	t.CreatedAt, t.RevokedAt = unstamp(created), unstamp(revoked)
	return t, nil
}

// Token finds a token by id.
func (s *SQL) Token(ctx context.Context, id string) (Token, bool, error) {
	t, err := scanToken(s.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, false, nil
	}
	return t, err == nil, err
}

// Tokens lists every token, oldest first.
func (s *SQL) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := s.query(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// revokeStmt revokes a valid token.
const revokeStmt = `UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL RETURNING id`

// revokedToken is true when the token ?1 is revoked (an unknown token is
// not).
const revokedToken = `EXISTS (SELECT 1 FROM tokens WHERE id = ?1 AND revoked_at IS NOT NULL)`

// dropRevokedStmt ends the queued runs of the token ?1 (revoked at ?2).
const dropRevokedStmt = `UPDATE runs SET status = 'incomplete', reason = '` + TokenRevoked + `', finished_at = ?2
WHERE token_id = ?1 AND status = 'queued'
RETURNING ` + runColumns

// stopRevokedStmt asks every running run of the token ?1 to stop.
const stopRevokedStmt = `INSERT INTO cancels (run_id, at)
SELECT id, ?2 FROM runs WHERE token_id = ?1 AND status = 'running' ORDER BY seq
ON CONFLICT (run_id) DO NOTHING`

const runningOfStmt = `SELECT id FROM runs WHERE token_id = ?1 AND status = 'running' ORDER BY seq`

// RevokeToken revokes a valid token and ends what it started.
func (s *SQL) RevokeToken(ctx context.Context, id string, at time.Time, end EventFunc) (Revoked, bool, error) {
	var out Revoked
	found := false
	err := s.write(ctx, func(tx *wtx) error {
		out, found = Revoked{}, false
		err := tx.QueryRowContext(ctx, revokeStmt, id, stamp(at)).Scan(new(string))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if out.Dropped, err = endAll(ctx, tx, end, dropRevokedStmt, id, stamp(at)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, stopRevokedStmt, id, stamp(at)); err != nil {
			return err
		}
		running, err := tx.QueryContext(ctx, runningOfStmt, id)
		if err != nil {
			return err
		}
		defer running.Close()
		for running.Next() {
			var rid string
			if err := running.Scan(&rid); err != nil {
				return err
			}
			out.Stopping = append(out.Stopping, rid)
		}
		return running.Err()
	})
	return out, found, err
}

// chargeSQL is the upsert that counts one use of m on a day, only while
// fewer than ?3 were counted and the token is not revoked (both stores run
// it; D1 adds RETURNING).
func chargeSQL(m Meter) (string, error) {
	var col, first string
	switch m {
	case Requests:
		col, first = "requests", "1, 0"
	case LiveCalls:
		col, first = "live_calls", "0, 1"
	default:
		return "", fmt.Errorf("store: unknown meter %q", m)
	}
	return `INSERT INTO allowance (token_id, day, requests, live_calls) SELECT ?1, ?2, ` + first + ` WHERE NOT ` + revokedToken + `
			ON CONFLICT (token_id, day) DO UPDATE SET ` + col + ` = ` + col + ` + 1 WHERE ` + col + ` < ?3 AND NOT ` + revokedToken, nil
}

// Charge counts one use of m if fewer than limit were counted that day.
func (s *SQL) Charge(ctx context.Context, tokenID, day string, m Meter, limit int) (bool, error) {
	if limit < 1 {
		return false, nil
	}
	q, err := chargeSQL(m)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, q, tokenID, day, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// addRequestsStmt adds ?3 requests to a token's day.
const addRequestsStmt = `INSERT INTO allowance (token_id, day, requests, live_calls) VALUES (?1, ?2, ?3, 0)
			ON CONFLICT (token_id, day) DO UPDATE SET requests = requests + ?3 RETURNING requests`

// AddRequests adds counted requests, in one transaction.
func (s *SQL) AddRequests(ctx context.Context, counts []RequestCount) ([]int, error) {
	totals := make([]int, len(counts))
	err := s.write(ctx, func(tx *wtx) error {
		for i, c := range counts {
			if err := tx.QueryRowContext(ctx, addRequestsStmt, c.TokenID, c.Day, c.Requests).Scan(&totals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return totals, nil
}

// Usage is what the token used on day.
func (s *SQL) Usage(ctx context.Context, tokenID, day string) (Usage, error) {
	var u Usage
	err := s.queryRow(ctx, `SELECT requests, live_calls FROM allowance WHERE token_id = ?1 AND day = ?2`, tokenID, day).
		Scan(&u.Requests, &u.LiveCalls)
	if errors.Is(err, sql.ErrNoRows) {
		return Usage{}, nil
	}
	return u, err
}

const runColumns = `seq, id, token_id, status, reason, spec, report, error, created_at, started_at, finished_at`

func scanRun(r scanner) (Run, error) {
	var run Run
	var reason, report, rerr, created, started, finished sql.NullString
	if err := r.Scan(&run.Seq, &run.ID, &run.TokenID, &run.Status, &reason, &run.Spec, &report, &rerr,
		&created, &started, &finished); err != nil {
		return run, err
	}
	run.Reason, run.Report, run.Error = reason.String, report.String, rerr.String
	run.CreatedAt, run.StartedAt, run.FinishedAt = unstamp(created), unstamp(started), unstamp(finished)
	return run, nil
}

// queuedAhead is the position of a queued run: the queued runs before it.
const queuedAhead = `SELECT count(*) FROM runs WHERE status = 'queued' AND seq < ?1`

// position fills a queued run's Position.
func position(ctx context.Context, q func(context.Context, string, ...any) scanner, r *Run) error {
	if r.Status != Queued {
		r.Position = 0
		return nil
	}
	return q(ctx, queuedAhead, r.Seq).Scan(&r.Position)
}

// admitStmt decides and inserts in one statement: running when both
// running caps allow and no queued run that could start waits (the queue
// is FIFO among runs whose token is under its cap); else queued when asked
// and both queue caps allow; else nothing is inserted.
const admitStmt = `INSERT INTO runs (id, token_id, status, spec, created_at, started_at)
SELECT ?1, ?2, d.status, ?3, ?4, CASE d.status WHEN 'running' THEN ?4 END
FROM (SELECT CASE
  WHEN (SELECT count(*) FROM runs WHERE status = 'running') < ?5
   AND (SELECT count(*) FROM runs WHERE status = 'running' AND token_id = ?2) < ?6
   AND NOT EXISTS (SELECT 1 FROM runs q WHERE q.status = 'queued'
        AND (SELECT count(*) FROM runs r WHERE r.status = 'running' AND r.token_id = q.token_id) < ?6)
  THEN 'running'
  WHEN ?7 = 1
   AND (SELECT count(*) FROM runs WHERE status = 'queued') < ?8
   AND (SELECT count(*) FROM runs WHERE status = 'queued' AND token_id = ?2) < ?9
  THEN 'queued'
  END AS status) AS d
WHERE d.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tokens WHERE id = ?2 AND revoked_at IS NOT NULL)
RETURNING ` + runColumns

// refusal is why a run was not admitted.
func refusal(enqueue, revoked bool) error {
	switch {
	case revoked:
		return ErrRevoked
	case enqueue:
		return ErrQueueFull
	}
	return ErrAtCapacity
}

// Admit stores a run as running or queued, or refuses it.
func (s *SQL) Admit(ctx context.Context, n NewRun, c Caps, enqueue bool, first EventFunc) (Run, error) {
	var run Run
	err := s.write(ctx, func(tx *wtx) error {
		q := 0
		if enqueue {
			q = 1
		}
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, admitStmt, n.ID, n.TokenID, n.Spec, stamp(n.At),
			c.Running, c.RunningPerToken, q, c.Queue, c.QueuePerToken))
		if errors.Is(err, sql.ErrNoRows) {
			revoked := false
			if err := tx.QueryRowContext(ctx, `SELECT `+revokedToken, n.TokenID).Scan(&revoked); err != nil {
				return err
			}
			return refusal(enqueue, revoked)
		}
		if err != nil {
			return err
		}
		if err := position(ctx, tx.QueryRowContext, &run); err != nil {
			return err
		}
		return appendTx(ctx, tx, run.ID, first(run))
	})
	return run, err
}

// nextQueued is the seq of the oldest queued run whose token is under its
// cap (?3) and not revoked, when the global cap (?2) allows one more
// running run.
const nextQueued = `SELECT q.seq FROM runs q WHERE q.status = 'queued'
    AND (SELECT count(*) FROM runs WHERE status = 'running') < ?2
    AND (SELECT count(*) FROM runs r WHERE r.status = 'running' AND r.token_id = q.token_id) < ?3
    AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.id = q.token_id AND t.revoked_at IS NOT NULL)
  ORDER BY q.seq LIMIT 1`

const promoteStmt = `UPDATE runs SET status = 'running', started_at = ?1
WHERE seq = (` + nextQueued + `)
RETURNING ` + runColumns

// Promote starts the oldest queued run that may start. It reads none of
// its events (natively no event log is kept: a read costs nothing).
func (s *SQL) Promote(ctx context.Context, c Caps, at time.Time, started EventFunc, _ int) (Run, []Event, bool, error) {
	r, ok, err := s.transition(ctx, started, promoteStmt, stamp(at), c.Running, c.RunningPerToken)
	return r, nil, ok, err
}

const finishStmt = `UPDATE runs SET status = ?2, reason = ?3, report = ?4, error = ?5, finished_at = ?6
WHERE id = ?1 AND status = 'running'
RETURNING ` + runColumns

// Finish ends a running run.
func (s *SQL) Finish(ctx context.Context, id string, o Outcome, end EventFunc) (Run, bool, error) {
	return s.transition(ctx, end, finishStmt, id, o.Status, nullable(o.Reason), nullable(o.Report), nullable(o.Error), stamp(o.At))
}

// FinishHeld appends es and finishes the run, each as AppendAll and Finish
// do (natively a round trip costs nothing, and the server writes no steps
// late: es is empty there).
func (s *SQL) FinishHeld(ctx context.Context, run Run, es []NewEvent, o Outcome, end EventFunc) ([]Event, Run, bool, error) {
	var evs []Event
	if len(es) > 0 {
		var err error
		if evs, err = s.AppendAll(ctx, run.ID, es); err != nil {
			return nil, Run{}, false, err
		}
	}
	r, ok, err := s.Finish(ctx, run.ID, o, end)
	return evs, r, ok, err
}

const cancelQueuedStmt = `UPDATE runs SET status = 'incomplete', reason = 'cancelled', finished_at = ?3
WHERE id = ?1 AND token_id = ?2 AND status = 'queued'
RETURNING ` + runColumns

// CancelQueued drops a queued run.
func (s *SQL) CancelQueued(ctx context.Context, tokenID, id string, at time.Time, end EventFunc) (Run, bool, error) {
	return s.transition(ctx, end, cancelQueuedStmt, id, tokenID, stamp(at))
}

// transition runs a one-row state change and appends its event.
func (s *SQL) transition(ctx context.Context, event EventFunc, stmt string, args ...any) (Run, bool, error) {
	var run Run
	found := false
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, stmt, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return appendTx(ctx, tx, run.ID, event(run))
	})
	return run, found, err
}

// Interrupt ends every running run as interrupted.
func (s *SQL) Interrupt(ctx context.Context, at time.Time, end EventFunc) ([]Run, error) {
	var out []Run
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		out, err = endAll(ctx, tx, end, `UPDATE runs SET status = 'incomplete', reason = 'interrupted', finished_at = ?1
			WHERE status = 'running' RETURNING `+runColumns, stamp(at))
		return err
	})
	return out, err
}

// endAll runs stmt, an UPDATE ending runs RETURNING their columns, and
// appends each one's end event.
func endAll(ctx context.Context, tx *wtx, end EventFunc, stmt string, args ...any) ([]Run, error) {
	rows, err := tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	out, err := scanRuns(rows)
	if err != nil {
		return nil, err
	}
	for _, r := range out {
		if err := appendTx(ctx, tx, r.ID, end(r)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

const appendStmt = `INSERT INTO events (run_id, seq, type, data, at)
SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM events WHERE run_id = ?1
RETURNING seq`

func appendTx(ctx context.Context, tx *wtx, runID string, e NewEvent) error {
	_, err := tx.ExecContext(ctx, appendStmt, runID, e.Type, e.Data, stamp(e.At))
	return err
}

// Append adds an event to a run.
func (s *SQL) Append(ctx context.Context, runID string, e NewEvent) (Event, error) {
	out := Event{RunID: runID, Type: e.Type, Data: e.Data, At: e.At}
	err := s.write(ctx, func(tx *wtx) error {
		return tx.QueryRowContext(ctx, appendStmt, runID, e.Type, e.Data, stamp(e.At)).Scan(&out.Seq)
	})
	return out, err
}

// AppendAll adds events to a run in one transaction.
func (s *SQL) AppendAll(ctx context.Context, runID string, es []NewEvent) ([]Event, error) {
	out := make([]Event, len(es))
	err := s.write(ctx, func(tx *wtx) error {
		for i, e := range es {
			out[i] = Event{RunID: runID, Type: e.Type, Data: e.Data, At: e.At}
			if err := tx.QueryRowContext(ctx, appendStmt, runID, e.Type, e.Data, stamp(e.At)).Scan(&out[i].Seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const eventsStmt = `SELECT seq, type, data, at FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3`

// Events lists a run's events after seq.
func (s *SQL) Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error) {
	rows, err := s.query(ctx, eventsStmt, runID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{RunID: runID}
		var at sql.NullString
		if err := rows.Scan(&e.Seq, &e.Type, &e.Data, &at); err != nil {
			return nil, err
		}
		e.At = unstamp(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

const tailStmt = `SELECT r.status, e.seq, e.type, e.data, e.at FROM runs r
		LEFT JOIN (SELECT * FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3) e ON e.run_id = r.id
		WHERE r.id = ?1 ORDER BY e.seq`

// Tail reads a run's status and its events after seq in one statement.
func (s *SQL) Tail(ctx context.Context, runID string, after int64, limit int) (string, []Event, bool, error) {
	rows, err := s.query(ctx, tailStmt, runID, after, limit)
	if err != nil {
		return "", nil, false, err
	}
	defer rows.Close()
	var status string
	var out []Event
	found := false
	for rows.Next() {
		var seq sql.NullInt64
		var typ, data, at sql.NullString
		if err := rows.Scan(&status, &seq, &typ, &data, &at); err != nil {
			return "", nil, false, err
		}
		found = true
		if seq.Valid {
			out = append(out, Event{RunID: runID, Seq: seq.Int64, Type: typ.String, Data: data.String, At: unstamp(at)})
		}
	}
	return status, out, found, rows.Err()
}

// Run finds a run by id.
func (s *SQL) Run(ctx context.Context, id string) (Run, bool, error) {
	r, err := scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, err
	}
	return r, true, position(ctx, s.queryRow, &r)
}

// Runs lists a token's runs newest first.
func (s *SQL) Runs(ctx context.Context, tokenID string, before int64, limit int) ([]Run, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE token_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3`,
		tokenID, before, limit)
	if err != nil {
		return nil, err
	}
	out, err := scanRuns(rows)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := position(ctx, s.queryRow, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

const runningStmt = `SELECT ` + runColumns + ` FROM runs WHERE status = 'running' ORDER BY seq`

// Running lists the running runs, oldest first.
func (s *SQL) Running(ctx context.Context) ([]Run, error) {
	rows, err := s.query(ctx, runningStmt)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}

// scanRuns reads every row of rows as a run and closes rows, which must be
// closed before the transaction they belong to goes on.
func scanRuns(rows *sql.Rows) ([]Run, error) {
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return out, rows.Err()
}

const countsStmt = `SELECT
		(SELECT count(*) FROM runs WHERE status = 'running'),
		(SELECT count(*) FROM runs WHERE status = 'queued'),
		(SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM runs WHERE status = 'running' GROUP BY token_id))`

// Counts are how many runs run and wait now.
func (s *SQL) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := s.queryRow(ctx, countsStmt).
		Scan(&c.Running, &c.Queued, &c.MostRunningPerToken)
	return c, err
}

const saveRecordingStmt = `INSERT INTO recordings (run_id, data, updated_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (run_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`

// SaveRecording replaces a run's recording.
func (s *SQL) SaveRecording(ctx context.Context, runID string, data []byte, at time.Time) error {
	return s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, saveRecordingStmt, runID, string(data), stamp(at))
		return err
	})
}

// Recording is a run's recording.
func (s *SQL) Recording(ctx context.Context, runID string) ([]byte, bool, error) {
	var data string
	err := s.queryRow(ctx, `SELECT data FROM recordings WHERE run_id = ?1`, runID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return []byte(data), err == nil, err
}

const requestCancelStmt = `INSERT INTO cancels (run_id, at)
SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'running')
ON CONFLICT (run_id) DO NOTHING`

// RequestCancel records a cancel request for a running run.
func (s *SQL) RequestCancel(ctx context.Context, id string, at time.Time) (bool, error) {
	running := false
	err := s.write(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, requestCancelStmt, id, stamp(at)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'running')`, id).Scan(&running)
	})
	return running, err
}

// CancelRequested reports whether a cancel was requested for a run.
func (s *SQL) CancelRequested(ctx context.Context, id string) (bool, error) {
	var yes bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cancels WHERE run_id = ?1)`, id).Scan(&yes)
	return yes, err
}

var _ Store = (*SQL)(nil)

// TokenSQL is the statement that stores t, its values written inline: a
// Worker's tokens are added from outside it (wrangler d1 execute --file),
// as only the HMAC of a secret, like every token.
func TokenSQL(t Token) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return fmt.Sprintf("INSERT INTO tokens (id, name, hash, scopes, daily_requests, daily_live_calls, created_at) VALUES (%s, %s, %s, %s, %d, %d, %s);\n",
		q(t.ID), q(t.Name), q(t.Hash), q(strings.Join(t.Scopes, " ")), t.DailyRequests, t.DailyLiveCalls, q(stamp(t.CreatedAt)))
}
