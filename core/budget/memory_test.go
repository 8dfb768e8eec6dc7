package budget_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
)

// The memory store keeps what was saved, hands out copies, applies one
// change at a time, and fails its saves when told to, keeping the ledger
// as it was.
func TestMemoryStore(t *testing.T) {
	m := budget.NewMemory(nil)
	_, saved, err := m.Load()
	require.NoError(t, err)
	assert.False(t, saved, "nothing saved yet")

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, m.Update(func(old []byte, _ bool) ([]byte, error) { return append(old, 'x'), nil }))
		}()
	}
	wg.Wait()
	assert.Equal(t, 20, len(m.Bytes()), "no change lost to another")
	assert.Equal(t, 20, m.Saves())

	data, saved, _ := m.Load()
	data[0] = 'y'
	assert.True(t, saved)
	assert.Equal(t, byte('x'), m.Bytes()[0], "Load hands out a copy")

	m.FailSaves(errors.New("disk full"))
	assert.ErrorContains(t, m.Update(func([]byte, bool) ([]byte, error) { return []byte("new"), nil }), "disk full")
	refused := errors.New("refused")
	m.FailSaves(nil)
	assert.ErrorIs(t, m.Update(func([]byte, bool) ([]byte, error) { return nil, refused }), refused)
	assert.Len(t, m.Bytes(), 20, "neither change was saved")

	again := budget.NewMemory([]byte("{}"))
	_, saved, _ = again.Load()
	assert.True(t, saved, "a store made with a ledger has one saved")
}
