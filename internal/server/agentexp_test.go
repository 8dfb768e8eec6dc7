package server_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/fixtures/packs"
	"github.com/ragagentlab/ragagent/internal/server"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// pythonTrials is how many trials the python question set makes in an
// agent experiment: its 39 cases, each on the fixed and the agent path.
const pythonTrials = 78

// agentBody is an agent experiment's request on the python pack's
// question set; extra, if not empty, is more of the object's members.
func agentBody(t testing.TB, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"kind": "agent", "corpus": "python-3.11", "cases": %s, "policy": "scripted"%s}`, pythonCases(t), extra)
}

// unmeasured is an eval's `ragagent eval --json` bytes read back and
// printed again with the measured durations zeroed
// (engine.EvalResult.Unmeasured): what two runs of one eval share.
func unmeasured(t testing.TB, data []byte) string {
	t.Helper()
	var res engine.EvalResult
	require.NoError(t, json.Unmarshal(data, &res), "an eval result")
	out, err := res.Unmeasured().JSON()
	require.NoError(t, err)
	return string(out)
}

// wantEval is what `ragagent eval --cases FILE --json` prints for the
// python question set (config, if not empty, as --config), its measured
// seconds zeroed: the command itself when bin/ragagent is built (make
// build), else the engine the command calls.
func wantEval(t testing.TB, config string) string {
	t.Helper()
	bin := "../../bin/ragagent"
	if dir := os.Getenv("RAGAGENT_BIN"); dir != "" {
		bin = filepath.Join(dir, "ragagent")
	}
	if _, err := os.Stat(bin); err == nil {
		args := []string{"eval", "--corpus", "python-3.11", "--cases", "../../fixtures/python-3.11-cases.json", "--policy", "scripted", "--json"}
		if config != "" {
			args = append(args, "--config", config)
		}
		out, err := exec.Command(bin, args...).Output()
		require.NoError(t, err)
		return unmeasured(t, out)
	}
	t.Logf("%s is not built: compared with the engine the command calls", bin)
	sources, err := packs.Sources()
	require.NoError(t, err)
	e, err := engine.Open(engine.Options{Packs: sources})
	require.NoError(t, err)
	defer e.Close()
	res, err := e.Eval(context.Background(), engine.EvalRequest{Corpus: "python-3.11", Config: config,
		Cases: []byte(pythonCases(t)), Policy: engine.Scripted})
	require.NoError(t, err)
	data, err := res.JSON()
	require.NoError(t, err)
	return unmeasured(t, data)
}

// TestAnAgentExperimentIsTheCommandsResult: an agent experiment posted
// with ragagent eval --cases' inputs succeeds with the object the command
// prints (GET .../result's bytes and GET's result, the measured seconds
// aside), counting its trials for progress; its events go queued,
// started, one progress per trial, end; the list shows the agent path's
// pass rate; its stored request names its config and policy.
func TestAnAgentExperimentIsTheCommandsResult(t *testing.T) {
	for _, config := range []string{"", "stemmed"} {
		t.Run(cmp.Or(config, "the pack's default"), func(t *testing.T) {
			e := newEnv(t, options{packs: true})
			tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
			want := wantEval(t, config)
			extra := ""
			if config != "" {
				extra = `"config": "` + config + `"`
			}
			posted := time.Now()
			id := idOf(t, e.postExperiment(tok, agentBody(t, extra)))
			x := e.awaitExperiment(tok, id)
			t.Logf("%d trials, each kept as it ended: %s from the post to the end seen (polled every 20 ms)", pythonTrials, time.Since(posted).Round(time.Millisecond))
			require.Equal(t, "succeeded", x["state"], x["error"])
			assert.Equal(t, "agent", x["kind"])
			assert.Equal(t, map[string]any{"done": float64(pythonTrials), "total": float64(pythonTrials)}, x["progress"])
			request := x["request"].(map[string]any)
			assert.Equal(t, "scripted", request["policy"])
			if config == "" {
				assert.Nil(t, request["config"])
			} else {
				assert.Equal(t, config, request["config"])
			}
			assert.NotContains(t, request, "configs")
			assert.NotContains(t, request, "k")

			r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
			require.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, want, unmeasured(t, r.body), "the command's object, measured seconds aside")
			assert.True(t, strings.HasSuffix(string(r.body), "}\n"), "the command's bytes end with a newline")
			inline, err := json.Marshal(x["result"])
			require.NoError(t, err)
			assert.Equal(t, want, unmeasured(t, inline))

			list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
			first := list["experiments"].([]any)[0].(map[string]any)
			h := first["headline"].(map[string]any)
			assert.Equal(t, "pass", h["metric"])
			assert.Equal(t, "agent", h["path"])
			var res engine.EvalResult
			require.NoError(t, json.Unmarshal(r.body, &res))
			assert.Equal(t, *res.Experiment.Paths[1].Rates[len(engine.EvalRates())-1].Value, h["value"])

			evs := e.experimentEvents(tok, id, nil)
			checkProgress(t, evs, pythonTrials)
			state, done, _ := progressOf(t, evs[len(evs)-1])
			assert.Equal(t, "succeeded", state)
			assert.Equal(t, pythonTrials, done)
		})
	}
}

// noTrials is a store that keeps experiments but no agent trials (none
// the server ships: both SQL and D1 keep them).
type noTrials struct {
	store.Store
	store.Experiments
}

// TestHostileAgentExperimentsAreRefused: malformed, hostile and
// unsupported agent experiments are refused with their declared codes
// before anything is stored; a store that keeps no agent trials offers
// none (unsupported_kind).
func TestHostileAgentExperimentsAreRefused(t *testing.T) {
	e := newEnv(t, options{packs: true, experiments: server.ExperimentCaps{Cases: 38, Body: 64 << 10}})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	one := `{"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "What does Path.write_text do?", "target_urls": []}]}`
	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"gemini":               {`{"kind": "agent", "corpus": "python-3.11", "policy": "gemini"}`, 400, "unsupported_policy"},
		"replay":               {`{"kind": "agent", "corpus": "python-3.11", "policy": "replay"}`, 400, "unsupported_policy"},
		"unknown policy":       {`{"kind": "agent", "corpus": "python-3.11", "policy": "oracle"}`, 400, "invalid_policy"},
		"policy a number":      {`{"kind": "agent", "corpus": "python-3.11", "policy": 1}`, 400, "invalid_policy"},
		"policy null":          {`{"kind": "agent", "corpus": "python-3.11", "policy": null}`, 400, "invalid_policy"},
		"configs on agent":     {`{"kind": "agent", "corpus": "python-3.11", "configs": ["seed"]}`, 400, "unknown_field"},
		"k on agent":           {`{"kind": "agent", "corpus": "python-3.11", "k": 10}`, 400, "unknown_field"},
		"config on retrieval":  {`{"kind": "retrieval", "corpus": "python-3.11", "config": "seed"}`, 400, "unknown_field"},
		"policy on retrieval":  {`{"kind": "retrieval", "corpus": "python-3.11", "policy": "scripted"}`, 400, "unknown_field"},
		"unknown key":          {`{"kind": "agent", "corpus": "python-3.11", "limits": {}}`, 400, "unknown_field"},
		"repeated key":         {`{"kind": "agent", "corpus": "python-3.11", "policy": "scripted", "policy": "gemini"}`, 400, "malformed_json"},
		"no corpus":            {`{"kind": "agent"}`, 400, "invalid_field"},
		"unknown corpus":       {`{"kind": "agent", "corpus": "../python-3.11"}`, 400, "unknown_corpus"},
		"unknown config":       {`{"kind": "agent", "corpus": "python-3.11", "config": "nope"}`, 400, "unknown_config"},
		"config a list":        {`{"kind": "agent", "corpus": "python-3.11", "config": ["seed"]}`, 400, "invalid_config"},
		"bad config spec":      {`{"kind": "agent", "corpus": "python-3.11", "config": {"name": 3}}`, 400, "invalid_config"},
		"cases not object":     {`{"kind": "agent", "corpus": "python-3.11", "cases": "a\tq\t-"}`, 400, "invalid_field"},
		"cases bad format":     {`{"kind": "agent", "corpus": "python-3.11", "cases": {"format": "ragagent-cases/9", "cases": []}}`, 400, "invalid_cases"},
		"cases none":           {`{"kind": "agent", "corpus": "python-3.11", "cases": {"format": "ragagent-cases/1", "cases": []}}`, 400, "invalid_cases"},
		"too many cases":       {agentBody(t, ""), 400, "too_many_cases"},
		"cases with a scalar":  {`{"kind": "agent", "corpus": "python-3.11", "cases": ` + strings.Replace(one, `"target_urls": []`, `"target_urls": 3`, 1) + `}`, 400, "invalid_cases"},
		"body over the cap":    {`{"kind": "agent", "corpus": "python-3.11", "cases": ` + strings.Replace(one, `"cases": [`, `"cases": [`+strings.Repeat(" ", 64<<10), 1) + `}`, 413, "body_too_large"},
		"kind agent uppercase": {`{"kind": "Agent", "corpus": "python-3.11"}`, 400, "invalid_field"},
	} {
		r := e.do(req{method: "POST", path: "/v1/experiments", token: tok, body: tc.body})
		assert.Equal(t, tc.status, r.status, "%s: %s", name, r.body)
		assert.Equal(t, tc.code, r.code(t), "%s: %s", name, r.body)
	}
	list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
	assert.Empty(t, list["experiments"], "nothing stored")
	ok := e.postExperiment(tok, `{"kind": "agent", "corpus": "python-3.11", "cases": `+one+`}`)
	id := idOf(t, ok)
	x := e.awaitExperiment(tok, id)
	require.Equal(t, "succeeded", x["state"], x["error"])
	assert.Equal(t, map[string]any{"done": 2.0, "total": 2.0}, x["progress"], "one case on both paths; the policy scripted when absent")

	bare := newEnv(t, options{packs: true, wrap: func(s store.Store) store.Store {
		return noTrials{Store: s, Experiments: s.(store.Experiments)}
	}})
	btok := bare.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	r := bare.do(req{method: "POST", path: "/v1/experiments", token: btok, body: `{"kind": "agent", "corpus": "python-3.11"}`})
	assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	assert.Equal(t, "unsupported_kind", r.code(t))
	assert.Equal(t, http.StatusAccepted, bare.postExperiment(btok, `{"kind": "retrieval", "corpus": "seed"}`).status, "retrieval is still offered")
}

