package otlp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// replayed is the bundled recording and its replay.
func replayed(t *testing.T) (*recording.File, *report.Set, *lab.Lab) {
	t.Helper()
	l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	f, err := recording.Parse(recordings.AgentComparison)
	require.NoError(t, err)
	rep, err := l.Replay(context.Background(), f, nil)
	require.NoError(t, err)
	return f, rep, l
}

func docs(l *lab.Lab) func(string, string, []agent.Candidate) []Document {
	return func(query, version string, cands []agent.Candidate) []Document {
		out := make([]Document, len(cands))
		for i, c := range cands {
			p, _ := l.Snapshot.Passage(c.SourceID)
			score := -1.5 + float64(i)
			out[i] = Document{ID: c.SourceID, Content: p.Text, Score: &score, Metadata: map[string]any{"rank": c.Rank}}
		}
		return out
	}
}

// The OTLP/JSON protobuf mapping of opentelemetry-proto's TracesData: the
// fields each message may have, in lowerCamelCase.
var messages = map[string]map[string]string{
	"TracesData":    {"resourceSpans": "[]ResourceSpans"},
	"ResourceSpans": {"resource": "Resource", "scopeSpans": "[]ScopeSpans", "schemaUrl": "string"},
	"Resource":      {"attributes": "[]KeyValue", "droppedAttributesCount": "uint32"},
	"ScopeSpans":    {"scope": "InstrumentationScope", "spans": "[]Span", "schemaUrl": "string"},
	"InstrumentationScope": {"name": "string", "version": "string", "attributes": "[]KeyValue",
		"droppedAttributesCount": "uint32"},
	"Span": {"traceId": "traceid", "spanId": "spanid", "traceState": "string", "parentSpanId": "spanid", "flags": "uint32",
		"name": "string", "kind": "enum", "startTimeUnixNano": "fixed64", "endTimeUnixNano": "fixed64",
		"attributes": "[]KeyValue", "droppedAttributesCount": "uint32", "events": "[]Event", "droppedEventsCount": "uint32",
		"links": "[]Link", "droppedLinksCount": "uint32", "status": "Status"},
	"Event":    {"timeUnixNano": "fixed64", "name": "string", "attributes": "[]KeyValue", "droppedAttributesCount": "uint32"},
	"Status":   {"message": "string", "code": "enum"},
	"KeyValue": {"key": "string", "value": "AnyValue"},
}

var (
	traceID   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	spanID    = regexp.MustCompile(`^[0-9a-f]{16}$`)
	decimal   = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	integer64 = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
)

// conform checks a decoded value against the mapping: known fields only,
// ids as lowercase hex of the right length (OTLP's one departure from
// protobuf's base64 bytes), 64-bit times as decimal strings, enums as
// integers, and every AnyValue exactly one of its kinds with its JSON type.
func conform(t *testing.T, v any, typ, path string) {
	t.Helper()
	if len(typ) > 2 && typ[:2] == "[]" {
		list, ok := v.([]any)
		require.True(t, ok, "%s is not a list", path)
		for i, x := range list {
			conform(t, x, typ[2:], fmt.Sprintf("%s[%d]", path, i))
		}
		return
	}
	switch typ {
	case "string":
		assert.IsType(t, "", v, path)
	case "uint32", "enum":
		n, ok := v.(float64)
		assert.True(t, ok && n >= 0 && n == float64(int64(n)), "%s is not a non-negative integer: %v", path, v)
	case "fixed64":
		s, ok := v.(string)
		assert.True(t, ok && decimal.MatchString(s), "%s is not a decimal string: %v", path, v)
	case "traceid":
		assert.Regexp(t, traceID, v, path)
	case "spanid":
		assert.Regexp(t, spanID, v, path)
	case "AnyValue":
		o, ok := v.(map[string]any)
		require.True(t, ok, "%s is not an object", path)
		require.Len(t, o, 1, "%s has exactly one value", path)
		for k, x := range o {
			switch k {
			case "stringValue":
				assert.IsType(t, "", x, path)
			case "boolValue":
				assert.IsType(t, true, x, path)
			case "intValue":
				s, ok := x.(string)
				assert.True(t, ok && integer64.MatchString(s), "%s.intValue is not a decimal string: %v", path, x)
			case "doubleValue":
				assert.IsType(t, 0.0, x, path)
			default:
				t.Errorf("%s: %s is not an AnyValue kind this export writes", path, k)
			}
		}
	default:
		fields, known := messages[typ]
		require.True(t, known, typ)
		o, ok := v.(map[string]any)
		require.True(t, ok, "%s is not an object", path)
		for k, x := range o {
			ft, ok := fields[k]
			if !ok {
				t.Errorf("%s: %s has no field %q", path, typ, k)
				continue
			}
			conform(t, x, ft, path+"."+k)
		}
	}
}

