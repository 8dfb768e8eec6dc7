package lab_test

import (
	"context"
	"encoding/json"
	"os"
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

// BenchmarkPageSearch is one FTS5 query with scores, cycling through the
// queries the page benchmark also times in WASM.
func BenchmarkPageSearch(b *testing.B) {
	l := newLab(b)
	data, err := os.ReadFile("testdata/page-search-queries.json")
	require.NoError(b, err)
	var queries []string
	require.NoError(b, json.Unmarshal(data, &queries))
	i := 0
	for b.Loop() {
		if _, err := l.Library.Explain(queries[i%len(queries)], 2, "3.12"); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
