package retrieval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
)

// FuzzParse: Parse never panics; it accepts a spec or refuses it with
// invalid_config; an accepted spec's canonical form parses back to the
// same settings and digest.
func FuzzParse(f *testing.F) {
	for _, s := range retrieval.Builtins() {
		f.Add(s.Canonical())
	}
	for _, s := range []string{`{"name": "x"}`, `{"name": "x", "proximity": {}}`, `{"name": "x", "fields": {"title": 1e308}}`,
		`{"name": "x", "expansion": {"weight": 0.5, "docs": 3}}`, `{"name":"x","second_stage":{"method":"coverage"}}`, `{`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := retrieval.Parse(data)
		if err != nil {
			code, _ := reason.Of(err)
			assert.Equal(t, reason.InvalidConfig, code, "%q: %v", data, err)
			return
		}
		back, err := retrieval.Parse(s.Canonical())
		require.NoError(t, err, "%s", s.Canonical())
		s.Description = ""
		assert.Equal(t, s, back)
		assert.Equal(t, s.SHA256(), back.SHA256())
	})
}
