// Package budget is the spending ledger for paid model requests. Every
// request's estimated cost is reserved, and the reservation persisted,
// before the request is sent; a request that would take the reserved total
// past the budget is refused unsent; a reservation is never released, not
// even when the request fails, because a failed request may still be
// billed. Nothing here retries.
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
)

// Store keeps the ledger's bytes: a file for the command line, browser
// storage for the page.
type Store interface {
	// Load returns the saved ledger; ok is false when nothing was saved yet.
	Load() (data []byte, ok bool, err error)
	// Save replaces the saved ledger.
	Save(data []byte) error
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

// Ledger is the reservations made against a budget. It is not safe for
// concurrent use, and two processes sharing one file can race: give each
// batch its own ledger file or run one batch at a time.
type Ledger struct {
	store   Store
	clock   func() time.Time
	budget  *float64
	entries []Entry
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
	l := &Ledger{store: store, clock: clock}
	data, ok, err := store.Load()
	if err != nil {
		return nil, fmt.Errorf("ledger: cannot read it: %w", err)
	}
	if !ok {
		return l, nil
	}
	if err := l.parse(data); err != nil {
		return nil, fmt.Errorf("ledger: %w (it records money already reserved, so it is not reset: repair or move it)", err)
	}
	return l, nil
}

func (l *Ledger) parse(data []byte) error {
	var f file
	if err := jsonfile.Decode(data, &f); err != nil {
		return fmt.Errorf("not a %s file: %v", Format, err)
	}
	if f.Format != Format {
		return fmt.Errorf("format is %q, want %q", f.Format, Format)
	}
	if f.BudgetUSD != nil && !validUSD(*f.BudgetUSD) {
		return fmt.Errorf("budget_usd must be a finite amount of at least 0")
	}
	for i, e := range f.Entries {
		switch {
		case e.Seq != i+1:
			return fmt.Errorf("entry %d has seq %d; entries are numbered 1, 2, 3 in order", i+1, e.Seq)
		case !validUSD(e.EstimatedUSD):
			return fmt.Errorf("entry %d: estimated_usd must be a finite amount of at least 0", i+1)
		case e.Outcome == "":
			return fmt.Errorf("entry %d has no outcome", i+1)
		}
	}
	l.budget, l.entries = f.BudgetUSD, f.Entries
	return nil
}

func validUSD(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// SetBudget sets (or changes) the budget and saves the ledger.
func (l *Ledger) SetBudget(usd float64) error {
	if !validUSD(usd) {
		return fmt.Errorf("ledger: the budget must be a finite amount of at least 0, got %v", usd)
	}
	old := l.budget
	l.budget = &usd
	if err := l.save(); err != nil {
		l.budget = old
		return err
	}
	return nil
}

// Budget is the budget, if one was set.
func (l *Ledger) Budget() (float64, bool) {
	if l.budget == nil {
		return 0, false
	}
	return *l.budget, true
}

// Spent is the sum of every reservation, failed requests included.
func (l *Ledger) Spent() float64 {
	total := 0.0
	for _, e := range l.entries {
		total += e.EstimatedUSD
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

// Check tells, without reserving anything, whether estimates reserved one
// after another would stay within the budget: the test Reserve makes for
// each, in the same order, so a batch (a page's four listwise requests)
// can be refused whole, with nothing sent, before its first request.
func (l *Ledger) Check(label string, estimates ...float64) error {
	if l.budget == nil {
		return errNoBudget
	}
	total := l.Spent()
	for _, e := range estimates {
		if !validUSD(e) {
			return fmt.Errorf("ledger: the estimate must be a finite amount of at least 0, got %v", e)
		}
		total += e
	}
	if total > *l.budget {
		return reason.New(reason.BudgetExceeded, "reserving $%.8f for %s would bring the reserved total to $%.8f, over the budget of $%.8f",
			total-l.Spent(), label, total, *l.budget)
	}
	return nil
}

var errNoBudget = errors.New("ledger: no budget is set; set one before any paid request")

// Reserve records r's estimate before its request is sent and returns the
// entry's seq. It refuses, saving nothing, when no budget is set, when the
// estimate is not a finite amount, or (budget_exceeded) when the reserved
// total would pass the budget; a reservation that cannot be saved is not
// made, so nothing may be sent.
func (l *Ledger) Reserve(r Request) (int, error) {
	if l.budget == nil {
		return 0, errNoBudget
	}
	if !validUSD(r.EstimatedUSD) {
		return 0, fmt.Errorf("ledger: the estimate must be a finite amount of at least 0, got %v", r.EstimatedUSD)
	}
	spent := l.Spent()
	if spent+r.EstimatedUSD > *l.budget {
		return 0, reason.New(reason.BudgetExceeded, "reserving $%.8f for %s would bring the reserved total to $%.8f, over the budget of $%.8f",
			r.EstimatedUSD, r.Label, spent+r.EstimatedUSD, *l.budget)
	}
	e := Entry{Seq: len(l.entries) + 1, At: l.clock().UTC().Format(time.RFC3339), Label: r.Label, Model: r.Model,
		RequestSHA256: r.RequestSHA256, RequestBytes: r.RequestBytes, EstimatedUSD: r.EstimatedUSD, Outcome: Reserved}
	l.entries = append(l.entries, e)
	if err := l.save(); err != nil {
		l.entries = l.entries[:len(l.entries)-1]
		return 0, err
	}
	return e.Seq, nil
}

// Settle records how a reserved request ended; the reservation stays.
func (l *Ledger) Settle(seq int, outcome string) error {
	if seq < 1 || seq > len(l.entries) {
		return fmt.Errorf("ledger: no reservation %d", seq)
	}
	if outcome == "" {
		return errors.New("ledger: an outcome is required")
	}
	l.entries[seq-1].Outcome = outcome
	return l.save()
}

func (l *Ledger) save() error {
	entries := l.entries
	if entries == nil {
		entries = []Entry{}
	}
	data, err := json.MarshalIndent(file{Format: Format, BudgetUSD: l.budget, SpentUSD: l.Spent(), Entries: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := l.store.Save(append(data, '\n')); err != nil {
		return fmt.Errorf("ledger: cannot save it: %w", err)
	}
	return nil
}
