package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// pythonCases is the python-3.11 pack's question set (39 cases, 34
// answerable), as a client sends it: the file's object.
func pythonCases(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("../../fixtures/python-3.11-cases.json")
	require.NoError(t, err)
	return string(data)
}

// experimentBody is a retrieval experiment's request on the python pack.
func experimentBody(t testing.TB, configs string) string {
	return fmt.Sprintf(`{"kind": "retrieval", "corpus": "python-3.11", "cases": %s, "configs": %s, "k": 10}`, pythonCases(t), configs)
}

// wantRetrieval is what ragagent retrieval --json prints for the python
// experiment under configs: the engine the command calls, and the
// command itself when bin/ragagent is built (make build).
func wantRetrieval(t testing.TB, configs ...string) []byte {
	t.Helper()
	sources, err := packs.Sources()
	require.NoError(t, err)
	e, err := engine.Open(engine.Options{Packs: sources})
	require.NoError(t, err)
	defer e.Close()
	req := engine.RetrievalRequest{Corpus: "python-3.11", Cases: pythonCases(t), K: 10}
	for _, c := range configs {
		req.Configs = append(req.Configs, engine.ConfigRef{Name: c})
	}
	res, err := e.Retrieval(context.Background(), req)
	require.NoError(t, err)
	want, err := res.JSON()
	require.NoError(t, err)
	bin := "../../bin/ragagent"
	if dir := os.Getenv("RAGAGENT_BIN"); dir != "" {
		bin = filepath.Join(dir, "ragagent")
	}
	if _, err := os.Stat(bin); err == nil {
		args := []string{"retrieval", "--corpus", "python-3.11", "--cases", "../../fixtures/python-3.11-cases.json", "--k", "10", "--json"}
		for _, c := range configs {
			args = append(args, "--config", c)
		}
		out, err := exec.Command(bin, args...).Output()
		require.NoError(t, err)
		require.Equal(t, string(want), string(out), "the engine's bytes are the command's")
	} else {
		t.Logf("%s is not built: compared with the engine the command calls", bin)
	}
	return want
}

func (e *env) postExperiment(token, body string) response {
	e.t.Helper()
	return e.do(req{method: "POST", path: "/v1/experiments", token: token, body: body, valid: true})
}

func (e *env) experiment(token, id string) map[string]any {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/experiments/" + id, token: token, valid: true})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	return r.json(e.t)
}

// awaitExperiment polls an experiment until it has ended.
func (e *env) awaitExperiment(token, id string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		x := e.experiment(token, id)
		if s := x["state"]; s != "queued" && s != "running" {
			return x
		}
		require.True(e.t, time.Now().Before(deadline), "experiment %s did not end: %v", id, x["progress"])
		time.Sleep(20 * time.Millisecond)
	}
}

func idOf(t testing.TB, r response) string {
	t.Helper()
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	id, _ := r.json(t)["id"].(string)
	require.NotEmpty(t, id)
	return id
}

// progressOf reads an experiment event's data.
func progressOf(t testing.TB, ev sse) (state string, done, total int) {
	t.Helper()
	var d struct {
		State    string `json:"state"`
		Progress struct{ Done, Total int }
	}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &d), ev.data)
	return d.State, d.Progress.Done, d.Progress.Total
}

// checkProgress: the events are queued, started, one progress per
// ranking from 1 to total (each done once, in order: no ranking kept
// twice, none lost), and end.
func checkProgress(t testing.TB, evs []sse, total int) {
	t.Helper()
	require.GreaterOrEqual(t, len(evs), 3)
	assert.Equal(t, []string{"queued", "started"}, types(evs[:2]))
	assert.Equal(t, "end", evs[len(evs)-1].event)
	var dones []int
	for i, ev := range evs {
		assert.Equal(t, strconv.Itoa(i+1), ev.id)
		if ev.event == "progress" {
			_, done, tot := progressOf(t, ev)
			assert.Equal(t, total, tot)
			dones = append(dones, done)
		}
	}
	want := make([]int, total)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, dones)
}

