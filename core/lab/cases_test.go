package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/fixtures"
)

// TestCasesAreCheckedAgainstThePack: a case without a version takes the
// pack's default; a page-level target needs some passage of its page; an
// unknown version, source or URL is an invalid_cases refusal naming the
// case and the field.
func TestCasesAreCheckedAgainstThePack(t *testing.T) {
	const head = `{"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "q?"`
	l, err := OpenPack(fixtures.SeedManifest, fixtures.Snapshot, []byte(head+`, "target_urls": ["https://docs.python.org/3.12/library/json.html"]}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "3.12", l.Cases.Cases[0].Version, "the seed's default version")
	l.Close()
	for _, c := range []struct{ name, tail, want string }{
		{"page nobody has", `, "target_urls": ["https://docs.python.org/3.12/library/nowhere.html"]}]}`, `case 1 ("a"): target_urls: no passage is on the page`},
		{"anchor nobody has", `, "target_urls": ["https://docs.python.org/3.12/library/json.html#nowhere"]}]}`, `case 1 ("a"): target_urls: no passage has the URL`},
		{"unknown source", `, "sources": ["nowhere"]}]}`, `case 1 ("a"): sources: "nowhere"`},
		{"unknown version", `, "version": "3.9"}]}`, `case 1 ("a"): version: 3.9 is not one of the corpus's versions (3.12, 3.13)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenPack(fixtures.SeedManifest, fixtures.Snapshot, []byte(head+c.tail), nil)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, reason.InvalidCases, code)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
