//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/budget"
)

// Store is the spending ledger's budget.Store in the page (for wasm/'s
// ledger, setBudget, rerankPlan and rerankLive). The shell (worker.js)
// keeps the ledger's text in the browser's IndexedDB and hands the engine
// two functions:
//
//	load()         Promise<string | null>  the saved ledger, null when none was saved
//	update(apply)  Promise<any>            one change, no other tab's in between
//
// update reads the latest text and calls apply(text | null) inside one
// readwrite transaction, which the browser runs one at a time across every
// tab and worker of the site, and writes the string apply returns (null:
// nothing to write, the change was refused); it settles once the change
// has committed, and rejects if it could not. So tabs sharing the ledger
// never reserve past the budget together and never drop each other's
// entries. apply is called synchronously, so the transaction stays open.
//
// Only the ledger's text crosses this bridge; the key never does.
//
// A load or update waits for the shell's answer without a timeout of its
// own: the browser answers at once (failures included), another tab holds
// the store only for one read and one write, a write in progress must not
// be abandoned by a Stop (the ledger would lose the outcome of a request
// already sent), and a Go timer, even stopped, keeps a node process
// waiting for it under js/wasm.
type Store struct {
	load, update js.Value
}

var _ budget.Store = Store{}

// StoreOf reads {load, update} from a hooks object.
func StoreOf(v js.Value) (Store, error) {
	s := Store{load: Field(v, "load"), update: Field(v, "update")}
	if !IsFunc(s.load) || !IsFunc(s.update) {
		return Store{}, errors.New("the ledger needs a store: {load(), update(apply)}, each returning a Promise")
	}
	return s, nil
}

// Load asks the shell for the saved ledger.
func (s Store) Load() ([]byte, bool, error) {
	v, err := Await(context.Background(), s.load)
	var rej *Rejection
	switch {
	case errors.As(err, &rej):
		return nil, false, fmt.Errorf("the page's ledger store could not load it: %s", rej.Message)
	case err != nil:
		return nil, false, fmt.Errorf("the page's ledger store: %w", err)
	}
	return ledgerText(v)
}

// ledgerText reads the shell's answer: the ledger's text, or null.
func ledgerText(v js.Value) ([]byte, bool, error) {
	switch {
	case v.IsNull() || v.IsUndefined():
		return nil, false, nil
	case v.Type() == js.TypeString:
		return []byte(v.String()), true, nil
	}
	return nil, false, fmt.Errorf("the page's ledger store gave %s, not the ledger's text or null", v.Type())
}

// Update makes one change as one step: the shell reads the latest text
// and calls back here to apply the change, then writes the result.
// apply's own error is returned as it is (nothing is written).
func (s Store) Update(apply func(old []byte, exists bool) ([]byte, error)) error {
	applied := false
	var applyErr error
	// The shell calls it inside its transaction; apply only decodes and
	// encodes, so it never blocks the event loop.
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any {
		applied = true
		old, exists, err := ledgerText(Args(args).At(0))
		var data []byte
		if err == nil {
			data, err = apply(old, exists)
		}
		if applyErr = err; err != nil {
			return nil
		}
		return string(data)
	})
	defer fn.Release()
	_, err := Await(context.Background(), s.update, fn)
	var rej *Rejection
	switch {
	case applyErr != nil:
		return applyErr
	case errors.As(err, &rej):
		return fmt.Errorf("the page's ledger store could not update it: %s", rej.Message)
	case err != nil:
		return fmt.Errorf("the page's ledger store: %w", err)
	case !applied:
		return errors.New("the page's ledger store did not apply the change")
	}
	return nil
}