// TestARetrievalExperimentIsTheCommandsResult: an experiment posted with
// ragagent retrieval's inputs succeeds with the bytes the command prints
// (GET .../result), the same object in GET's result, its progress at its
// total, its headline in the list; its events go queued, started, one
// progress per ranking, end, and resume after Last-Event-ID.
func TestARetrievalExperimentIsTheCommandsResult(t *testing.T) {
	e := newEnv(t, options{packs: true})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	want := wantRetrieval(t, "seed", "general")
	posted := e.postExperiment(tok, experimentBody(t, `["seed", "general"]`))
	id := idOf(t, posted)
	assert.Equal(t, "/v1/experiments/"+id, posted.header.Get("Location"))
	x := e.awaitExperiment(tok, id)
	require.Equal(t, "succeeded", x["state"], x["error"])
	assert.Equal(t, map[string]any{"done": 68.0, "total": 68.0}, x["progress"])
	var wantObj any
	require.NoError(t, json.Unmarshal(want, &wantObj))
	assert.Equal(t, wantObj, x["result"])
	assert.Nil(t, x["error"])

	r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, string(want), string(r.body), "the command's bytes")

	list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
	xs := list["experiments"].([]any)
	require.Len(t, xs, 1)
	first := xs[0].(map[string]any)
	assert.Equal(t, id, first["id"])
	assert.Equal(t, "succeeded", first["state"])
	assert.NotContains(t, first, "result")
	h := first["headline"].(map[string]any)
	assert.Equal(t, "mrr@10", h["metric"])
	assert.Contains(t, []any{"seed", "general"}, h["config"])

	evs := e.experimentEvents(tok, id, nil)
	checkProgress(t, evs, 68)
	state, done, _ := progressOf(t, evs[len(evs)-1])
	assert.Equal(t, "succeeded", state)
	assert.Equal(t, 68, done)
	rest := e.experimentEvents(tok, id, map[string]string{"Last-Event-ID": "10"})
	assert.Equal(t, evs[10:], rest, "resumed after event 10")
	assert.Empty(t, e.experimentEvents(tok, id, map[string]string{"Last-Event-ID": evs[len(evs)-1].id}))
}

func (e *env) experimentEvents(token, id string, header map[string]string) []sse {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/events", token: token, header: header, valid: true})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	return parseSSE(e.t, r.body)
}

// gate holds every experiment's rankings until it is opened: an
// experiment is running, its first ranking made and waiting, for as long
// as a test needs it to be. (The experiment holds its pack's index only
// for each search, so runs beside it on the same pack go on.)
type gate struct {
	*store.SQL
	open chan struct{}
	kept atomic.Int64
}

func (g *gate) KeepRanking(ctx context.Context, id string, r store.Ranked, done int, ev store.NewEvent) (store.Event, error) {
	<-g.open
	g.kept.Add(1)
	return g.SQL.KeepRanking(ctx, id, r, done, ev)
}

