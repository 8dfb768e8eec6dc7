//go:build unix

package store_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// The database holds token HMACs and recordings: it is created 0600, and so
// are its WAL and shared-memory files and the server's lock, whatever the
// umask (0644 before, like any file SQLite creates).
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "api.db")
	release, locked, err := store.LockForServing(path)
	require.NoError(t, err)
	require.True(t, locked)
	defer release()
	s, err := store.OpenFile(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.AddToken(context.Background(), store.Token{ID: "0123456789abcdef", Name: "a", Hash: "h", Scopes: []string{"read"},
		DailyRequests: 1, DailyLiveCalls: 1, CreatedAt: t0}))
	for _, name := range []string{"api.db", "api.db-wal", "api.db-shm", "api.db-server.lock"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.NoError(t, s.Close())

	// Reopened (the WAL and shared memory made again), still 0600.
	s, err = store.OpenFile(context.Background(), path)
	require.NoError(t, err)
	_, err = s.Tokens(context.Background())
	require.NoError(t, err)
	for _, name := range []string{"api.db", "api.db-wal", "api.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.NoError(t, s.Close())
}
