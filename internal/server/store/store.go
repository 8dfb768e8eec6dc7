// Package store keeps the API server's state: tokens (only the HMAC of
// their secret), what each token used per day, runs, their events and
// their recordings. Store is the interface the server depends on; SQL
// implements it over database/sql in SQLite's dialect, every change one
// transaction and every admission test one conditional statement, so the
// same schema and statements serve the native server (go-sqlite3 in WAL
// mode, OpenFile) and, on Workers, D1 (D1, over a Batcher: D1 has no
// transactions but runs a batch of statements as one).
package store

import (
	"context"
	"errors"
	"time"
)

// Run statuses: queued and running, then the controller's three endings.
const (
	Queued     = "queued"
	Running    = "running"
	Answered   = "answered"
	Incomplete = "incomplete"
	Failed     = "failed"
)

// Token is an API token as stored: its secret is never kept, only its
// HMAC under the server's pepper.
type Token struct {
	ID   string
	Name string
	// Hash is the hex HMAC-SHA256 of the secret under the pepper.
	Hash           string
	Scopes         []string
	DailyRequests  int
	DailyLiveCalls int
	CreatedAt      time.Time
	// RevokedAt is zero while the token is valid.
	RevokedAt time.Time
}

// Meter names what an allowance counts.
type Meter string

// The two daily meters of a token.
const (
	Requests  Meter = "requests"   // API requests that passed authentication
	LiveCalls Meter = "live_calls" // Gemini attempts made for its runs
)

// RequestCount is a number of requests a token made on a day.
type RequestCount struct {
	TokenID  string
	Day      string
	Requests int
}

// Usage is what a token used on one day.
type Usage struct {
	Requests  int
	LiveCalls int
}

// Caps bound the runs: how many run at once, in all and per token, and
// how many wait in the queue, in all and per token.
type Caps struct {
	Running         int
	RunningPerToken int
	Queue           int
	QueuePerToken   int
}

// Counts are how many runs run and wait at one moment (one read).
type Counts struct {
	Running int
	Queued  int
	// MostRunningPerToken is the largest number of running runs of any
	// one token.
	MostRunningPerToken int
}

// NewRun is a run to admit.
type NewRun struct {
	ID      string
	TokenID string
	// Spec is the run's request as JSON: what a queued run starts from,
	// after a restart too.
	Spec string
	At   time.Time
}

// Run is a stored run.
type Run struct {
	Seq     int64
	ID      string
	TokenID string
	Status  string
	Reason  string
	Spec    string
	// Report is the trial report as JSON once the run finished ("" before,
	// and for a run dropped from the queue or interrupted).
	Report string
	// Error is {"code", "message"} as JSON when a fault ended the run.
	Error      string
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// Position is how many queued runs are ahead of a queued one.
	Position int
}

// Outcome is how a run ended.
type Outcome struct {
	Status string
	Reason string
	Report string
	Error  string
	At     time.Time
}

// NewEvent is an event to append; Append numbers it.
type NewEvent struct {
	Type string
	Data string
	At   time.Time
}

// Event is a stored event of a run; Seq counts from 1 in each run.
type Event struct {
	RunID string
	Seq   int64
	Type  string
	Data  string
	At    time.Time
}

// EventFunc builds the event a state change appends, from the run as it
// is after the change, inside the change's transaction: a client never
// sees a state without its event, nor an event without its state.
type EventFunc func(Run) NewEvent

// Admission refusals.
var (
	// ErrAtCapacity: a cap on running runs is reached (or runs wait ahead)
	// and the caller asked not to queue.
	ErrAtCapacity = errors.New("store: at capacity")
	// ErrQueueFull: the run would have queued, but the queue is full.
	ErrQueueFull = errors.New("store: queue full")
	// ErrRevoked: the run's token was revoked (after its request was
	// authenticated).
	ErrRevoked = errors.New("store: the token is revoked")
)

// TokenRevoked is the reason of a run its token's revocation ended.
const TokenRevoked = "token_revoked"

// Revoked is what revoking a token ended at once (its queued runs, with
// their end events appended) and which running runs it asked to stop.
type Revoked struct {
	Dropped  []Run
	Stopping []string
}

