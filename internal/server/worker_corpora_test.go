package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/server"
)

// The Worker's caps on uploads in TestWorkerUploadedCorpora (its
// .dev.vars): the default cap on a pack's passages, a smaller one on an
// upload's body, and a quota of two packs in 7 MB a token.
const (
	workerPackCap   = 20 << 20
	workerUploadCap = 8 << 20
	workerQuotaB    = 7 << 20
)

// pythonAs is the shipped python-3.11 pack (17.6 MB of passages, 5.7 MB
// gzip'd) as a pack of someone's own under another id: its manifest with
// that id and its gzip'd passages file, and the tar of both as uploaded.
func pythonAs(t testing.TB, id string) (manifest, passages, upload []byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "fixtures", "packs", "python-3.11")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var mm map[string]any
	require.NoError(t, json.Unmarshal(raw, &mm))
	mm["id"] = id
	manifest, err = json.Marshal(mm)
	require.NoError(t, err)
	gzipped, err := os.ReadFile(filepath.Join(dir, "passages.sqlite.gz"))
	require.NoError(t, err)
	m, err := corpus.ParseManifest(manifest)
	require.NoError(t, err)
	passages, err = m.Gunzip(gzipped)
	require.NoError(t, err)
	require.Greater(t, len(passages), 12<<20, "larger than the bundle leaves room for")
	return manifest, passages, tarball(t, entry{name: "manifest.json", data: manifest}, entry{name: "passages.sqlite.gz", data: gzipped})
}

// resultOf is a finished run's result fields that must equal natively.
func resultOf(t testing.TB, run map[string]any) map[string]any {
	t.Helper()
	report, ok := run["report"].(map[string]any)
	require.True(t, ok, "the run has a report: %v", run)
	result, ok := report["result"].(map[string]any)
	require.True(t, ok, "the run has a result: %v", run)
	out := map[string]any{}
	for _, k := range []string{"steps", "observations", "answer", "citations", "status", "reason"} {
		out[k] = result[k]
	}
	return out
}

