//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"strings"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// runSpec is what the Run form asks for.
type runSpec struct {
	task     agent.Task
	policy   choice
	endpoint string
	hasKey   bool
}

// parseSpec reads {question, version, mode, limits, policy, endpoint,
// hasKey}. The task is refused with its reason code exactly as a recorded
// trial's would be.
func parseSpec(text string) (runSpec, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return runSpec{}, fmt.Errorf("run: the spec is not JSON: %v", err)
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return runSpec{}, fmt.Errorf("run: the spec is not an object")
	}
	task, err := agent.TaskFromJSON(get(o, "question"), get(o, "version"), get(o, "mode"), get(o, "limits"))
	if err != nil {
		return runSpec{}, err
	}
	name, _ := get(o, "policy").(string)
	p, ok := findPolicy(name)
	if !ok {
		return runSpec{}, fmt.Errorf("run: policy %q is not one of %s", name, strings.Join(policyNames(), ", "))
	}
	spec := runSpec{task: task, policy: p}
	spec.hasKey, _ = get(o, "hasKey").(bool)
	// Only the real endpoint or a loopback test double (the page allows the
	// override only when it is itself served from loopback).
	override, _ := get(o, "endpoint").(string)
	if spec.endpoint, err = gemini.ResolveEndpoint(override); err != nil {
		return runSpec{}, err
	}
	return spec, nil
}

// run starts a run and returns {id, result}: result is a Promise of the
// trial report; cancel(id) stops the run (reason cancelled). hooks.onStep
// sees each step as it is final; hooks.post is the shell's fetch for live
// policies.
func (e *engine) run(specValue, hooks js.Value) any {
	text := fromJS(specValue)
	onStep := field(hooks, "onStep")
	post := field(hooks, "post")
	return e.start(func(ctx context.Context) (any, error) {
		s, err := e.loaded()
		if err != nil {
			return nil, err
		}
		spec, err := parseSpec(text)
		if err != nil {
			return nil, err
		}
		// A throwing onStep must not end the run: progress is a courtesy.
		report := func(st agent.Step, obs *agent.Observation) {
			sv, err1 := toJS(st)
			ov, err2 := toJS(obs)
			if err1 == nil && err2 == nil {
				notify(onStep, sv, ov)
			}
		}
		if !spec.policy.Live {
			return s.Run(ctx, spec.task, policy.Scripted{}, report)
		}
		if post.Type() != js.TypeFunction {
			return nil, fmt.Errorf("run: policy %s calls the network and needs hooks.post", spec.policy.Name)
		}
		transport := &fetchTransport{post: post, hasKey: spec.hasKey}
		return s.RunLive(ctx, spec.task, lab.Live{Transport: transport, Endpoint: spec.endpoint}, report)
	})
}

// start runs work on a goroutine as a call that can be stopped: it returns
// {id, result}, result a Promise of work's value, and cancel(id) cancels
// work's context until work returns.
func (e *engine) start(work func(ctx context.Context) (any, error)) js.Value {
	out := js.Global().Get("Object").New()
	e.mu.Lock()
	e.nextRun++
	id := e.nextRun
	ctx, stop := context.WithCancel(context.Background())
	e.runs[id] = stop
	e.mu.Unlock()
	out.Set("id", id)
	out.Set("result", promise(func() (any, error) {
		defer func() {
			e.mu.Lock()
			delete(e.runs, id)
			e.mu.Unlock()
			stop()
		}()
		return work(ctx)
	}))
	return out
}

// notify calls a progress callback if it is a function; a throw is
// ignored, since progress is a courtesy and must not end the work.
func notify(fn js.Value, args ...any) {
	if fn.Type() != js.TypeFunction {
		return
	}
	defer func() { _ = recover() }()
	fn.Invoke(args...)
}

// choice is a policy the Run view offers.
type choice struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Live policies call the network with the person's key: the page shows
	// the plan first and passes hooks.post.
	Live bool `json:"live"`
}

// policies are the Run view's choices, in the order it shows them.
func policies() []choice {
	return []choice{
		{Name: "scripted", Label: "Scripted rules (offline, no key, nothing sent)"},
		{Name: "gemini", Label: "Gemini " + gemini.Model + " (live, with your key)", Live: true},
	}
}

func findPolicy(name string) (choice, bool) {
	for _, p := range policies() {
		if p.Name == name {
			return p, true
		}
	}
	return choice{}, false
}

func policyNames() []string {
	var names []string
	for _, p := range policies() {
		names = append(names, p.Name)
	}
	return names
}

func policyInfo() []choice { return policies() }

// plan is what a run will be allowed to do, shown before a live run: the
// model and endpoint, the request allowance left, the byte and time caps,
// and the worst case number of requests.
func (e *engine) plan(text string) (any, error) {
	spec, err := parseSpec(text)
	if err != nil {
		return nil, err
	}
	s, err := e.loaded()
	if err != nil {
		return nil, err
	}
	l := spec.task.Limits
	calls := lab.CallsAtMost(spec.task)
	p := map[string]any{
		"policy": spec.policy, "question": spec.task.Question, "version": spec.task.Version,
		"mode": spec.task.Mode, "limits": l, "model_calls_at_most": calls, "worst_case_requests": 0,
	}
	if spec.policy.Live {
		a := s.Allowance()
		p["model"] = gemini.Model
		p["endpoint"] = spec.endpoint
		p["caps"] = map[string]any{
			"request_bytes": gemini.MaxRequestBytes, "response_bytes": gemini.MaxResponseBytes,
			"call_timeout_seconds": int(gemini.MaxCallTimeout.Seconds()), "run_seconds": l.Seconds,
			"retries": 0, "redirects": "refused",
		}
		p["allowance"] = map[string]any{"limit": a.Limit(), "used": a.Used(), "remaining": a.Limit() - a.Used()}
		p["worst_case_requests"] = min(calls, a.Limit()-a.Used())
	}
	return p, nil
}
