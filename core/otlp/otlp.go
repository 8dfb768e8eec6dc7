// Package otlp exports replayed trials as OpenTelemetry traces in OTLP/JSON
// (the protobuf JSON mapping OTLP/HTTP and the collector's file exporter
// use), with OpenInference attributes, so an LLM observability tool such
// as Arize Phoenix can show a run as practitioners are used to: one trace
// per trial, an AGENT span for the run, an LLM span per model call (its
// input and output messages and token counts), a RETRIEVER span per
// admitted search (its candidate documents) and a TOOL span per admitted
// read. Refusals and endings are span statuses and events, and a person's
// annotations of a trial (Annotation) events on its run span.
//
// Everything comes from the recording and its replay: trace and span ids
// are hashes of the recorded trial, and times come from the recording
// (recorded_at, each trial's elapsed seconds, each exchange's sent time
// when it kept one), so the same recording always exports the same bytes.
package otlp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
)

// ScopeName names the instrumentation scope of every span.
const ScopeName = "github.com/ragagentlab/ragagent/core/otlp"

// Span kinds and status codes, as OTLP/JSON writes enums: integers.
const (
	kindInternal = 1
	statusUnset  = 0
	statusOK     = 1
	statusError  = 2
)

// Timing labels, the ragagent.timing attribute of every span: whether its
// times were recorded or spread evenly over the trial's recorded elapsed
// time (a recording that kept no per-exchange times).
const (
	TimingRecorded = "recorded"
	TimingEven     = "evenly spaced over the trial's recorded elapsed time"
)

// Document is a retrieved candidate as a RETRIEVER span lists it.
type Document struct {
	ID       string
	Content  string
	Score    *float64
	Metadata map[string]any
}

// Input is what an export is made of: the recording, the reports of its
// replayed trials (each names its recorded trial by id), and how to
// describe a search's candidates (content, score), which the observation
// the model saw leaves out.
type Input struct {
	File      *recording.File
	Reports   []report.Trial
	Documents func(query, version string, candidates []agent.Candidate) []Document
	// Annotations are people's judgements of the trials, each an event on
	// its trial's run span; none leaves the export's bytes as they were.
	Annotations []Annotation
}

