package published_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/published"
	"github.com/ragagentlab/ragagent/recordings"
)

var update = flag.Bool("update", false, "rewrite the bundled rerank recordings from the published records")

// TestBundledRecordingsAreRebuiltFromThePublishedRecords rebuilds both
// recordings (each import replays its result against the published record)
// and requires the bundled files to be exactly those bytes.
func TestBundledRecordingsAreRebuiltFromThePublishedRecords(t *testing.T) {
	s, err := reranklab.Open(reranklab.Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	gem, err := published.Gemini(ctx, s, fixtures.PublishedGemini)
	require.NoError(t, err)
	enc, err := published.CrossEncoder(ctx, s, fixtures.PublishedCrossEncoder)
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		file    *recording.File
		bundled []byte
	}{
		{"rerank-gemini.json", gem, recordings.RerankGemini},
		{"rerank-cross-encoder.json", enc, recordings.RerankCrossEncoder},
	} {
		var b strings.Builder
		require.NoError(t, c.file.Write(&b))
		if *update {
			require.NoError(t, os.WriteFile(filepath.Join("..", "..", "recordings", c.name), []byte(b.String()), 0o644))
			continue
		}
		assert.Equal(t, b.String(), string(c.bundled), "recordings/%s is stale: run go test ./internal/published -run Rebuilt -update", c.name)
	}
}
