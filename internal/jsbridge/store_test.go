//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
)

// serialUpdate is an update(apply) over a load and a save: one change at
// a time (a promise chain stands for worker.js's IndexedDB transaction),
// the latest text loaded inside it, apply's text saved (null: nothing to
// save).
const serialUpdate = `
	const s = this;
	const run = (s.chain || Promise.resolve()).then(async () => {
		const text = apply(await s.load());
		if (typeof text === "string") await s.save(text);
	});
	s.chain = run.catch(() => {});
	return run;`

// storeHooks makes a {load, update} object from JS sources, as the page's
// shell would hand one over: update is serialUpdate over load and save.
func storeHooks(t *testing.T, load, save string) Store {
	t.Helper()
	o := js.Global().Get("Object").New()
	o.Set("load", jsFunc(t, "", load))
	o.Set("save", jsFunc(t, "text", save))
	o.Set("update", jsFunc(t, "apply", serialUpdate).Call("bind", o))
	s, err := StoreOf(o)
	require.NoError(t, err)
	return s
}

func TestShellStoreLoad(t *testing.T) {
	for _, tc := range []struct {
		name, load string
		data       string
		ok         bool
		err        string
	}{
		{"nothing saved yet", `return Promise.resolve(null)`, "", false, ""},
		{"undefined is nothing", `return Promise.resolve()`, "", false, ""},
		{"the saved text", `return Promise.resolve('{"format": "x"}')`, `{"format": "x"}`, true, ""},
		{"a rejection", `return Promise.reject(new Error("SecurityError"))`, "", false, "could not load it: SecurityError"},
		{"not text", `return Promise.resolve(42)`, "", false, "not the ledger's text"},
		{"a throw", `throw new Error("sync")`, "", false, "threw"},
		{"not a promise", `return "text"`, "", false, "did not return a Promise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, ok, err := storeHooks(t, tc.load, `return Promise.resolve()`).Load()
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.data, string(data))
		})
	}
}

func TestShellStoreSave(t *testing.T) {
	saved := js.Global().Get("Object").New()
	js.Global().Set("savedLedger", saved)
	defer js.Global().Delete("savedLedger")
	s := storeHooks(t, `return Promise.resolve(savedLedger.text === undefined ? null : savedLedger.text)`,
		`savedLedger.text = text; return Promise.resolve()`)
	clock := func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }
	l, err := budget.Open(s, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(0.01))
	_, err = l.Reserve(budget.Request{Label: "a", Model: "m", EstimatedUSD: 0.002})
	require.NoError(t, err)
	assert.Contains(t, saved.Get("text").String(), `"outcome": "reserved"`, "the reservation reached the shell before Reserve returned")

	again, err := budget.Open(s, clock)
	require.NoError(t, err)
	assert.Equal(t, l.Entries(), again.Entries())
	state := again.Statement()
	require.NotNil(t, state.BudgetUSD)
	assert.Equal(t, 0.01, *state.BudgetUSD)
	require.NotNil(t, state.RemainingUSD)
	assert.InDelta(t, 0.008, *state.RemainingUSD, 1e-15)

	failing := storeHooks(t, `return Promise.resolve(null)`, `return Promise.reject(new Error("QuotaExceededError"))`)
	assert.ErrorContains(t, failing.Update(func([]byte, bool) ([]byte, error) { return []byte("{}"), nil }), "could not update it: QuotaExceededError")
}

