package jsonfile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// ledgerText is a Store holding a ledger's text.
type ledgerText []byte

func (l ledgerText) Load() ([]byte, bool, error) { return l, true, nil }
func (l ledgerText) Update(func([]byte, bool) ([]byte, error)) error {
	panic("a read-only test store")
}

// TestEveryReaderIsStrict: each reader of a file the lab reads takes its
// bundled file, and refuses the same file with keys of its first object
// that differ only in case, which only the strict reader notices.
func TestEveryReaderIsStrict(t *testing.T) {
	snap, err := rerank.ParseSnapshot(fixtures.RerankSnapshot)
	require.NoError(t, err)
	inputs := func(development, expanded []byte) reranklab.Inputs {
		return reranklab.Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors, Development: development, Expanded: expanded}
	}
	for _, r := range []struct {
		name string
		file []byte
		read func([]byte) error
	}{
		{"corpus snapshot", fixtures.Snapshot, func(b []byte) error { _, err := corpus.Parse(b); return err }},
		{"cases", fixtures.Cases, func(b []byte) error { _, err := evaluate.ParseCases(b); return err }},
		{"rerank snapshot", fixtures.RerankSnapshot, func(b []byte) error { _, err := rerank.ParseSnapshot(b); return err }},
		{"rerank vectors", fixtures.RerankVectors, func(b []byte) error { _, err := rerank.ParseVectors(b, snap); return err }},
		{"rerank development cases", fixtures.RerankDevelopment, func(b []byte) error {
			s, err := reranklab.Open(inputs(b, fixtures.RerankExpanded))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"rerank expanded cases", fixtures.RerankExpanded, func(b []byte) error {
			s, err := reranklab.Open(inputs(fixtures.RerankDevelopment, b))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"agent recording", recordings.AgentComparison, func(b []byte) error { _, err := recording.Parse(b); return err }},
		{"rerank recording", recordings.RerankGemini, func(b []byte) error { _, err := recording.Parse(b); return err }},
		{"ledger", []byte(`{"format": "ragagent-ledger/1", "budget_usd": 1, "spent_usd": 0, "entries": []}`), func(b []byte) error {
			_, err := budget.Open(ledgerText(b), time.Now)
			return err
		}},
	} {
		t.Run(r.name, func(t *testing.T) {
			require.NoError(t, r.read(r.file))
			i := strings.Index(string(r.file), "{")
			require.GreaterOrEqual(t, i, 0)
			variant := string(r.file[:i+1]) + `"note": 1, "NOTE": 2, ` + string(r.file[i+1:])
			err := r.read([]byte(variant))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `the keys "note" and "NOTE" of one object differ only in case`)
		})
	}
}
