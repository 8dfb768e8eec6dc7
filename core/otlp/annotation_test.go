package otlp

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// eventsOf decodes an export's spans: name, events with their times and
// attributes as strings.
type eventSpan struct {
	Name         string
	ParentSpanID string
	Events       []struct {
		TimeUnixNano string
		Name         string
		Attributes   []struct {
			Key   string
			Value struct{ StringValue string }
		}
	}
}

func spansOf(t *testing.T, data []byte) []eventSpan {
	t.Helper()
	var d struct {
		ResourceSpans []struct {
			ScopeSpans []struct{ Spans []eventSpan }
		}
	}
	require.NoError(t, json.Unmarshal(data, &d))
	return d.ResourceSpans[0].ScopeSpans[0].Spans
}

func TestAnnotationsAreRunSpanEvents(t *testing.T) {
	f, rep, _ := replayed(t)
	one := []report.Trial{rep.Trials[1]} // overwrite-agent-1
	id := one[0].ID
	for _, tc := range []struct {
		name  string
		notes []Annotation
		want  [][2]string // per event: its time and its attributes as key=value lines
		attrs []map[string]string
	}{
		{"none", nil, nil, nil},
		{"a verdict, a note and the answering passage", []Annotation{{Trial: id, Author: "user", Verdict: "wrong", Note: "read the wrong section",
			PassageURL: "https://docs.python.org/3.11/library/os.html#os.replace", PassageID: "py311-os-replace", Time: "2026-12-07T02:10:00.5Z"}},
			[][2]string{{"1796609400500000000", "ragagent.annotation"}},
			[]map[string]string{{"ragagent.annotation.author": "user", "ragagent.annotation.verdict": "wrong", "ragagent.annotation.note": "read the wrong section",
				"ragagent.annotation.passage_url": "https://docs.python.org/3.11/library/os.html#os.replace", "ragagent.annotation.passage_id": "py311-os-replace"}}},
		{"a note alone carries no verdict or passage", []Annotation{{Trial: id, Author: "user", Note: "look again", Time: "2026-12-07T02:10:00Z"}},
			[][2]string{{"1796609400000000000", "ragagent.annotation"}},
			[]map[string]string{{"ragagent.annotation.author": "user", "ragagent.annotation.note": "look again"}}},
		{"two, in their order", []Annotation{
			{Trial: id, Author: "user", Verdict: "correct", Time: "2026-12-07T03:00:00Z"},
			{Trial: id, Author: "user", Verdict: "partly", Time: "2026-12-07T01:00:00+01:00"}},
			[][2]string{{"1796612400000000000", "ragagent.annotation"}, {"1796601600000000000", "ragagent.annotation"}},
			[]map[string]string{{"ragagent.annotation.author": "user", "ragagent.annotation.verdict": "correct"},
				{"ragagent.annotation.author": "user", "ragagent.annotation.verdict": "partly"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Export(Input{File: f, Reports: one, Annotations: tc.notes})
			require.NoError(t, err)
			spans := spansOf(t, data)
			root := spans[0]
			require.Empty(t, root.ParentSpanID, "the first span is the run's")
			var got [][2]string
			var attrs []map[string]string
			for _, e := range root.Events {
				if e.Name != "ragagent.annotation" {
					continue
				}
				got = append(got, [2]string{e.TimeUnixNano, e.Name})
				m := map[string]string{}
				for _, a := range e.Attributes {
					m[a.Key] = a.Value.StringValue
				}
				attrs = append(attrs, m)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.attrs, attrs)
			for _, s := range spans[1:] {
				for _, e := range s.Events {
					assert.NotEqual(t, "ragagent.annotation", e.Name, "only the run's span carries annotations")
				}
			}
			var v any
			require.NoError(t, json.Unmarshal(data, &v))
			conform(t, v, "TracesData", "$")
		})
	}
}

// TestAnnotationsOnlyAddEvents: an annotated export is the plain export
// with the annotation events added, so the bytes without annotations are
// what they were.
func TestAnnotationsOnlyAddEvents(t *testing.T) {
	f, rep, l := replayed(t)
	plain, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l)})
	require.NoError(t, err)
	empty, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l), Annotations: []Annotation{}})
	require.NoError(t, err)
	assert.Equal(t, string(plain), string(empty))

	notes := []Annotation{{Trial: rep.Trials[3].ID, Author: "user", Verdict: "wrong", Time: "2026-12-07T02:10:00Z"},
		{Trial: "newline-version-agent-1", Author: "user", Note: "refused a repeat", Time: "2026-12-07T02:11:00Z"}}
	annotated, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l), Annotations: notes})
	require.NoError(t, err)
	var a, b map[string]any
	require.NoError(t, json.Unmarshal(plain, &a))
	require.NoError(t, json.Unmarshal(annotated, &b))
	removed := 0
	for _, s := range b["resourceSpans"].([]any)[0].(map[string]any)["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any) {
		sp := s.(map[string]any)
		evs, _ := sp["events"].([]any)
		var kept []any
		for _, e := range evs {
			if e.(map[string]any)["name"] == "ragagent.annotation" {
				removed++
				continue
			}
			kept = append(kept, e)
		}
		if evs != nil {
			sp["events"] = kept
		}
	}
	assert.Equal(t, 2, removed)
	assert.Equal(t, a, b)
}

func TestAnnotationsThatCannotBeCarriedAreRefused(t *testing.T) {
	f, rep, _ := replayed(t)
	one := []report.Trial{rep.Trials[1]}
	id := one[0].ID
	for _, tc := range []struct {
		name  string
		note  Annotation
		field string
	}{
		{"an unknown verdict", Annotation{Trial: id, Author: "user", Verdict: "maybe", Time: "2026-12-07T02:10:00Z"}, "verdict"},
		{"a time that is not RFC 3339", Annotation{Trial: id, Author: "user", Time: "yesterday"}, "time"},
		{"no time", Annotation{Trial: id, Author: "user"}, "time"},
		{"no author", Annotation{Trial: id, Time: "2026-12-07T02:10:00Z"}, "author"},
		{"a trial the export does not hold", Annotation{Trial: "nope", Author: "user", Time: "2026-12-07T02:10:00Z"}, "trial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Export(Input{File: f, Reports: one, Annotations: []Annotation{tc.note}})
			require.Error(t, err)
			code, ok := reason.Of(err)
			assert.True(t, ok)
			assert.Equal(t, reason.InvalidAnnotation, code)
			assert.Contains(t, reason.DetailOf(err), tc.field)
		})
	}
}

// TestAnnotatedExportGolden pins the bytes of one annotated trial (no
// candidate documents, so the file stays small): go test -update rewrites it.
func TestAnnotatedExportGolden(t *testing.T) {
	f, rep, _ := replayed(t)
	one := []report.Trial{rep.Trials[1]}
	data, err := Export(Input{File: f, Reports: one, Annotations: []Annotation{{Trial: one[0].ID, Author: "user", Verdict: "partly",
		Note: "right page, \"wrong\" <section>", PassageURL: "https://docs.python.org/3.11/library/os.html#os.replace", Time: "2026-12-07T02:10:00Z"}}})
	require.NoError(t, err)
	golden := filepath.Join("testdata", "annotated.otlp.json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(data))
}
