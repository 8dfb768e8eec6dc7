package filelock_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/filelock"
)

func TestOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := filelock.Acquire(path, time.Second)
	require.NoError(t, err)
	// A second open file is refused while the first holds the lock...
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	ok, err := filelock.TryLock(f)
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = filelock.Acquire(path, 50*time.Millisecond)
	assert.ErrorContains(t, err, "another process has held the lock")
	// ...and given it once the holder releases.
	release()
	ok, err = filelock.TryLock(f)
	require.NoError(t, err)
	assert.True(t, ok)
}
