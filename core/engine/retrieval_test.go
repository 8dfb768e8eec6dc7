package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/experiment"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/fixtures/packs"
)

func packEngine(t testing.TB) *engine.Engine {
	t.Helper()
	sources, err := packs.Sources()
	require.NoError(t, err)
	e, err := engine.Open(engine.Options{Packs: sources})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestRetrievalOnTheSeed: the seed pack's own cases under every built-in:
// DESIGN's shape, the answerable cases only in file order, a comparison
// per configuration after the first and metric, the same bytes twice.
func TestRetrievalOnTheSeed(t *testing.T) {
	e := packEngine(t)
	res, err := e.Retrieval(context.Background(), engine.RetrievalRequest{})
	require.NoError(t, err)
	assert.Equal(t, "seed", res.Corpus)
	assert.Equal(t, 10, res.K)
	assert.Equal(t, 4, res.Cases)
	assert.Equal(t, 3, res.Answerable)
	builtins := engine.RetrievalConfigs()
	require.Len(t, res.Configs, len(builtins))
	assert.Equal(t, "seed", res.Configs[0].Name)
	assert.Len(t, res.Comparisons, (len(builtins)-1)*5)
	for _, c := range res.Configs {
		var ids []string
		for _, r := range c.Cases {
			ids = append(ids, r.ID)
		}
		assert.Equal(t, []string{"overwrite", "serialize-and-save", "newline-version"}, ids)
	}
	first, err := json.Marshal(res)
	require.NoError(t, err)
	again, err := e.Retrieval(context.Background(), engine.RetrievalRequest{})
	require.NoError(t, err)
	second, err := json.Marshal(again)
	require.NoError(t, err)
	assert.Equal(t, string(first), string(second))
}

func TestRetrievalRefusals(t *testing.T) {
	e := packEngine(t)
	for _, c := range []struct {
		name string
		req  engine.RetrievalRequest
		code reason.Code
	}{
		{"unknown config", engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "nope"}}}, reason.UnknownConfig},
		{"bad spec", engine.RetrievalRequest{Configs: []engine.ConfigRef{{Spec: []byte(`{"name": "x", "tokenizer": "nope"}`)}}}, reason.InvalidConfig},
		{"model stage", engine.RetrievalRequest{Configs: []engine.ConfigRef{{Spec: []byte(`{"name": "x", "second_stage": {"method": "cross-encoder", "model": "cross-encoder/ms-marco-MiniLM-L6-v2"}}`)}}}, reason.UnknownConfig},
		{"name clash", engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "seed"}, {Spec: []byte(`{"name": "seed", "tokenizer": "stemmed"}`)}}}, reason.InvalidConfig},
		{"bad cases", engine.RetrievalRequest{Cases: "a\tq?\n"}, reason.InvalidCases},
		{"no answerable", engine.RetrievalRequest{Cases: "a\tq?\t-\n"}, reason.InvalidCases},
		{"target elsewhere", engine.RetrievalRequest{Cases: "a\tq?\thttps://x.org/a.html\n"}, reason.InvalidCases},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.Retrieval(context.Background(), c.req)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, c.code, code, "%v", err)
		})
	}
	_, err := e.Retrieval(context.Background(), engine.RetrievalRequest{K: 101})
	assert.ErrorContains(t, err, "k must be from 1 to 100")
}

func TestParseRetrievalRequest(t *testing.T) {
	req, err := engine.ParseRetrievalRequest(`{"corpus": "python-3.11", "cases": "a\tq\t-\n", "configs": ["seed", {"name": "mine", "tokenizer": "stemmed"}], "k": 5}`)
	require.NoError(t, err)
	assert.Equal(t, "python-3.11", req.Corpus)
	assert.Equal(t, 5, req.K)
	require.Len(t, req.Configs, 2)
	assert.Equal(t, "seed", req.Configs[0].Name)
	assert.JSONEq(t, `{"name": "mine", "tokenizer": "stemmed"}`, string(req.Configs[1].Spec))
	_, err = engine.ParseRetrievalRequest(`{"corpus": "seed", "config": ["seed"]}`)
	assert.ErrorContains(t, err, `unknown field "config"`)
	_, err = engine.ParseRetrievalRequest(`{"configs": [3]}`)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidConfig, code, "%v", err)
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestRetrievalOnThePythonPack: every built-in over the Python pack's 39
// cases gives the golden's bytes. make test-wasm runs this compiled to
// WebAssembly against the same file, so the same input prints the same
// bytes natively and under WASM (rankings, metrics, every interval and
// p-value). A change of a built-in or of the pack's default rewrites it
// with -update.
func TestRetrievalOnThePythonPack(t *testing.T) {
	e := packEngine(t)
	res, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: "python-3.11"})
	require.NoError(t, err)
	got, err := json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", "retrieval-python.json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./core/engine -run TestRetrievalOnThePythonPack -update writes it")
	assert.Equal(t, string(want), string(got)+"\n")
	assert.Equal(t, 39, res.Cases)
	assert.Equal(t, 34, res.Answerable)
	for _, c := range res.Configs {
		t.Logf("%-10s r@1 %.3f r@5 %.3f r@10 %.3f mrr %.3f ndcg %.3f", c.Name, c.Metrics.Recall1.Value, c.Metrics.Recall5.Value, c.Metrics.Recall10.Value, c.Metrics.MRR10.Value, c.Metrics.NDCG10.Value)
	}
	for _, c := range res.Comparisons {
		t.Logf("%s-%s %s %.3f %v p=%.4f", c.B, c.A, c.Metric, c.Difference, c.CI95, c.PValue)
	}
}

