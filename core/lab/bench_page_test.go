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

// SearchQueries are the queries the page benchmark times in WASM too
// (scripts/bench-page.mjs): recorded agent queries and a question.
var SearchQueries = []string{
	"json dump ensure_ascii utf-8",
	"write_text encoding utf-8 open",
	"Path.write_text overwrite append existing file",
	"newline read_text 3.13 utf-8",
	"backup copies retention days",
	"In Python 3.12, how can I serialize an object with non-ASCII characters kept in JSON and save that string to a UTF-8 file?",
}

func BenchmarkPageSearch(b *testing.B) {
	l := newLab(b)
	i := 0
	for b.Loop() {
		if _, err := l.Library.Explain(SearchQueries[i%len(SearchQueries)], 2, "3.12"); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
