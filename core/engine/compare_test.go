package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
)

// kept is a retrieval result as the page keeps it: its JSON read back.
func kept(t *testing.T, res *engine.RetrievalResult) engine.KeptExperiment {
	t.Helper()
	data, err := res.JSON()
	require.NoError(t, err)
	var k engine.KeptExperiment
	require.NoError(t, json.Unmarshal(data, &k))
	return k
}

// TestComparingTwoKeptExperimentsIsTheCommandsComparison: two experiments
// run apart on the Python pack's cases (seed in one, general in the
// other), compared, give exactly the difference, interval and p-value
// `ragagent retrieval --json` prints for general against seed when both run
// together, on every metric a rank gives again, and each side's mean is
// that configuration's metric.
func TestComparingTwoKeptExperimentsIsTheCommandsComparison(t *testing.T) {
	e := packEngine(t)
	ctx := context.Background()
	for _, pair := range [][2]string{{"seed", "general"}, {"fields", "rm3"}, {"seed", "seed"}} {
		t.Run(pair[0]+"-"+pair[1], func(t *testing.T) {
			together, err := e.Retrieval(ctx, engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: pair[0]}, {Name: "stemmed"}, {Name: pair[1]}}})
			require.NoError(t, err)
			a, err := e.Retrieval(ctx, engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: pair[0]}}})
			require.NoError(t, err)
			b, err := e.Retrieval(ctx, engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "stemmed"}, {Name: pair[1]}}})
			require.NoError(t, err)
			got, err := engine.CompareExperiments(engine.CompareExperimentsRequest{A: kept(t, a), B: kept(t, b), Pairs: []engine.ConfigPair{{A: pair[0], B: pair[1]}}})
			require.NoError(t, err)
			require.Len(t, got.Pairs, 1)
			assert.Equal(t, 34, got.Cases)
			assert.Equal(t, 10, got.K)
			want := map[string]engine.Comparison{}
			last := together.Configs[len(together.Configs)-1].Name
			for _, c := range together.Comparisons {
				if c.B == last {
					want[c.Metric] = c
				}
			}
			metrics := got.Pairs[0].Metrics
			require.Len(t, metrics, len(engine.RankMetrics()))
			for i, m := range metrics {
				assert.Equal(t, engine.RankMetrics()[i], m.Metric)
				w := want[m.Metric]
				if pair[0] == pair[1] {
					// A configuration against itself: no difference, every resample 0.
					w = engine.Comparison{Difference: 0, CI95: [2]float64{0, 0}, PValue: 1}
				}
				assert.Equal(t, w.Difference, m.Difference, m.Metric)
				assert.Equal(t, w.CI95, m.CI95, m.Metric)
				assert.Equal(t, w.PValue, m.PValue, m.Metric)
				ea, _ := a.Configs[0].Metrics.Get(m.Metric)
				eb, _ := b.Configs[1].Metrics.Get(m.Metric)
				assert.Equal(t, ea.Value, m.AValue, m.Metric)
				assert.Equal(t, eb.Value, m.BValue, m.Metric)
			}
		})
	}
}

func TestCompareExperimentsRefusals(t *testing.T) {
	rank := func(r int) *int { return &r }
	exp := func(k int, ids ...string) engine.KeptExperiment {
		c := engine.KeptConfig{Name: "seed"}
		for i, id := range ids {
			c.Cases = append(c.Cases, engine.CaseRank{ID: id, Rank: rank(1 + i%k)})
		}
		return engine.KeptExperiment{K: k, Configs: []engine.KeptConfig{c}}
	}
	seed := []engine.ConfigPair{{A: "seed", B: "seed"}}
	outside := exp(10, "a", "b")
	outside.Configs[0].Cases[1].Rank = rank(11)
	for _, c := range []struct {
		name string
		req  engine.CompareExperimentsRequest
		code reason.Code
	}{
		{"other cases", engine.CompareExperimentsRequest{A: exp(10, "a", "b"), B: exp(10, "a", "c"), Pairs: seed}, reason.InvalidCases},
		{"fewer cases", engine.CompareExperimentsRequest{A: exp(10, "a", "b"), B: exp(10, "a"), Pairs: seed}, reason.InvalidCases},
		{"other depth", engine.CompareExperimentsRequest{A: exp(10, "a"), B: exp(5, "a"), Pairs: seed}, reason.InvalidCases},
		{"no case", engine.CompareExperimentsRequest{A: exp(10), B: exp(10), Pairs: seed}, reason.InvalidCases},
		{"rank past k", engine.CompareExperimentsRequest{A: outside, B: exp(10, "a", "b"), Pairs: seed}, reason.InvalidCases},
		{"no pair", engine.CompareExperimentsRequest{A: exp(10, "a"), B: exp(10, "a")}, reason.InvalidConfig},
		{"unknown config", engine.CompareExperimentsRequest{A: exp(10, "a"), B: exp(10, "a"), Pairs: []engine.ConfigPair{{A: "seed", B: "titled"}}}, reason.UnknownConfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := engine.CompareExperiments(c.req)
			require.Error(t, err)
			code, ok := reason.Of(err)
			require.True(t, ok, err.Error())
			assert.Equal(t, c.code, code, err.Error())
		})
	}
}

// TestSpecDigests: a built-in's name and its spec as an experiment prints
// it give the spec's sha256; a name that is no built-in is refused.
func TestSpecDigests(t *testing.T) {
	general, err := retrieval.Lookup("general")
	require.NoError(t, err)
	printed, err := json.Marshal(general)
	require.NoError(t, err)
	got, err := engine.SpecDigests([]engine.ConfigRef{{Name: "general"}, {Spec: printed}})
	require.NoError(t, err)
	assert.Equal(t, []string{general.SHA256(), general.SHA256()}, got)
	_, err = engine.SpecDigests([]engine.ConfigRef{{Name: "nope"}})
	require.Error(t, err)
}
