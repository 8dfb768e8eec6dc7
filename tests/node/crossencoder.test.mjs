// The cross-encoder's scoring path under node, with the tests' tiny model
// (tests/fixtures/tiny-cross-encoder) served from loopback as the hub
// serves files: the page's own scorer (site/rerank/crossencoder-scorer.mjs) with
// transformers.js gives PyTorch's token ids exactly and its logits within
// 1e-4; the engine (main.wasm) accepts the payload through the acceptance
// contract and writes a recording that `ragagent rerank --cross-encoder`
// replays; malformed scores are refused; a changed model file is refused
// with a clear message and nothing is loaded or scored; `node
// scripts/crossencode.mjs` does it all from the command line.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEngine, releaseTimers, root } from "./engine.mjs";
import { startModelHost, TINY } from "../../scripts/modelhost.mjs";
import { fetchModel, loadScorer, scoreCall, runScoring, fileURL, PAYLOAD_FORMAT } from "../../site/rerank/crossencoder-scorer.mjs";

const EXPECTED = JSON.parse(readFileSync(path.join(TINY, "expected.json"), "utf8"));
const TOLERANCE = 1e-4;

let api, host, plan, tmp, ragagent, T;

async function transformers() {
  T ??= await import("@huggingface/transformers");
  T.env.logLevel = 40;
  return T;
}

before(async () => {
  ({ api } = await startEngine());
  host = await startModelHost();
  plan = await api.crossEncoderPlan(readFileSync(path.join(TINY, "ragagent-model.json"), "utf8"));
  tmp = mkdtempSync(path.join(tmpdir(), "ragagent-xenc-"));
  ragagent = path.join(tmp, "ragagent");
  execFileSync("go", ["build", "-o", ragagent, "./cmd/ragagent"], { cwd: root, stdio: "inherit" });
});

after(async () => {
  await host?.stop();
  rmSync(tmp, { recursive: true, force: true });
  await releaseTimers();
});

/** memoryStore is the browser cache's stand-in: verified bytes by URL. */
function memoryStore() {
  const m = new Map();
  return {
    m,
    get: async (url) => m.get(url) ?? null,
    put: async (url, bytes, sha256) => { m.set(url, { bytes, sha256 }); },
    delete: async (url) => { m.delete(url); },
  };
}

/** run scores the plan through the page's path against host; counts tells whether transformers.js was touched. */
async function score({ at = host, weights = "fp32", store, p = plan } = {}) {
  const counts = { loaded: 0 };
  const payload = await runScoring({
    T: async () => { counts.loaded++; return transformers(); },
    host: at.url, plan: p, weights, fetchFn: fetch, store, device: "cpu", threads: 1,
    environment: { platform: `node ${process.version}` },
  });
  return { payload, counts };
}

test("the plan names the tiny model and the lab's 16 calls before anything is fetched", () => {
  assert.equal(plan.model.model, "ragagent-test/tiny-cross-encoder");
  assert.equal(plan.model.license, "CC0-1.0");
  assert.deepEqual(plan.model.weights.map((w) => w.id), ["fp32", "int8"]);
  assert.equal(plan.calls.length, 16);
  assert.equal(plan.pairs, 44);
  assert.deepEqual(plan.calls.map((c) => c.id), EXPECTED.calls.map((c) => c.id));
  assert.deepEqual(host.requests, [], "planning fetches nothing");
});

test("transformers.js gives PyTorch's token ids and logits (within 1e-4) for every call and the tokenizer's corners", async () => {
  const fetched = await fetchModel({ host: host.url, model: plan.model, weights: "fp32", fetchFn: fetch });
  const scorer = await loadScorer(await transformers(), { model: plan.model, weights: "fp32", fetched, device: "cpu", threads: 1 });
  let worst = 0;
  for (const [i, call] of plan.calls.entries()) {
    const want = EXPECTED.calls[i];
    const got = await scoreCall(scorer, call.request, plan.context_tokens);
    assert.deepEqual(got.inputIds, want.input_ids, `${call.id}: token ids`);
    got.scores.forEach((x, j) => {
      worst = Math.max(worst, Math.abs(x - want.logits[j]));
      assert.ok(Math.abs(x - want.logits[j]) <= TOLERANCE, `${call.id} pair ${j + 1}: ${x} vs PyTorch ${want.logits[j]}`);
    });
  }
  for (const pair of EXPECTED.pairs) {
    const got = await scoreCall(scorer, { question: pair.question, candidates: [{ chunk_id: "x", text: pair.passage }] }, plan.context_tokens);
    assert.deepEqual(got.inputIds[0], pair.input_ids, `token ids of ${JSON.stringify(pair.question)}`);
    assert.ok(Math.abs(got.scores[0] - pair.logit) <= TOLERANCE, `${pair.question}: ${got.scores[0]} vs ${pair.logit}`);
  }
  console.log(`# largest |logit - PyTorch's| over the lab's 44 pairs: ${worst.toExponential(2)}`);
});

