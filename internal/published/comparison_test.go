package published_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/published"
	"github.com/ragagentlab/ragagent/recordings"
)

func TestBundledRecordingIsTheRebuiltOne(t *testing.T) {
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := tools.Open(snap)
	require.NoError(t, err)
	defer lib.Close()
	file, err := published.Comparison(fixtures.Published, lib)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, file.Write(&buf))
	assert.True(t, bytes.Equal(recordings.AgentComparison, buf.Bytes()),
		"recordings/agent-comparison.json is stale: run `go run ./cmd/ragagent import-published`")
	exchanges := 0
	for _, trial := range file.Trials {
		exchanges += len(trial.Exchanges)
	}
	assert.Len(t, file.Trials, 16)
	assert.Equal(t, 40, exchanges)
}
