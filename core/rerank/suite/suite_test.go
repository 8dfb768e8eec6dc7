package suite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/fixtures"
)

func bundledInputs() Inputs {
	return Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded}
}

func openSuite(t testing.TB) *Suite {
	t.Helper()
	s, err := Open(bundledInputs())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func published(t testing.TB, data []byte) *pyjson.Object {
	t.Helper()
	v, err := pyjson.Decode(string(data))
	require.NoError(t, err)
	o, ok := v.(*pyjson.Object)
	require.True(t, ok)
	return o
}

// sameJSON asserts Python equality, naming the first difference.
func sameJSON(t testing.TB, got, want any, what string) {
	t.Helper()
	d, same := pyjson.Diff(got, want)
	assert.True(t, same, "%s: %s", what, d)
}

// TestCoverageRecordEqualsThePublishedOne compares the whole coverage run
// with the published record, every key and number.
func TestCoverageRecordEqualsThePublishedOne(t *testing.T) {
	rec, err := openSuite(t).Coverage(context.Background())
	require.NoError(t, err)
	sameJSON(t, rec.Value(), published(t, fixtures.PublishedCoverage), "coverage record")
}