// TestExperimentsAreTheTokensOwn: another token's experiment is a 404 to
// GET, its result, its events and cancel, and absent from the list, as
// one that does not exist; a token without the run scope cannot start one.
func TestExperimentsAreTheTokensOwn(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	e := newEnv(t, options{packs: true, wrap: func(s store.Store) store.Store { g.SQL = s.(*store.SQL); return g }})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	bob := e.token("bob", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	reader := e.token("reader", []string{server.ScopeRead}, 1000, 1)
	id := idOf(t, e.postExperiment(alice, experimentBody(t, `["seed"]`)))
	for _, r := range []req{
		{method: "GET", path: "/v1/experiments/" + id},
		{method: "GET", path: "/v1/experiments/" + id + "/result"},
		{method: "GET", path: "/v1/experiments/" + id + "/events"},
		{method: "POST", path: "/v1/experiments/" + id + "/cancel"},
		{method: "GET", path: "/v1/experiments/exp_00000000000000000000"},
	} {
		r.token, r.valid = bob, true
		got := e.do(r)
		assert.Equal(t, http.StatusNotFound, got.status, "%s %s", r.method, r.path)
		assert.Equal(t, "not_found", got.code(t))
		assert.NotContains(t, string(got.body), "alice")
	}
	list := e.do(req{method: "GET", path: "/v1/experiments", token: bob, valid: true}).json(t)
	assert.Empty(t, list["experiments"])
	refused := e.postExperiment(reader, experimentBody(t, `["seed"]`))
	assert.Equal(t, http.StatusForbidden, refused.status)
	assert.Equal(t, "missing_scope", refused.code(t))
	assert.Equal(t, "running", e.experiment(alice, id)["state"], "bob's cancel did nothing")
	close(g.open)
	assert.Equal(t, "succeeded", e.awaitExperiment(alice, id)["state"])
}

// TestHostileExperimentsAreRefused: malformed and hostile requests are
// refused with their declared codes before anything is stored.
func TestHostileExperimentsAreRefused(t *testing.T) {
	t.Run("here", func(t *testing.T) { testHostileExperimentsAreRefused(t, false) })
	// A Worker's front: its run object checks the plan (Dispatch.Plan),
	// and its refusals are the same.
	t.Run("at the owner", func(t *testing.T) { testHostileExperimentsAreRefused(t, true) })
}

func testHostileExperimentsAreRefused(t *testing.T, owner bool) {
	e := newEnv(t, options{packs: true, owner: owner, experiments: server.ExperimentCaps{Cases: 40, Configs: 3, Body: 64 << 10}})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	cases := pythonCases(t)
	many := `{"format": "ragagent-cases/1", "cases": [` + strings.Repeat(`{"id": "x", "question": "q?", "target_urls": []},`, 40) +
		`{"id": "y", "question": "q?", "target_urls": []}]}`
	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"unknown key":        {`{"kind": "retrieval", "corpus": "python-3.11", "extra": 1}`, 400, "unknown_field"},
		"repeated key":       {`{"kind": "retrieval", "corpus": "seed", "corpus": "python-3.11"}`, 400, "malformed_json"},
		"not an object":      {`["retrieval"]`, 400, "malformed_json"},
		"no kind":            {`{"corpus": "python-3.11"}`, 400, "invalid_field"},
		"unknown kind":       {`{"kind": "tune", "corpus": "python-3.11"}`, 400, "invalid_field"},
		"agent under gemini": {`{"kind": "agent", "corpus": "python-3.11", "policy": "gemini"}`, 400, "unsupported_policy"},
		"no corpus":          {`{"kind": "retrieval"}`, 400, "invalid_field"},
		"unknown corpus":     {`{"kind": "retrieval", "corpus": "../python-3.11"}`, 400, "unknown_corpus"},
		"cases not object":   {`{"kind": "retrieval", "corpus": "seed", "cases": "id\tq\t-"}`, 400, "invalid_field"},
		"cases unknown key":  {`{"kind": "retrieval", "corpus": "python-3.11", "cases": {"format": "ragagent-cases/1", "cases": [], "x": 1}}`, 400, "invalid_cases"},
		"cases bad format":   {`{"kind": "retrieval", "corpus": "python-3.11", "cases": {"format": "ragagent-cases/9", "cases": []}}`, 400, "invalid_cases"},
		"cases none ranked":  {`{"kind": "retrieval", "corpus": "python-3.11", "cases": {"format": "ragagent-cases/1", "cases": [{"id": "a", "question": "q?", "target_urls": []}]}}`, 400, "invalid_cases"},
		"too many cases":     {`{"kind": "retrieval", "corpus": "python-3.11", "cases": ` + many + `}`, 400, "too_many_cases"},
		"unknown config":     {`{"kind": "retrieval", "corpus": "python-3.11", "configs": ["nope"]}`, 400, "unknown_config"},
		"bad config spec":    {`{"kind": "retrieval", "corpus": "python-3.11", "configs": [{"name": 3}]}`, 400, "invalid_config"},
		"config a number":    {`{"kind": "retrieval", "corpus": "python-3.11", "configs": [3]}`, 400, "invalid_config"},
		"configs not a list": {`{"kind": "retrieval", "corpus": "python-3.11", "configs": "seed"}`, 400, "invalid_field"},
		"configs empty":      {`{"kind": "retrieval", "corpus": "python-3.11", "configs": []}`, 400, "invalid_field"},
		"too many configs":   {`{"kind": "retrieval", "corpus": "python-3.11", "configs": ["seed", "general", "rm3", "fields"]}`, 400, "too_many_configs"},
		"all over the cap":   {`{"kind": "retrieval", "corpus": "python-3.11", "configs": ["all"]}`, 400, "too_many_configs"},
		"k zero":             {`{"kind": "retrieval", "corpus": "python-3.11", "k": 0}`, 400, "invalid_field"},
		"k a string":         {`{"kind": "retrieval", "corpus": "python-3.11", "k": "10"}`, 400, "invalid_field"},
		"k a fraction":       {`{"kind": "retrieval", "corpus": "python-3.11", "k": 2.5}`, 400, "invalid_field"},
		"k too deep":         {`{"kind": "retrieval", "corpus": "python-3.11", "k": 101}`, 400, "invalid_field"},
		"body over the cap":  {`{"kind": "retrieval", "corpus": "python-3.11", "cases": ` + strings.Replace(cases, `"cases": [`, `"cases": [`+strings.Repeat(" ", 64<<10), 1) + `}`, 413, "body_too_large"},
	} {
		r := e.do(req{method: "POST", path: "/v1/experiments", token: tok, body: tc.body})
		assert.Equal(t, tc.status, r.status, "%s: %s", name, r.body)
		assert.Equal(t, tc.code, r.code(t), "%s: %s", name, r.body)
	}
	list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
	assert.Empty(t, list["experiments"], "nothing stored")
}

