package suite

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
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

var update = flag.Bool("update", false, "rewrite the bundled rerank recordings from the published records")

// TestBundledRecordingsAreRebuiltFromThePublishedRecords rebuilds both
// recordings (each import replays its result against the published record)
// and requires the bundled files to be exactly those bytes.
func TestBundledRecordingsAreRebuiltFromThePublishedRecords(t *testing.T) {
	s := openSuite(t)
	ctx := context.Background()
	gem, err := s.ImportGemini(ctx, fixtures.PublishedGemini)
	require.NoError(t, err)
	enc, err := s.ImportCrossEncoder(ctx, fixtures.PublishedCrossEncoder)
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
			require.NoError(t, os.WriteFile(filepath.Join("..", "..", "..", "recordings", c.name), []byte(b.String()), 0o644))
			continue
		}
		assert.Equal(t, b.String(), string(c.bundled), "recordings/%s is stale: run go test ./core/rerank/suite -run Rebuilt -update", c.name)
	}
}
