package ledgerfile_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/filelock"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
)

func clock() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) }

func request(label string, usd float64) budget.Request {
	return budget.Request{Label: label, Model: "m", RequestSHA256: label, RequestBytes: 1, EstimatedUSD: usd}
}

// newLedger is a ledger file with a budget.
func newLedger(t *testing.T, path string, usd float64) {
	t.Helper()
	l, err := budget.Open(ledgerfile.File{Path: path}, clock)
	require.NoError(t, err)
	require.NoError(t, l.SetBudget(usd))
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.json")
	f := ledgerfile.File{Path: path}
	_, ok, err := f.Load()
	require.NoError(t, err)
	assert.False(t, ok, "a missing file is an empty ledger")

	newLedger(t, path, 0.01)
	l, err := budget.Open(f, clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("x", 0.001))
	require.NoError(t, err)

	again, err := budget.Open(f, clock)
	require.NoError(t, err)
	assert.Len(t, again.Entries(), 1)
	assert.ElementsMatch(t, []string{"ledger.json", "ledger.json.lock"}, names(t, dir), "no temporary file is left behind; the lock file stays")

	_, err = budget.Open(ledgerfile.File{Path: t.TempDir()}, clock)
	assert.ErrorContains(t, err, "not a regular file", "a directory is not a ledger")
	_, err = budget.Open(ledgerfile.File{Path: "/dev/zero"}, clock)
	assert.ErrorContains(t, err, "not a regular file")
	missing, err := budget.Open(ledgerfile.File{Path: filepath.Join(t.TempDir(), "missing", "l.json")}, clock)
	require.NoError(t, err)
	assert.Error(t, missing.SetBudget(1), "no directory to write in")
}

// TestConcurrentLedgersNeverPassTheBudget: eight ledgers over one file (as
// eight processes would hold it: the lock is per open file) reserve as
// fast as they can. Every reservation is kept, none passes the budget, and
// exactly as many fit as the budget allows. Without the lock and the
// re-read, each wrote its own copy and dropped the others' entries.
func TestConcurrentLedgersNeverPassTheBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	newLedger(t, path, 0.025) // room for 25 reservations of $0.001
	var wg sync.WaitGroup
	made := make([]int, 8)
	for w := range made {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := budget.Open(ledgerfile.File{Path: path}, clock)
			if !assert.NoError(t, err) {
				return
			}
			for i := 0; ; i++ {
				seq, err := l.Reserve(request(string(rune('a'+w))+string(rune('0'+i)), 0.001))
				if code, _ := reason.Of(err); code == reason.BudgetExceeded {
					return
				}
				if !assert.NoError(t, err) || !assert.NoError(t, l.Settle(seq, budget.Completed)) {
					return
				}
				made[w]++
			}
		}()
	}
	wg.Wait()
	l, err := budget.Open(ledgerfile.File{Path: path}, clock)
	require.NoError(t, err)
	total := 0
	for _, n := range made {
		total += n
	}
	assert.Len(t, l.Entries(), total, "every reservation made is in the file")
	assert.Equal(t, 24, total, "$0.025 fits 24 reservations of $0.001 (float64: the 25th sums past it)")
	assert.LessOrEqual(t, l.Spent(), 0.025)
	for i, e := range l.Entries() {
		assert.Equal(t, i+1, e.Seq)
		assert.Equal(t, budget.Completed, e.Outcome, "every reservation was settled in place")
	}
}

// TestAReadOnlyLedgerIsRefusedNeverReplaced: chmod 444 was silently
// replaced by a new 0644 file.
func TestAReadOnlyLedgerIsRefusedNeverReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	newLedger(t, path, 1)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o444))
	l, err := budget.Open(ledgerfile.File{Path: path}, clock)
	require.NoError(t, err, "a read-only ledger can be read")
	_, err = l.Reserve(request("x", 0.1))
	assert.ErrorContains(t, err, "ledger.json is read-only; refusing to replace it")
	assert.ErrorContains(t, l.SetBudget(2), "read-only")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), info.Mode().Perm())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

// TestASymlinkedLedgerUpdatesItsTarget: the link was replaced by a regular
// file and its target never updated. Now the target is locked and
// replaced, the link stays a link, and a dangling link is refused.
func TestASymlinkedLedgerUpdatesItsTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "shared", "ledger.json")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	newLedger(t, target, 1)
	link := filepath.Join(dir, "my-ledger.json")
	require.NoError(t, os.Symlink(target, link))

	l, err := budget.Open(ledgerfile.File{Path: link}, clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("x", 0.1))
	require.NoError(t, err)
	info, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&os.ModeSymlink, "the link is still a link")
	direct, err := budget.Open(ledgerfile.File{Path: target}, clock)
	require.NoError(t, err)
	assert.Len(t, direct.Entries(), 1, "the target holds the reservation")
	assert.FileExists(t, target+".lock", "the lock is the target's, shared with whoever names it directly")

	dangling := filepath.Join(dir, "dangling.json")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere", "l.json"), dangling))
	_, err = budget.Open(ledgerfile.File{Path: dangling}, clock)
	assert.ErrorContains(t, err, "is a symbolic link to")
}

// TestALockHeldTooLongIsAClearError: a writer that keeps the lock (a
// stopped process) makes Update fail with a message, not hang.
func TestALockHeldTooLongIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	newLedger(t, path, 1)
	release, err := filelock.Acquire(path+".lock", time.Second)
	require.NoError(t, err)
	defer release()
	l, err := budget.Open(ledgerfile.File{Path: path, LockTimeout: 50 * time.Millisecond}, clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("x", 0.1))
	assert.ErrorContains(t, err, "another process has held the lock")
	assert.Empty(t, l.Entries())
}

// TestAKilledWritersTemporaryFileIsCleaned: a temporary file left by a
// writer killed mid-save is removed by the next update.
func TestAKilledWritersTemporaryFileIsCleaned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.json")
	newLedger(t, path, 1)
	left := filepath.Join(dir, ".ledger.json.4242.ragagent.tmp")
	require.NoError(t, os.WriteFile(left, []byte(`{"format": "ragagent-led`), 0o644))
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(left, old, old))
	l, err := budget.Open(ledgerfile.File{Path: path}, clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("x", 0.1))
	require.NoError(t, err)
	assert.NoFileExists(t, left)
}

// TestCheckRefusesAWrite: the command line's key scan sees the text
// before it is written and can refuse it.
func TestCheckRefusesAWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	newLedger(t, path, 1)
	f := ledgerfile.File{Path: path, Check: func([]byte) error { return assert.AnError }}
	l, err := budget.Open(f, clock)
	require.NoError(t, err)
	_, err = l.Reserve(request("x", 0.1))
	assert.ErrorIs(t, err, assert.AnError)
	again, err := budget.Open(ledgerfile.File{Path: path}, clock)
	require.NoError(t, err)
	assert.Empty(t, again.Entries())
}
