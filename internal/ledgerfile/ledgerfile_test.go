package ledgerfile_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
)

func clock() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) }

func request(label string, usd float64) budget.Request {
	return budget.Request{Label: label, Model: "m", RequestSHA256: "00", RequestBytes: 1, EstimatedUSD: usd}
}

func TestFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	f := ledgerfile.File{Path: path}
	_, ok, err := f.Load()
	require.NoError(t, err)
	assert.False(t, ok, "a missing file is an empty ledger")

	l, err := budget.Open(f, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(0.01))
	_, err = l.Reserve(request("x", 0.001))
	require.NoError(t, err)

	again, err := budget.Open(f, clock)
	require.NoError(t, err)
	assert.Len(t, again.Entries(), 1)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	_, err = budget.Open(ledgerfile.File{Path: t.TempDir()}, clock)
	assert.Error(t, err, "a directory is not a ledger")
	assert.Error(t, ledgerfile.File{Path: filepath.Join(t.TempDir(), "missing", "l.json")}.Save([]byte("{}")))
}
