package packs_test

import (
	"encoding/json"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/packs"
)

// The Python pack's speed and memory (make bench-packs runs these natively
// and compiled to WebAssembly under node, side by side): opening it from
// its uncompressed bytes (size and sha256 checked, every passage
// validated, the prebuilt index opened through memdb), and searching it
// with snippets for 200 queries (testdata/queries.json: section and object
// titles as a programmer types them), with the p50 and p95 per query.

func pythonBytes(tb testing.TB) (manifest, passages []byte) {
	sources, err := packs.Sources()
	require.NoError(tb, err)
	for _, s := range sources {
		m, err := corpus.ParseManifest(s.Manifest)
		require.NoError(tb, err)
		if m.ID == "python-3.11" {
			p, err := s.Passages()
			require.NoError(tb, err)
			return s.Manifest, p
		}
	}
	tb.Fatal("no python-3.11 pack")
	return nil, nil
}

func BenchmarkPythonPackOpen(b *testing.B) {
	manifest, passages := pythonBytes(b)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		l, err := lab.OpenPack(manifest, append([]byte(nil), passages...), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		l.Close()
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heapMB")
}

func BenchmarkPythonPackSearch(b *testing.B) {
	manifest, passages := pythonBytes(b)
	data, err := os.ReadFile("testdata/queries.json")
	require.NoError(b, err)
	var queries []string
	require.NoError(b, json.Unmarshal(data, &queries))
	e, err := engine.Open(engine.Options{})
	require.NoError(b, err)
	defer e.Close()
	_, err = e.LoadPack(manifest, passages)
	require.NoError(b, err)
	var times []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		if _, err := e.Search(engine.SearchRequest{Corpus: "python-3.11", Query: q, Version: "3.11", K: 5}); err != nil {
			b.Fatal(q, err)
		}
		times = append(times, time.Since(t0))
	}
	sort.Slice(times, func(a, c int) bool { return times[a] < times[c] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
}