// BenchmarkRetrievalPython is `ragagent retrieval --corpus python-3.11`:
// the pack's 39 cases under every built-in, ranked, scored and resampled
// (make bench-retrieval runs it natively and compiled to WebAssembly
// under node, side by side). cold is the first experiment on a freshly
// opened pack (the configurations' postings and the passages' heads built
// then); warm is one more on the same engine; each built-in alone, warm,
// shows where the time goes.
func BenchmarkRetrievalPython(b *testing.B) {
	ctx := context.Background()
	req := engine.RetrievalRequest{Corpus: "python-3.11"}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			e := packEngine(b)
			_, err := e.PackInfo("python-3.11")
			require.NoError(b, err)
			b.StartTimer()
			_, err = e.Retrieval(ctx, req)
			require.NoError(b, err)
		}
	})
	e := packEngine(b)
	_, err := e.Retrieval(ctx, req)
	require.NoError(b, err)
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Retrieval(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, s := range engine.RetrievalConfigs() {
		b.Run("warm-"+s.Name, func(b *testing.B) {
			one := engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: s.Name}}}
			for b.Loop() {
				if _, err := e.Retrieval(ctx, one); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A question's search under a configuration (the Experiments view's side
// by side, ParseSearchSpec's config: a name or a spec) ranks as the
// experiment did: the first hit matching a target is at the case's rank,
// under every built-in and a spec given whole; a config of the wrong type
// is invalid_config. On the Python pack, where the configurations rank
// differently.
func TestSearchUnderAConfigurationRanksAsTheExperiment(t *testing.T) {
	e := packEngine(t)
	res, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: "python-3.11"})
	require.NoError(t, err)
	cases, err := e.PackCases("python-3.11")
	require.NoError(t, err)
	byID := map[string]evaluate.Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	fields, err := engine.ParseConfig("fields")
	require.NoError(t, err)
	spec, err := json.Marshal(fields)
	require.NoError(t, err)
	asks := map[string]string{}
	for _, c := range res.Configs {
		name, _ := json.Marshal(c.Name)
		asks[c.Name] = string(name)
	}
	asks["fields as a spec"] = string(spec)
	for label, config := range asks {
		want := res.Configs[0]
		for _, c := range res.Configs {
			if c.Name == label || (label == "fields as a spec" && c.Name == "fields") {
				want = c
			}
		}
		for _, rc := range want.Cases {
			c := byID[rc.ID]
			q, _ := json.Marshal(c.Question)
			req, err := engine.ParseSearchSpec(`{"corpus": "python-3.11", "query": ` + string(q) + `, "version": "` + c.Version + `", "k": 10, "config": ` + config + `}`)
			require.NoError(t, err)
			found, err := e.Search(req)
			require.NoError(t, err, label)
			var first *int
			for _, h := range found.Hits {
				if c.Matches(corpus.Passage{SourceID: h.SourceID, URL: h.URL}) {
					first = &h.Rank
					break
				}
			}
			assert.Equal(t, rc.Rank, first, "%s under %s", rc.ID, label)
		}
	}
	_, err = engine.ParseSearchSpec(`{"query": "x", "config": 3}`)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidConfig, code)
}