// TestExperimentQuotaAndCancel: a token may hold its cap of queued and
// running experiments (the server runs its cap at once, the rest wait);
// one more is 429 experiment_quota while another token is admitted; a
// cancelled experiment, queued or running, ends cancelled at once, keeps
// no ranking after, frees its place, and cannot be cancelled again.
func TestExperimentQuotaAndCancel(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	e := newEnv(t, options{packs: true, experiments: server.ExperimentCaps{PerToken: 2, Running: 1},
		wrap: func(s store.Store) store.Store { g.SQL = s.(*store.SQL); return g }})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	bob := e.token("bob", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	running := idOf(t, e.postExperiment(alice, experimentBody(t, `["seed"]`)))
	body := `{"kind": "retrieval", "corpus": "seed", "configs": ["seed", "general"]}`
	queued := idOf(t, e.postExperiment(alice, body))
	assert.Equal(t, "running", e.experiment(alice, running)["state"])
	assert.Equal(t, "queued", e.experiment(alice, queued)["state"])
	over := e.postExperiment(alice, body)
	assert.Equal(t, http.StatusTooManyRequests, over.status)
	assert.Equal(t, "experiment_quota", over.code(t))
	assert.NotEmpty(t, over.header.Get("Retry-After"))
	other := idOf(t, e.postExperiment(bob, body))

	for _, id := range []string{queued, running} {
		c := e.do(req{method: "POST", path: "/v1/experiments/" + id + "/cancel", token: alice, valid: true})
		require.Equal(t, http.StatusOK, c.status, string(c.body))
		assert.Equal(t, "cancelled", c.json(t)["state"])
		again := e.do(req{method: "POST", path: "/v1/experiments/" + id + "/cancel", token: alice, valid: true})
		assert.Equal(t, http.StatusConflict, again.status)
		assert.Equal(t, "already_finished", again.code(t))
		noResult := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: alice, valid: true})
		assert.Equal(t, http.StatusConflict, noResult.status)
		assert.Equal(t, "no_result", noResult.code(t))
	}
	third := idOf(t, e.postExperiment(alice, body))
	close(g.open)
	for _, id := range []string{running, queued} {
		x := e.awaitExperiment(alice, id)
		assert.Equal(t, "cancelled", x["state"])
		assert.Nil(t, x["result"])
		rankings, err := g.SQL.Rankings(context.Background(), id)
		require.NoError(t, err)
		assert.Empty(t, rankings, "nothing kept after the cancel")
		evs := e.experimentEvents(alice, id, nil)
		assert.Equal(t, "end", evs[len(evs)-1].event)
		state, _, _ := progressOf(t, evs[len(evs)-1])
		assert.Equal(t, "cancelled", state)
	}
	assert.Equal(t, "succeeded", e.awaitExperiment(bob, other)["state"])
	assert.Equal(t, "succeeded", e.awaitExperiment(alice, third)["state"])
}

// killAfter keeps rankings, and kills its process with SIGKILL (no
// cleanup, as a crash) once it has kept n.
type killAfter struct {
	*store.SQL
	n    int64
	kept atomic.Int64
}

func (k *killAfter) KeepRanking(ctx context.Context, id string, r store.Ranked, done int, ev store.NewEvent) (store.Event, error) {
	out, err := k.SQL.KeepRanking(ctx, id, r, done, ev)
	if k.kept.Add(1) == k.n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return out, err
}

// counting counts the rankings a server keeps.
type counting struct {
	*store.SQL
	mu   sync.Mutex
	made map[store.Ranked]int
}

func (c *counting) KeepRanking(ctx context.Context, id string, r store.Ranked, done int, ev store.NewEvent) (store.Event, error) {
	c.mu.Lock()
	c.made[store.Ranked{C: r.C, A: r.A}]++
	c.mu.Unlock()
	return c.SQL.KeepRanking(ctx, id, r, done, ev)
}

const killedAfter = 7

