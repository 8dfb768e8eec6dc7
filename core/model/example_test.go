package model_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// canned is the smallest Model: whatever it is asked, it stops. It prints
// what the controller sent it.
type canned struct{}

func (canned) Decide(_ context.Context, p model.Prompt, timeout time.Duration) (model.Reply, error) {
	system, _, _ := strings.Cut(p.System, "\n")
	fmt.Println("system:", system)
	v, err := pyjson.Decode(p.State)
	if err != nil {
		return model.Reply{}, err
	}
	state := v.(*pyjson.Object)
	fmt.Println("state keys:", state.Keys())
	usage, _ := state.Get("usage")
	fmt.Println("state usage:", pyjson.Dumps(usage, pyjson.Options{}))
	required, _ := p.Schema.Get("required")
	fmt.Println("schema requires:", required)
	fmt.Println("timeout:", timeout)

	decision := pyjson.NewObject("action", "stop", "assessment", "Nothing to go on.",
		"query", "", "source_id", "", "answer", "", "citations", []any{})
	meta := pyjson.NewObject("promptTokenCount", pyjson.Number("812"),
		"candidatesTokenCount", pyjson.Number("31"), "totalTokenCount", pyjson.Number("843"))
	return model.Reply{Value: decision, Meta: model.Meta{UsageMetadata: meta, ModelVersion: "canned-1"}}, nil
}

// Example drives the controller with a Model of its own. A Prompt carries
// the system instruction, the state (the question, version, observations,
// usage, limits and schema as sorted-key JSON: the model's only view of the
// run) and the decision schema; the timeout is the smaller of 45 seconds and
// what the run's deadline leaves. The reply's value is validated and
// admitted exactly as a live model's would be; its Meta is kept with the
// step, and a run's tokens are the sum of its calls'.
func Example() {
	// A stop needs no tools; a real run passes a tools.Library.
	ctrl := agent.Controller{Model: canned{}}
	res, err := ctrl.Run(context.Background(), agent.Task{
		Question: "Does Path.write_text append?", Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Reason, res.Decisions[0].Assessment)
	fmt.Printf("%s %+v\n", res.Steps[0].ModelVersion, *res.Steps[0].Tokens)
	// Output:
	// system: You answer Python documentation questions using ONLY tool observations.
	// state keys: [limits observations question schema usage version]
	// state usage: {"model_calls": 0, "reads": 0, "searches": 0, "source_bytes": 0}
	// schema requires: [action assessment query source_id answer citations]
	// timeout: 45s
	// incomplete model_stopped Nothing to go on.
	// canned-1 {Prompt:812 Candidates:31 Thoughts:0 Total:843}
}
