// Package published rebuilds the bundled recordings from the reference
// lab's published run records (kept in fixtures/published): each import
// drives this project's own controller or reranking lab with the published
// decisions, scores or proposals, and fails unless the rebuilt recording
// replays to exactly the published results. It runs only when the
// recordings are remade (ragagent import-published, the tests), never in a
// run.
package published

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
)

// Rebuild is the bundled comparison recording's bytes, rebuilt from the
// published record over the seed's snapshot (fixtures.Snapshot): what
// ragagent import-published writes and checks.
func Rebuild(record []byte) ([]byte, error) {
	snap, err := corpus.Parse(fixtures.Snapshot)
	if err != nil {
		return nil, err
	}
	lib, err := tools.Open(snap)
	if err != nil {
		return nil, err
	}
	defer lib.Close()
	file, err := Comparison(record, lib)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := file.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Comparison rebuilds a recording from the reference lab's published
// comparison record, which keeps each trial's decisions and provider usage
// but not the request bodies. For each trial it drives the controller with
// the published decisions, captures every request body the controller
// sends, and pairs it with a generateContent response built from the
// decision (its JSON text as the one part, finishReason STOP) and that
// call's usageMetadata. The rebuilt trial must then end exactly as
// published (status, reason, answer, citations, usage, decisions,
// observations), or the import fails: the recording can only be as true as
// the controller that made it.
//
// The published record has no modelVersion per call, so none is invented.
func Comparison(data []byte, lib tools.Tools) (*recording.File, error) {
	root, err := jsonfile.Value(data)
	if err != nil {
		return nil, fmt.Errorf("published record: %w", err)
	}
	rec, ok := root.(*pyjson.Object)
	if !ok {
		return nil, fmt.Errorf("published record: not an object")
	}
	get := func(o *pyjson.Object, k string) any { v, _ := o.Get(k); return v }
	file := &recording.File{Config: get(rec, "config")}
	file.Model, _ = get(rec, "model").(string)
	file.Endpoint, _ = get(rec, "endpoint").(string)
	file.RecordedAt, _ = get(rec, "recorded_at").(string)
	trials, _ := get(rec, "trials").([]any)
	for i, raw := range trials {
		pt, ok := raw.(*pyjson.Object)
		if !ok {
			return nil, fmt.Errorf("published trial %d: not an object", i+1)
		}
		t, err := importTrial(pt, lib)
		if err != nil {
			return nil, fmt.Errorf("published trial %d (%v): %w", i+1, get(pt, "id"), err)
		}
		file.Trials = append(file.Trials, t)
	}
	return file, nil
}

func importTrial(pt *pyjson.Object, lib tools.Tools) (recording.Trial, error) {
	get := func(o *pyjson.Object, k string) any { v, _ := o.Get(k); return v }
	result, ok := get(pt, "result").(*pyjson.Object)
	if !ok {
		return recording.Trial{}, fmt.Errorf("no result")
	}
	t := recording.Trial{Question: get(result, "question"), Version: get(result, "version"), Mode: get(pt, "mode"), Limits: get(result, "limits")}
	t.ID, _ = get(pt, "id").(string)
	t.CaseID, _ = get(pt, "case_id").(string)
	t.Split, _ = get(pt, "split").(string)
	repeat, _ := get(pt, "repeat").(pyjson.Number)
	t.Repeat, _ = repeat.Int()
	if e, ok := get(pt, "elapsed_seconds").(pyjson.Number); ok {
		f := e.Float64()
		t.ElapsedSeconds = &f
	}
	decisions, _ := get(result, "decisions").([]any)
	usage, _ := get(pt, "provider_usage").([]any)
	if len(usage) != len(decisions) {
		return recording.Trial{}, fmt.Errorf("%d decisions but %d provider_usage entries", len(decisions), len(usage))
	}
	task, err := agent.TaskFromJSON(t.Question, t.Version, t.Mode, t.Limits)
	if err != nil {
		return recording.Trial{}, err
	}
	scripted := &publishedModel{decisions: decisions, usage: usage}
	ctrl := agent.Controller{Tools: lib, Model: scripted, Clock: func() time.Time { return time.Unix(0, 0) }}
	got, err := ctrl.Run(context.Background(), task)
	if err != nil {
		return recording.Trial{}, err
	}
	if scripted.next != len(decisions) {
		return recording.Trial{}, fmt.Errorf("the controller used %d of %d published decisions", scripted.next, len(decisions))
	}
	if err := samePublished(got, result); err != nil {
		return recording.Trial{}, err
	}
	t.Exchanges = scripted.exchanges
	return t, nil
}

// publishedModel answers with the published decisions and keeps what it was
// asked.
type publishedModel struct {
	decisions, usage []any
	next             int
	exchanges        []recording.Exchange
}

func (m *publishedModel) Decide(_ context.Context, p model.Prompt, _ time.Duration) (model.Reply, error) {
	if m.next >= len(m.decisions) {
		return model.Reply{}, reason.New(reason.ReplayExhausted, "no published decision %d", m.next+1)
	}
	text := pyjson.Dumps(m.decisions[m.next], pyjson.Options{})
	response := pyjson.NewObject(
		"candidates", []any{pyjson.NewObject(
			"content", pyjson.NewObject("parts", []any{pyjson.NewObject("text", text)}, "role", "model"),
			"finishReason", "STOP", "index", 0)},
		"usageMetadata", m.usage[m.next])
	m.exchanges = append(m.exchanges, recording.Exchange{Request: gemini.Payload(p), Response: response})
	m.next++
	return gemini.Decode(response)
}

// samePublished compares the published fields of a result with the record.
func samePublished(got *agent.Result, want *pyjson.Object) error {
	mine := pyjson.ValueOf(got).(*pyjson.Object)
	for _, k := range []string{"status", "reason", "answer", "citations", "question", "version", "mode",
		"limits", "usage", "decisions", "observations"} {
		x, _ := mine.Get(k)
		y, _ := want.Get(k)
		if d, same := pyjson.Diff(x, y); !same {
			return fmt.Errorf("rebuilt result differs from the published one at %s%s: %s vs %s", k, d.Path[1:], d.Got, d.Want)
		}
	}
	return nil
}