// kitchenURL is the kettle note's passage in the notes pack.
const kitchenURL = "https://kitchen.invalid/notes/kettle.md#kettle"

// kitchenExperiment is a retrieval experiment on the notes pack uploaded
// as kitchen: one case, whose target is the kettle note.
const kitchenExperiment = `{"kind": "retrieval", "corpus": "kitchen", "cases": {"format": "ragagent-cases/1", "cases": [
	  {"id": "descale", "split": "development", "question": "How often do I descale the kettle with citric acid?", "version": "1.0",
	   "sources": [], "target_urls": ["` + kitchenURL + `"], "answer_patterns": [], "forbidden_patterns": []}]}, "configs": ["seed", "stemmed"], "k": 5}`

// TestAKilledExperimentResumes: a server process killed with SIGKILL
// during an experiment (after its 7th ranking was kept) leaves it
// running in the store; the next server resumes it from the rankings
// kept, ranking only the rest (none twice, none lost: the progress
// events go 1..total once each), and it ends with the bytes of an
// uninterrupted run.
func TestAKilledExperimentResumes(t *testing.T) {
	if db := os.Getenv("RAGAGENT_EXPERIMENT_CHILD"); db != "" {
		experimentChild(t, db, func(st *store.SQL) store.Store { return &killAfter{SQL: st, n: killedAfter} })
		return
	}
	configs := []string{"seed", "stemmed", "general"}
	want := wantRetrieval(t, configs...)
	db := filepath.Join(t.TempDir(), "api.db")
	st, err := store.OpenFile(context.Background(), db)
	require.NoError(t, err)
	plain, tok, err := server.NewToken(pepper, "alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1, time.Now())
	require.NoError(t, err)
	require.NoError(t, st.AddToken(context.Background(), tok))
	require.NoError(t, st.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestAKilledExperimentResumes$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RAGAGENT_EXPERIMENT_CHILD="+db)
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
	hr, err := http.NewRequest("POST", base+"/v1/experiments", strings.NewReader(experimentBody(t, `["seed", "stemmed", "general"]`)))
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

	c := &counting{made: map[store.Ranked]int{}}
	e := newEnv(t, options{packs: true, dbPath: db, wrap: func(s store.Store) store.Store { c.SQL = s.(*store.SQL); return c }})
	e.tokens["alice"] = plain
	x := e.awaitExperiment(plain, posted.ID)
	require.Equal(t, "succeeded", x["state"], x["error"])
	total := 34 * len(configs)
	assert.Equal(t, map[string]any{"done": float64(total), "total": float64(total)}, x["progress"])
	r := e.do(req{method: "GET", path: "/v1/experiments/" + posted.ID + "/result", token: plain, valid: true})
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, string(want), string(r.body), "the bytes of an uninterrupted run")

	kept, err := e.store.Rankings(context.Background(), posted.ID)
	require.NoError(t, err)
	assert.Len(t, kept, total)
	assert.Len(t, c.made, total-killedAfter, "the resumed server ranked only the rest")
	for rc, n := range c.made {
		assert.Equal(t, 1, n, "%v ranked once", rc)
	}
	checkProgress(t, e.experimentEvents(plain, posted.ID, nil), total)
	assert.Contains(t, e.log.String(), "experiment resumed after a restart")
}

// experimentChild is the server the kill -9 tests kill: the store file
// db, served on a free port it prints, through the store wrap makes of
// it (one that kills the process once it has kept killedAfter rankings or
// trials).
func experimentChild(t *testing.T, db string, wrap func(*store.SQL) store.Store) {
	sources, err := packs.Sources()
	require.NoError(t, err)
	eng, err := engine.Open(engine.Options{Packs: sources})
	require.NoError(t, err)
	st, err := store.OpenFile(context.Background(), db)
	require.NoError(t, err)
	srv, err := server.New(server.Config{Engine: eng, Store: wrap(st), Pepper: pepper,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fmt.Printf("listening http://%s\n", l.Addr())
	_ = http.Serve(l, srv.Handler())
}

// TestAnExperimentOnAnUploadedCorpus: a token's experiment may name its
// own upload, ranked as a built-in pack is; to another token the pack is
// unknown_corpus, as one that does not exist.
func TestAnExperimentOnAnUploadedCorpus(t *testing.T) {
	e := newEnv(t, options{corpora: t.TempDir()})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun, server.ScopeCorpora}, 1000, 1)
	bob := e.token("bob", []string{server.ScopeRead, server.ScopeRun, server.ScopeCorpora}, 1000, 1)
	require.Equal(t, http.StatusCreated, e.upload(alice, packTarball(t, "kitchen")).status)
	body := kitchenExperiment
	refused := e.postExperiment(bob, body)
	assert.Equal(t, http.StatusBadRequest, refused.status)
	assert.Equal(t, "unknown_corpus", refused.code(t))
	id := idOf(t, e.postExperiment(alice, body))
	x := e.awaitExperiment(alice, id)
	require.Equal(t, "succeeded", x["state"], x["error"])
	res := x["result"].(map[string]any)
	assert.Equal(t, "kitchen", res["corpus"])
	first := res["configs"].([]any)[0].(map[string]any)["cases"].([]any)[0].(map[string]any)
	assert.Equal(t, 1.0, first["rank"], "the kettle note ranks first")
}

// TestAShutDownExperimentResumes: a clean shutdown stops a running
// experiment where it is and leaves it running in the store, with the
// rankings kept; the next server resumes it and it ends with the bytes
// of an uninterrupted run.
func TestAShutDownExperimentResumes(t *testing.T) {
	want := wantRetrieval(t, "seed", "stemmed", "general")
	e := newEnv(t, options{packs: true})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	id := idOf(t, e.postExperiment(tok, experimentBody(t, `["seed", "stemmed", "general"]`)))
	for deadline := time.Now().Add(30 * time.Second); ; {
		p := e.experiment(tok, id)["progress"].(map[string]any)
		if p["done"].(float64) >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no progress")
		time.Sleep(time.Millisecond)
	}
	db := e.dbPath
	e.close()
	st, err := store.OpenFile(context.Background(), db)
	require.NoError(t, err)
	x, found, err := st.Experiment(context.Background(), id)
	require.NoError(t, err)
	require.True(t, found)
	require.NoError(t, st.Close())
	require.Equal(t, store.ExperimentRunning, x.State, "left running for the next start")
	require.Less(t, x.Done, x.Total, "stopped before its end")

	again := newEnv(t, options{packs: true, dbPath: db})
	got := again.awaitExperiment(tok, id)
	require.Equal(t, "succeeded", got["state"], got["error"])
	r := again.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
	assert.Equal(t, string(want), string(r.body))
	checkProgress(t, again.experimentEvents(tok, id, nil), x.Total)
}

// TestARevokedTokensExperimentsEnd: revoking a token (in the database,
// beside the running server, as ragagent tokens revoke does) ends its
// running experiment at its next ranking and its queued one when it
// starts, failed with token_revoked, nothing kept after the revoke.
func TestARevokedTokensExperimentsEnd(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	e := newEnv(t, options{packs: true, experiments: server.ExperimentCaps{PerToken: 2, Running: 1},
		wrap: func(s store.Store) store.Store { g.SQL = s.(*store.SQL); return g }})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	running := idOf(t, e.postExperiment(alice, experimentBody(t, `["seed"]`)))
	queued := idOf(t, e.postExperiment(alice, `{"kind": "retrieval", "corpus": "seed"}`))
	_, revoked, err := e.store.RevokeToken(context.Background(), e.tokenID(alice), e.clock.Now(),
		func(r store.Run) store.NewEvent { return store.NewEvent{Type: "end", Data: `{}`, At: e.clock.Now()} })
	require.NoError(t, err)
	require.True(t, revoked)
	close(g.open)
	for _, id := range []string{running, queued} {
		var x store.Experiment
		for deadline := time.Now().Add(20 * time.Second); ; {
			var found bool
			x, found, err = e.store.Experiment(context.Background(), id)
			require.NoError(t, err)
			require.True(t, found)
			if !x.Active() {
				break
			}
			require.True(t, time.Now().Before(deadline), "%s did not end", id)
			time.Sleep(10 * time.Millisecond)
		}
		assert.Equal(t, store.ExperimentFailed, x.State, id)
		assert.Contains(t, x.Error, `"code":"token_revoked"`, id)
		assert.Zero(t, x.Done, "nothing kept after the revoke")
	}
}

// TestAPlanNamesNoOtherTenantsPack: an experiment's plan that reaches
// the engine with a corpus it does not hold (here at the owner, which
// the front trusts to have checked the name) is refused unknown_corpus
// naming that corpus alone, never the engine's list of packs, which
// holds every tenant's uploads.
func TestAPlanNamesNoOtherTenantsPack(t *testing.T) {
	e := newEnv(t, options{corpora: t.TempDir(), owner: true})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun, server.ScopeCorpora}, 1000, 1)
	require.Equal(t, http.StatusCreated, e.upload(alice, packTarball(t, "kitchen")).status)
	res, err := http.Post(e.ownerURL+server.PlanPath("exp_0123456789abcdef0123", "tok_bob"), "application/json",
		strings.NewReader(`{"kind": "retrieval", "corpus": "nosuch", "cases": null, "configs": null, "k": 0}`))
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, string(body))
	assert.Contains(t, string(body), `"code":"unknown_corpus"`)
	assert.Contains(t, string(body), "nosuch")
	assert.NotContains(t, string(body), "kitchen", "another tenant's upload")
}

