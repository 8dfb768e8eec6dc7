package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
)

// asCommand makes the test binary run as ragagent when a test starts it
// as a child process (with its arguments after the binary's name).
const asCommand = "RAGAGENT_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child is ragagent as a separate process (this test binary, re-run).
func child(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCommand+"=1", "GOOGLE_API_KEY=", "GEMINI_API_KEY="+dummyKey)
	return cmd
}

// slowPolicy is the fake's default answers, each a little late, so that
// processes overlap while they wait.
func slowPolicy() geminitest.Responder {
	p := geminitest.Policy()
	return geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
		reply := p.Reply(r)
		reply.Delay = 15 * time.Millisecond
		return reply
	})
}

// oneRunUSD is what one live rerank reserves: its four requests'
// estimates at the shipped price.
func oneRunUSD(t *testing.T) float64 {
	t.Helper()
	e, err := engine.Open(engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	plan, err := e.PlanRerank(engine.LiveRerankRequest{HasKey: true, Ledger: ledgerfile.File{Path: filepath.Join(t.TempDir(), "l.json")}})
	require.NoError(t, err)
	require.Len(t, plan.Calls, 4)
	return plan.TotalUSD
}

// TestProcessesSharingALedgerNeverPassItsBudget starts ragagent rerank
// --live processes at once against one loopback fake and one ledger file.
// Four processes with a budget for two runs sent 16 requests and the
// ledger kept 4; three processes over rounds lost most entries. Now: the
// reservations never pass the budget, the fake receives exactly the
// requests the ledger holds (matched by their sha256), every one settled,
// and every process's recording holds its own attempts.
func TestProcessesSharingALedgerNeverPassItsBudget(t *testing.T) {
	perRun := oneRunUSD(t)
	for _, c := range []struct {
		name             string
		processes, round int
		runsBudgeted     float64
	}{
		{"four processes, budget for two runs", 4, 1, 2},
		{"three processes, three rounds, budget for all", 3, 3, 9.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := geminitest.NewServer(slowPolicy())
			defer fake.Close()
			ledger := filepath.Join(dir, "ledger.json")
			usd := perRun*c.runsBudgeted + 1e-12
			l, err := budget.Open(ledgerfile.File{Path: ledger}, time.Now)
			require.NoError(t, err)
			require.NoError(t, l.SetBudget(usd))

			var recordings []string
			succeeded := 0
			for round := range c.round {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for p := range c.processes {
					rec := filepath.Join(dir, fmt.Sprintf("rec-%d-%d.json", round, p))
					recordings = append(recordings, rec)
					wg.Add(1)
					go func() {
						defer wg.Done()
						cmd := child("rerank", "--live", "--ledger", ledger, "--record", rec, "--endpoint", fake.URL())
						var stderr bytes.Buffer
						cmd.Stderr = &stderr
						err := cmd.Run()
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							succeeded++
							return
						}
						assert.Contains(t, stderr.String(), "budget_exceeded", "a process may only fail for the budget")
					}()
				}
				wg.Wait()
			}

			final, err := budget.Open(ledgerfile.File{Path: ledger}, time.Now)
			require.NoError(t, err)
			entries := final.Entries()
			var reserved, received []string
			for i, e := range entries {
				assert.Equal(t, i+1, e.Seq)
				assert.Equal(t, budget.Completed, e.Outcome, "entry %d was settled", e.Seq)
				reserved = append(reserved, e.RequestSHA256)
			}
			for _, r := range fake.Generations() {
				sum := sha256.Sum256(r.Body)
				received = append(received, hex.EncodeToString(sum[:]))
			}
			sort.Strings(reserved)
			sort.Strings(received)
			assert.Equal(t, received, reserved, "every request sent has its ledger entry, and no entry lacks its request")
			assert.LessOrEqual(t, final.Spent(), usd, "the reservations never pass the budget")
			maxRuns := int(c.runsBudgeted)
			assert.LessOrEqual(t, len(received), 4*maxRuns)
			assert.GreaterOrEqual(t, succeeded, min(maxRuns, c.processes*c.round), "the budget is used, not refused wholesale")
			exchanges := 0
			for _, rec := range recordings {
				if data, err := os.ReadFile(rec); err == nil {
					f, err := recording.Parse(data)
					require.NoError(t, err, rec)
					for _, tr := range f.Trials {
						exchanges += len(tr.Exchanges)
					}
				}
			}
			assert.Equal(t, len(received), exchanges, "the recordings hold every request sent")
			t.Logf("%d processes x %d rounds, budget $%.8f (%.1f runs): %d runs finished, %d requests sent, %d ledger entries, $%.8f reserved",
				c.processes, c.round, usd, c.runsBudgeted, succeeded, len(received), len(entries), final.Spent())
		})
	}
}
