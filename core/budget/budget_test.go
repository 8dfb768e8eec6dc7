package budget_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/reason"
)

func clock() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

func request(label string, usd float64) budget.Request {
	return budget.Request{Label: label, Model: "gemini-3.1-flash-lite", RequestSHA256: strings.Repeat("a", 64), RequestBytes: 1776, EstimatedUSD: usd}
}

func TestReserveSettleAndPersist(t *testing.T) {
	store := budget.NewMemory(nil)
	l, err := budget.Open(store, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(0.005))

	seq, err := l.Reserve(request("first", 0.002))
	require.NoError(t, err)
	assert.Equal(t, 1, seq)
	// The reservation is saved before Reserve returns, i.e. before sending.
	reopened, err := budget.Open(store, clock)
	require.NoError(t, err)
	require.Len(t, reopened.Entries(), 1)
	assert.Equal(t, budget.Reserved, reopened.Entries()[0].Outcome)
	assert.Equal(t, "2026-11-29T12:00:00Z", reopened.Entries()[0].At)

	require.NoError(t, l.Settle(seq, "model_transport_failed:HTTPError"))
	seq, err = l.Reserve(request("second", 0.002))
	require.NoError(t, err)
	require.NoError(t, l.Settle(seq, budget.Completed))

	// The failed request's reservation is kept: 0.004 of 0.005 is spent.
	assert.InDelta(t, 0.004, l.Spent(), 1e-15)
	assert.InDelta(t, 0.001, l.Remaining(), 1e-15)
	_, err = l.Reserve(request("third", 0.002))
	code, ok := reason.Of(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, reason.BudgetExceeded, code)
	assert.Len(t, l.Entries(), 2, "a refused request reserves nothing")

	reopened, err = budget.Open(store, clock)
	require.NoError(t, err)
	b, ok := reopened.Budget()
	require.True(t, ok)
	assert.Equal(t, 0.005, b)
	assert.Equal(t, []string{"model_transport_failed:HTTPError", budget.Completed},
		[]string{reopened.Entries()[0].Outcome, reopened.Entries()[1].Outcome})
	assert.Contains(t, string(store.Bytes()), `"spent_usd": 0.004`)
}

func TestReserveExactlyUpToTheBudget(t *testing.T) {
	l, err := budget.Open(budget.NewMemory(nil), clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(0.5))
	_, err = l.Reserve(request("a", 0.25))
	require.NoError(t, err)
	_, err = l.Reserve(request("b", 0.25))
	require.NoError(t, err, "reaching the budget is allowed; passing it is not")
	_, err = l.Reserve(request("c", 0))
	require.NoError(t, err)
	_, err = l.Reserve(request("d", 1e-12))
	require.Error(t, err)
}

func TestReserveRefusals(t *testing.T) {
	l, err := budget.Open(budget.NewMemory(nil), clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("no budget", 0.001))
	assert.ErrorContains(t, err, "no budget")
	assert.Error(t, l.SetBudget(-1))
	require.NoError(t, l.SetBudget(1))
	for _, bad := range []float64{-0.1, nanValue(), math.Inf(1)} {
		_, err = l.Reserve(request("bad", bad))
		assert.ErrorContains(t, err, "estimate", "%v", bad)
	}
	assert.Empty(t, l.Entries())
	assert.Error(t, l.Settle(1, budget.Completed))
}

// TestCheckAgreesWithReserve: a batch Check passes exactly when reserving
// its estimates one after another would, and it reserves nothing.
func TestCheckAgreesWithReserve(t *testing.T) {
	for _, c := range []struct {
		name      string
		spent     []float64
		estimates []float64
		fits      bool
		budget    float64 // 0: 0.01
	}{
		{"empty batch", nil, nil, true, 0},
		{"within", nil, []float64{0.00198, 0.0019785, 0.001976, 0.001979}, true, 0},
		{"exactly the budget", []float64{0.004}, []float64{0.003, 0.003}, true, 0},
		{"the last one passes it", []float64{0.004}, []float64{0.003, 0.003, 1e-12}, false, 0},
		{"spent already", []float64{0.009}, []float64{0.00198}, false, 0},
		// float64: ten thousandths add up to a hair over a hundredth, and both say so
		{"ten thousandths", nil, []float64{0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001}, false, 0},
		// A budget a rounding below what the batch brings it to: added one
		// after another (Check, Reserve) it passes; added as the batch's
		// sum first (ReserveAll did) it did not, so ReserveAll accepted
		// what Check refused.
		{"a rounding over", []float64{0.037}, []float64{0.00198, 0.0019785, 0.001976, 0.001979}, false, 0.044913499999999995},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.budget == 0 {
				c.budget = 0.01
			}
			ledger := func() *budget.Ledger {
				l, err := budget.Open(budget.NewMemory(nil), clock)
				require.NoError(t, err)
				require.NoError(t, l.SetBudget(c.budget))
				for _, s := range c.spent {
					_, err := l.Reserve(request("earlier", s))
					require.NoError(t, err)
				}
				return l
			}
			var batch []budget.Request
			for _, e := range c.estimates {
				batch = append(batch, request("one", e))
			}
			_, allErr := ledger().ReserveAll(batch)
			l := ledger()
			before := len(l.Entries())
			err := l.Check("the batch", c.estimates...)
			assert.Len(t, l.Entries(), before, "Check reserves nothing")
			var reserveErr error
			for _, e := range c.estimates {
				if _, reserveErr = l.Reserve(request("one", e)); reserveErr != nil {
					break
				}
			}
			if c.fits {
				assert.NoError(t, err)
				assert.NoError(t, reserveErr)
				assert.NoError(t, allErr)
				return
			}
			assert.Error(t, allErr, "ReserveAll refuses the same batch")
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, reason.BudgetExceeded, code)
			assert.ErrorContains(t, err, "the batch")
			assert.Error(t, reserveErr, "Reserve refuses the same batch")
		})
	}
}