// TestAnExperimentOnADeletedUploadFails: an experiment queued on a
// token's upload that is deleted before it starts ends failed,
// unknown_corpus naming that corpus alone (not the engine's list of
// packs, other tenants' uploads among them); nothing is ranked.
func TestAnExperimentOnADeletedUploadFails(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	e := newEnv(t, options{corpora: t.TempDir(), packs: true, experiments: server.ExperimentCaps{PerToken: 2, Running: 1},
		wrap: func(s store.Store) store.Store { g.SQL = s.(*store.SQL); return g }})
	alice := e.token("alice", []string{server.ScopeRead, server.ScopeRun, server.ScopeCorpora}, 1000, 1)
	bob := e.token("bob", []string{server.ScopeRead, server.ScopeRun, server.ScopeCorpora}, 1000, 1)
	require.Equal(t, http.StatusCreated, e.upload(alice, packTarball(t, "kitchen")).status)
	require.Equal(t, http.StatusCreated, e.upload(bob, packTarball(t, "cellar")).status)
	running := idOf(t, e.postExperiment(alice, experimentBody(t, `["seed"]`)))
	queued := idOf(t, e.postExperiment(alice, kitchenExperiment))
	require.Equal(t, "queued", e.experiment(alice, queued)["state"])
	require.Equal(t, http.StatusNoContent, e.do(req{method: "DELETE", path: "/v1/corpora/kitchen", token: alice, valid: true}).status)
	close(g.open)
	assert.Equal(t, "succeeded", e.awaitExperiment(alice, running)["state"])
	x := e.awaitExperiment(alice, queued)
	require.Equal(t, "failed", x["state"], "%v", x)
	failure := x["error"].(map[string]any)
	assert.Equal(t, "unknown_corpus", failure["code"])
	assert.Contains(t, failure["message"], "kitchen")
	assert.NotContains(t, failure["message"], "cellar", "another tenant's upload")
	assert.Equal(t, 0.0, x["progress"].(map[string]any)["done"])
}