// TestARetrievalResumesWithoutRepeatingACase: an experiment that gives
// each ranking to OnRanked and one that resumes from any part of them
// (Done) rank every case exactly once between them and give the bytes of
// the experiment run whole.
func TestARetrievalResumesWithoutRepeatingACase(t *testing.T) {
	e := packEngine(t)
	req := engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}}
	whole, err := e.Retrieval(context.Background(), req)
	require.NoError(t, err)
	want, err := whole.JSON()
	require.NoError(t, err)
	total := whole.Answerable * 2
	for _, keep := range []int{0, 1, total / 2, total - 1, total} {
		t.Run(fmt.Sprint(keep, " of ", total, " done"), func(t *testing.T) {
			// The first run stops after keep rankings, as a crash would.
			kept := map[engine.RankedCase]experiment.Ranking{}
			first := req
			stop := errors.New("crash")
			first.OnRanked = func(c, a int, r experiment.Ranking) error {
				if len(kept) == keep {
					return stop
				}
				kept[engine.RankedCase{C: c, A: a}] = r
				return nil
			}
			_, err := e.Retrieval(context.Background(), first)
			if keep < total {
				require.ErrorIs(t, err, stop)
			}
			require.Len(t, kept, keep)
			resumed := req
			resumed.Done = kept
			made := map[engine.RankedCase]int{}
			var progress []int
			resumed.OnRanked = func(c, a int, r experiment.Ranking) error {
				made[engine.RankedCase{C: c, A: a}]++
				return nil
			}
			resumed.OnCase = func(done, total int, _ string) { progress = append(progress, done) }
			res, err := e.Retrieval(context.Background(), resumed)
			require.NoError(t, err)
			assert.Len(t, made, total-keep, "only the rest is ranked")
			for rc, n := range made {
				assert.Equal(t, 1, n, "%v once", rc)
				_, before := kept[rc]
				assert.False(t, before, "%v was ranked before", rc)
			}
			require.Len(t, progress, total)
			assert.Equal(t, total, progress[len(progress)-1])
			got, err := res.JSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
}

// ParseQuestionSet reads a set exactly as an experiment (and the command
// line's --cases) does: besides the file's own rules, each version must be
// one of the pack's and each target some passage's, so the page refuses a
// set it keeps or imports with the same invalid_cases line the command
// line prints, not later when the experiment runs.
func TestParseQuestionSetChecksTheSetAgainstThePack(t *testing.T) {
	e := packEngine(t)
	for _, c := range []struct {
		name, cases, want string
	}{
		{"malformed", "a\tq?\n", "line 1"},
		{"target elsewhere", "a\tq?\thttps://x.org/a.html#b\n", `case 1 ("a"): target_urls: no passage has the URL https://x.org/a.html#b`},
		{"page elsewhere", "a\tq?\t-\nb\tq?\thttps://x.org/b.html\n", `case 2 ("b"): target_urls: no passage is on the page https://x.org/b.html`},
		{"version elsewhere", `{"format": "ragagent-cases/1", "cases": [{"id": "v", "question": "q?", "version": "2.7", "split": "held-out", "target_urls": []}]}`, `case 1 ("v"): version: 2.7 is not one of the corpus's versions`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.ParseQuestionSet(engine.SeedPack, c.cases)
			require.Error(t, err)
			code, _ := reason.Of(err)
			assert.Equal(t, reason.InvalidCases, code, "%v", err)
			assert.Contains(t, err.Error(), c.want)
			_, again := e.Retrieval(context.Background(), engine.RetrievalRequest{Cases: c.cases})
			require.Error(t, again)
			assert.Equal(t, again.Error(), err.Error(), "the experiment's refusal, word for word")
		})
	}
	got, err := e.ParseQuestionSet(engine.SeedPack, "a\tq?\t-\n")
	require.NoError(t, err, "a set of unanswerable questions is read (an experiment then has nothing to rank)")
	require.Len(t, got, 1)
	assert.Equal(t, "3.12", got[0].Version, "the pack's default version")
}

// TestAPlanIsCheckedAsTheExperimentWouldBe: PlanRetrieval names the
// configurations and counts the cases the experiment ranks (its Total is
// the number of OnRanked calls), and refuses what Retrieval refuses with
// the same reason code, ranking nothing.
func TestAPlanIsCheckedAsTheExperimentWouldBe(t *testing.T) {
	e := packEngine(t)
	req := engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}, K: 5}
	p, err := e.PlanRetrieval(req)
	require.NoError(t, err)
	ranked := 0
	req.OnRanked = func(int, int, experiment.Ranking) error { ranked++; return nil }
	res, err := e.Retrieval(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"seed", "general"}, p.Configs)
	assert.Equal(t, engine.RetrievalPlan{Corpus: "python-3.11", Configs: p.Configs, Cases: res.Cases, Answerable: res.Answerable, K: 5}, p)
	assert.Equal(t, ranked, p.Total())
	all, err := e.PlanRetrieval(engine.RetrievalRequest{})
	require.NoError(t, err)
	assert.Len(t, all.Configs, len(engine.RetrievalConfigs()))
	for name, tc := range map[string]struct {
		req  engine.RetrievalRequest
		code reason.Code
	}{
		"unknown config": {engine.RetrievalRequest{Configs: []engine.ConfigRef{{Name: "nope"}}}, reason.UnknownConfig},
		"bad spec":       {engine.RetrievalRequest{Configs: []engine.ConfigRef{{Spec: []byte(`{"name": 3}`)}}}, reason.InvalidConfig},
		"bad cases":      {engine.RetrievalRequest{Cases: `{"format": "ragagent-cases/1", "cases": [{"id": "a"}]}`}, reason.InvalidCases},
		"k":              {engine.RetrievalRequest{K: engine.MaxRetrievalK + 1}, engine.InvalidField},
	} {
		_, err := e.PlanRetrieval(tc.req)
		code, _ := reason.Of(err)
		assert.Equal(t, tc.code, code, "%s: %v", name, err)
	}
	_, err = e.PlanRetrieval(engine.RetrievalRequest{Corpus: "nope"})
	assert.Error(t, err)
}

