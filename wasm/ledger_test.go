//go:build js && wasm

package main

import (
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/engine"
)

// storeHooks makes a {load, save} object from JS sources, as the page's
// shell would hand one over.
func storeHooks(t *testing.T, load, save string) shellStore {
	t.Helper()
	o := js.Global().Get("Object").New()
	o.Set("load", jsFunc(t, "", load))
	o.Set("save", jsFunc(t, "text", save))
	s, err := storeOf(o)
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
	state := engine.LedgerStateOf(again)
	require.NotNil(t, state.BudgetUSD)
	assert.Equal(t, 0.01, *state.BudgetUSD)
	require.NotNil(t, state.RemainingUSD)
	assert.InDelta(t, 0.008, *state.RemainingUSD, 1e-15)

	failing := storeHooks(t, `return Promise.resolve(null)`, `return Promise.reject(new Error("QuotaExceededError"))`)
	assert.ErrorContains(t, failing.Update(func([]byte, bool) ([]byte, error) { return []byte("{}"), nil }), "could not save it: QuotaExceededError")
}

func TestStoreOfNeedsBothFunctions(t *testing.T) {
	_, err := storeOf(js.Undefined())
	assert.ErrorContains(t, err, "needs a store")
	o := js.Global().Get("Object").New()
	o.Set("load", jsFunc(t, "", "return Promise.resolve(null)"))
	_, err = storeOf(o)
	assert.Error(t, err)
}