// TestAnExperimentOverTheStoresRowIsRefusedOrFails: on a store that keeps
// a bounded row (D1: 2,000,000 bytes; here the D1 store, over this
// machine's SQLite, bounded lower), a request larger than the row is
// refused at admission, 413 body_too_large, with nothing stored; one whose
// result will not fit beside it ends failed, too_many_cases saying so,
// rather than running on unended; a small one succeeds beside them.
func TestAnExperimentOverTheStoresRowIsRefusedOrFails(t *testing.T) {
	testAnExperimentOverTheStoresRow(t, nil)
}

// memResults is a ResultStore in memory, counting what it keeps.
type memResults struct {
	mu   sync.Mutex
	kept map[string][]byte
}

func (m *memResults) PutResult(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept[key] = append([]byte(nil), data...)
	return nil
}

func (m *memResults) DeleteResult(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kept, key)
	return nil
}

func (m *memResults) Result(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.kept[key]
	if !ok {
		return nil, fmt.Errorf("no result %s", key)
	}
	return data, nil
}

// TestAResultLongerThanTheRowIsKeptAside: with a ResultStore (a Worker's
// R2), a result longer than InlineResult is kept there and the row holds
// its key, so the experiment whose result would not fit D1's row
// succeeds, GET and the result endpoint answering its bytes as the SQL
// store's server does; a short result stays in the row.
func TestAResultLongerThanTheRowIsKeptAside(t *testing.T) {
	testAnExperimentOverTheStoresRow(t, &memResults{kept: map[string][]byte{}})
}

