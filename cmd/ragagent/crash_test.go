package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// temporaries lists the atomic writer's temporary files in dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

func digests(bodies [][]byte) []string {
	out := make([]string, len(bodies))
	for i, b := range bodies {
		sum := sha256.Sum256(b)
		out[i] = hex.EncodeToString(sum[:])
	}
	sort.Strings(out)
	return out
}

// TestKillNineLosesNothingPaidFor kills `ragagent live --execute-approved`
// with SIGKILL at random points while it talks to a slow fake, 14 times.
// Each time the recording is absent (killed before it was created, when
// nothing had been sent) or valid JSON that holds every request the fake
// received (the one in flight as a pending exchange), it replays, and the
// next start leaves no temporary file behind. Killed this way the
// in-flight request was missing from the recording 10 times in 12, a kill
// before the first save left a 0-byte file, and temporary files stayed.
func TestKillNineLosesNothingPaidFor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills 14 processes")
	}
	random := rand.New(rand.NewPCG(9, 9))
	var absent, pending, cleaned int
	for round := range 14 {
		dir := t.TempDir()
		fake := geminitest.NewServer(geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
			reply := geminitest.Policy().Reply(r)
			reply.Delay = 60 * time.Millisecond
			return reply
		}))
		output := filepath.Join(dir, "rec.json")
		cmd := child("live", "--execute-approved", "--endpoint", fake.URL(), "--output", output,
			"--cases", "overwrite,serialize-and-save", "--repeats", "1")
		require.NoError(t, cmd.Start())
		wait := time.Duration(random.IntN(1500)) * time.Millisecond
		if round == 0 {
			wait = 5 * time.Millisecond // before the recording can exist
		}
		time.Sleep(wait)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL: no deferred function, no flush runs
		_ = cmd.Wait()
		fake.Close()

		var received [][]byte
		for _, r := range fake.Generations() {
			received = append(received, r.Body)
		}
		data, err := os.ReadFile(output)
		if errors.Is(err, fs.ErrNotExist) {
			absent++
			assert.Empty(t, received, "round %d: no recording, so nothing may have been sent", round)
		} else {
			require.NoError(t, err)
			file, err := recording.Parse(data)
			require.NoError(t, err, "round %d: the recording is valid JSON", round)
			var recorded, inFlight [][]byte
			for _, tr := range file.Trials {
				for _, ex := range tr.Exchanges {
					if ex.Pending {
						inFlight = append(inFlight, gemini.Body(ex.Request))
						continue
					}
					recorded = append(recorded, gemini.Body(ex.Request))
				}
			}
			pending += len(inFlight)
			// Every request the fake received is recorded: with its outcome,
			// or pending (the one in flight). A pending one may also not have
			// reached the fake (killed between the save and the send).
			require.LessOrEqual(t, len(inFlight), 1, "round %d: one request at a time is in flight", round)
			assert.Subset(t, digests(append(recorded, inFlight...)), digests(received), "round %d: every request the fake received is recorded", round)
			assert.Subset(t, digests(received), digests(recorded), "round %d: every request recorded with an outcome was received", round)
			assert.GreaterOrEqual(t, len(received), len(recorded))
			code, out, errs := ragagent("replay", "--recording", output)
			assert.Equal(t, exitOK, code, "round %d: %s", round, errs)
			if strings.Contains(string(data), `"pending": true`) {
				assert.Contains(t, out, "model_transport_failed:ReplyNotRecorded")
			}
		}

		// The next start in the same directory cleans what the kill left.
		// A temporary file under a second old could be a live writer's
		// that has not locked it yet, so it is left until it is older.
		if left := temporaries(t, dir); len(left) > 0 {
			cleaned++
			time.Sleep(1100 * time.Millisecond)
		}
		again := geminitest.NewServer(geminitest.Policy())
		next := child("live", "--execute-approved", "--endpoint", again.URL(), "--output", filepath.Join(dir, "next.json"),
			"--cases", "overwrite", "--repeats", "1", "--modes", "fixed")
		out, err := next.CombinedOutput()
		again.Close()
		require.NoError(t, err, "round %d: %s", round, out)
		assert.Empty(t, temporaries(t, dir), "round %d: no temporary file is left after the next start", round)
	}
	t.Logf("14 kills: %d before the recording existed, %d left a request in flight (kept as a pending exchange), %d left a temporary file that the next start removed",
		absent, pending, cleaned)
}