// Store is the server's persistence.
type Store interface {
	// AddToken stores a new token.
	AddToken(ctx context.Context, t Token) error
	// Token finds a token by id.
	Token(ctx context.Context, id string) (Token, bool, error)
	// Tokens lists every token, oldest first.
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes a valid token and ends what it started, in one
	// transaction: its queued runs end incomplete with reason
	// token_revoked, each appending end; its running runs get a cancel
	// request (the process running each stops it at its next poll, and
	// Charge already refuses their next model call). false, and nothing
	// done, when there is no valid token to revoke. Once revoked, a token's
	// runs are neither admitted nor started, and nothing is charged to it.
	RevokeToken(ctx context.Context, id string, at time.Time, end EventFunc) (Revoked, bool, error)

	// Charge counts one use of m for the token on day if fewer than limit
	// were counted and the token is not revoked; false (nothing counted)
	// otherwise. One statement.
	Charge(ctx context.Context, tokenID, day string, m Meter, limit int) (bool, error)
	// Usage is what the token used on day.
	Usage(ctx context.Context, tokenID, day string) (Usage, error)
	// AddRequests adds counted requests to the tokens' days, all in one
	// transaction (the server counts requests in memory and writes them
	// in groups; the allowance was checked as they were counted), and
	// returns each day's stored total after it (what other processes
	// counted included: a Worker's isolates each count their own).
	AddRequests(ctx context.Context, counts []RequestCount) ([]int, error)

	// Admit stores a run as running when the caps allow and no run that
	// could start waits ahead of it; else, if enqueue, as queued when the
	// queue has room; else it stores nothing and returns ErrAtCapacity or
	// ErrQueueFull (ErrRevoked when the token is revoked). The test and the insert are one statement; first is
	// appended in the same transaction.
	Admit(ctx context.Context, n NewRun, c Caps, enqueue bool, first EventFunc) (Run, error)
	// Promote starts the oldest queued run whose token is under its cap,
	// when the global cap allows, appending started; false when none can.
	// The events are the started run's first events (limit at most) when
	// the store read them in the same call (D1: in the promotion's batch,
	// which saves a Worker's run object a read for the run's event log),
	// nil when it did not.
	Promote(ctx context.Context, c Caps, at time.Time, started EventFunc, limit int) (Run, []Event, bool, error)
	// Finish ends a running run, appending end; false when it was not
	// running.
	Finish(ctx context.Context, id string, o Outcome, end EventFunc) (Run, bool, error)
	// FinishHeld is Finish for the process that runs run (as it was when
	// it started): es are appended first (as AppendAll would, whether or
	// not the run is still running), then the end, on condition that the
	// run is still running; it returns es numbered. The store need not
	// read the run first: D1 writes it all in one batch, one round trip
	// where AppendAll and Finish were three.
	FinishHeld(ctx context.Context, run Run, es []NewEvent, o Outcome, end EventFunc) ([]Event, Run, bool, error)
	// CancelQueued drops the token's queued run (incomplete, cancelled),
	// appending end; false when it was not queued.
	CancelQueued(ctx context.Context, tokenID, id string, at time.Time, end EventFunc) (Run, bool, error)
	// Interrupt ends every running run as incomplete, interrupted (what a
	// restart does to runs its dead process left running), appending end.
	// A store shared by processes that come and go (D1) ends only the runs
	// whose process must be gone: those running longer than a run may.
	Interrupt(ctx context.Context, at time.Time, end EventFunc) ([]Run, error)
	// RequestCancel asks whichever process runs a running run to stop it
	// (that process reads the request at its next poll); false when the
	// run is not running.
	RequestCancel(ctx context.Context, id string, at time.Time) (bool, error)
	// CancelRequested reports whether a cancel was requested for a run.
	CancelRequested(ctx context.Context, id string) (bool, error)

	// Append adds an event to a run and returns it numbered.
	Append(ctx context.Context, runID string, e NewEvent) (Event, error)
	// AppendAll adds events to a run in one transaction (all or none), in
	// order, and returns them numbered.
	AppendAll(ctx context.Context, runID string, es []NewEvent) ([]Event, error)
	// Events lists a run's events after seq, at most limit, in order.
	Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error)
	// Tail is Events with the run's status, both from one read: a run
	// that has finished there has every event there, its end included.
	// found is false when there is no such run.
	Tail(ctx context.Context, runID string, after int64, limit int) (status string, events []Event, found bool, err error)

	// Run finds a run by id.
	Run(ctx context.Context, id string) (Run, bool, error)
	// Runs lists a token's runs newest first, those with seq below before
	// (0: from the newest), at most limit.
	Runs(ctx context.Context, tokenID string, before int64, limit int) ([]Run, error)
	// Counts are how many runs run and wait now.
	Counts(ctx context.Context) (Counts, error)
	// Running lists the runs that are running, oldest first: what a
	// Worker's run object checks against the runs it holds when its alarm
	// fires (one it does not hold was lost with an evicted object).
	Running(ctx context.Context) ([]Run, error)

	// SaveRecording replaces a run's recording.
	SaveRecording(ctx context.Context, runID string, data []byte, at time.Time) error
	// Recording is a run's recording, if it has one.
	Recording(ctx context.Context, runID string) ([]byte, bool, error)

	Close() error
}
