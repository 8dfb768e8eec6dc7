// Package budget is the spending ledger for paid model requests. Every
// request's estimated cost is reserved, and the reservation persisted,
// before the request is sent; a request that would take the reserved total
// past the budget is refused unsent; the reservation of a request that was
// sent is never released, not even when the request fails, because a
// failed request may still be billed (only one made ahead and never sent
// is). Every change is a transaction on the store's latest bytes, so any
// number of processes or tabs can share one ledger. Nothing here retries.
package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Format is the ledger file's format tag.
const Format = "ragagent-ledger/1"

// Outcomes of a reservation besides a failure's reason code.
const (
	Reserved  = "reserved"  // persisted before sending; the outcome is not known yet
	Completed = "completed" // a reply came back
	// Released is a reservation made ahead (ReserveAll) for a request that
	// was never sent because its run stopped first; it no longer counts.
	Released = "released"
)

// Store keeps the ledger's bytes: a file for the command line, browser
// storage for the page. Several writers may share one store (processes,
// tabs), so a change is a transaction on the latest bytes, never a save of
// a copy read earlier.
type Store interface {
	// Load returns the saved ledger; ok is false when nothing was saved yet.
	Load() (data []byte, ok bool, err error)
	// Update replaces the saved ledger with apply's result as one step no
	// other writer can interleave with: it reads the latest bytes (exists
	// is false when nothing was saved), calls apply once with them and
	// saves what it returns. An error from apply leaves the store as it
	// was and is returned. The file store locks, reads, applies, writes
	// atomically and unlocks.
	Update(apply func(old []byte, exists bool) ([]byte, error)) error
}

// Entry is one reservation.
type Entry struct {
	Seq           int     `json:"seq"`
	At            string  `json:"at"`    // RFC 3339, UTC, from the injected clock
	Label         string  `json:"label"` // what the request was for
	Model         string  `json:"model"`
	RequestSHA256 string  `json:"request_sha256"`
	RequestBytes  int     `json:"request_bytes"`
	EstimatedUSD  float64 `json:"estimated_usd"`
	Outcome       string  `json:"outcome"` // Reserved, Completed or the failure's reason code
}

// Request is what a reservation is for.
type Request struct {
	Label         string
	Model         string
	RequestSHA256 string
	RequestBytes  int
	EstimatedUSD  float64
}

// Estimate is the amount reserved for a request: every byte of the request
// body counted as an input token (a token covers at least one byte of text,
// so this is an upper bound that needs no tokenizer), plus the whole output
// cap at the output price. It is an estimate from list prices, never a bill.
func Estimate(rate price.Rate, requestBytes, maxOutputTokens int) float64 {
	return rate.Cost(requestBytes, maxOutputTokens)
}

// Ledger is the reservations made against a budget. Every change (a
// budget, a reservation, a settlement) re-reads the store inside one
// Store.Update and decides on what it finds there, so processes or tabs
// sharing a store never reserve past the budget together and never drop
// each other's entries. The Ledger's own view (Budget, Spent, Entries) is
// the store as of its last read. A Ledger is not safe for concurrent use
// by goroutines.
type Ledger struct {
	store   Store
	clock   func() time.Time
	budget  *float64
	entries []Entry
	// mine maps the seq of each reservation this Ledger made to its
	// request's sha256, so a settlement finds its own entry or refuses.
	mine map[int]string
	// held are reservations ReserveAll made ahead, in order, not yet
	// claimed by Reserve.
	held []int
}

type file struct {
	Format    string   `json:"format"`
	BudgetUSD *float64 `json:"budget_usd"`
	SpentUSD  float64  `json:"spent_usd"` // informational: the sum of every reservation
	Entries   []Entry  `json:"entries"`
}