test("a pair longer than the model's context is refused, not truncated", async () => {
  const fetched = await fetchModel({ host: host.url, model: plan.model, weights: "fp32", fetchFn: fetch });
  const scorer = await loadScorer(await transformers(), { model: plan.model, weights: "fp32", fetched, device: "cpu", threads: 1 });
  const long = Array(600).fill("file").join(" ");
  await assert.rejects(scoreCall(scorer, { question: "q", candidates: [{ chunk_id: "a", text: "short" }, { chunk_id: "b", text: long }] }, plan.context_tokens),
    /pair_exceeds_model_context: .* has 604 tokens; the model reads at most 512/);
});

test("the engine accepts the scores, sorts them as the recorded path does, and the recording replays through ragagent rerank", async () => {
  const { payload } = await score();
  assert.equal(payload.format, PAYLOAD_FORMAT);
  assert.equal(payload.environment.runtime, "transformers.js");
  assert.match(payload.environment.onnxruntime, /^onnxruntime-node /);
  assert.equal(payload.timings.pairs, 44);
  assert.deepEqual(Object.keys(payload.model.files), ["config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"]);
  const run = await api.acceptCrossEncoder(payload);
  assert.equal(run.cross_encoder.execution_mode, "fresh-local-cross-encoder-inference");
  const first = run.cross_encoder.original_candidate_comparison[0];
  assert.deepEqual(first.scores_in_candidate_order, payload.calls[0].scores);
  const sorted = [...first.cross_encoder].map((r) => r.cross_encoder_logit);
  assert.deepEqual(sorted, [...payload.calls[0].scores].sort((a, b) => b - a), "descending logits");
  assert.equal(run.comparison.pairs, 44);
  assert.ok(run.comparison.max_abs_diff > 1, "a random model is far from the published logits, and the comparison says so");

  const file = path.join(tmp, "fresh.json");
  writeFileSync(file, run.recording.text);
  const rec = JSON.parse(run.recording.text);
  assert.equal(rec.format, "ragagent-recording/1");
  assert.deepEqual(Object.keys(rec.config), ["model", "environment", "timings", "verification", "source"]);
  assert.deepEqual(Object.keys(rec.config.model), ["model", "revision", "license", "files"], "the bundled recording's model shape");
  const out = execFileSync(ragagent, ["rerank", "--cross-encoder", file, "--json"], { encoding: "utf8" });
  const replayed = JSON.parse(out).cross_encoder;
  assert.equal(replayed.execution_mode, "recorded-local-cross-encoder-inference");
  assert.deepEqual(replayed.model, rec.config.model);
  replayed.expanded_cases.forEach((c, i) => assert.deepEqual(c.scores_in_candidate_order, payload.calls[4 + i].scores, c.case_id));
  assert.deepEqual(replayed.summary, run.cross_encoder.summary);
  const text = execFileSync(ragagent, ["rerank", "--cross-encoder", file], { encoding: "utf8" });
  assert.match(text, /Cross-encoder logits \(ragagent-test\/tiny-cross-encoder at fixture-1, recorded-local-cross-encoder-inference/);
});

test("malformed scores are refused by the acceptance contract", async () => {
  const { payload } = await score();
  for (const [what, edit, want] of [
    ["NaN", (p) => { p.calls[0].scores[1] = NaN; }, /original case utf8-write: invalid_cross_encoder_scores: score 2 is null, not a finite number/],
    ["Infinity", (p) => { p.calls[5].scores[0] = Infinity; }, /expanded case heldout-existing: invalid_cross_encoder_scores: score 1 is null/],
    ["one score too few", (p) => { p.calls[2].scores.pop(); }, /original case json-result-type: invalid_cross_encoder_scores: 2 scores for 3 candidates/],
    ["one too many", (p) => { p.calls[12].scores.push(0); }, /invalid_cross_encoder_scores: 2 scores for 1 candidates/],
  ]) {
    const bad = structuredClone(payload);
    edit(bad);
    await assert.rejects(api.acceptCrossEncoder(bad), (err) => {
      assert.equal(err.name, "RunRefused", what);
      assert.equal(err.code, "invalid_cross_encoder_scores", what);
      assert.match(err.message, want, what);
      return true;
    });
  }
  const missing = structuredClone(payload);
  missing.calls.pop();
  await assert.rejects(api.acceptCrossEncoder(missing), /cross-encoder scores: 15 calls answered, the run makes 16/);
});

test("a changed model file is refused with a clear message, and nothing is loaded or scored", async () => {
  for (const file of ["onnx/model.onnx", "tokenizer.json"]) {
    const bad = await startModelHost({ tamper: new Set([file]) });
    try {
      const pin = plan.model.files.concat(plan.model.weights).find((f) => f.path === file).sha256;
      let counts;
      await assert.rejects(async () => {
        counts = { loaded: 0 };
        await runScoring({
          T: async () => { counts.loaded++; return transformers(); },
          host: bad.url, plan, weights: "fp32", fetchFn: fetch, device: "cpu", threads: 1,
        });
      }, (err) => {
        assert.equal(err.name, "ModelFileError");
        assert.equal(err.kind, "hash");
        assert.equal(err.path, file);
        assert.match(err.message, new RegExp(`^${file.replace(".", "\\.")} was refused: its sha256 is [0-9a-f]{64}, the manifest pins ${pin}\\. Nothing was loaded or scored\\.$`));
        return true;
      });
      assert.equal(counts.loaded, 0, "transformers.js was never loaded");
    } finally {
      await bad.stop();
    }
  }
});

test("a file without a pin keeps the sha256 it arrived with, and the cache is read back and checked", async () => {
  const unpinned = structuredClone(plan);
  unpinned.model.weights[0].sha256 = null;
  const store = memoryStore();
  const { payload } = await score({ p: unpinned, store });
  assert.equal(payload.verification["onnx/model.onnx"], "no pin: sha256 recorded as downloaded");
  assert.equal(payload.verification["config.json"], "sha256 equals the pin");
  assert.equal(payload.model.files["onnx/model.onnx"], plan.model.weights[0].sha256);
  assert.equal(store.m.size, 4);

  const before = host.requests.length;
  const again = await score({ p: unpinned, store });
  assert.equal(host.requests.length, before, "the second scoring reads the cache, not the host");
  assert.equal(again.payload.timings.cached_files, 4);
  assert.equal(again.payload.timings.download_bytes, 0);
  assert.deepEqual(again.payload.calls.map((c) => c.scores), payload.calls.map((c) => c.scores));

  // A cached file that changed is fetched again, not used.
  const url = fileURL(host.url, plan.model, "tokenizer.json");
  const entry = store.m.get(url);
  store.m.set(url, { ...entry, bytes: entry.bytes.slice(1) });
  const third = await score({ p: unpinned, store });
  assert.equal(third.payload.timings.cached_files, 3);
  assert.equal(host.requests.length, before + 1);
});

test("the 8-bit weights score too, and their logits differ from full precision's", async () => {
  const fp32 = (await score()).payload.calls.flatMap((c) => c.scores);
  const int8 = (await score({ weights: "int8" })).payload;
  assert.equal(int8.environment.weights, "onnx/model_int8.onnx");
  const diffs = int8.calls.flatMap((c) => c.scores).map((x, i) => Math.abs(x - fp32[i]));
  assert.ok(Math.max(...diffs) > TOLERANCE, `quantized weights change the logits (max ${Math.max(...diffs)})`);
  assert.ok(Math.max(...diffs) < 1, "but not beyond recognition");
});

/** node runs a command without blocking this process, which serves the model host. */
function run(cmd, args) {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: root, encoding: "utf8" }, (err, stdout, stderr) => resolve({ status: err ? err.code : 0, stdout, stderr }));
  });
}

test("node scripts/crossencode.mjs writes a recording ragagent rerank replays, and never overwrites one", async () => {
  const out = path.join(tmp, "cli.json");
  const first = await run("node", ["scripts/crossencode.mjs", "--host", host.url, "--output", out, "--threads", "1"]);
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stdout, /^Wrote .*cli\.json: 16 calls \(replay it: ragagent rerank --cross-encoder /);
  assert.match(first.stdout, /Against the published logits: max \|difference\| [\d.]+, mean [\d.]+ over 44 pairs/);
  assert.match(first.stderr, /onnx\/model\.onnx sha256 [0-9a-f]{64} \(sha256 equals the pin\)/);
  const replay = await run(ragagent, ["rerank", "--cross-encoder", out]);
  assert.equal(replay.status, 0, replay.stderr);
  const again = await run("node", ["scripts/crossencode.mjs", "--host", host.url, "--output", out]);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /exists; choose a new output path/);
  const remote = await run("node", ["scripts/crossencode.mjs", "--host", "https://example.com", "--output", path.join(tmp, "x.json")]);
  assert.equal(remote.status, 1);
  assert.match(remote.stderr, /only the hub \(https:\/\/huggingface\.co\) or a loopback test host/);
});
