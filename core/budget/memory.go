package budget

import "sync"

// Memory is a Store in memory, for a ledger that lives as long as its
// process: a test's, or a front end's that keeps nothing between runs. It
// is safe for concurrent use (Update holds its lock through apply, as the
// file store holds its lock), and it can be told to fail its saves, as a
// full disk would.
type Memory struct {
	mu    sync.Mutex
	data  []byte
	saved bool
	fail  error
	saves int
}

// NewMemory is a store holding a saved ledger's bytes (nil: nothing saved
// yet).
func NewMemory(saved []byte) *Memory {
	return &Memory{data: append([]byte(nil), saved...), saved: saved != nil}
}

// Load returns the saved ledger.
func (m *Memory) Load() ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...), m.saved, nil
}

// Update applies one change, then saves it unless the store was told to
// fail (FailSaves): the change is then not saved and the failure returned.
func (m *Memory) Update(apply func(old []byte, exists bool) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, err := apply(append([]byte(nil), m.data...), m.saved)
	if err != nil {
		return err
	}
	if m.fail != nil {
		return m.fail
	}
	m.data, m.saved = append([]byte(nil), data...), true
	m.saves++
	return nil
}

// Bytes is the saved ledger (nil before the first save).
func (m *Memory) Bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...)
}

// Saves counts the changes saved.
func (m *Memory) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

// FailSaves makes every later save fail with err (nil: saves succeed
// again), as a full or read-only disk would.
func (m *Memory) FailSaves(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}