// Open loads the ledger from store (an empty ledger when nothing is saved).
// A ledger that cannot be read is an error, never a fresh start: it records
// money already reserved.
func Open(store Store, clock func() time.Time) (*Ledger, error) {
	if store == nil || clock == nil {
		return nil, errors.New("ledger: a store and a clock are required")
	}
	l := &Ledger{store: store, clock: clock, mine: map[int]string{}}
	data, ok, err := store.Load()
	if err != nil {
		return nil, fmt.Errorf("ledger: cannot read it: %w", err)
	}
	st, err := parse(data, ok)
	if err != nil {
		return nil, err
	}
	l.adopt(st)
	return l, nil
}

// state is what a ledger's text holds.
type state struct {
	budget  *float64
	entries []Entry
}

// parse reads a ledger's text (exists false: an empty ledger). A ledger
// that cannot be read is an error, never a fresh start.
func parse(data []byte, exists bool) (state, error) {
	if !exists {
		return state{}, nil
	}
	st, err := parseFile(data)
	if err != nil {
		return state{}, fmt.Errorf("ledger: %w (it records money already reserved, so it is not reset: repair or move it)", err)
	}
	return st, nil
}

func parseFile(data []byte) (state, error) {
	var f file
	if err := jsonfile.Decode(data, &f); err != nil {
		return state{}, fmt.Errorf("not a %s file: %v", Format, err)
	}
	if f.Format != Format {
		return state{}, fmt.Errorf("format is %q, want %q", f.Format, Format)
	}
	if f.BudgetUSD != nil && !validUSD(*f.BudgetUSD) {
		return state{}, fmt.Errorf("budget_usd must be a finite amount of at least 0")
	}
	for i, e := range f.Entries {
		switch {
		case e.Seq != i+1:
			return state{}, fmt.Errorf("entry %d has seq %d; entries are numbered 1, 2, 3 in order", i+1, e.Seq)
		case !validUSD(e.EstimatedUSD):
			return state{}, fmt.Errorf("entry %d: estimated_usd must be a finite amount of at least 0", i+1)
		case e.Outcome == "":
			return state{}, fmt.Errorf("entry %d has no outcome", i+1)
		}
	}
	return state{budget: f.BudgetUSD, entries: f.Entries}, nil
}

// adopt makes st the ledger's view.
func (l *Ledger) adopt(st state) { l.budget, l.entries = st.budget, st.entries }

// update changes the ledger as one Store.Update: change gets the latest
// state read inside it and edits it; the result is saved and becomes the
// ledger's view. An error from change saves nothing (the view is still
// refreshed to what was read).
func (l *Ledger) update(change func(st *state) error) error {
	var read, changed *state
	var refused error // the ledger's own refusal, returned as it is
	err := l.store.Update(func(old []byte, exists bool) ([]byte, error) {
		st, err := parse(old, exists)
		if err != nil {
			refused = err
			return nil, err
		}
		read = &state{budget: st.budget, entries: append([]Entry(nil), st.entries...)}
		if refused = change(&st); refused != nil {
			return nil, refused
		}
		data, err := st.bytes()
		if err != nil {
			refused = err
			return nil, err
		}
		changed = &st
		return data, nil
	})
	switch {
	case err == nil && changed != nil:
		l.adopt(*changed)
	case read != nil:
		l.adopt(*read)
	}
	switch {
	case refused != nil:
		return refused
	case err != nil:
		return fmt.Errorf("ledger: cannot update it: %w", err)
	}
	return nil
}