// TestWorkerUploadedCorpora holds uploaded corpora on the Worker, kept in
// its R2 bucket (the local one under wrangler dev), against a native
// server given the same uploads: an upload is listed, described and run
// on by its token as natively (the same corpus, the same result), and
// by no other token (not found, as a pack that does not exist); hostile
// uploads are refused with the native codes; ids are taken once and the
// quota bounds count and bytes; a pack larger than the bundle leaves room
// for (the Python pack under another id, 17.6 MB) runs as natively; a
// deletion frees its id; and what was kept is kept across a kill -9, run
// on by a fresh run object that reads it from R2: an experiment on the
// large pack killed midway resumes there, another is planned there, and
// both end as the native server's on the same uploads (the Python
// results, past the 4 KB the test sets, kept in R2 rather than D1).
func TestWorkerUploadedCorpora(t *testing.T) {
	tokens := []workerToken{{"alice", []string{"read", "run", "corpora"}}, {"bob", []string{"read", "run", "corpora"}}, {"reader", []string{"read", "run"}}}
	w := startWorkerVia(t, viaWrangler, workerCaps, tokens, "log",
		`RAGAGENT_MAX_UPLOAD="8388608"`, `RAGAGENT_CORPUS_PACKS="2"`, `RAGAGENT_CORPUS_BYTES="7340032"`,
		fmt.Sprintf(`RAGAGENT_EXPERIMENT_PIECE="%d"`, workerPiece), `RAGAGENT_EXPERIMENT_PAUSE_MS="250"`,
		`RAGAGENT_EXPERIMENT_INLINE_BYTES="4096"`) // the Python results (9 KB, 123 KB) kept in R2, the kitchen one (under 4 KB) in D1
	alice, bob, reader := w.toks["alice"], w.toks["bob"], w.toks["reader"]
	native := newEnv(t, options{corpora: t.TempDir(), packs: true, maxPackBytes: workerPackCap, maxUpload: workerUploadCap,
		quota: server.Quota{Packs: 2, Bytes: workerQuotaB}})
	nalice := native.token("alice", []string{"read", "run", "corpora"}, 1000, 1)
	builtIn := map[string]string{"seed": "built_in", "python-3.11": "built_in"}
	with := func(more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range builtIn {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}

	t.Run("upload, list, describe", func(t *testing.T) {
		e := w.env(t)
		kitchen := packTarball(t, "kitchen")
		r := e.upload(alice, kitchen)
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		assert.Equal(t, "/v1/corpora/kitchen", r.header.Get("Location"))
		n := native.upload(nalice, kitchen)
		require.Equal(t, http.StatusCreated, n.status, string(n.body))
		assert.Equal(t, n.json(t), r.json(t), "the corpus the native server answers")
		assert.Equal(t, with(map[string]string{"kitchen": "uploaded"}), e.corpusIDs(alice))
		assert.Equal(t, builtIn, e.corpusIDs(bob), "another token's upload is not listed")
		described := e.do(req{method: "GET", path: "/v1/corpora/kitchen", token: alice, valid: true})
		require.Equal(t, http.StatusOK, described.status, string(described.body))
		assert.Equal(t, r.json(t), described.json(t))
	})

	t.Run("a run on it is the native one", func(t *testing.T) {
		e := w.env(t)
		body := `{"question": "How do I descale the kettle?", "corpus": "kitchen"}`
		run := e.await(alice, e.start(alice, body))
		assert.Equal(t, "answered", run["status"], "%v", run)
		assert.Equal(t, "kitchen", run["request"].(map[string]any)["corpus"])
		want := native.await(nalice, native.start(nalice, body))
		assert.Equal(t, resultOf(t, want), resultOf(t, run))
	})

	t.Run("another token's pack is not found", func(t *testing.T) {
		e := w.env(t)
		for _, method := range []string{"GET", "DELETE"} {
			r := e.do(req{method: method, path: "/v1/corpora/kitchen", token: bob, valid: true})
			assert.Equal(t, http.StatusNotFound, r.status, string(r.body))
			assert.Equal(t, "not_found", r.code(t))
			none := e.do(req{method: method, path: "/v1/corpora/no-such-pack", token: bob, valid: true})
			assert.Equal(t, string(none.body), strings.ReplaceAll(string(r.body), "kitchen", "no-such-pack"), "the same refusal as for no pack at all")
		}
		r := e.do(req{method: "POST", path: "/v1/runs", token: bob, body: `{"question": "How do I descale the kettle?", "corpus": "kitchen"}`, valid: true})
		assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
		assert.Equal(t, "unknown_corpus", r.code(t), "another token's runs cannot name it")
	})

	t.Run("hostile uploads are refused", func(t *testing.T) {
		e := w.env(t)
		for _, tc := range hostileUploads(t, workerPackCap, workerUploadCap) {
			t.Run(tc.name, func(t *testing.T) { e.refused(t, bob, tc) })
		}
		assert.Equal(t, builtIn, e.corpusIDs(bob), "nothing is kept")
	})

	t.Run("ids and scopes", func(t *testing.T) {
		e := w.env(t)
		for _, tc := range []struct {
			name   string
			r      req
			status int
			code   string
		}{
			{"the token's own id again", req{body: string(packTarball(t, "kitchen")), token: alice}, 409, "corpus_exists"},
			{"another token's id", req{body: string(packTarball(t, "kitchen")), token: bob}, 409, "corpus_exists"},
			{"a built-in's id", req{body: string(packTarball(t, "python-3.11")), token: alice}, 409, "corpus_exists"},
			{"no corpora scope", req{body: string(packTarball(t, "cellar")), token: reader}, 403, "missing_scope"},
			{"deleting a built-in", req{method: "DELETE", path: "/v1/corpora/python-3.11", token: alice}, 409, "built_in_corpus"},
		} {
			if tc.r.method == "" {
				tc.r.method, tc.r.path, tc.r.header = "POST", "/v1/corpora", map[string]string{"Content-Type": "application/gzip"}
			}
			r := e.do(tc.r)
			assert.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
			assert.Equal(t, tc.code, r.code(t), tc.name)
		}
		assert.Equal(t, with(map[string]string{"kitchen": "uploaded"}), e.corpusIDs(alice))
	})

	question := "How do I read a file line by line?"
	var large map[string]any // the result of the run on the large pack
	t.Run("a pack larger than the bundle leaves room for", func(t *testing.T) {
		e := w.env(t)
		manifest, passages, upload := pythonAs(t, "python-docs")
		began := time.Now()
		r := e.upload(alice, upload)
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		t.Logf("uploaded %d bytes (%d of passages) in %.1f s", len(upload), len(passages), time.Since(began).Seconds())
		began = time.Now()
		run := e.await(alice, e.start(alice, `{"question": "`+question+`", "mode": "fixed", "corpus": "python-docs"}`))
		t.Logf("the first run on it (its run object reading it from R2) took %.1f s", time.Since(began).Seconds())
		assert.Equal(t, "3.11", run["request"].(map[string]any)["version"], "the pack's default version")

		eng, err := engine.Open(engine.Options{})
		require.NoError(t, err)
		defer eng.Close()
		_, err = eng.LoadPack(manifest, passages)
		require.NoError(t, err)
		task, err := agent.TaskFromJSON(question, "3.11", "fixed", nil)
		require.NoError(t, err)
		tr, err := eng.Run(context.Background(), engine.RunRequest{Task: task, Policy: engine.Scripted, Corpus: "python-docs"})
		require.NoError(t, err)
		data, err := json.Marshal(map[string]any{"report": tr})
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(data, &want))
		large = resultOf(t, run)
		assert.Equal(t, resultOf(t, want), large, "the native engine's run on the same pack")
		// One run more, for the memory the object reports once the pack is
		// open (docs/worker.md's figures; the front's after verifying it).
		e.await(alice, e.start(alice, `{`+overwrite+`, "mode": "fixed"}`))
		for _, line := range strings.Split(w.log.String(), "\n") {
			if strings.Contains(line, "run object memory") {
				t.Log(strings.TrimSpace(line))
			}
		}
	})

	t.Run("the quota", func(t *testing.T) {
		e := w.env(t)
		r := e.upload(alice, packTarball(t, "pantry"))
		assert.Equal(t, http.StatusConflict, r.status, string(r.body))
		assert.Equal(t, "corpus_quota", r.code(t), "a third pack is over the count")
		require.Equal(t, http.StatusNoContent, e.do(req{method: "DELETE", path: "/v1/corpora/kitchen", token: alice, valid: true}).status)
		_, _, second := pythonAs(t, "python-two")
		r = e.upload(alice, second)
		assert.Equal(t, http.StatusConflict, r.status, string(r.body))
		assert.Equal(t, "corpus_quota", r.code(t), "a second large pack is over the bytes")
		assert.Equal(t, with(map[string]string{"python-docs": "uploaded"}), e.corpusIDs(alice))
	})

	t.Run("a deletion frees its id", func(t *testing.T) {
		e := w.env(t)
		r := e.do(req{method: "GET", path: "/v1/corpora/kitchen", token: alice, valid: true})
		assert.Equal(t, http.StatusNotFound, r.status, "deleted (the quota's step): %s", r.body)
		r = e.do(req{method: "POST", path: "/v1/runs", token: alice, body: `{"question": "How do I descale the kettle?", "corpus": "kitchen"}`, valid: true})
		assert.Equal(t, "unknown_corpus", r.code(t), "a run cannot name it")
		r = e.upload(bob, packTarball(t, "kitchen"))
		assert.Equal(t, http.StatusCreated, r.status, string(r.body))
		assert.Equal(t, with(map[string]string{"kitchen": "uploaded"}), e.corpusIDs(bob))
	})

	top := t
	t.Run("kept across a kill -9, an experiment on it too, as natively", func(t *testing.T) {
		e := w.env(t)
		_, _, upload := pythonAs(t, "python-docs")
		require.Equal(t, http.StatusCreated, native.upload(nalice, upload).status)
		onDocs := func(body string) string {
			return strings.Replace(body, `"corpus": "python-3.11"`, `"corpus": "python-docs"`, 1)
		}
		result := func(e *env, tok, id string) []byte {
			x := e.awaitExperiment(tok, id)
			require.Equal(t, "succeeded", x["state"], x["error"])
			r := e.do(req{method: "GET", path: "/v1/experiments/" + id + "/result", token: tok, valid: true})
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			return r.body
		}
		retrieval := onDocs(experimentBody(t, `["seed", "general"]`))
		id := idOf(t, e.postExperiment(alice, retrieval))
		var done float64
		waitFor(t, func() bool {
			done = e.experiment(alice, id)["progress"].(map[string]any)["done"].(float64)
			return done >= workerPiece
		}, "a piece kept")
		require.Less(t, done, 68.0, "the experiment is not over before the kill")

		w.kill9(top)
		w.launch(top) // the Worker's whole test's: launch stops what it starts when its test ends
		e = w.env(t)
		assert.Equal(t, with(map[string]string{"python-docs": "uploaded"}), e.corpusIDs(alice))
		assert.Equal(t, with(map[string]string{"kitchen": "uploaded"}), e.corpusIDs(bob))
		// The fresh run object has opened neither upload: it reads kitchen
		// from R2 to plan bob's experiment (Dispatch.Plan) and python-docs
		// to resume alice's from the rankings D1 kept.
		kid := idOf(t, e.postExperiment(bob, kitchenExperiment))
		assert.Equal(t, string(result(native, nalice, idOf(t, native.postExperiment(nalice, kitchenExperiment)))), string(result(e, bob, kid)),
			"the native server's bytes on the same pack")
		got := result(e, alice, id)
		t.Logf("killed at %v of 68 rankings kept; resumed", done)
		assert.Equal(t, string(result(native, nalice, idOf(t, native.postExperiment(nalice, retrieval)))), string(got), "the native server's bytes")
		assert.Equal(t, string(wantRetrieval(t, "seed", "general")),
			strings.Replace(string(got), `"corpus": "python-docs"`, `"corpus": "python-3.11"`, 1), "the command's bytes on the built-in pack")
		checkProgress(t, e.experimentEvents(alice, id, nil), 68)

		agentic := onDocs(agentBody(t, ""))
		began := time.Now()
		got = result(e, alice, idOf(t, e.postExperiment(alice, agentic)))
		t.Logf("an agent experiment (%d trials) on the upload: %.1f s", pythonTrials, time.Since(began).Seconds())
		assert.Equal(t, unmeasured(t, result(native, nalice, idOf(t, native.postExperiment(nalice, agentic)))), unmeasured(t, got), "the native server's object")
		r := e.postExperiment(bob, retrieval)
		assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
		assert.Equal(t, "unknown_corpus", r.code(t), "another token's experiments cannot name it")

		run := e.await(bob, e.start(bob, `{"question": "When do I water the tomatoes?", "corpus": "kitchen"}`))
		assert.Equal(t, "answered", run["status"], "%v", run)
		run = e.await(alice, e.start(alice, `{"question": "`+question+`", "mode": "fixed", "corpus": "python-docs"}`))
		assert.Equal(t, large, resultOf(t, run), "a fresh run object reads the large pack from R2")
		aside := regexp.MustCompile(`experiment result kept aside.* bytes=(\d+)`).FindAllStringSubmatch(w.log.String(), -1)
		assert.Len(t, aside, 2, "the two Python results were kept in R2, read back as the native server's")
		lines := regexp.MustCompile(`run object memory: \d+ bytes; front program \d+ bytes`).FindAllString(w.log.String(), -1)
		require.NotEmpty(t, lines, "a run's start logs the memory")
		t.Logf("after the experiments, at the last run's start: %s", lines[len(lines)-1])
	})
}