func testAnExperimentOverTheStoresRow(t *testing.T, aside *memResults) {
	db := filepath.Join(t.TempDir(), "api.db")
	o := options{dbPath: db, packs: true, wrap: func(store.Store) store.Store {
		b, err := store.OpenBatcher(context.Background(), db)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		d, err := store.NewD1(context.Background(), b, time.Hour)
		require.NoError(t, err)
		d.RowLimit = 26 << 10 // 10 KiB for an experiment's request and result, beside the 16 KiB left the other columns
		return d
	}}
	if aside != nil {
		o.results, o.inlineResult = aside, 4<<10
	}
	e := newEnv(t, o)
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)

	big := e.postExperiment(tok, experimentBody(t, `["seed"]`)) // the python set: some 15 KB
	assert.Equal(t, http.StatusRequestEntityTooLarge, big.status, string(big.body))
	assert.Equal(t, "body_too_large", big.code(t))
	list := e.do(req{method: "GET", path: "/v1/experiments", token: tok, valid: true}).json(t)
	assert.Empty(t, list["experiments"], "nothing stored")

	var rows strings.Builder
	rows.WriteString("id\tquestion\ttarget_urls\n")
	for i := range 20 {
		fmt.Fprintf(&rows, "q%d\thow do I overwrite a file, case %d?\thttps://docs.python.org/3.11/tutorial/inputoutput.html\n", i, i)
	}
	cases, err := engine.QuestionSetObject(rows.String())
	require.NoError(t, err)
	body := `{"kind": "retrieval", "corpus": "python-3.11", "cases": ` + string(cases) + `, "configs": ["seed", "stemmed", "general"]}`
	id := idOf(t, e.postExperiment(tok, body))
	x := e.awaitExperiment(tok, id)
	small := `{"kind": "retrieval", "corpus": "seed", "configs": ["seed", "general"]}`
	smallID := idOf(t, e.postExperiment(tok, small))
	assert.Equal(t, "succeeded", e.awaitExperiment(tok, smallID)["state"])
	if aside == nil {
		require.Equal(t, "failed", x["state"], "%v", x)
		failure := x["error"].(map[string]any)
		assert.Equal(t, "too_many_cases", failure["code"])
		assert.Contains(t, failure["message"], "rank fewer cases or configurations")
		return
	}
	require.Equal(t, "succeeded", x["state"], "%v", x)
	plain := newEnv(t, options{packs: true})
	ptok := plain.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	want := plain.awaitExperiment(ptok, idOf(t, plain.postExperiment(ptok, body)))
	assert.Equal(t, want["result"], x["result"], "GET's result, read back from aside")
	got := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	assert.Equal(t, string(aside.kept["results/"+id]), string(got.body), "the result endpoint's bytes are those kept aside")
	assert.Greater(t, len(got.body), 4<<10, "longer than InlineResult")
	assert.Len(t, aside.kept, 1, "the short result stayed in the row")
}

// endsFirst is a store on which every experiment is ended cancelled just
// before its own end is written: the race of a cancel with the end.
type endsFirst struct{ *store.SQL }

func (s endsFirst) FinishExperiment(ctx context.Context, id string, o store.ExperimentOutcome, end store.ExperimentEventFunc) (store.Experiment, bool, error) {
	if o.State == store.ExperimentSucceeded {
		if _, _, err := s.SQL.FinishExperiment(ctx, id, store.ExperimentOutcome{State: store.ExperimentCancelled, At: o.At}, end); err != nil {
			return store.Experiment{}, false, err
		}
	}
	return s.SQL.FinishExperiment(ctx, id, o, end)
}

// TestAResultKeptAsideForAnExperimentEndedMeanwhileIsRemoved: a result
// is kept aside before the experiment's end is written; when a cancel
// ended the experiment in between, the end finds it over and the result
// kept aside is removed, no one's to keep.
func TestAResultKeptAsideForAnExperimentEndedMeanwhileIsRemoved(t *testing.T) {
	aside := &memResults{kept: map[string][]byte{}}
	e := newEnv(t, options{packs: true, results: aside, inlineResult: 1024, wrap: func(s store.Store) store.Store { return endsFirst{s.(*store.SQL)} }})
	tok := e.token("alice", []string{server.ScopeRead, server.ScopeRun}, 1000, 1)
	x := e.awaitExperiment(tok, idOf(t, e.postExperiment(tok, experimentBody(t, `["seed", "general"]`))))
	assert.Equal(t, "cancelled", x["state"])
	assert.Contains(t, e.log.String(), "experiment result kept aside", "it was kept aside first")
	var left []string
	for key := range aside.kept {
		left = append(left, key)
	}
	assert.Empty(t, left, "and removed")
}