type decoded struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []struct {
				TraceID, SpanID, ParentSpanID, Name string
				StartTimeUnixNano, EndTimeUnixNano  string
				Attributes                          []struct {
					Key   string
					Value map[string]any
				}
				Events []struct{ Name string }
				Status struct {
					Code    int
					Message string
				}
			}
		}
	}
}

func TestExportFollowsTheOTLPJSONMapping(t *testing.T) {
	f, rep, l := replayed(t)
	data, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l)})
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(data, &v))
	conform(t, v, "TracesData", "$")

	var d decoded
	require.NoError(t, json.Unmarshal(data, &d))
	spans := d.ResourceSpans[0].ScopeSpans[0].Spans
	byID := map[string]int{}
	traces := map[string]bool{}
	for i, s := range spans {
		_, dup := byID[s.SpanID]
		assert.False(t, dup, "span ids are unique")
		byID[s.SpanID] = i
		traces[s.TraceID] = true
	}
	assert.Len(t, traces, 16, "one trace per trial")
	kinds := map[string]int{}
	for _, s := range spans {
		attrs := map[string]any{}
		for _, a := range s.Attributes {
			for _, x := range a.Value {
				attrs[a.Key] = x
			}
		}
		kind := attrs["openinference.span.kind"].(string)
		kinds[kind]++
		start, _ := strconv.ParseInt(s.StartTimeUnixNano, 10, 64)
		end, _ := strconv.ParseInt(s.EndTimeUnixNano, 10, 64)
		assert.LessOrEqual(t, start, end, s.Name)
		if kind == "AGENT" {
			assert.Empty(t, s.ParentSpanID)
			continue
		}
		p, ok := byID[s.ParentSpanID]
		require.True(t, ok, "%s has its parent in the export", s.Name)
		parent := spans[p]
		assert.Equal(t, parent.TraceID, s.TraceID)
		ps, _ := strconv.ParseInt(parent.StartTimeUnixNano, 10, 64)
		pe, _ := strconv.ParseInt(parent.EndTimeUnixNano, 10, 64)
		assert.True(t, ps <= start && end <= pe, "%s lies within its run", s.Name)
		switch kind {
		case "LLM":
			for _, k := range []string{"llm.model_name", "llm.invocation_parameters", "llm.input_messages.0.message.role",
				"llm.input_messages.1.message.content", "llm.output_messages.0.message.content", "llm.token_count.prompt",
				"llm.token_count.completion", "llm.token_count.total", "input.value", "output.value"} {
				assert.Contains(t, attrs, k, s.Name)
			}
		case "RETRIEVER":
			assert.Contains(t, attrs, "retrieval.documents.0.document.id")
			assert.Contains(t, attrs, "retrieval.documents.0.document.content")
			assert.Equal(t, -1.5, attrs["retrieval.documents.0.document.score"])
		case "TOOL":
			assert.Equal(t, "read", attrs["tool.name"])
		}
	}
	// A run per trial, a span per model call (40 recorded), per admitted
	// search and per admitted read.
	want := map[string]int{"AGENT": 16}
	for _, tr := range rep.Trials {
		want["LLM"] += tr.Result.Usage.ModelCalls
		for _, o := range tr.Result.Observations {
			want[map[agent.Action]string{agent.Search: "RETRIEVER", agent.Read: "TOOL"}[o.Tool]]++
		}
	}
	assert.Equal(t, 40, want["LLM"])
	assert.Equal(t, want, kinds)
}

