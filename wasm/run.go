//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"syscall/js"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// runSpec is what the Run form asks for.
type runSpec struct {
	task     agent.Task
	policy   policy
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
	spec := runSpec{task: task, policy: p, endpoint: gemini.Endpoint}
	spec.hasKey, _ = get(o, "hasKey").(bool)
	if ep, _ := get(o, "endpoint").(string); ep != "" && ep != gemini.Endpoint {
		if !loopbackURL(ep) {
			return runSpec{}, fmt.Errorf("run: endpoint %q: only the Gemini endpoint or a loopback test endpoint may be used", ep)
		}
		spec.endpoint = ep
	}
	return spec, nil
}

// loopbackURL reports whether s is an http(s) URL on this machine: the only
// endpoint override a page may use (a test's fake Gemini).
func loopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "::1" || strings.HasPrefix(h, "127.") && strings.Count(h, ".") == 3
}

// run starts a run and returns {id, result}: result is a Promise of the
// trial report; cancel(id) stops the run (reason cancelled). hooks.onStep
// sees each step as it is final; hooks.post is the shell's fetch for live
// policies.
func (e *engine) run(specValue, hooks js.Value) any {
	out := js.Global().Get("Object").New()
	text := fromJS(specValue)
	onStep := field(hooks, "onStep")
	post := field(hooks, "post")
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
		s, err := e.loaded()
		if err != nil {
			return nil, err
		}
		spec, err := parseSpec(text)
		if err != nil {
			return nil, err
		}
		env := runEnv{task: spec.task, endpoint: spec.endpoint}
		if spec.policy.Live {
			if post.Type() != js.TypeFunction {
				return nil, fmt.Errorf("run: policy %s calls the network and needs hooks.post", spec.policy.Name)
			}
			env.transport = &fetchTransport{post: post, hasKey: spec.hasKey}
		}
		model, provider, err := spec.policy.make(env)
		if err != nil {
			return nil, err
		}
		report := func(st agent.Step, obs *agent.Observation) {
			if onStep.Type() != js.TypeFunction {
				return
			}
			sv, err1 := toJS(st)
			ov, err2 := toJS(obs)
			if err1 == nil && err2 == nil {
				onStep.Invoke(sv, ov)
			}
		}
		return s.Run(ctx, spec.task, model, provider, report)
	}))
	return out
}

// runEnv is what a policy may use to make its model.
type runEnv struct {
	task      agent.Task
	endpoint  string
	transport gemini.Transport // live policies only
}

// policy is a way of choosing actions that the Run view offers.
type policy struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Live policies call the network with the person's key: the page shows
	// the plan first and passes hooks.post.
	Live bool `json:"live"`
	make func(runEnv) (agent.Model, lab.Provider, error)
}

func findPolicy(name string) (policy, bool) {
	for _, p := range policies() {
		if p.Name == name {
			return p, true
		}
	}
	return policy{}, false
}

func policyNames() []string {
	var names []string
	for _, p := range policies() {
		names = append(names, p.Name)
	}
	return names
}

func policyInfo() []policy { return append([]policy{}, policies()...) }

// plan is what a run will be allowed to do, shown before a live run: the
// model and endpoint, the request allowance left, the byte and time caps,
// and the worst case number of requests.
func (e *engine) plan(text string) (any, error) {
	spec, err := parseSpec(text)
	if err != nil {
		return nil, err
	}
	l := spec.task.Limits
	p := map[string]any{
		"policy": spec.policy, "question": spec.task.Question, "version": spec.task.Version,
		"mode": spec.task.Mode, "limits": l, "worst_case_requests": l.ModelCalls,
	}
	if spec.policy.Live {
		p["model"] = gemini.Model
		p["endpoint"] = spec.endpoint
		p["caps"] = map[string]any{
			"request_bytes": gemini.MaxRequestBytes, "response_bytes": gemini.MaxResponseBytes,
			"call_timeout_seconds": 45, "run_seconds": l.Seconds, "retries": 0, "redirects": "refused",
		}
		limit, used := allowance()
		p["allowance"] = map[string]any{"limit": limit, "used": used, "remaining": limit - used}
		p["worst_case_requests"] = min(l.ModelCalls, limit-used)
	}
	return p, nil
}