func validUSD(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// SetBudget sets (or changes) the budget and saves the ledger.
func (l *Ledger) SetBudget(usd float64) error {
	if !validUSD(usd) {
		return fmt.Errorf("ledger: the budget must be a finite amount of at least 0, got %v", usd)
	}
	return l.update(func(st *state) error {
		st.budget = &usd
		return nil
	})
}

// Budget is the budget, if one was set.
func (l *Ledger) Budget() (float64, bool) {
	if l.budget == nil {
		return 0, false
	}
	return *l.budget, true
}

// Spent is the sum of every reservation, failed requests included,
// released ones (never sent) excluded.
func (l *Ledger) Spent() float64 { return spent(l.entries) }

func spent(entries []Entry) float64 {
	total := 0.0
	for _, e := range entries {
		if e.Outcome != Released {
			total += e.EstimatedUSD
		}
	}
	return total
}

// Remaining is the budget less what is spent (0 with no budget).
func (l *Ledger) Remaining() float64 {
	if l.budget == nil {
		return 0
	}
	return *l.budget - l.Spent()
}

// Entries lists the reservations in order.
func (l *Ledger) Entries() []Entry { return append([]Entry(nil), l.entries...) }

// Statement is the ledger as a front end shows it: the budget (nil until
// one is set), what is reserved, what remains (nil without a budget) and
// every reservation.
type Statement struct {
	Format       string   `json:"format"`
	BudgetUSD    *float64 `json:"budget_usd"`
	SpentUSD     float64  `json:"spent_usd"`
	RemainingUSD *float64 `json:"remaining_usd"`
	Entries      []Entry  `json:"entries"`
}

// Statement describes the ledger as loaded or last changed.
func (l *Ledger) Statement() Statement {
	s := Statement{Format: Format, SpentUSD: l.Spent(), Entries: l.Entries()}
	if b, ok := l.Budget(); ok {
		remaining := l.Remaining()
		s.BudgetUSD, s.RemainingUSD = &b, &remaining
	}
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	return s
}

// Check tells, without reserving anything, whether estimates reserved one
// after another would stay within the budget: the test Reserve makes for
// each, in the same order, so a batch (a page's four listwise requests)
// can be refused whole, with nothing sent, before its first request. It
// judges the ledger as last read: another writer may reserve meanwhile, and
// then Reserve, which re-reads, refuses part-way rather than pass the
// budget.
func (l *Ledger) Check(label string, estimates ...float64) error {
	if l.budget == nil {
		return errNoBudget
	}
	for _, e := range estimates {
		if !validUSD(e) {
			return fmt.Errorf("ledger: the estimate must be a finite amount of at least 0, got %v", e)
		}
	}
	return overBudget(l.Spent(), *l.budget, label, estimates)
}

// overBudget is the one budget test Check, Reserve and ReserveAll make:
// the estimates added to spent one after another, in order (float64
// addition: the order decides the last bit, so all three add alike), and
// budget_exceeded when the total passes the budget.
func overBudget(spent, budget float64, label string, estimates []float64) error {
	total := spent
	for _, e := range estimates {
		total += e
	}
	if total > budget {
		return reason.New(reason.BudgetExceeded, "reserving $%.8f for %s would bring the reserved total to $%.8f, over the budget of $%.8f",
			total-spent, label, total, budget)
	}
	return nil
}

var errNoBudget = errors.New("ledger: no budget is set; set one before any paid request")

// Reserve records r's estimate before its request is sent and returns the
// entry's seq. Inside one Store.Update it re-reads the ledger and refuses,
// saving nothing, when no budget is set, when the estimate is not a finite
// amount, or (budget_exceeded) when the reserved total, every other
// writer's reservations included, would pass the budget; a reservation
// that cannot be saved is not made, so nothing may be sent.
//
// While reservations made ahead (ReserveAll) are held, a request claims
// the one made for its body instead; a request none was made for is
// refused, and must not be sent.
func (l *Ledger) Reserve(r Request) (int, error) {
	if len(l.held) > 0 {
		for i, seq := range l.held {
			if l.mine[seq] == r.RequestSHA256 {
				l.held = append(l.held[:i:i], l.held[i+1:]...)
				return seq, nil
			}
		}
		return 0, fmt.Errorf("ledger: no reservation was made ahead for the request %.12s…; nothing was sent", r.RequestSHA256)
	}
	seqs, err := l.reserve([]Request{r})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// ReserveAll reserves a batch's requests ahead, as one step: all of them,
// or (budget_exceeded, saving nothing) none when together they would pass
// the budget as it stands inside the lock, other writers' reservations
// included. So a batch that starts can finish, and processes sharing a
// budget that fits only some batches run those whole and refuse the rest
// before sending anything. Reserve then claims them; ReleaseHeld releases
// those never claimed.
func (l *Ledger) ReserveAll(rs []Request) ([]int, error) {
	if len(l.held) > 0 {
		return nil, errors.New("ledger: reservations made ahead are still held; release them first")
	}
	seqs, err := l.reserve(rs)
	if err != nil {
		return nil, err
	}
	l.held = append([]int(nil), seqs...)
	return seqs, nil
}

// reserve appends rs as one transaction.
func (l *Ledger) reserve(rs []Request) ([]int, error) {
	for _, r := range rs {
		if !validUSD(r.EstimatedUSD) {
			return nil, fmt.Errorf("ledger: the estimate must be a finite amount of at least 0, got %v", r.EstimatedUSD)
		}
	}
	var seqs []int
	err := l.update(func(st *state) error {
		if st.budget == nil {
			return errNoBudget
		}
		what, estimates := "", make([]float64, len(rs))
		for i, r := range rs {
			what, estimates[i] = r.Label, r.EstimatedUSD
		}
		if len(rs) > 1 {
			what = fmt.Sprintf("the %d requests of the batch", len(rs))
		}
		if err := overBudget(spent(st.entries), *st.budget, what, estimates); err != nil {
			return err
		}
		at := l.clock().UTC().Format(time.RFC3339)
		for _, r := range rs {
			seq := len(st.entries) + 1
			st.entries = append(st.entries, Entry{Seq: seq, At: at, Label: r.Label, Model: r.Model,
				RequestSHA256: r.RequestSHA256, RequestBytes: r.RequestBytes, EstimatedUSD: r.EstimatedUSD, Outcome: Reserved})
			seqs = append(seqs, seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, seq := range seqs {
		l.mine[seq] = rs[i].RequestSHA256
	}
	return seqs, nil
}

// ReleaseHeld releases the reservations ReserveAll made that no request
// claimed (its run stopped before sending them): they were never sent, so
// they stop counting. A process killed first leaves them reserved, which
// over-counts and never under-counts.
func (l *Ledger) ReleaseHeld() error {
	held := l.held
	if len(held) == 0 {
		return nil
	}
	l.held = nil
	return l.update(func(st *state) error {
		for _, seq := range held {
			if seq > len(st.entries) || st.entries[seq-1].RequestSHA256 != l.mine[seq] {
				return fmt.Errorf("ledger: entry %d is no longer the reservation made here (the ledger was replaced or edited meanwhile); it is not released", seq)
			}
			st.entries[seq-1].Outcome = Released
		}
		return nil
	})
}

// Settle records how a request this Ledger reserved ended; the reservation
// stays. It re-reads the ledger and refuses to touch an entry that is not
// the reservation it made (the file was replaced or edited meanwhile).
func (l *Ledger) Settle(seq int, outcome string) error {
	sha, ok := l.mine[seq]
	if !ok {
		return fmt.Errorf("ledger: no reservation %d was made here", seq)
	}
	if outcome == "" {
		return errors.New("ledger: an outcome is required")
	}
	return l.update(func(st *state) error {
		if seq > len(st.entries) || st.entries[seq-1].RequestSHA256 != sha {
			return fmt.Errorf("ledger: entry %d is no longer the reservation made for request %.12s… (the ledger was replaced or edited meanwhile); its outcome %s is not recorded", seq, sha, outcome)
		}
		st.entries[seq-1].Outcome = outcome
		return nil
	})
}

// bytes is the ledger's text: indented JSON with the informational total.
func (st state) bytes() ([]byte, error) {
	entries := st.entries
	if entries == nil {
		entries = []Entry{}
	}
	data, err := json.MarshalIndent(file{Format: Format, BudgetUSD: st.budget, SpentUSD: spent(entries), Entries: entries}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return append(data, '\n'), nil
}