func TestExportIsDeterministicFromTheRecording(t *testing.T) {
	f, rep, l := replayed(t)
	a, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l)})
	require.NoError(t, err)
	b, err := Export(Input{File: f, Reports: rep.Trials, Documents: docs(l)})
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))

	// One trial alone keeps its ids and times.
	one, err := Export(Input{File: f, Reports: rep.Trials[5:6], Documents: docs(l)})
	require.NoError(t, err)
	var all, single decoded
	require.NoError(t, json.Unmarshal(a, &all))
	require.NoError(t, json.Unmarshal(one, &single))
	got := single.ResourceSpans[0].ScopeSpans[0].Spans
	var want []string
	for _, s := range all.ResourceSpans[0].ScopeSpans[0].Spans {
		if s.TraceID == got[0].TraceID {
			want = append(want, s.SpanID+s.StartTimeUnixNano)
		}
	}
	var have []string
	for _, s := range got {
		have = append(have, s.SpanID+s.StartTimeUnixNano)
	}
	assert.Equal(t, want, have)

	// A changed recording is another trace.
	changed := *f
	changed.Trials = append([]recording.Trial(nil), f.Trials...)
	changed.Trials[5].Question = "Something else?"
	c, err := Export(Input{File: &changed, Reports: rep.Trials[5:6]})
	require.NoError(t, err)
	var other decoded
	require.NoError(t, json.Unmarshal(c, &other))
	assert.NotEqual(t, got[0].TraceID, other.ResourceSpans[0].ScopeSpans[0].Spans[0].TraceID)
}

func TestRefusalsAndEndingsAreStatusesAndEvents(t *testing.T) {
	f, rep, _ := replayed(t)
	var refusedRun report.Trial
	for _, tr := range rep.Trials {
		if tr.ID == "newline-version-agent-1" {
			refusedRun = tr
		}
	}
	data, err := Export(Input{File: f, Reports: []report.Trial{refusedRun}})
	require.NoError(t, err)
	var d decoded
	require.NoError(t, json.Unmarshal(data, &d))
	spans := d.ResourceSpans[0].ScopeSpans[0].Spans
	root, last := spans[0], spans[len(spans)-1]
	assert.Equal(t, statusError, root.Status.Code)
	assert.Contains(t, root.Status.Message, "duplicate_query")
	assert.Equal(t, []struct{ Name string }{{"ragagent.ended"}, {"ragagent.checks"}}, root.Events)
	assert.Equal(t, "model call 3", last.Name)
	assert.Equal(t, statusError, last.Status.Code)
	assert.Contains(t, last.Status.Message, "refused: duplicate_query")
	assert.Equal(t, []struct{ Name string }{{"ragagent.decision"}, {"ragagent.refused"}}, last.Events)

	// A trial refused before it started is one span with the code.
	bad := recording.Trial{ID: "bad", Question: "q", Version: "3.12", Mode: "agent", Limits: nil, Exchanges: []recording.Exchange{}}
	code := refusedCode()
	data, err = Export(Input{File: &recording.File{Trials: []recording.Trial{bad}},
		Reports: []report.Trial{{ID: "bad", Mode: "agent", Error: &code, ErrorDetail: "limits"}}})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &d))
	spans = d.ResourceSpans[0].ScopeSpans[0].Spans
	require.Len(t, spans, 1)
	assert.Equal(t, statusError, spans[0].Status.Code)
	assert.Equal(t, "refused before it started: invalid_limits limits", spans[0].Status.Message)

	_, err = Export(Input{File: f, Reports: []report.Trial{{ID: "nope"}}})
	assert.ErrorContains(t, err, `no trial "nope"`)
}

// TestRecordedTimesPlaceTheSpans: with sent times, each call's span starts
// when its request was sent.
func TestRecordedTimesPlaceTheSpans(t *testing.T) {
	f, _, l := replayed(t)
	trial := f.Trials[1] // overwrite-agent-1: three calls
	for i, at := range []string{"2026-11-30T12:00:00Z", "2026-11-30T12:00:01Z", "2026-11-30T12:00:03Z"} {
		trial.Exchanges[i].SentAt = at
	}
	one := &recording.File{Model: f.Model, RecordedAt: "2026-11-30T12:00:00Z", Trials: []recording.Trial{trial}}
	tr, err := l.ReplayTrial(context.Background(), trial)
	require.NoError(t, err)
	require.NotNil(t, tr.Timing)
	data, err := Export(Input{File: one, Reports: []report.Trial{tr}})
	require.NoError(t, err)
	var d decoded
	require.NoError(t, json.Unmarshal(data, &d))
	var starts []string
	for _, s := range d.ResourceSpans[0].ScopeSpans[0].Spans {
		if s.Name == "model call 2" || s.Name == "model call 3" {
			starts = append(starts, s.StartTimeUnixNano)
		}
	}
	base := int64(1796040000) * 1e9
	assert.Equal(t, []string{fmt.Sprint(base + 1e9), fmt.Sprint(base + 3e9)}, starts)
}

func refusedCode() reason.Code { return reason.InvalidLimits }
