package rerank

import (
	"context"
	"fmt"
	"math"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/reason"
)

// VectorsFormat is the recorded vector scores file's format tag.
const VectorsFormat = "ragagent-vectors/1"

// Recorded is the vector branch replayed from preserved cosine scores: an
// allowlist of (query, chunk) pairs. A query it has no scores for, or a
// chunk it has no score for under a recorded query, is refused with
// unrecorded_query; it never guesses a similarity.
type Recorded struct {
	scores map[string]map[string]float64 // query -> chunk id -> cosine
	order  []string
}

type vectorsFile struct {
	Format      string `json:"format"`
	Description string `json:"description"`
	Metric      string `json:"metric"`
	SnapshotID  string `json:"snapshot_id"`
	Queries     []struct {
		Query  string `json:"query"`
		Scores []struct {
			ChunkID  string   `json:"chunk_id"`
			SourceID string   `json:"source_id"`
			Cosine   *float64 `json:"cosine"`
		} `json:"scores"`
	} `json:"queries"`
}

// ParseVectors reads a ragagent-vectors/1 file recorded against snap: every
// chunk id must be one of its chunks (with the same source id), every score
// a finite cosine, no query or pair recorded twice.
func ParseVectors(data []byte, snap *Snapshot) (*Recorded, error) {
	if snap == nil {
		return nil, errNoSnapshot
	}
	var f vectorsFile
	if err := jsonfile.Decode(data, &f); err != nil {
		return nil, fmt.Errorf("vectors: not a valid vectors file: %w", err)
	}
	switch {
	case f.Format != VectorsFormat:
		return nil, fmt.Errorf("vectors: format is %q, want %q", f.Format, VectorsFormat)
	case f.Metric != "cosine":
		return nil, fmt.Errorf("vectors: metric is %q, want \"cosine\"", f.Metric)
	case f.SnapshotID != snap.SnapshotID:
		return nil, fmt.Errorf("vectors: recorded against snapshot %q, not %q", f.SnapshotID, snap.SnapshotID)
	}
	r := &Recorded{scores: map[string]map[string]float64{}}
	for i, q := range f.Queries {
		where := fmt.Sprintf("vectors: query %d (%q)", i+1, q.Query)
		if _, dup := r.scores[q.Query]; dup {
			return nil, fmt.Errorf("%s: recorded twice", where)
		}
		byChunk := map[string]float64{}
		for j, s := range q.Scores {
			p, ok := snap.Passage(s.ChunkID)
			switch {
			case !ok:
				return nil, fmt.Errorf("%s score %d: chunk %q is not in the snapshot", where, j+1, s.ChunkID)
			case p.SourceID != s.SourceID:
				return nil, fmt.Errorf("%s score %d: chunk %s is %s in the snapshot, not %s", where, j+1, s.ChunkID, p.SourceID, s.SourceID)
			case s.Cosine == nil || math.IsNaN(*s.Cosine) || math.IsInf(*s.Cosine, 0) || *s.Cosine < -1 || *s.Cosine > 1:
				return nil, fmt.Errorf("%s score %d: cosine must be a number from -1 to 1", where, j+1)
			}
			if _, dup := byChunk[s.ChunkID]; dup {
				return nil, fmt.Errorf("%s score %d: chunk %s recorded twice", where, j+1, s.ChunkID)
			}
			byChunk[s.ChunkID] = *s.Cosine
		}
		r.scores[q.Query] = byChunk
		r.order = append(r.order, q.Query)
	}
	return r, nil
}

// Queries lists the recorded queries in file order.
func (r *Recorded) Queries() []string { return append([]string(nil), r.order...) }

// Similarities returns the recorded cosine of query to each chunk.
func (r *Recorded) Similarities(_ context.Context, query string, chunks []Passage) ([]float64, error) {
	byChunk, ok := r.scores[query]
	if !ok {
		return nil, reason.New(reason.UnrecordedQuery, "the vector recording has no scores for the query %s", excerpt(query))
	}
	out := make([]float64, len(chunks))
	for i, c := range chunks {
		s, ok := byChunk[c.ChunkID]
		if !ok {
			return nil, reason.New(reason.UnrecordedQuery, "the vector recording has no score for chunk %s (%s %s) under the query %s", c.ChunkID, c.SourceID, c.Version, excerpt(query))
		}
		out[i] = s
	}
	return out, nil
}