// TestAQuestionSetObjectRanksAsItsText: a TSV set becomes the
// ragagent-cases/1 object a server takes, which ranks as the TSV does; a
// JSON set is sent as written; a refused set is refused with its
// invalid_cases line before anything is sent.
func TestAQuestionSetObjectRanksAsItsText(t *testing.T) {
	e := packEngine(t)
	tsv := "id\tquestion\ttarget_urls\n" +
		"q1\thow do I read a file line by line?\thttps://docs.python.org/3.11/tutorial/inputoutput.html\n" +
		"q2\twhat is the weather tomorrow?\t-\n"
	obj, err := engine.QuestionSetObject(tsv)
	require.NoError(t, err)
	assert.True(t, json.Valid(obj))
	rank := func(cases string) []byte {
		res, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: "python-3.11", Cases: cases, Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}})
		require.NoError(t, err)
		data, err := res.JSON()
		require.NoError(t, err)
		return data
	}
	assert.Equal(t, string(rank(tsv)), string(rank(string(obj))))
	js := `  {"format": "ragagent-cases/1", "cases": [{"id": "a", "split": "development", "question": "how do I sort a list?", "target_urls": ["https://docs.python.org/3.11/howto/sorting.html"]}]}`
	obj, err = engine.QuestionSetObject(js)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(js), string(obj))
	_, err = engine.QuestionSetObject("id\tquestion\n")
	code, _ := reason.Of(err)
	assert.Equal(t, reason.InvalidCases, code)
}

// TestARunsSearchDoesNotWaitForAnExperiment: an experiment reaches the
// pack's index one search at a time, so a run's search on the same pack
// made while the experiment ranks (here from its progress callback, in
// the middle of the first configuration) is answered at once rather than
// after the experiment's last case; the experiment's result is the one
// it makes alone.
func TestARunsSearchDoesNotWaitForAnExperiment(t *testing.T) {
	e := packEngine(t)
	alone, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}})
	require.NoError(t, err)
	answered := 0
	req := engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}}
	req.OnCase = func(done, total int, config string) {
		if done != 2 {
			return
		}
		found := make(chan error, 1)
		go func() {
			_, err := e.Search(engine.SearchRequest{Corpus: "python-3.11", Query: "read a file line by line"})
			found <- err
		}()
		select {
		case err := <-found:
			assert.NoError(t, err)
			answered = done
		case <-time.After(10 * time.Second):
			t.Errorf("the search waited for the experiment (ranked %d of %d)", done, total)
		}
	}
	res, err := e.Retrieval(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 2, answered, "the search was answered while the experiment ranked")
	want, err := json.Marshal(alone)
	require.NoError(t, err)
	got, err := json.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the same result as alone")

	// Searches under both configurations all through another experiment
	// (go test -race checks the index is reached by one at a time).
	stop, searched := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { searched <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, config := range []string{"seed", "general"} {
				_, err := e.Search(engine.SearchRequest{Corpus: "python-3.11", Query: fmt.Sprintf("read file line %d", n), Config: config}) // not memoised
				assert.NoError(t, err)
				n++
			}
		}
	}()
	res, err = e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: "python-3.11", Configs: []engine.ConfigRef{{Name: "seed"}, {Name: "general"}}})
	close(stop)
	n := <-searched
	require.NoError(t, err)
	got, err = json.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the same result beside %d searches", n)
}
