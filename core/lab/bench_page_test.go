package lab_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// The page's figures natively, for comparison with the same work in WASM
// (make bench-page): opening the lab (corpus, cases, FTS5 index), a first
// replay of the bundled recording on a fresh lab, and one FTS5 query.

func BenchmarkPageOpen(b *testing.B) {
	for b.Loop() {
		l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Close()
	}
}

func BenchmarkPageFirstReplay(b *testing.B) {
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

func BenchmarkPageSearch(b *testing.B) {
	l := newLab(b)
	for b.Loop() {
		if _, err := l.Library.Explain("json dump ensure_ascii utf-8 write_text", 2, "3.12"); err != nil {
			b.Fatal(err)
		}
	}
}
