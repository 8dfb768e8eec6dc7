package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Statement is one SQL statement with its arguments (?1, ?2, ...: nil,
// string, int or int64).
type Statement struct {
	SQL  string
	Args []any
}

// Rows are a statement's result rows, each its columns' values in order:
// nil, int64, float64 or string.
type Rows [][]any

// Batcher runs statements in order as one transaction, all or nothing, and
// returns each statement's rows: Cloudflare D1's batch, which is the only
// transaction D1 offers (the Worker implements it over the D1 binding;
// tests, over SQLite).
type Batcher interface {
	Batch(ctx context.Context, stmts []Statement) ([]Rows, error)
}

// D1 is the Store over a Batcher, with the SQL store's schema and
// statements. A state change and its event are one batch: the event's
// insert and the change carry the same condition, so both happen or
// neither does, and nothing decided from an earlier read is written unless
// that condition still holds when the batch runs. Admission is still one
// conditional INSERT ... SELECT. There is no group commit: D1 commits each
// batch.
//
// Processes (Worker isolates) come and go while others run, so Interrupt
// ends only runs that have run longer than Stale: their process must be
// gone, as no run outlives its deadline.
type D1 struct {
	db    Batcher
	stale time.Duration
	// RowLimit, when set, is the row limit the store keeps to instead of
	// D1MaxRow (a test's, to reach it with small experiments).
	RowLimit int
}

// rowLimit is the most an experiment's row holds here: the row's limit
// less the room its other columns are left.
func (d *D1) rowLimit() int {
	if d.RowLimit > 0 {
		return d.RowLimit - d1RowRoom
	}
	return D1MaxRow - d1RowRoom
}

// NewD1 creates the schema when it is missing (one batch) and returns the
// store. stale is how long a run may run before Interrupt takes its
// process for gone (0: every running run, as after a restart).
func NewD1(ctx context.Context, db Batcher, stale time.Duration) (*D1, error) {
	var stmts []Statement
	for _, q := range schemaStatements() {
		stmts = append(stmts, Statement{SQL: q})
	}
	if _, err := db.Batch(ctx, stmts); err != nil {
		return nil, fmt.Errorf("store: schema: %w", err)
	}
	return OpenD1(db, stale), nil
}

// OpenD1 returns the store over a database whose schema NewD1 (or the
// Worker's migration) has made, without a round trip: a Worker starts a
// program for each request, and only its isolate's first needs to see to
// the schema.
func OpenD1(db Batcher, stale time.Duration) *D1 {
	return &D1{db: db, stale: stale}
}

// Close releases nothing: the binding belongs to the runtime.
func (d *D1) Close() error { return nil }

// stmt is a statement with as many arguments as its highest ?N: D1 (like
// database/sql) refuses a statement given more arguments than it has
// parameters, and the two statements of a change share one list.
func stmt(q string, args ...any) Statement {
	most := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			continue
		}
		n, j := 0, i+1
		for ; j < len(q) && '0' <= q[j] && q[j] <= '9'; j++ {
			n = n*10 + int(q[j]-'0')
		}
		most = max(most, n)
	}
	return Statement{SQL: q, Args: args[:min(most, len(args))]}
}

func (d *D1) one(ctx context.Context, q string, args ...any) (Rows, error) {
	rs, err := d.db.Batch(ctx, []Statement{stmt(q, args...)})
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("store: a batch of one statement returned %d results", len(rs))
	}
	return rs[0], nil
}

// text and number read a column value as the binding returns it.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func number(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func when(v any) time.Time {
	if v == nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, text(v))
	return t
}

func rowOf(row []any, n int) ([]any, error) {
	if len(row) != n {
		return nil, fmt.Errorf("store: a row of %d columns where %d were selected", len(row), n)
	}
	return row, nil
}

func tokenOf(row []any) (Token, error) {
	r, err := rowOf(row, 8)
	if err != nil {
		return Token{}, err
	}
	return Token{ID: text(r[0]), Name: text(r[1]), Hash: text(r[2]), Scopes: strings.Fields(text(r[3])),
		DailyRequests: int(number(r[4])), DailyLiveCalls: int(number(r[5])), CreatedAt: when(r[6]), RevokedAt: when(r[7])}, nil
}

func runOf(row []any) (Run, error) {
	r, err := rowOf(row, 11)
	if err != nil {
		return Run{}, err
	}
	return Run{Seq: number(r[0]), ID: text(r[1]), TokenID: text(r[2]), Status: text(r[3]), Reason: text(r[4]),
		Spec: text(r[5]), Report: text(r[6]), Error: text(r[7]), CreatedAt: when(r[8]), StartedAt: when(r[9]), FinishedAt: when(r[10])}, nil
}

