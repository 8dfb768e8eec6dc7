package reranklab

import (
	"context"
	"testing"

	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/recordings"
)

// BenchmarkOpen is building the lab: parsing and checking the fixtures and
// indexing the chunks in FTS5.
func BenchmarkOpen(b *testing.B) {
	for b.Loop() {
		s, err := Open(bundledInputs())
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkHybridCandidates is one first-stage query: FTS5 bm25, recorded
// cosines, fusion.
func BenchmarkHybridCandidates(b *testing.B) {
	s := openSuite(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Retriever().Candidates(ctx, "Will write_text replace the contents of an existing file?", "3.12", CandidateBudget); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoverage is one second-stage coverage rerank of three candidates,
// validation included.
func BenchmarkCoverage(b *testing.B) {
	s := openSuite(b)
	cands, err := s.Retriever().Candidates(context.Background(), "Will write_text replace the contents of an existing file?", "3.12", CandidateBudget)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := rerank.Coverage("Will write_text replace the contents of an existing file?", cands, s.Snapshot(), RerankK); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayAll is what `ragagent rerank` computes: the coverage run,
// the Gemini replay and the cross-encoder replay (16 scorer calls).
func BenchmarkReplayAll(b *testing.B) {
	s := openSuite(b)
	ctx := context.Background()
	gem, err := recording.Parse(recordings.RerankGemini)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := recording.Parse(recordings.RerankCrossEncoder)
	if err != nil {
		b.Fatal(err)
	}
	rate := defaultRate(b)
	for b.Loop() {
		if _, err := s.Gemini(ctx, NewReplay(gem), ListwiseReplayMode, rate); err != nil {
			b.Fatal(err)
		}
		if _, err := s.CrossEncoder(ctx, NewRecordedEncoder(enc)); err != nil {
			b.Fatal(err)
		}
	}
}
