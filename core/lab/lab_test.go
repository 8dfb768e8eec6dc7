package lab_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// published is the seed's comparison table (section 5), in trial order:
// case / repeat, path, expected sources read, answer fixture, stop reason,
// model calls.
var published = []string{
	"overwrite/1 fixed true pass citation_contract_passed 1",
	"overwrite/1 agent true pass citation_contract_passed 3",
	"serialize-and-save/1 fixed true pass citation_contract_passed 1",
	"serialize-and-save/1 agent true pass citation_contract_passed 6",
	"newline-version/1 fixed true incomplete model_stopped 1",
	"newline-version/1 agent true fail duplicate_query 3",
	"unsupported/1 fixed none fail citation_contract_passed 1",
	"unsupported/1 agent none fail citation_contract_passed 3",
	"overwrite/2 fixed true pass citation_contract_passed 1",
	"overwrite/2 agent true pass citation_contract_passed 3",
	"serialize-and-save/2 fixed true pass citation_contract_passed 1",
	"serialize-and-save/2 agent true pass citation_contract_passed 6",
	"newline-version/2 fixed true incomplete model_stopped 1",
	"newline-version/2 agent true incomplete model_stopped 5",
	"unsupported/2 fixed none fail citation_contract_passed 1",
	"unsupported/2 agent none fail citation_contract_passed 3",
}

func openLab(t testing.TB) *lab.Lab {
	t.Helper()
	l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func row(tr lab.TrialReport) string {
	if tr.Result == nil || tr.Checks == nil {
		return fmt.Sprintf("%s/%d %s refused", tr.CaseID, tr.Repeat, tr.Mode)
	}
	retrieval := "none"
	if r := tr.Checks.RetrievalTargetsRead; r != nil {
		retrieval = fmt.Sprint(*r)
	}
	return fmt.Sprintf("%s/%d %s %s %s %s %d", tr.CaseID, tr.Repeat, tr.Mode, retrieval,
		tr.Checks.Outcome, tr.Result.Reason, tr.Result.Usage.ModelCalls)
}

func TestReplayBundledMatchesPublishedTable(t *testing.T) {
	l := openLab(t)
	file, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	var seen []string
	rep, err := l.Replay(context.Background(), file, func(tr lab.TrialReport) { seen = append(seen, tr.ID) })
	require.NoError(t, err)
	require.Len(t, rep.Trials, len(published))
	for i, tr := range rep.Trials {
		assert.Equal(t, published[i], row(tr), "trial %d (%s)", i+1, tr.ID)
		assert.Equal(t, tr.Exchanges, tr.ExchangesUsed, "trial %s uses every recorded exchange", tr.ID)
	}
	assert.Len(t, seen, len(published), "onTrial sees every trial")
	assert.Equal(t, lab.Summary{Fixed: tally(4, 2, 2), Agent: tally(4, 3, 1)}, rep.Summary)
}

// BenchmarkReplayAll replays the bundled recording on a freshly opened lab
// each time (the page replays once per visit), not counting the open.
func BenchmarkReplayAll(b *testing.B) {
	file, err := recording.Parse(recordings.AgentComparison)
	require.NoError(b, err)
	for b.Loop() {
		b.StopTimer()
		l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
		require.NoError(b, err)
		b.StartTimer()
		if _, err := l.Replay(context.Background(), file, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = l.Close()
		b.StartTimer()
	}
}

// BenchmarkReplayAgain replays on a lab that has replayed before.
func BenchmarkReplayAgain(b *testing.B) {
	l := openLab(b)
	file, err := recording.Parse(recordings.AgentComparison)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := l.Replay(context.Background(), file, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch is one FTS5 query with bm25 scores, without the memo.
func BenchmarkSearch(b *testing.B) {
	l := openLab(b)
	for b.Loop() {
		if _, err := l.Library.Explain("json dump ensure_ascii utf-8 write_text", 2, "3.12"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	for b.Loop() {
		l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Close()
	}
}

func TestExplainMatchesLibrary(t *testing.T) {
	l := openLab(t)
	for _, q := range []string{"write_text utf-8", "newline read_text", "json"} {
		want, err := l.Library.Explain(q, 4, "")
		require.NoError(t, err)
		got, err := l.Explain(q, 4, "")
		require.NoError(t, err)
		assert.Equal(t, want, got, q)
	}
	_, err := l.Explain("!!!", 2, "3.12")
	assert.ErrorContains(t, err, "invalid_query")
}
