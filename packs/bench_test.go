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
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/packs"
)

// The Python pack's speed and memory natively (make bench-packs runs these
// beside the same work compiled to WebAssembly, in node and in Chromium;
// scripts/bench-packs.mjs): opening it from its uncompressed bytes (size
// and sha256 checked, the image opened through memdb, its authored cases'
// targets looked up), and searching it for 200 queries
// (testdata/queries.json: section and object titles as a programmer types
// them), the Corpus view's search with snippets and the agent's, with the
// p50 and p95 per query.

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
		l, err := lab.OpenPack(manifest, append([]byte(nil), passages...), fixtures.PythonCases, nil)
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		l.Close()
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heapMB")
}

func queries(b *testing.B) []string {
	data, err := os.ReadFile("testdata/queries.json")
	require.NoError(b, err)
	var qs []string
	require.NoError(b, json.Unmarshal(data, &qs))
	return qs
}

// BenchmarkPythonPackSearch is the Corpus view's search: 5 hits with their
// snippets, URLs and titles.
func BenchmarkPythonPackSearch(b *testing.B) {
	benchSearch(b, func(e *engine.Engine, q string) error {
		_, err := e.Search(engine.SearchRequest{Corpus: "python-3.11", Query: q, Version: "3.11", K: 5})
		return err
	})
}

// BenchmarkPythonPackAgentSearch is the agent's search: the pack's k
// handles, no snippet.
func BenchmarkPythonPackAgentSearch(b *testing.B) {
	benchSearch(b, func(e *engine.Engine, q string) error {
		l, err := e.LabOf("python-3.11")
		if err != nil {
			return err
		}
		_, err = l.Explain(q, l.SearchK, "3.11")
		return err
	})
}

// benchSearch times each of the 200 queries (in turn, b.N times in all)
// after one pass that reads each term's posting once, and reports the p50
// and p95 per query.
func benchSearch(b *testing.B, search func(*engine.Engine, string) error) {
	manifest, passages := pythonBytes(b)
	qs := queries(b)
	e, err := engine.Open(engine.Options{})
	require.NoError(b, err)
	defer e.Close()
	_, err = e.LoadPack(manifest, passages)
	require.NoError(b, err)
	for _, q := range qs {
		require.NoError(b, search(e, q))
	}
	var times []time.Duration
	i := 0
	for b.Loop() {
		q := qs[i%len(qs)]
		i++
		t0 := time.Now()
		if err := search(e, q); err != nil {
			b.Fatal(q, err)
		}
		times = append(times, time.Since(t0))
	}
	sort.Slice(times, func(a, c int) bool { return times[a] < times[c] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
}
