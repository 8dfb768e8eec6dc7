//go:build js && wasm

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/budget"
)

// shellStore is the spending ledger's budget.Store in the page. The shell
// keeps the ledger's text in localStorage (which a worker cannot reach, so
// the worker relays to the page) and hands the engine two functions:
//
//	load()      Promise<string | null>  the saved ledger, null when none was saved
//	save(text)  Promise<any>            settles once the text is stored; rejects if it was not
//
// Only the ledger's text crosses this bridge; the key never does.
//
// A load or save waits for the page's answer without a timeout of its own:
// the page answers at once from localStorage (failures included), a save
// in progress must not be abandoned by a Stop (the ledger would lose the
// outcome of a request already sent), and a Go timer, even stopped, keeps
// a node process waiting for it under js/wasm.
type shellStore struct {
	load, save js.Value
}

var _ budget.Store = shellStore{}

// storeOf reads {load, save} from a hooks object.
func storeOf(v js.Value) (shellStore, error) {
	s := shellStore{load: field(v, "load"), save: field(v, "save")}
	if s.load.Type() != js.TypeFunction || s.save.Type() != js.TypeFunction {
		return shellStore{}, errors.New("the ledger needs a store: {load(), save(text)}, each returning a Promise")
	}
	return s, nil
}

// Load asks the shell for the saved ledger.
func (s shellStore) Load() ([]byte, bool, error) {
	v, rejected, err := await(context.Background(), s.load)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("the page's ledger store: %w", err)
	case rejected:
		return nil, false, fmt.Errorf("the page's ledger store could not load it: %s", errorMessage(v))
	case v.IsNull() || v.IsUndefined():
		return nil, false, nil
	case v.Type() == js.TypeString:
		return []byte(v.String()), true, nil
	}
	return nil, false, fmt.Errorf("the page's ledger store gave %s, not the ledger's text or null", v.Type())
}

// Update loads the ledger, applies the change and saves the result. It is
// not yet one step across tabs: two tabs can still interleave a load and a
// save (a later change takes a Web Lock around both and re-reads inside
// it); within one tab the engine has one ledger writer at a time.
func (s shellStore) Update(apply func(old []byte, exists bool) ([]byte, error)) error {
	old, exists, err := s.Load()
	if err != nil {
		return err
	}
	data, err := apply(old, exists)
	if err != nil {
		return err
	}
	return s.store(data)
}

// store hands the shell the whole ledger and waits until it is stored.
func (s shellStore) store(data []byte) error {
	v, rejected, err := await(context.Background(), s.save, string(data))
	switch {
	case err != nil:
		return fmt.Errorf("the page's ledger store: %w", err)
	case rejected:
		return fmt.Errorf("the page's ledger store could not save it: %s", errorMessage(v))
	}
	return nil
}