// trialGate holds every agent experiment's trials until it is opened.
type trialGate struct {
	*store.SQL
	open chan struct{}
}

func (g *trialGate) KeepTrial(ctx context.Context, id string, tr store.Trial, done int, ev store.NewEvent) (store.Event, error) {
	<-g.open
	return g.SQL.KeepTrial(ctx, id, tr, done, ev)
}

// TestAnAgentExperimentIsCancelledAndQueued: an agent experiment waits
// its turn under the server's running cap and counts against the token's
// cap like a retrieval one; cancelled while running it ends cancelled at
// once, keeping no trial after.
func TestAnAgentExperimentIsCancelledAndQueued(t *testing.T) {
	g := &trialGate{open: make(chan struct{})}
	e := newEnv(t, options{packs: true, experiments: server.ExperimentCaps{PerToken: 2, Running: 1},
		wrap: func(s store.Store) store.Store { g.SQL = s.(*store.SQL); return g }})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	running := idOf(t, e.postExperiment(alice, agentBody(t, "")))
	queued := idOf(t, e.postExperiment(alice, `{"kind": "agent", "corpus": "seed"}`))
	assert.Equal(t, "running", e.experiment(alice, running)["state"])
	assert.Equal(t, "queued", e.experiment(alice, queued)["state"])
	over := e.postExperiment(alice, `{"kind": "agent", "corpus": "seed"}`)
	assert.Equal(t, http.StatusTooManyRequests, over.status)
	assert.Equal(t, "experiment_quota", over.code(t))
	c := e.do(req{method: "POST", path: "/v1/experiments/" + running + "/cancel", token: alice, valid: true})
	require.Equal(t, http.StatusOK, c.status, string(c.body))
	assert.Equal(t, "cancelled", c.json(t)["state"])
	close(g.open)
	assert.Equal(t, "succeeded", e.awaitExperiment(alice, queued)["state"], "the queued one ran once the place was free")
	assert.Equal(t, "cancelled", e.awaitExperiment(alice, running)["state"])
	kept, err := g.SQL.Trials(context.Background(), running)
	require.NoError(t, err)
	assert.Empty(t, kept, "nothing kept after the cancel")
}

