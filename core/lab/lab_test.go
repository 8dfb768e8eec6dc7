package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

func openLab(t *testing.T) *Lab {
	t.Helper()
	l, err := Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func decodeObject(t *testing.T, data []byte) *pyjson.Object {
	t.Helper()
	v, err := pyjson.Decode(string(data))
	require.NoError(t, err)
	o, ok := v.(*pyjson.Object)
	require.True(t, ok)
	return o
}

func field(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

// TestBundledReplayReproducesThePublishedRecord replays the bundled
// recording and compares every published field of every trial, checks
// included, and the summary.
func TestBundledReplayReproducesThePublishedRecord(t *testing.T) {
	l := openLab(t)
	file, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	rep, err := l.Replay(context.Background(), file, nil)
	require.NoError(t, err)

	published := decodeObject(t, fixtures.Published)
	trials := field(published, "trials").([]any)
	require.Len(t, rep.Trials, len(trials))
	require.Len(t, trials, 16)
	exchanges := 0
	for i, raw := range trials {
		want := raw.(*pyjson.Object)
		got := rep.Trials[i]
		t.Run(got.ID, func(t *testing.T) {
			assert.Equal(t, field(want, "id"), got.ID)
			require.Nil(t, got.Error)
			require.NotNil(t, got.Result)
			result := pyjson.ValueOf(got.Result).(*pyjson.Object)
			wantResult := field(want, "result").(*pyjson.Object)
			for _, k := range wantResult.Keys() {
				d, same := pyjson.Diff(field(result, k), field(wantResult, k))
				assert.True(t, same, "result.%s: %s", k, d)
			}
			require.NotNil(t, got.Checks)
			// Every published check; the reasons beside them are additions.
			checks := decodeObject(t, mustJSON(t, got.Checks))
			wantChecks := field(want, "checks").(*pyjson.Object)
			for _, k := range wantChecks.Keys() {
				d, same := pyjson.Diff(field(checks, k), field(wantChecks, k))
				assert.True(t, same, "checks.%s: %s", k, d)
			}
			assert.Equal(t, wantChecks.Len()+3, checks.Len(), "the published checks and three reasons")
			// tokens per step come from the recorded usageMetadata
			usage := field(want, "provider_usage").([]any)
			require.Len(t, got.Result.Steps[len(got.Result.Steps)-len(usage):], len(usage))
			total := 0
			for _, u := range usage {
				n, _ := field(u.(*pyjson.Object), "totalTokenCount").(pyjson.Number).Int()
				total += n
			}
			assert.Equal(t, total, got.Result.Tokens.Total)
			assert.Equal(t, got.Exchanges, got.ExchangesUsed)
		})
		exchanges += got.ExchangesUsed
	}
	assert.Equal(t, 40, exchanges)
	summary := decodeObject(t, mustJSON(t, rep.Summary))
	d, same := pyjson.Diff(summary, field(published, "summary"))
	assert.True(t, same, "summary: %s", d)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestReferenceConformance replays recordings made by the reference lab's
// own agent.py and provider.py (scripts/reference/conformance.py) on
// adversarial model replies, and compares each result with what the
// reference replay of the same recording returned.
func TestReferenceConformance(t *testing.T) {
	adversarial, err := os.ReadFile(filepath.Join("testdata", "reference", "adversarial.snapshot.json"))
	require.NoError(t, err)
	for _, set := range []struct {
		name     string
		snapshot []byte
	}{{"standard", fixtures.Snapshot}, {"adversarial", adversarial}} {
		t.Run(set.name, func(t *testing.T) {
			snap, err := corpus.Parse(set.snapshot)
			require.NoError(t, err)
			lib, err := tools.Open(snap)
			require.NoError(t, err)
			defer lib.Close()
			raw, err := os.ReadFile(filepath.Join("testdata", "reference", set.name+".recording.json"))
			require.NoError(t, err)
			file, err := recording.Parse(raw)
			require.NoError(t, err)
			extras := field(decodeObject(t, raw), "trials").([]any)
			exp, err := os.ReadFile(filepath.Join("testdata", "reference", set.name+".expected.json"))
			require.NoError(t, err)
			expected := field(decodeObject(t, exp), "trials").(*pyjson.Object)
			require.Equal(t, expected.Len(), len(file.Trials))
			for i, trial := range file.Trials {
				t.Run(trial.ID, func(t *testing.T) {
					want := field(expected, trial.ID).(*pyjson.Object)
					extra := extras[i].(*pyjson.Object)
					conform(t, lib, trial, extra, want)
				})
			}
		})
	}
}

func conform(t *testing.T, lib *tools.Library, trial recording.Trial, extra, want *pyjson.Object) {
	task, err := agent.TaskFromJSON(trial.Question, trial.Version, trial.Mode, trial.Limits)
	if code, ok := field(want, "error").(string); ok {
		require.Error(t, err)
		assert.ErrorContains(t, err, code)
		return
	}
	require.NoError(t, err)
	var ts tools.Tools = lib
	if tamper, ok := field(extra, "tamper").(*pyjson.Object); ok {
		ts = tampered{lib, tamper}
	}
	ctrl := agent.Controller{Tools: ts, Model: recording.NewReplayer(trial), Clock: readings(field(extra, "clock"))}
	res, err := ctrl.Run(context.Background(), task)
	require.NoError(t, err)
	got := pyjson.ValueOf(res).(*pyjson.Object)
	wantResult := field(want, "result").(*pyjson.Object)
	for _, k := range wantResult.Keys() {
		if k == "python_reason" {
			continue
		}
		d, same := pyjson.Diff(field(got, k), field(wantResult, k))
		assert.True(t, same, "%s: %s (detail: %s)", k, d, res.Detail)
	}
}

// tampered changes a passage's text between search and read, as an edited
// corpus would.
type tampered struct {
	*tools.Library
	texts *pyjson.Object
}

func (t tampered) Read(h tools.Handle) (corpus.Passage, error) {
	p, err := t.Library.Read(h)
	if text, ok := field(t.texts, h.SourceID).(string); ok {
		p.Text = text
	}
	return p, err
}

// readings replays a scripted clock: each call returns the next reading in
// seconds, repeating the last, as the generator's clock does.
func readings(v any) func() time.Time {
	list, _ := v.([]any)
	secs := make([]float64, len(list))
	for i, x := range list {
		secs[i] = x.(pyjson.Number).Float64()
	}
	if len(secs) == 0 {
		secs = []float64{0}
	}
	return func() time.Time {
		s := secs[0]
		if len(secs) > 1 {
			secs = secs[1:]
		}
		return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second)))
	}
}

func BenchmarkReplayBundled(b *testing.B) {
	l, err := Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(b, err)
	defer l.Close()
	file, err := recording.Parse(recordings.AgentComparison)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := l.Replay(context.Background(), file, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBundled(b *testing.B) {
	for b.Loop() {
		if _, err := recording.Parse(recordings.AgentComparison); err != nil {
			b.Fatal(err)
		}
	}
}