// Export writes the reports as one OTLP/JSON TracesData document.
func Export(in Input) ([]byte, error) {
	if in.File == nil {
		return nil, fmt.Errorf("otlp: no recording")
	}
	base := time.Unix(0, 0).UTC()
	if at, err := time.Parse(time.RFC3339Nano, in.File.RecordedAt); err == nil {
		base = at
	}
	// Each trial starts when the ones before it in the recording ended.
	starts := map[string]time.Time{}
	at := base
	for _, t := range in.File.Trials {
		starts[t.ID] = at
		at = at.Add(trialDuration(t, nil))
	}
	exported := map[string]bool{}
	for _, rep := range in.Reports {
		exported[rep.ID] = true
	}
	notes, err := annotationEvents(in.Annotations, exported)
	if err != nil {
		return nil, err
	}
	var spans []span
	for _, rep := range in.Reports {
		t, ok := find(in.File, rep.ID)
		if !ok {
			return nil, fmt.Errorf("otlp: the recording has no trial %q", rep.ID)
		}
		trial := exportTrial(in, t, rep, starts[t.ID])
		trial[0].Events = append(trial[0].Events, notes[rep.ID]...)
		notes[rep.ID] = nil // a trial exported twice carries them once
		spans = append(spans, trial...)
	}
	doc := tracesData{ResourceSpans: []resourceSpans{{
		Resource: resource{Attributes: []keyValue{
			str("service.name", "ragagent"),
			str("openinference.project.name", "ragagent"),
			str("ragagent.recording.model", in.File.Model),
			str("ragagent.recording.recorded_at", in.File.RecordedAt),
		}},
		ScopeSpans: []scopeSpans{{Scope: scope{Name: ScopeName}, Spans: spans}},
	}}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func find(f *recording.File, id string) (recording.Trial, bool) {
	for _, t := range f.Trials {
		if t.ID == id {
			return t, true
		}
	}
	return recording.Trial{}, false
}

// trialDuration is the trial's recorded elapsed time, or a millisecond
// per step when the recording has none.
func trialDuration(t recording.Trial, r *agent.Result) time.Duration {
	if t.ElapsedSeconds != nil && *t.ElapsedSeconds > 0 {
		return time.Duration(*t.ElapsedSeconds * float64(time.Second))
	}
	n := len(t.Exchanges)
	if r != nil {
		n = max(n, len(r.Steps))
	}
	return time.Duration(max(n, 1)) * time.Millisecond
}

// ids derives a trial's trace id from the recorded trial's bytes, and each
// span's id from the trace id and the span's place in the trial.
type ids struct{ trace string }

func idsOf(t recording.Trial) ids {
	sum := sha256.Sum256([]byte("ragagent-otlp trace\x00" + pyjson.Dumps(t, pyjson.Options{})))
	return ids{trace: hex.EncodeToString(sum[:16])}
}

func (i ids) span(path string) string {
	sum := sha256.Sum256([]byte(i.trace + "\x00" + path))
	return hex.EncodeToString(sum[:8])
}

// exportTrial is a trial's spans: the run, then per step its model call
// and the tool it ran.
func exportTrial(in Input, t recording.Trial, rep report.Trial, start time.Time) []span {
	id := idsOf(t)
	r := rep.Result
	end := start.Add(trialDuration(t, r))
	title := fmt.Sprintf("%s run", rep.Mode)
	if rep.CaseID != "" {
		title = fmt.Sprintf("%s run: %s / %d", rep.Mode, rep.CaseID, rep.Repeat)
	}
	root := span{TraceID: id.trace, SpanID: id.span("run"), Name: title, Kind: kindInternal}
	meta := map[string]any{"trial_id": rep.ID, "case_id": rep.CaseID, "split": rep.Split, "repeat": rep.Repeat, "mode": rep.Mode}
	root.Attributes = []keyValue{str("openinference.span.kind", "AGENT"), str("agent.name", "ragagent "+rep.Mode+" path")}
	if r == nil {
		code := ""
		if rep.Error != nil {
			code = string(*rep.Error)
		}
		question, _ := t.Question.(string)
		root.Attributes = append(root.Attributes, str("input.value", question), str("metadata", jsonText(meta)))
		root.Status = status{Code: statusError, Message: strings.TrimSpace("refused before it started: " + code + " " + rep.ErrorDetail)}
		root.Events = []event{{Name: "ragagent.refused", Attributes: []keyValue{str("ragagent.reason", code), str("ragagent.detail", rep.ErrorDetail)}}}
		root.setTimes(start, end)
		for i := range root.Events {
			root.Events[i].TimeUnixNano = nanos(start)
		}
		return []span{root}
	}
	meta["version"], meta["limits"], meta["usage"] = r.Version, r.Limits, r.Usage
	root.Attributes = append(root.Attributes,
		str("input.value", r.Question), str("input.mime_type", "text/plain"),
		str("output.value", outputOf(r)), str("output.mime_type", "text/plain"),
		str("metadata", jsonText(meta)),
		str("ragagent.status", string(r.Status)), str("ragagent.reason", string(r.Reason)))
	if rep.Checks != nil {
		root.Attributes = append(root.Attributes, str("ragagent.outcome", string(rep.Checks.Outcome)))
	}

	// When each step ran: recorded, or an even share of the trial.
	timing, label := rep.Timing, TimingRecorded
	if timing == nil || timing.Source != report.Recorded {
		timing, label = nil, TimingEven
	}
	step := func(i int) (time.Time, time.Time) {
		if timing != nil {
			st := timing.Steps[i]
			return start.Add(ms(st.StartMS)), start.Add(ms(st.EndMS))
		}
		d := end.Sub(start) / time.Duration(len(r.Steps))
		return start.Add(d * time.Duration(i)), start.Add(d * time.Duration(i+1))
	}
	spans := []span{}
	for i, s := range r.Steps {
		a, b := step(i)
		var obs *agent.Observation
		if s.Observation >= 0 && s.Observation < len(r.Observations) {
			obs = &r.Observations[s.Observation]
		}
		toolAt := a
		if s.Call > 0 {
			llmEnd := b
			if obs != nil {
				llmEnd = a.Add(b.Sub(a) * 4 / 5)
				toolAt = llmEnd
			}
			spans = append(spans, llmSpan(in, t, id, root.SpanID, s, a, llmEnd, label))
		}
		if obs != nil {
			spans = append(spans, toolSpan(in, id, root.SpanID, i, s, obs, toolAt, b, label))
		}
		if b.After(end) {
			end = b
		}
	}
	root.setTimes(start, end)
	root.Events = append(root.Events, event{TimeUnixNano: nanos(end), Name: "ragagent.ended", Attributes: []keyValue{
		str("ragagent.status", string(r.Status)), str("ragagent.reason", string(r.Reason)), str("ragagent.detail", r.Detail)}})
	if c := rep.Checks; c != nil {
		root.Events = append(root.Events, event{TimeUnixNano: nanos(end), Name: "ragagent.checks", Attributes: []keyValue{
			str("ragagent.outcome", string(c.Outcome)),
			str("ragagent.outcome_reason", string(c.OutcomeReason.Code)), str("ragagent.outcome_detail", c.OutcomeReason.Detail),
			str("ragagent.retrieval_reason", string(c.RetrievalReason.Code)), str("ragagent.retrieval_detail", c.RetrievalReason.Detail),
			str("ragagent.answer_reason", string(c.AnswerReason.Code)), str("ragagent.answer_detail", c.AnswerReason.Detail),
		}})
	}
	switch r.Status {
	case agent.Answered:
		root.Status = status{Code: statusOK}
	case agent.Failed:
		root.Status = status{Code: statusError, Message: strings.TrimSpace(string(r.Reason) + " " + r.Detail)}
	default:
		root.Status = status{Code: statusUnset}
	}
	return append([]span{root}, spans...)
}

// outputOf is the run's output: its answer, or how it ended without one.
func outputOf(r *agent.Result) string {
	if r.Status == agent.Answered {
		return r.Answer
	}
	return fmt.Sprintf("%s: %s", r.Status, r.Reason)
}

// llmSpan is one model call: the recorded request's messages and the
// reply's, the token counts, and what the application did with the
// decision.
func llmSpan(in Input, t recording.Trial, id ids, parent string, s agent.Step, a, b time.Time, label string) span {
	sp := span{TraceID: id.trace, SpanID: id.span(fmt.Sprintf("call/%d", s.Call)), ParentSpanID: parent,
		Name: fmt.Sprintf("model call %d", s.Call), Kind: kindInternal}
	sp.setTimes(a, b)
	modelName := in.File.Model
	if s.ModelVersion != "" {
		modelName = s.ModelVersion
	}
	// A scripted run's decisions are the offline rules', not a provider's.
	provider := "google"
	if in.File.Model == "scripted" {
		provider = "ragagent"
	}
	sp.Attributes = []keyValue{str("openinference.span.kind", "LLM"), str("llm.model_name", modelName), str("llm.provider", provider),
		integer("ragagent.call", s.Call), str("ragagent.timing", label)}
	var ex *recording.Exchange
	if s.Call <= len(t.Exchanges) {
		ex = &t.Exchanges[s.Call-1]
	}
	if ex != nil {
		req, _ := ex.Request.(*pyjson.Object)
		if cfg, ok := get(req, "generationConfig").(*pyjson.Object); ok {
			params := pyjson.NewObject()
			for _, k := range cfg.Keys() {
				if k != "responseJsonSchema" {
					v, _ := cfg.Get(k)
					params.Set(k, v)
				}
			}
			sp.Attributes = append(sp.Attributes, str("llm.invocation_parameters", pyjson.Dumps(params, pyjson.Options{})))
		}
		sp.Attributes = append(sp.Attributes,
			str("llm.input_messages.0.message.role", "system"), str("llm.input_messages.0.message.content", firstText(get(req, "systemInstruction"))),
			str("llm.input_messages.1.message.role", "user"), str("llm.input_messages.1.message.content", firstText(first(get(req, "contents")))),
			str("input.value", pyjson.Dumps(ex.Request, pyjson.Options{})), str("input.mime_type", "application/json"))
		if ex.Error == "" {
			sp.Attributes = append(sp.Attributes,
				str("llm.output_messages.0.message.role", "assistant"), str("llm.output_messages.0.message.content", replyText(ex.Response)),
				str("output.value", pyjson.Dumps(ex.Response, pyjson.Options{})), str("output.mime_type", "application/json"))
		}
	}
	if tk := s.Tokens; tk != nil {
		sp.Attributes = append(sp.Attributes, integer("llm.token_count.prompt", tk.Prompt),
			integer("llm.token_count.completion", tk.Candidates+tk.Thoughts), integer("llm.token_count.total", tk.Total))
		if tk.Thoughts > 0 {
			sp.Attributes = append(sp.Attributes, integer("llm.token_count.completion_details.reasoning", tk.Thoughts))
		}
	}
	decision := []keyValue{str("ragagent.action", string(s.Action))}
	if s.Argument != "" {
		decision = append(decision, str("ragagent.argument", s.Argument))
	}
	if s.Assessment != "" {
		decision = append(decision, str("ragagent.assessment", s.Assessment))
	}
	admission := []keyValue{str("ragagent.outcome", string(s.Outcome))}
	if s.Reason != "" {
		admission = append(admission, str("ragagent.reason", string(s.Reason)))
	}
	if s.Detail != "" {
		admission = append(admission, str("ragagent.detail", s.Detail))
	}
	sp.Events = []event{{TimeUnixNano: nanos(b), Name: "ragagent.decision", Attributes: decision},
		{TimeUnixNano: nanos(b), Name: "ragagent." + string(s.Outcome), Attributes: admission}}
	switch {
	case ex != nil && ex.Error != "":
		msg := "model request failed: " + ex.Error
		if ex.HTTPStatus != 0 {
			msg += fmt.Sprintf(" (HTTP %d)", ex.HTTPStatus)
		}
		sp.Status = status{Code: statusError, Message: msg}
	case s.Outcome == agent.Refused:
		sp.Status = status{Code: statusError, Message: strings.TrimSpace("refused: " + string(s.Reason) + " " + s.Detail)}
	default:
		sp.Status = status{Code: statusOK}
	}
	return sp
}

// toolSpan is an admitted search (RETRIEVER, with its candidates) or read
// (TOOL, with the passage it returned).
func toolSpan(in Input, id ids, parent string, i int, s agent.Step, o *agent.Observation, a, b time.Time, label string) span {
	sp := span{TraceID: id.trace, SpanID: id.span(fmt.Sprintf("step/%d/%s", i, o.Tool)), ParentSpanID: parent, Kind: kindInternal,
		Status: status{Code: statusOK}}
	sp.setTimes(a, b)
	if sr, ok := o.Search(); ok {
		sp.Name = "search"
		sp.Attributes = []keyValue{str("openinference.span.kind", "RETRIEVER"), str("input.value", sr.Query), str("input.mime_type", "text/plain")}
		version := ""
		if len(sr.Candidates) > 0 {
			version = sr.Candidates[0].Version
		}
		var docs []Document
		if in.Documents != nil {
			docs = in.Documents(sr.Query, version, sr.Candidates)
		}
		for j, c := range sr.Candidates {
			d := Document{ID: c.SourceID, Metadata: map[string]any{"rank": c.Rank, "version": c.Version}}
			if j < len(docs) && docs[j].ID == c.SourceID {
				d = docs[j]
			}
			p := fmt.Sprintf("retrieval.documents.%d.document.", j)
			sp.Attributes = append(sp.Attributes, str(p+"id", d.ID))
			if d.Content != "" {
				sp.Attributes = append(sp.Attributes, str(p+"content", d.Content))
			}
			if d.Score != nil {
				sp.Attributes = append(sp.Attributes, double(p+"score", *d.Score))
			}
			sp.Attributes = append(sp.Attributes, str(p+"metadata", jsonText(d.Metadata)))
		}
	} else if rr, ok := o.Read(); ok {
		sp.Name = "read"
		args := jsonText(map[string]any{"source_id": rr.SourceID})
		sp.Attributes = []keyValue{str("openinference.span.kind", "TOOL"), str("tool.name", "read"),
			str("tool.description", "read an issued passage; its text must match the search's sha256 receipt"),
			str("tool.parameters", args), str("input.value", args), str("input.mime_type", "application/json"),
			str("output.value", rr.Text), str("output.mime_type", "text/plain"),
			str("metadata", jsonText(map[string]any{"version": rr.Version, "url": rr.URL, "text_sha256": rr.TextSHA256}))}
	}
	sp.Attributes = append(sp.Attributes, integer("ragagent.call", s.Call), str("ragagent.timing", label))
	if s.Call == 0 {
		sp.Attributes = append(sp.Attributes, boolean("ragagent.fixed_retrieval", true))
	}
	return sp
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func get(o any, k string) any {
	obj, _ := o.(*pyjson.Object)
	v, _ := obj.Get(k)
	return v
}

func first(v any) any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return l[0]
	}
	return nil
}

// firstText is a content's first part's text.
func firstText(content any) string {
	s, _ := get(first(get(content, "parts")), "text").(string)
	return s
}

// replyText is a generateContent reply's text: its first candidate's
// parts, thoughts left out.
func replyText(response any) string {
	parts, _ := get(get(first(get(response, "candidates")), "content"), "parts").([]any)
	var b strings.Builder
	for _, p := range parts {
		if pyjson.Truthy(get(p, "thought")) {
			continue
		}
		if s, ok := get(p, "text").(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// nanos is a time as OTLP/JSON writes a fixed64: a decimal string.
func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// The OTLP/JSON shapes (opentelemetry-proto's trace and common messages).
type tracesData struct {
	ResourceSpans []resourceSpans `json:"resourceSpans"`
}

type resourceSpans struct {
	Resource   resource     `json:"resource"`
	ScopeSpans []scopeSpans `json:"scopeSpans"`
}

type resource struct {
	Attributes []keyValue `json:"attributes"`
}

type scopeSpans struct {
	Scope scope  `json:"scope"`
	Spans []span `json:"spans"`
}

type scope struct {
	Name string `json:"name"`
}

type span struct {
	TraceID           string     `json:"traceId"`
	SpanID            string     `json:"spanId"`
	ParentSpanID      string     `json:"parentSpanId,omitempty"`
	Name              string     `json:"name"`
	Kind              int        `json:"kind"`
	StartTimeUnixNano string     `json:"startTimeUnixNano"`
	EndTimeUnixNano   string     `json:"endTimeUnixNano"`
	Attributes        []keyValue `json:"attributes"`
	Events            []event    `json:"events,omitempty"`
	Status            status     `json:"status"`
}

func (s *span) setTimes(a, b time.Time) {
	s.StartTimeUnixNano, s.EndTimeUnixNano = nanos(a), nanos(b)
}

type event struct {
	TimeUnixNano string     `json:"timeUnixNano"`
	Name         string     `json:"name"`
	Attributes   []keyValue `json:"attributes,omitempty"`
}

type status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code"`
}

type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

// anyValue is one of its fields; an int64 is a decimal string, as the
// protobuf JSON mapping writes 64-bit integers.
type anyValue struct {
	StringValue *string  `json:"stringValue,omitempty"`
	BoolValue   *bool    `json:"boolValue,omitempty"`
	IntValue    *string  `json:"intValue,omitempty"`
	DoubleValue *float64 `json:"doubleValue,omitempty"`
}

func str(k, v string) keyValue { return keyValue{Key: k, Value: anyValue{StringValue: &v}} }

func integer(k string, v int) keyValue {
	s := strconv.Itoa(v)
	return keyValue{Key: k, Value: anyValue{IntValue: &s}}
}

func double(k string, v float64) keyValue { return keyValue{Key: k, Value: anyValue{DoubleValue: &v}} }

func boolean(k string, v bool) keyValue { return keyValue{Key: k, Value: anyValue{BoolValue: &v}} }
