package published_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/published"
)

// TestSitePublishedTableIsInSync keeps site/published.json (the outcomes
// the page shows before its engine is ready) equal to what the published
// record says; -update rewrites it.
func TestSitePublishedTableIsInSync(t *testing.T) {
	table, err := published.TableOf(fixtures.Published)
	require.NoError(t, err)
	require.Len(t, table.Trials, 16)
	want, err := table.Bytes()
	require.NoError(t, err)
	path := filepath.Join("..", "..", "site", "published.json")
	if *update {
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "site/published.json is stale: run go test ./internal/published -run SitePublished -update")

	row := table.Trials[5]
	assert.Equal(t, published.TableRow{ID: "newline-version-agent-1", CaseID: "newline-version", Repeat: 1, Mode: "agent",
		RetrievalTargetsRead: row.RetrievalTargetsRead, Outcome: "fail", Reason: "duplicate_query", ModelCalls: 3}, row)
	require.NotNil(t, row.RetrievalTargetsRead)
	assert.True(t, *row.RetrievalTargetsRead)
	assert.Nil(t, table.Trials[6].RetrievalTargetsRead, "the unsupported case has no target")

	_, err = published.TableOf([]byte("{"))
	assert.Error(t, err)
}