func runsOf(rows Rows) ([]Run, error) {
	out := make([]Run, 0, len(rows))
	for _, row := range rows {
		r, err := runOf(row)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// AddToken stores a new token.
func (d *D1) AddToken(ctx context.Context, t Token) error {
	_, err := d.one(ctx, `INSERT INTO tokens (id, name, hash, scopes, daily_requests, daily_live_calls, created_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
		t.ID, t.Name, t.Hash, strings.Join(t.Scopes, " "), t.DailyRequests, t.DailyLiveCalls, stamp(t.CreatedAt))
	return err
}

// Token finds a token by id.
func (d *D1) Token(ctx context.Context, id string) (Token, bool, error) {
	rows, err := d.one(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?1`, id)
	if err != nil || len(rows) == 0 {
		return Token{}, false, err
	}
	t, err := tokenOf(rows[0])
	return t, err == nil, err
}

// Tokens lists every token, oldest first.
func (d *D1) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := d.one(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	var out []Token
	for _, row := range rows {
		t, err := tokenOf(row)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// RevokeToken revokes a valid token and ends what it started: the revoke,
// the end of each queued run read just before (each with its end event,
// under the condition that it is still queued), the cancel requests of the
// running ones and their list, in one batch. A run admitted between that
// read and the batch is ended by the next pass (none can be admitted
// after it).
func (d *D1) RevokeToken(ctx context.Context, id string, at time.Time, end EventFunc) (Revoked, bool, error) {
	var out Revoked
	stmts := []Statement{{SQL: revokeStmt, Args: []any{id, stamp(at)}}}
	drops, queued, err := d.revokedDrops(ctx, id, at, end, `EXISTS (SELECT 1 FROM tokens WHERE id = ?5 AND revoked_at = ?6)`)
	if err != nil {
		return out, false, err
	}
	stmts = append(stmts, drops...)
	stmts = append(stmts,
		Statement{SQL: stopRevokedStmt, Args: []any{id, stamp(at)}},
		Statement{SQL: runningOfStmt, Args: []any{id}})
	rs, err := d.db.Batch(ctx, stmts)
	if err != nil {
		return out, false, err
	}
	if len(rs) != len(stmts) {
		return out, false, fmt.Errorf("store: a batch of %d returned %d results", len(stmts), len(rs))
	}
	if len(rs[0]) == 0 {
		return out, false, nil
	}
	out.Dropped = dropped(queued, rs[1:1+len(drops)])
	for _, row := range rs[len(rs)-1] {
		if len(row) == 1 {
			out.Stopping = append(out.Stopping, text(row[0]))
		}
	}
	for range promoteTries {
		drops, queued, err := d.revokedDrops(ctx, id, at, end, `1`)
		if err != nil || len(drops) == 0 {
			return out, true, err
		}
		rs, err := d.db.Batch(ctx, drops)
		if err != nil {
			return out, true, err
		}
		out.Dropped = append(out.Dropped, dropped(queued, rs)...)
	}
	return out, true, fmt.Errorf("store: runs of token %s were still queued after %d passes", id, promoteTries)
}

// revokedDrops reads the token's queued runs and makes, for each, its end
// event and its end (incomplete, token_revoked), both on condition that it
// is still queued and that extra holds (SQL over ?5, the token, and ?6,
// the revoke's time).
func (d *D1) revokedDrops(ctx context.Context, id string, at time.Time, end EventFunc, extra string) ([]Statement, []Run, error) {
	rows, err := d.one(ctx, `SELECT `+runColumns+` FROM runs WHERE token_id = ?1 AND status = 'queued' ORDER BY seq`, id)
	if err != nil {
		return nil, nil, err
	}
	queued, err := runsOf(rows)
	if err != nil {
		return nil, nil, err
	}
	var stmts []Statement
	for i := range queued {
		r := &queued[i]
		r.Status, r.Reason, r.FinishedAt, r.Position = Incomplete, TokenRevoked, at, 0
		e := end(*r)
		cond := `EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'queued') AND ` + extra
		args := []any{r.ID, e.Type, e.Data, stamp(e.At), id, stamp(at)}
		stmts = append(stmts,
			stmt(guardedEventStmt+cond, args...),
			stmt(`UPDATE runs SET status = 'incomplete', reason = '`+TokenRevoked+`', finished_at = ?6 WHERE id = ?1 AND `+cond+` RETURNING `+runColumns, args...))
	}
	return stmts, queued, nil
}

// dropped are the runs whose end (every second result of rs) applied.
func dropped(queued []Run, rs []Rows) []Run {
	var out []Run
	for i := 1; i < len(rs); i += 2 {
		if len(rs[i]) == 1 {
			if r, err := runOf(rs[i][0]); err == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// Charge counts one use of m if fewer than limit were counted that day:
// the SQL store's upsert, which returns a row only when it counted.
func (d *D1) Charge(ctx context.Context, tokenID, day string, m Meter, limit int) (bool, error) {
	if limit < 1 {
		return false, nil
	}
	q, err := chargeSQL(m)
	if err != nil {
		return false, err
	}
	rows, err := d.one(ctx, q+` RETURNING 1`, tokenID, day, limit)
	return len(rows) == 1, err
}

// AddRequests adds counted requests, in one batch.
func (d *D1) AddRequests(ctx context.Context, counts []RequestCount) ([]int, error) {
	stmts := make([]Statement, 0, len(counts))
	for _, c := range counts {
		stmts = append(stmts, Statement{SQL: addRequestsStmt, Args: []any{c.TokenID, c.Day, c.Requests}})
	}
	if len(stmts) == 0 {
		return nil, nil
	}
	rs, err := d.db.Batch(ctx, stmts)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(stmts) {
		return nil, fmt.Errorf("store: a batch of %d returned %d results", len(stmts), len(rs))
	}
	totals := make([]int, len(rs))
	for i, rows := range rs {
		if len(rows) != 1 || len(rows[0]) != 1 {
			return nil, errors.New("store: a request count returned no total")
		}
		totals[i] = int(number(rows[0][0]))
	}
	return totals, nil
}

// Usage is what the token used on day.
func (d *D1) Usage(ctx context.Context, tokenID, day string) (Usage, error) {
	rows, err := d.one(ctx, `SELECT requests, live_calls FROM allowance WHERE token_id = ?1 AND day = ?2`, tokenID, day)
	if err != nil || len(rows) == 0 {
		return Usage{}, err
	}
	r, err := rowOf(rows[0], 2)
	if err != nil {
		return Usage{}, err
	}
	return Usage{Requests: int(number(r[0])), LiveCalls: int(number(r[1]))}, nil
}

// positionStmt is a run's queue position (0 unless queued).
const positionStmt = `SELECT CASE r.status WHEN 'queued' THEN
  (SELECT count(*) FROM runs q WHERE q.status = 'queued' AND q.seq < r.seq) ELSE 0 END
FROM runs r WHERE r.id = ?1`

// admitEventStmt appends a just-admitted run's first event: the started
// event, or the queued event with the run's queue position spliced into
// its data (?5 position ?6) when ?7 is 1. No row, no event: it follows
// the admission in the same batch, and a refused run has no row.
const admitEventStmt = `INSERT INTO events (run_id, seq, type, data, at)
SELECT r.id, 1,
  CASE r.status WHEN 'running' THEN ?2 ELSE ?3 END,
  CASE r.status WHEN 'running' THEN ?4 ELSE ?5 || CASE ?7 WHEN 1 THEN
    (SELECT count(*) FROM runs q WHERE q.status = 'queued' AND q.seq < r.seq) ELSE '' END || ?6 END,
  ?8
FROM runs r WHERE r.id = ?1`

// Sentinel positions: a queued event's data is made for two positions no
// data holds otherwise, to find where SQL must write the real one.
const (
	sentinelA = 7390251846
	sentinelB = 8164093527
)

// queuedTemplate is the queued event of run r as a template: its type,
// the data before and after the position, and whether the position is in
// the data at all. It refuses an event whose data uses the position other
// than as its decimal number (SQL could not reproduce it).
func queuedTemplate(first EventFunc, r Run) (NewEvent, string, string, bool, error) {
	r.Status, r.Position = Queued, sentinelA
	a := first(r)
	r.Position = sentinelB
	b := first(r)
	sa, sb := strconv.Itoa(sentinelA), strconv.Itoa(sentinelB)
	if a.Type != b.Type {
		return a, "", "", false, errors.New("store: the queued event's type depends on the queue position")
	}
	switch strings.Count(a.Data, sa) {
	case 0:
		if a.Data != b.Data {
			return a, "", "", false, errors.New("store: the queued event's data depends on the queue position other than as its number")
		}
		return a, a.Data, "", false, nil
	case 1:
		before, after, _ := strings.Cut(a.Data, sa)
		if b.Data != before+sb+after {
			return a, "", "", false, errors.New("store: the queued event's data depends on the queue position other than as its number")
		}
		return a, before, after, true, nil
	}
	return a, "", "", false, errors.New("store: the queued event's data holds the queue position more than once")
}

// Admit stores a run as running or queued, or refuses it: the SQL store's
// admission statement, the first event and the position in one batch.
func (d *D1) Admit(ctx context.Context, n NewRun, c Caps, enqueue bool, first EventFunc) (Run, error) {
	base := Run{ID: n.ID, TokenID: n.TokenID, Spec: n.Spec, CreatedAt: n.At}
	running := base
	running.Status, running.StartedAt = Running, n.At
	started := first(running)
	queued, before, after, splice, err := queuedTemplate(first, base)
	if err != nil {
		return Run{}, err
	}
	q, s := 0, 0
	if enqueue {
		q = 1
	}
	if splice {
		s = 1
	}
	rs, err := d.db.Batch(ctx, []Statement{
		{SQL: admitStmt, Args: []any{n.ID, n.TokenID, n.Spec, stamp(n.At), c.Running, c.RunningPerToken, q, c.Queue, c.QueuePerToken}},
		{SQL: admitEventStmt, Args: []any{n.ID, started.Type, queued.Type, started.Data, before, after, s, stamp(started.At)}},
		// The run's position (null when refused) and whether its token is
		// revoked (what a refusal says), in one statement.
		{SQL: `SELECT (` + positionStmt + `), ` + strings.ReplaceAll(revokedToken, "?1", "?2"), Args: []any{n.ID, n.TokenID}},
	})
	if err != nil {
		return Run{}, err
	}
	if len(rs) != 3 {
		return Run{}, fmt.Errorf("store: a batch of 3 returned %d results", len(rs))
	}
	if len(rs[2]) != 1 || len(rs[2][0]) != 2 {
		return Run{}, errors.New("store: the admission's position and token read returned no row")
	}
	if len(rs[0]) == 0 {
		return Run{}, refusal(enqueue, number(rs[2][0][1]) == 1)
	}
	run, err := runOf(rs[0][0])
	if err != nil {
		return Run{}, err
	}
	if p := rs[2][0][0]; p != nil {
		run.Position = int(number(p))
	}
	return run, nil
}

// guardedEventStmt appends an event to ?1 numbered after its last, if the
// condition that follows holds (the same condition as the change it goes
// with, in the same batch).
const guardedEventStmt = `INSERT INTO events (run_id, seq, type, data, at)
SELECT ?1, n, ?2, ?3, ?4 FROM (SELECT coalesce(max(seq), 0) + 1 AS n FROM events WHERE run_id = ?1)
WHERE `

// change writes a state change of run ?1 decided from a read: the event
// made from the run as the change leaves it, then the change to that run,
// both under cond (SQL over ?1 and args from ?5 on, true exactly when the
// change applies). The run comes back from the change's RETURNING; false when
// cond no longer held, and then nothing was written.
func (d *D1) change(ctx context.Context, e NewEvent, cond, update string, args ...any) (Run, bool, error) {
	ev := append([]any{args[0], e.Type, e.Data, stamp(e.At)}, args[1:]...)
	rs, err := d.db.Batch(ctx, []Statement{
		stmt(guardedEventStmt+cond, ev...),
		stmt(update+` WHERE id = ?1 AND `+cond+` RETURNING `+runColumns, ev...),
	})
	if err != nil {
		return Run{}, false, err
	}
	if len(rs) != 2 || len(rs[1]) == 0 {
		return Run{}, false, nil
	}
	r, err := runOf(rs[1][0])
	return r, err == nil, err
}

// promoteTries bounds Promote's retries when another process changes the
// queue between its read and its write.
const promoteTries = 16

// Promote starts the oldest queued run that may start: read which one,
// then start it and append started in one batch on condition that it is
// still the one the SQL store's statement would pick.
func (d *D1) Promote(ctx context.Context, c Caps, at time.Time, started EventFunc, limit int) (Run, []Event, bool, error) {
	if run, evs, ok, done, err := d.promoteOnce(ctx, c, at, started, limit); done || err != nil {
		return run, evs, ok, err
	}
	for range promoteTries {
		rows, err := d.one(ctx, `SELECT `+runColumns+` FROM runs WHERE seq = (`+strings.NewReplacer("?2", "?1", "?3", "?2").Replace(nextQueued)+`)`,
			c.Running, c.RunningPerToken)
		if err != nil || len(rows) == 0 {
			return Run{}, nil, false, err
		}
		r, err := runOf(rows[0])
		if err != nil {
			return Run{}, nil, false, err
		}
		r.Status, r.StartedAt, r.Position = Running, at, 0
		// nextQueued takes the caps as ?2 and ?3: here ?5 and ?6.
		cond := `?7 = (` + strings.NewReplacer("?2", "?5", "?3", "?6").Replace(nextQueued) + `)`
		out, ok, err := d.change(ctx, started(r), cond, `UPDATE runs SET status = 'running', started_at = ?8`,
			r.ID, c.Running, c.RunningPerToken, r.Seq, stamp(at))
		if err != nil || ok {
			return out, nil, ok, err
		}
	}
	return Run{}, nil, false, fmt.Errorf("store: the queue changed under %d tries to start a run", promoteTries)
}

// startedTemplate is the started event as a template over the run's id:
// its type and the data before and after the id. ok is false when the
// event depends on anything else of the run than its id, or not on it as
// its plain text (then Promote reads the run first and makes the event).
func startedTemplate(started EventFunc, at time.Time) (e NewEvent, before, after string, ok bool) {
	const idA, idB = "run_7390251846", "run_8164093527"
	a := started(Run{ID: idA, TokenID: "A", Spec: `{}`, Status: Running, Seq: 1, StartedAt: at})
	b := started(Run{ID: idB, TokenID: "B", Spec: `{"b":1}`, Status: Running, Seq: 2, StartedAt: at, CreatedAt: at})
	if a.Type != b.Type || strings.Count(a.Data, idA) != 1 {
		return a, "", "", false
	}
	before, after, _ = strings.Cut(a.Data, idA)
	return a, before, after, b.Data == before+idB+after
}

// safeID holds for a run id SQL can splice into an event's data as
// Go would write it (letters, digits, '_' and '-': JSON escapes none).
const safeID = ` AND q.id NOT GLOB '*[^A-Za-z0-9_-]*'`

// promoteOnce starts the next queued run in one batch, without a read
// first: which run is next (nextQueued), its started event (the template,
// the id spliced by SQL) and the start, both under the same choice of run
// in the same transaction; then the started run's events, found by the
// event just inserted (last_insert_rowid, when the start changed a row),
// and kept only when they are that run's. done is false when it could
// not decide (an event that is not a template over the id, or an id SQL
// cannot splice): then Promote reads first.
func (d *D1) promoteOnce(ctx context.Context, c Caps, at time.Time, started EventFunc, limit int) (Run, []Event, bool, bool, error) {
	e, before, after, ok := startedTemplate(started, at)
	if !ok {
		return Run{}, nil, false, false, nil
	}
	next := strings.NewReplacer("?2", "?1", "?3", "?2").Replace(nextQueued)
	rs, err := d.db.Batch(ctx, []Statement{
		stmt(`SELECT 1 WHERE EXISTS (`+next+`)`, c.Running, c.RunningPerToken),
		stmt(`INSERT INTO events (run_id, seq, type, data, at)
SELECT q.id, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE run_id = q.id), ?3, ?4 || q.id || ?5, ?6
FROM runs q WHERE q.seq = (`+next+`)`+safeID, c.Running, c.RunningPerToken, e.Type, before, after, stamp(e.At)),
		stmt(`UPDATE runs SET status = 'running', started_at = ?3 WHERE seq = (`+next+`)
AND EXISTS (SELECT 1 FROM runs q WHERE q.seq = runs.seq`+safeID+`) RETURNING `+runColumns, c.Running, c.RunningPerToken, stamp(at)),
		stmt(`SELECT run_id, seq, type, data, at FROM events
WHERE changes() = 1 AND run_id = (SELECT run_id FROM events WHERE rowid = last_insert_rowid())
ORDER BY seq LIMIT ?1`, limit),
	})
	if err != nil {
		return Run{}, nil, false, true, err
	}
	if len(rs) != 4 {
		return Run{}, nil, false, true, fmt.Errorf("store: a batch of 4 returned %d results", len(rs))
	}
	if len(rs[2]) == 1 {
		r, err := runOf(rs[2][0])
		if err != nil {
			return Run{}, nil, false, true, err
		}
		return r, startedEvents(r.ID, rs[3]), true, true, nil
	}
	// None promoted: none could start, or the next one's id needs the read.
	return Run{}, nil, false, len(rs[0]) == 0, nil
}

// startedEvents are the rows (run_id, then an event's columns) as the
// run's events, nil unless every row is that run's and the first is its
// first event (anything else: the caller reads them).
func startedEvents(id string, rows Rows) []Event {
	if len(rows) == 0 || len(rows[0]) != 5 || text(rows[0][0]) != id || number(rows[0][1]) != 1 {
		return nil
	}
	for _, row := range rows {
		if len(row) != 5 || text(row[0]) != id {
			return nil
		}
	}
	evs, err := eventsOf(id, rows, 1)
	if err != nil {
		return nil
	}
	return evs
}

// Finish ends a running run.
func (d *D1) Finish(ctx context.Context, id string, o Outcome, end EventFunc) (Run, bool, error) {
	r, found, err := d.Run(ctx, id)
	if err != nil || !found || r.Status != Running {
		return Run{}, false, err
	}
	r.Status, r.Reason, r.Report, r.Error, r.FinishedAt = o.Status, o.Reason, o.Report, o.Error, o.At
	return d.change(ctx, end(r), `EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'running')`,
		`UPDATE runs SET status = ?5, reason = ?6, report = ?7, error = ?8, finished_at = ?9`,
		id, o.Status, nullable(o.Reason), nullable(o.Report), nullable(o.Error), stamp(o.At))
}

// FinishHeld appends es and finishes run in one batch: the appends, then
// the end event and the change under the condition that the run is still
// running. The end event is made from run as o leaves it, without a read.
func (d *D1) FinishHeld(ctx context.Context, run Run, es []NewEvent, o Outcome, end EventFunc) ([]Event, Run, bool, error) {
	r := run
	r.Status, r.Reason, r.Report, r.Error, r.FinishedAt, r.Position = o.Status, o.Reason, o.Report, o.Error, o.At, 0
	e := end(r)
	const cond = `EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'running')`
	args := []any{run.ID, e.Type, e.Data, stamp(e.At), o.Status, nullable(o.Reason), nullable(o.Report), nullable(o.Error), stamp(o.At)}
	stmts, err := appendMany(run.ID, es)
	if err != nil {
		return nil, Run{}, false, err
	}
	appends := len(stmts)
	stmts = append(stmts, stmt(guardedEventStmt+cond, args...),
		stmt(`UPDATE runs SET status = ?5, reason = ?6, report = ?7, error = ?8, finished_at = ?9 WHERE id = ?1 AND `+cond+` RETURNING `+runColumns, args...))
	rs, err := d.db.Batch(ctx, stmts)
	if err != nil {
		return nil, Run{}, false, err
	}
	if len(rs) != len(stmts) {
		return nil, Run{}, false, fmt.Errorf("store: a batch of %d returned %d results", len(stmts), len(rs))
	}
	evs, err := appended(run.ID, es, rs[:appends])
	if err != nil {
		return nil, Run{}, false, err
	}
	last := rs[len(rs)-1]
	if len(last) == 0 {
		return evs, Run{}, false, nil
	}
	out, err := runOf(last[0])
	return evs, out, err == nil, err
}

// CancelQueued drops a queued run.
func (d *D1) CancelQueued(ctx context.Context, tokenID, id string, at time.Time, end EventFunc) (Run, bool, error) {
	r, found, err := d.Run(ctx, id)
	if err != nil || !found || r.Status != Queued || r.TokenID != tokenID {
		return Run{}, false, err
	}
	r.Status, r.Reason, r.FinishedAt, r.Position = Incomplete, "cancelled", at, 0
	return d.change(ctx, end(r), `EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND token_id = ?5 AND status = 'queued')`,
		`UPDATE runs SET status = 'incomplete', reason = 'cancelled', finished_at = ?6`, id, tokenID, stamp(at))
}

// Interrupt ends the runs running since before at less the store's stale
// age (every running run when it is 0), each with its end event, in one
// batch; a run another process finished meanwhile is left alone.
func (d *D1) Interrupt(ctx context.Context, at time.Time, end EventFunc) ([]Run, error) {
	rows, err := d.one(ctx, `SELECT `+runColumns+` FROM runs WHERE status = 'running' ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	running, err := runsOf(rows)
	if err != nil {
		return nil, err
	}
	var stmts []Statement
	for _, r := range running {
		if d.stale > 0 && !r.StartedAt.Before(at.Add(-d.stale)) {
			continue
		}
		r.Status, r.Reason, r.FinishedAt = Incomplete, "interrupted", at
		e := end(r)
		// The run started at that moment is still running: started_at
		// tells this start from none other (a run starts once).
		cond := `EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status = 'running' AND started_at = ?5)`
		args := []any{r.ID, e.Type, e.Data, stamp(e.At), stamp(r.StartedAt), stamp(at)}
		stmts = append(stmts,
			stmt(guardedEventStmt+cond, args...),
			stmt(`UPDATE runs SET status = 'incomplete', reason = 'interrupted', finished_at = ?6 WHERE id = ?1 AND `+cond+` RETURNING `+runColumns, args...))
	}
	if len(stmts) == 0 {
		return nil, nil
	}
	rs, err := d.db.Batch(ctx, stmts)
	if err != nil {
		return nil, err
	}
	var out []Run
	for i := 1; i < len(rs); i += 2 {
		got, err := runsOf(rs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// Append adds an event to a run.
func (d *D1) Append(ctx context.Context, runID string, e NewEvent) (Event, error) {
	rows, err := d.one(ctx, appendStmt, runID, e.Type, e.Data, stamp(e.At))
	if err != nil {
		return Event{}, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return Event{}, errors.New("store: an append returned no number")
	}
	return Event{RunID: runID, Seq: number(rows[0][0]), Type: e.Type, Data: e.Data, At: e.At}, nil
}

// AppendAll adds events to a run as one batch (one transaction).
func (d *D1) AppendAll(ctx context.Context, runID string, es []NewEvent) ([]Event, error) {
	if len(es) == 0 {
		return nil, nil
	}
	stmts, err := appendMany(runID, es)
	if err != nil {
		return nil, err
	}
	rs, err := d.db.Batch(ctx, stmts)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(stmts) {
		return nil, errors.New("store: a batch of appends returned another number of results")
	}
	return appended(runID, es, rs)
}

// appendManyStmt appends the events in ?2 (JSON: [[type, data, at], ...])
// to run ?1, numbered after its last in their order: one statement for a
// run's held steps, where a statement each made D1 (and a Worker's CPU,
// under wrangler dev) pay for every one of them. SQLite reads the events
// table for the numbers before it inserts (an INSERT ... SELECT from its
// own table goes through a temporary table), and RETURNING gives the
// numbers in no set order.
const appendManyStmt = `INSERT INTO events (run_id, seq, type, data, at)
SELECT ?1, b.n + j.key, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]')
FROM (SELECT coalesce(max(seq), 0) + 1 AS n FROM events WHERE run_id = ?1) b, json_each(?2) j
ORDER BY j.key
RETURNING seq`

// appendBytes bounds the JSON of one appendManyStmt (D1 takes a bound
// value of 2 MB at most); a run's held steps are rarely a tenth of it.
const appendBytes = 512 << 10

// appendMany are the statements appending es to run id, as few as the
// JSON's bound allows (none for none).
func appendMany(id string, es []NewEvent) ([]Statement, error) {
	var out []Statement
	var list [][3]string
	size := 0
	flush := func() error {
		if len(list) == 0 {
			return nil
		}
		data, err := json.Marshal(list)
		if err != nil {
			return err
		}
		out = append(out, stmt(appendManyStmt, id, string(data)))
		list, size = nil, 0
		return nil
	}
	for _, e := range es {
		n := len(e.Type) + len(e.Data) + 64
		if size+n > appendBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		list = append(list, [3]string{e.Type, e.Data, stamp(e.At)})
		size += n
	}
	return out, flush()
}

// appended are es as stored by appendMany's statements, whose results
// are rs: each statement's numbers, in any order, are the next ones.
func appended(id string, es []NewEvent, rs []Rows) ([]Event, error) {
	var seqs []int64
	for _, rows := range rs {
		from := len(seqs)
		for _, row := range rows {
			if len(row) != 1 {
				return nil, errors.New("store: an append returned no number")
			}
			seqs = append(seqs, number(row[0]))
		}
		slices.Sort(seqs[from:])
	}
	if len(seqs) != len(es) {
		return nil, fmt.Errorf("store: %d events appended, %d numbers returned", len(es), len(seqs))
	}
	out := make([]Event, len(es))
	for i, e := range es {
		if i > 0 && seqs[i] != seqs[i-1]+1 {
			return nil, errors.New("store: appended events numbered with a gap")
		}
		out[i] = Event{RunID: id, Seq: seqs[i], Type: e.Type, Data: e.Data, At: e.At}
	}
	return out, nil
}

func eventsOf(runID string, rows Rows, from int) ([]Event, error) {
	var out []Event
	for _, row := range rows {
		if len(row) != from+4 {
			return nil, fmt.Errorf("store: an event row of %d columns", len(row))
		}
		if row[from] == nil {
			continue
		}
		out = append(out, Event{RunID: runID, Seq: number(row[from]), Type: text(row[from+1]), Data: text(row[from+2]), At: when(row[from+3])})
	}
	return out, nil
}

// Events lists a run's events after seq.
func (d *D1) Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error) {
	rows, err := d.one(ctx, eventsStmt, runID, after, limit)
	if err != nil {
		return nil, err
	}
	return eventsOf(runID, rows, 0)
}

// Tail reads a run's status and its events after seq in one statement.
func (d *D1) Tail(ctx context.Context, runID string, after int64, limit int) (string, []Event, bool, error) {
	rows, err := d.one(ctx, tailStmt, runID, after, limit)
	if err != nil || len(rows) == 0 {
		return "", nil, false, err
	}
	evs, err := eventsOf(runID, rows, 1)
	if err != nil {
		return "", nil, false, err
	}
	return text(rows[0][0]), evs, true, nil
}

// Run finds a run by id, with its queue position.
func (d *D1) Run(ctx context.Context, id string) (Run, bool, error) {
	rows, err := d.one(ctx, `SELECT `+runColumns+`, (`+positionStmt+`) FROM runs WHERE id = ?1`, id)
	if err != nil || len(rows) == 0 {
		return Run{}, false, err
	}
	row := rows[0]
	if len(row) != 12 {
		return Run{}, false, fmt.Errorf("store: a run row of %d columns", len(row))
	}
	r, err := runOf(row[:11])
	if err != nil {
		return Run{}, false, err
	}
	r.Position = int(number(row[11]))
	return r, true, nil
}

// Runs lists a token's runs newest first, with their queue positions.
func (d *D1) Runs(ctx context.Context, tokenID string, before int64, limit int) ([]Run, error) {
	if before <= 0 {
		before = 1<<53 - 1 // a JavaScript number holds it exactly
	}
	rows, err := d.one(ctx, `SELECT `+runColumns+`, CASE status WHEN 'queued' THEN
			(SELECT count(*) FROM runs q WHERE q.status = 'queued' AND q.seq < runs.seq) ELSE 0 END
		FROM runs WHERE token_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3`, tokenID, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Run, 0, len(rows))
	for _, row := range rows {
		if len(row) != 12 {
			return nil, fmt.Errorf("store: a run row of %d columns", len(row))
		}
		r, err := runOf(row[:11])
		if err != nil {
			return nil, err
		}
		r.Position = int(number(row[11]))
		out = append(out, r)
	}
	return out, nil
}

// Counts are how many runs run and wait now.
func (d *D1) Counts(ctx context.Context) (Counts, error) {
	rows, err := d.one(ctx, countsStmt)
	if err != nil || len(rows) == 0 {
		return Counts{}, err
	}
	r, err := rowOf(rows[0], 3)
	if err != nil {
		return Counts{}, err
	}
	return Counts{Running: int(number(r[0])), Queued: int(number(r[1])), MostRunningPerToken: int(number(r[2]))}, nil
}

// Running lists the running runs, oldest first.
func (d *D1) Running(ctx context.Context) ([]Run, error) {
	rows, err := d.one(ctx, runningStmt)
	if err != nil {
		return nil, err
	}
	return runsOf(rows)
}

// SaveRecording replaces a run's recording.
func (d *D1) SaveRecording(ctx context.Context, runID string, data []byte, at time.Time) error {
	_, err := d.one(ctx, saveRecordingStmt, runID, string(data), stamp(at))
	return err
}

// Recording is a run's recording.
func (d *D1) Recording(ctx context.Context, runID string) ([]byte, bool, error) {
	rows, err := d.one(ctx, `SELECT data FROM recordings WHERE run_id = ?1`, runID)
	if err != nil || len(rows) == 0 || len(rows[0]) != 1 {
		return nil, false, err
	}
	return []byte(text(rows[0][0])), true, nil
}

// RequestCancel records a cancel request for a running run.
func (d *D1) RequestCancel(ctx context.Context, id string, at time.Time) (bool, error) {
	rs, err := d.db.Batch(ctx, []Statement{
		{SQL: requestCancelStmt, Args: []any{id, stamp(at)}},
		{SQL: `SELECT 1 FROM runs WHERE id = ?1 AND status = 'running'`, Args: []any{id}},
	})
	if err != nil || len(rs) != 2 {
		return false, err
	}
	return len(rs[1]) == 1, nil
}

// CancelRequested reports whether a cancel was requested for a run.
func (d *D1) CancelRequested(ctx context.Context, id string) (bool, error) {
	rows, err := d.one(ctx, `SELECT 1 FROM cancels WHERE run_id = ?1`, id)
	return len(rows) == 1, err
}

var _ Store = (*D1)(nil)
