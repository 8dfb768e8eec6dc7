//go:build js && wasm

package main

// policies lists the policies this build offers, in the order the Run view
// shows them.
func policies() []policy {
	return nil
}

// allowance is the page's process-wide live request allowance: its limit
// and what has been used.
func allowance() (limit, used int) { return 200, 0 }
