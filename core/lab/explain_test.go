package lab_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/fixtures"
)

func newLab(t testing.TB) *lab.Lab {
	t.Helper()
	l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestExplainMatchesLibrary(t *testing.T) {
	l := newLab(t)
	for _, q := range []string{"write_text utf-8", "newline read_text", "json"} {
		want, err := l.Library.Explain(q, 4, "")
		require.NoError(t, err)
		got, err := l.Explain(q, 4, "")
		require.NoError(t, err)
		assert.Equal(t, want, got, q)
	}
	_, err := l.Explain("!!!", 2, "3.12")
	assert.ErrorContains(t, err, "invalid_query")
}