func TestCheckRefusals(t *testing.T) {
	l, err := budget.Open(budget.NewMemory(nil), clock)
	require.NoError(t, err)
	assert.ErrorContains(t, l.Check("x", 0.001), "no budget")
	require.NoError(t, l.SetBudget(1))
	for _, bad := range []float64{-0.1, nanValue(), math.Inf(1)} {
		assert.ErrorContains(t, l.Check("bad", 0.1, bad), "estimate", "%v", bad)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestAReservationThatCannotBeSavedIsNotMade(t *testing.T) {
	store := budget.NewMemory(nil)
	l, err := budget.Open(store, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(1))
	store.FailSaves(errors.New("disk full"))
	_, err = l.Reserve(request("x", 0.1))
	assert.ErrorContains(t, err, "disk full")
	assert.Empty(t, l.Entries())
	assert.Equal(t, 0.0, l.Spent())
}

func TestCorruptLedgerIsAOneLineErrorNeverAFreshStart(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"not JSON", "garbage", "not a ragagent-ledger/1 file"},
		{"truncated", `{"format": "ragagent-ledger/1", "entries": [`, "not a ragagent-ledger/1 file"},
		{"other format", `{"format": "x", "budget_usd": 1, "entries": []}`, `format is "x"`},
		{"negative budget", `{"format": "ragagent-ledger/1", "budget_usd": -1, "entries": []}`, "budget_usd"},
		{"gap in seq", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 2, "estimated_usd": 0.1, "outcome": "completed"}]}`, "seq 2"},
		{"negative estimate", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 1, "estimated_usd": -0.1, "outcome": "completed"}]}`, "estimated_usd"},
		{"no outcome", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 1, "estimated_usd": 0.1}]}`, "no outcome"},
		{"unknown key", `{"format": "ragagent-ledger/1", "budget": 1, "entries": []}`, "unknown field"},
		{"trailing data", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": []} {}`, "extra data"},
		// encoding/json alone took the last of two "entries" keys and
		// matched "ENTRIES" to entries, dropping earlier reservations.
		{"repeated entries key", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 1, "estimated_usd": 0.5, "outcome": "completed"}], "entries": []}`, `the key "entries" appears twice`},
		{"case-variant entries key", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 1, "estimated_usd": 0.5, "outcome": "completed"}], "ENTRIES": []}`, "differ only in case"},
		{"ENTRIES alone", `{"format": "ragagent-ledger/1", "budget_usd": 1, "ENTRIES": [{"seq": 1, "estimated_usd": 0.5, "outcome": "completed"}]}`, `unknown field "ENTRIES"`},
		{"case-variant entry field", `{"format": "ragagent-ledger/1", "budget_usd": 1, "entries": [{"seq": 1, "Estimated_USD": 0.5, "outcome": "completed"}]}`, `unknown field "Estimated_USD" in entries[0]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := budget.Open(budget.NewMemory([]byte(c.data)), clock)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "not reset")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestOpenNeedsAStoreAndAClock(t *testing.T) {
	_, err := budget.Open(nil, clock)
	assert.Error(t, err)
	_, err = budget.Open(budget.NewMemory(nil), nil)
	assert.Error(t, err)
}

func TestEstimateIsBodyBytesPlusTheOutputCap(t *testing.T) {
	rate := price.Rate{Model: "m", InputPerMTok: 0.25, OutputPerMTok: 1.50}
	// 1776 body bytes at $0.25/M plus 1024 output tokens at $1.50/M.
	assert.InDelta(t, 0.00198, budget.Estimate(rate, 1776, 1024), 1e-18)
	assert.Equal(t, 0.0, budget.Estimate(price.Rate{}, 1776, 1024))
}

// TestReserveAllIsWholeOrNothing: a batch is reserved in one step or not
// at all, its requests claim their reservations by body, what is never
// sent is released (and stops counting), and a request nothing was
// reserved for is refused.
func TestReserveAllIsWholeOrNothing(t *testing.T) {
	store := budget.NewMemory(nil)
	l, err := budget.Open(store, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(0.01))
	batch := []budget.Request{request("a", 0.003), request("b", 0.003), request("c", 0.003)}
	batch[1].RequestSHA256, batch[2].RequestSHA256 = strings.Repeat("b", 64), strings.Repeat("c", 64)

	// Another writer reserved meanwhile: the batch no longer fits, and
	// nothing of it is reserved.
	other, err := budget.Open(store, clock)
	require.NoError(t, err)
	_, err = other.Reserve(request("other", 0.002))
	require.NoError(t, err)
	_, err = l.ReserveAll(batch)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.BudgetExceeded, code)
	assert.ErrorContains(t, err, "the 3 requests of the batch")
	assert.Len(t, l.Entries(), 1, "the refusal saw the other writer's reservation, and added nothing")

	require.NoError(t, l.SetBudget(0.0115))
	seqs, err := l.ReserveAll(batch)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3, 4}, seqs)
	// The third request claims its own reservation though the second is
	// never sent.
	seq, err := l.Reserve(batch[2])
	require.NoError(t, err)
	assert.Equal(t, 4, seq)
	require.NoError(t, l.Settle(4, budget.Completed))
	unplanned := request("unplanned", 0.001)
	unplanned.RequestSHA256 = strings.Repeat("d", 64)
	_, err = l.Reserve(unplanned)
	assert.ErrorContains(t, err, "no reservation was made ahead")
	seq, err = l.Reserve(batch[0])
	require.NoError(t, err)
	require.NoError(t, l.Settle(seq, budget.Completed))

	require.NoError(t, l.ReleaseHeld())
	reopened, err := budget.Open(store, clock)
	require.NoError(t, err)
	var outcomes []string
	for _, e := range reopened.Entries() {
		outcomes = append(outcomes, e.Outcome)
	}
	assert.Equal(t, []string{budget.Reserved, budget.Completed, budget.Released, budget.Completed}, outcomes)
	assert.InDelta(t, 0.008, reopened.Spent(), 1e-15, "the released reservation no longer counts")
	_, err = l.Reserve(request("after", 0.001))
	require.NoError(t, err, "with nothing held, Reserve reserves again")
}

// TestSettleTouchesOnlyItsOwnReservation: a ledger replaced meanwhile
// (its entry seq now another request's) is refused, not overwritten.
func TestSettleTouchesOnlyItsOwnReservation(t *testing.T) {
	store := budget.NewMemory(nil)
	l, err := budget.Open(store, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(1))
	seq, err := l.Reserve(request("mine", 0.1))
	require.NoError(t, err)
	require.NoError(t, store.Update(func(old []byte, _ bool) ([]byte, error) { // another writer, meanwhile
		return []byte(strings.Replace(string(old), strings.Repeat("a", 64), strings.Repeat("f", 64), 1)), nil
	}))
	assert.ErrorContains(t, l.Settle(seq, budget.Completed), "no longer the reservation")
	assert.ErrorContains(t, l.Settle(7, budget.Completed), "no reservation 7 was made here")
}

// FuzzOpen: any ledger text either opens or is refused in one line (never
// a fresh start); a ledger that opens keeps every entry through an update.
func FuzzOpen(f *testing.F) {
	f.Add(`{"format": "ragagent-ledger/1", "budget_usd": 1, "spent_usd": 0.1, "entries": [{"seq": 1, "at": "x", "label": "l", "model": "m", "request_sha256": "s", "request_bytes": 1, "estimated_usd": 0.1, "outcome": "completed"}]}`)
	f.Add(`{"format": "ragagent-ledger/1", "budget_usd": null, "entries": []}`)
	f.Add(`{"format": "ragagent-ledger/1", "entries": [], "ENTRIES": []}`)
	f.Add(`{"format": "ragagent-ledger/1", "budget_usd": 1e400, "entries": []}`)
	f.Fuzz(func(t *testing.T, text string) {
		store := budget.NewMemory([]byte(text))
		l, err := budget.Open(store, clock)
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			require.Contains(t, err.Error(), "not reset")
			return
		}
		before := l.Entries()
		if err := l.SetBudget(1); err != nil {
			return
		}
		again, err := budget.Open(store, clock)
		require.NoError(t, err, "what the ledger saves, it reads back")
		require.Equal(t, len(before), len(again.Entries()))
	})
}