// killAfterTrials keeps trials, and kills its process with SIGKILL (no
// cleanup, as a crash) once it has kept n.
type killAfterTrials struct {
	*store.SQL
	n    int64
	kept atomic.Int64
}

func (k *killAfterTrials) KeepTrial(ctx context.Context, id string, tr store.Trial, done int, ev store.NewEvent) (store.Event, error) {
	out, err := k.SQL.KeepTrial(ctx, id, tr, done, ev)
	if k.kept.Add(1) == k.n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return out, err
}

// countingTrials counts the trials a server keeps, by index.
type countingTrials struct {
	*store.SQL
	mu  sync.Mutex
	ran map[int]int
}

func (c *countingTrials) KeepTrial(ctx context.Context, id string, tr store.Trial, done int, ev store.NewEvent) (store.Event, error) {
	c.mu.Lock()
	c.ran[tr.Index]++
	c.mu.Unlock()
	return c.SQL.KeepTrial(ctx, id, tr, done, ev)
}

// TestAKilledAgentExperimentResumes: a server process killed with
// SIGKILL during an agent experiment (after its 7th trial was kept)
// leaves it running in the store; the next server resumes it from the
// trials kept, running only the rest (none twice, none lost: the
// progress events go 1..total once each), and it ends with the result of
// an uninterrupted run, the measured seconds aside.
func TestAKilledAgentExperimentResumes(t *testing.T) {
	if db := os.Getenv("RAGAGENT_AGENT_EXPERIMENT_CHILD"); db != "" {
		experimentChild(t, db, func(st *store.SQL) store.Store { return &killAfterTrials{SQL: st, n: killedAfter} })
		return
	}
	want := wantEval(t, "")
	db := filepath.Join(t.TempDir(), "api.db")
	st, err := store.OpenFile(context.Background(), db)
	require.NoError(t, err)
	plain, tok, err := server.NewToken(pepper, "alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1, time.Now())
	require.NoError(t, err)
	require.NoError(t, st.AddToken(context.Background(), tok))
	require.NoError(t, st.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestAKilledAgentExperimentResumes$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RAGAGENT_AGENT_EXPERIMENT_CHILD="+db)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	base := ""
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "listening "); ok {
			base = u
			break
		}
	}
	require.NotEmpty(t, base, "the child server did not start")
	hr, err := http.NewRequest("POST", base+"/v1/experiments", strings.NewReader(agentBody(t, "")))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+plain)
	resp, err := harnessClient.Do(hr)
	require.NoError(t, err)
	var posted struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&posted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws, _ := exit.Sys().(syscall.WaitStatus)
	require.Equal(t, syscall.SIGKILL, ws.Signal(), "the child was killed: %v", err)

	left, err := store.OpenFile(context.Background(), db)
	require.NoError(t, err)
	before, err := left.Trials(context.Background(), posted.ID)
	require.NoError(t, err)
	require.NoError(t, left.Close())
	require.Len(t, before, killedAfter, "the dead server kept its trials")

	c := &countingTrials{ran: map[int]int{}}
	e := newEnv(t, options{packs: true, dbPath: db, wrap: func(s store.Store) store.Store { c.SQL = s.(*store.SQL); return c }})
	e.tokens["alice"] = plain
	x := e.awaitExperiment(plain, posted.ID)
	require.Equal(t, "succeeded", x["state"], x["error"])
	assert.Equal(t, map[string]any{"done": float64(pythonTrials), "total": float64(pythonTrials)}, x["progress"])
	r := e.do(req{method: "GET", path: "/v1/experiments/" + posted.ID + "/result", token: plain, valid: true})
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, want, unmeasured(t, r.body), "the result of an uninterrupted run")

	kept, err := e.store.Trials(context.Background(), posted.ID)
	require.NoError(t, err)
	assert.Len(t, kept, pythonTrials)
	assert.Len(t, c.ran, pythonTrials-killedAfter, "the resumed server ran only the rest")
	for _, tr := range before {
		assert.NotContains(t, c.ran, tr.Index, "trial %s ran before the kill", tr.ID)
	}
	for i, n := range c.ran {
		assert.Equal(t, 1, n, "trial %d ran once", i)
	}
	checkProgress(t, e.experimentEvents(plain, posted.ID, nil), pythonTrials)
	assert.Contains(t, e.log.String(), "experiment resumed after a restart")
}