// TestShellStoreUpdate: update's outcomes, one row each: the latest text
// reaches apply and apply's result is saved; apply's own error comes back
// as it is with nothing saved; a store that fails, never calls apply, or
// is not there is an error.
func TestShellStoreUpdate(t *testing.T) {
	refused := errors.New("refused by apply")
	for _, tc := range []struct {
		name, load, update string
		apply              func(old []byte, exists bool) ([]byte, error)
		saved, err         string
		is                 error
	}{
		{name: "nothing saved yet", load: `return Promise.resolve(null)`,
			apply: func(old []byte, exists bool) ([]byte, error) {
				return []byte(fmt.Sprintf("new %v %q", exists, old)), nil
			}, saved: `new false ""`},
		{name: "the latest text", load: `return Promise.resolve("old")`,
			apply: func(old []byte, exists bool) ([]byte, error) {
				return []byte(fmt.Sprintf("new %v %q", exists, old)), nil
			}, saved: `new true "old"`},
		{name: "apply's refusal, nothing saved", load: `return Promise.resolve("old")`,
			apply: func([]byte, bool) ([]byte, error) { return nil, refused }, is: refused},
		{name: "the transaction failed", load: `return Promise.resolve("old")`, update: `return Promise.reject(new Error("AbortError"))`,
			err: "could not update it: AbortError"},
		{name: "apply never called", load: `return Promise.resolve("old")`, update: `return Promise.resolve()`,
			err: "did not apply the change"},
		{name: "not text", load: `return Promise.resolve(42)`, err: "not the ledger's text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := js.Global().Get("Object").New()
			js.Global().Set("savedUpdate", saved)
			defer js.Global().Delete("savedUpdate")
			s := storeHooks(t, tc.load, `savedUpdate.text = text; return Promise.resolve()`)
			if tc.update != "" {
				s.update = jsFunc(t, "apply", tc.update)
			}
			apply := tc.apply
			if apply == nil {
				apply = func([]byte, bool) ([]byte, error) { return []byte("x"), nil }
			}
			err := s.Update(apply)
			switch {
			case tc.is != nil:
				assert.ErrorIs(t, err, tc.is)
			case tc.err != "":
				assert.ErrorContains(t, err, tc.err)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.saved, saved.Get("text").String())
				return
			}
			assert.True(t, saved.Get("text").IsUndefined(), "nothing was saved")
		})
	}
	_, err := StoreOf(js.Global().Get("Object").New())
	assert.ErrorContains(t, err, "needs a store")
}

// TestLedgersSharingAStoreNeverPassTheBudget: tabs sharing the page's
// storage are Ledgers sharing one store, each reserving while the others
// do. Every reservation is one update, no other in between, so the
// budget holds and no entry is lost. (With a load and a save of its own
// around apply, the reservations interleaved: each tab read the same
// ledger, all of them fitted, and the last save dropped the others.)
func TestLedgersSharingAStoreNeverPassTheBudget(t *testing.T) {
	shared := js.Global().Get("Object").New()
	js.Global().Set("sharedLedger", shared)
	defer js.Global().Delete("sharedLedger")
	// A load or a save settles on a later turn, as the page's relay does.
	s := storeHooks(t, `return new Promise((r) => setTimeout(() => r(sharedLedger.text === undefined ? null : sharedLedger.text), 1))`,
		`return new Promise((r) => setTimeout(() => { sharedLedger.text = text; r(); }, 1))`)
	clock := func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }
	first, err := budget.Open(s, clock)
	require.NoError(t, err)
	require.NoError(t, first.SetBudget(0.008)) // room for four reservations of $0.002

	const tabs, each = 4, 3
	var wg sync.WaitGroup
	made := make([]int, tabs)
	for i := range tabs {
		l, err := budget.Open(s, clock)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if _, err := l.Reserve(budget.Request{Label: fmt.Sprintf("tab %d request %d", i, j), Model: "m", EstimatedUSD: 0.002}); err == nil {
					made[i]++
				}
			}
		}()
	}
	wg.Wait()
	after, err := budget.Open(s, clock)
	require.NoError(t, err)
	total := 0
	for _, n := range made {
		total += n
	}
	assert.Equal(t, 4, total, "the budget admits exactly four reservations")
	assert.Len(t, after.Entries(), total, "every reservation made is in the ledger")
	assert.LessOrEqual(t, after.Spent(), 0.008+1e-12)
}

func TestStoreOfNeedsBothFunctions(t *testing.T) {
	_, err := StoreOf(js.Undefined())
	assert.ErrorContains(t, err, "needs a store")
	o := js.Global().Get("Object").New()
	o.Set("load", jsFunc(t, "", "return Promise.resolve(null)"))
	_, err = StoreOf(o)
	assert.Error(t, err)
}
