// The reranking lab through the JS API: the three recorded runs replayed in
// node give every published figure, and a live Gemini listwise rerank runs
// through an injected fetch double with the spending ledger kept behind the
// page's load/update bridge (here an object in memory).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startEngine, releaseTimers, root } from "./engine.mjs";

const LISTWISE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.1-flash-lite:generateContent";
const PUBLISHED = path.join(root, "fixtures", "rerank", "published");
const published = (name) => JSON.parse(readFileSync(path.join(PUBLISHED, name), "utf8"));
const RECORDED = JSON.parse(readFileSync(path.join(root, "recordings", "rerank-gemini.json"), "utf8"));

const GEMINI_ORDERS = {
  "utf8-write": ["path-write", "path-read", "json-text"],
  "replace-file": ["path-write", "path-read", "json-text"],
  "json-result-type": ["json-text", "path-read", "path-write"],
  "backup-schedule": ["json-text", "path-read", "path-write"],
};

let api;
before(async () => { ({ api } = await startEngine()); });
after(releaseTimers);

const sources = (rows) => rows.map((r) => r.source_id);
const orders = (gemini) => Object.fromEntries(gemini.cases.map((c) => [c.case_id, c.gemini && sources(c.gemini)]));

/** memoryStore is the ledger's storage as the page's bridge offers it:
 * update(apply) is one change at a time (a promise chain stands for the
 * page's Web Lock) on the latest text, saved with save. */
function memoryStore(text = null) {
  let chain = Promise.resolve();
  const s = {
    text, saves: [],
    load: async () => s.text,
    save: async (t) => { s.text = t; s.saves.push(t); },
    update(apply) {
      const run = chain.then(async () => {
        const next = apply(await s.load());
        if (typeof next === "string") await s.save(next);
      });
      chain = run.catch(() => {});
      return run;
    },
  };
  return s;
}

/** recordedFetch answers each listwise request with the published proposal for it. */
function recordedFetch(log, store) {
  return async (endpoint, body, opts) => {
    const i = log.length;
    const ledger = store && JSON.parse(store.text);
    const sha = createHash("sha256").update(body).digest("hex");
    log.push({ endpoint, body, opts, reservedBefore: ledger && ledger.entries.find((e) => e.request_sha256 === sha) });
    return { status: 200, body: new TextEncoder().encode(JSON.stringify(RECORDED.trials[i].exchanges[0].response)) };
  };
}

test("the coverage run replays to the published record, every number", async () => {
  const rep = await api.rerank();
  assert.deepEqual(rep.coverage, published("rerank-coverage-result.json"));
  assert.equal(rep.sources.gemini, "bundled");
  const first = rep.coverage.development_cases[0];
  assert.equal(first.case_id, "utf8-write");
  assert.deepEqual(first.before[0].lexical_score, -0.8901430296001853, "bm25 from FTS5 in WASM, bit for bit");
  assert.deepEqual(first.before[0].fused_score, 0.03278688524590164);
  assert.deepEqual(sources(rep.coverage.mechanism_check.after), ["path-write", "json-text", "path-read"]);
  assert.equal(rep.coverage.unfiltered_read_write_diagnostic.before.length, 4);
  assert.deepEqual(rep.coverage.empty_candidates, []);
  assert.equal(rep.coverage.altered_candidate_refusal, "candidate_payload_mismatch");
});

test("the Gemini listwise replay gives the four published orders", async () => {
  const rep = await api.rerank();
  assert.deepEqual(orders(rep.gemini), GEMINI_ORDERS);
  assert.deepEqual(rep.gemini.cases, published("rerank-gemini-result.json").cases);
  assert.equal(rep.gemini_unused, 0, "every recorded exchange is used");
  assert.equal(rep.gemini.calls.length, 4);
  assert.equal(rep.gemini.calls[0].request_bytes, 1776);
  assert.equal(rep.gemini.calls[0].estimated_usd, 0.00198);
});

test("the cross-encoder replay and the twelve-case summary equal the published ones", async () => {
  const rep = await api.rerank();
  const want = published("rerank-cross-encoder-result.json");
  const { execution_mode: mode, ...got } = rep.cross_encoder;
  const { execution_mode: _, ...rest } = want;
  assert.equal(mode, "recorded-local-cross-encoder-inference");
  assert.deepEqual(got, rest);
  const s = rep.cross_encoder.summary;
  assert.deepEqual(s.diagnostic.coverage, { answerable: 3, top1_hits: 2, mrr: 0.7777777777777778 });
  assert.equal(s.diagnostic.coverage.mrr.toFixed(3), "0.778");
  assert.deepEqual(s.validation.coverage, { answerable: 6, top1_hits: 6, mrr: 1 });
  assert.deepEqual(s.diagnostic.cross_encoder, { answerable: 3, top1_hits: 3, mrr: 1 });
  assert.deepEqual(s.validation.cross_encoder, { answerable: 6, top1_hits: 6, mrr: 1 });
  const unsupported = rep.cross_encoder.expanded_cases.filter((c) => c.target_sources.length === 0);
  assert.deepEqual(unsupported.map((c) => c.case_id), ["heldout-unsupported", "validation-write-version", "validation-backup"]);
  for (const c of unsupported) {
    assert.deepEqual(c.outcome.coverage, { top1_hit: null, reason: "no_supported_target" }, "outside the denominator");
  }
  const count = (split) => rep.cross_encoder.expanded_cases.filter((c) => c.split === split).length;
  assert.equal(count("diagnostic"), 4, "four diagnostic cases, three answerable");
  assert.equal(count("validation"), 8, "eight validation cases, six answerable");
  assert.deepEqual(rep.cross_encoder.original_candidate_comparison.map((c) => sources(c.cross_encoder)), [
    ["path-write", "path-read", "json-text"], ["path-write", "path-read", "json-text"],
    ["json-text", "path-read", "path-write"], ["path-write", "path-read", "json-text"]]);
});

test("a changed or malformed listwise recording is a clear result or error", async () => {
  const changed = structuredClone(RECORDED);
  changed.trials[1].exchanges[0].request.contents[0].parts[0].text += " ";
  const rep = await api.rerank({ gemini: JSON.stringify(changed) });
  assert.equal(rep.sources.gemini, "loaded");
  // The replay goes in order: the changed request and every later one are
  // refused; the first case still replays.
  assert.deepEqual(rep.gemini.cases.map((c) => c.error ? c.error.code : "ok"),
    ["ok", "replay_request_mismatch", "replay_request_mismatch", "replay_request_mismatch"]);
  const refused = rep.gemini.cases[1];
  assert.match(refused.error.detail, /\$\.contents\[0\]\.parts\[0\]\.text/);
  assert.equal(refused.gemini, null);
  await assert.rejects(api.rerank({ gemini: "{not json" }), (err) => err.name === "RecordingError");
});

test("the plan shows the price table, each reservation and the ledger before anything is sent", async () => {
  const store = memoryStore();
  const plan = await api.rerankPlan({ hasKey: true }, store);
  assert.equal(plan.model, "gemini-3.1-flash-lite");
  assert.equal(plan.endpoint, LISTWISE);
  assert.deepEqual(plan.rate, { model: "gemini-3.1-flash-lite", input_usd_per_mtok: 0.25, output_usd_per_mtok: 1.5,
    source: "assumed list price (Gemini Flash-Lite tier); change it in the price fields" });
  assert.deepEqual(plan.prices.map((r) => r.model), ["gemini-3.1-flash-lite", "gemini-3.8-flash"]);
  assert.deepEqual(plan.calls.map((c) => c.estimated_usd), [0.00198, 0.0019785, 0.001976, 0.001979]);
  assert.equal(plan.max_output_tokens, 1024);
  assert.ok(Math.abs(plan.total_usd - 0.0079135) < 1e-15);
  assert.deepEqual(plan.ledger, { format: "ragagent-ledger/1", budget_usd: null, spent_usd: 0, remaining_usd: null, entries: [] });
  assert.match(plan.refusal.message, /set a budget first/);
  assert.equal(store.saves.length, 0, "a plan saves nothing");

  const priced = await api.rerankPlan({ hasKey: true, price: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } }, store);
  assert.equal(priced.calls[0].estimated_usd, (1776 * 1 + 1024 * 2) / 1e6);
  assert.equal(priced.rate.source, "given in the page");
  const unchanged = await api.rerankPlan({ hasKey: true, price: { input_usd_per_mtok: 0.25, output_usd_per_mtok: 1.5 } }, store);
  assert.deepEqual(unchanged.rate, plan.rate, "the shipped rate sent back unchanged keeps its source");
  await assert.rejects(api.rerankPlan({ price: { input_usd_per_mtok: -1, output_usd_per_mtok: 2 } }, store), /finite amount/);
  await assert.rejects(api.rerankPlan({ endpoint: "https://example.com/x" }, store), /refused/);
  await assert.rejects(api.rerankPlan({}, {}), /needs a store/);

  await api.setBudget(0.05, store);
  assert.equal((await api.rerankPlan({ hasKey: false }, store)).refusal.code, "missing_api_key");
  assert.equal((await api.rerankPlan({ hasKey: true }, store)).refusal, null);
});

test("a live rerank reserves and saves each estimate before sending, then gives the published orders", async () => {
  const store = memoryStore();
  let state = await api.setBudget(0.05, store);
  assert.equal(state.budget_usd, 0.05);
  const log = [];
  const progress = [];
  const { id, result } = api.rerankLive({ hasKey: true }, { post: recordedFetch(log, store), store, onCase: (d, t) => progress.push([d, t]) });
  assert.equal(typeof id, "number");
  const live = await result;
  assert.deepEqual(orders(live.gemini), GEMINI_ORDERS);
  assert.equal(live.gemini.execution_mode, "fresh-gemini-listwise-reranking");
  assert.deepEqual(progress, [[1, 4], [2, 4], [3, 4], [4, 4]]);
  assert.equal(log.length, 4);
  log.forEach((r, i) => {
    assert.equal(r.endpoint, LISTWISE);
    assert.deepEqual(JSON.parse(r.body), RECORDED.trials[i].exchanges[0].request, "the recorded request bytes");
    // The run's four reservations are saved together before the first is
    // sent (so a run another tab or process left no room for is refused
    // whole); this request's own was on record before it was sent.
    assert.equal(r.reservedBefore.seq, i + 1, "its reservation was saved before it was sent");
    assert.equal(r.reservedBefore.outcome, "reserved");
    assert.ok(r.opts.signal instanceof AbortSignal && r.opts.timeoutMs <= 45000);
  });

  // The ledger persisted through the bridge: a fresh read of the store.
  state = await api.ledger(store);
  assert.deepEqual(state.entries.map((e) => e.outcome), ["completed", "completed", "completed", "completed"]);
  assert.deepEqual(state.entries.map((e) => e.estimated_usd), live.gemini.calls.map((c) => c.estimated_usd));
  assert.ok(Math.abs(state.spent_usd - 0.0079135) < 1e-15);
  assert.ok(Math.abs(state.remaining_usd - (0.05 - state.spent_usd)) < 1e-15);
  assert.deepEqual(live.ledger, state);
  const saved = JSON.parse(store.text);
  assert.equal(saved.format, "ragagent-ledger/1");
  assert.equal(saved.entries.length, 4);

  // The run's recording replays to the same orders.
  const rec = await api.rerankRecording();
  assert.equal(rec.exchanges, 4);
  const again = await api.rerank({ gemini: rec.text });
  assert.deepEqual(orders(again.gemini), GEMINI_ORDERS);
  assert.equal(again.gemini_unused, 0);
});

test("cancel stops a live rerank waiting on the network; its reservation stays", async () => {
  const store = memoryStore();
  await api.setBudget(1, store);
  const seen = {};
  const post = (endpoint, body, opts) => new Promise((resolve, reject) => {
    seen.started = true;
    opts.signal.addEventListener("abort", () => { seen.aborted = true; reject({ kind: "URLError", message: "aborted" }); });
  });
  const { id, result } = api.rerankLive({ hasKey: true }, { post, store });
  while (!seen.started) await new Promise((r) => setTimeout(r, 5));
  assert.equal(api.cancel(id), true);
  await assert.rejects(result, /case utf8-write/);
  assert.equal(seen.aborted, true);
  const state = await api.ledger(store);
  assert.notEqual(state.entries[0].outcome, "reserved", "the sent request's reservation is kept, settled");
  assert.notEqual(state.entries[0].outcome, "released");
  assert.deepEqual(state.entries.slice(1).map((e) => e.outcome), ["released", "released", "released"],
    "the requests never sent are released and no longer count");
  assert.equal(state.spent_usd, state.entries[0].estimated_usd);
});

test("an HTTP error fails that case, keeps its reservation and never retries", async () => {
  const store = memoryStore();
  await api.setBudget(1, store);
  const log = [];
  const post = async (endpoint, body) => {
    const i = log.push(body) - 1;
    if (i === 1) return { status: 429, body: '{"error": {"message": "quota"}}' };
    return { status: 200, body: JSON.stringify(RECORDED.trials[i].exchanges[0].response) };
  };
  const live = await api.rerankLive({ hasKey: true }, { post, store }).result;
  assert.equal(log.length, 4, "one request per case, no retry");
  const failed = live.gemini.cases.filter((c) => c.error);
  assert.deepEqual(failed.map((c) => [c.case_id, c.error.code]), [["replace-file", "model_transport_failed:HTTPError"]]);
  assert.match(failed[0].error.detail, /HTTP 429: quota/);
  assert.deepEqual(live.ledger.entries.map((e) => e.outcome), ["completed", "model_transport_failed:HTTPError", "completed", "completed"]);
  assert.equal(live.ledger.entries.length, 4, "the failed request's reservation is kept");
  const rec = JSON.parse((await api.rerankRecording()).text);
  assert.deepEqual(rec.trials[0].exchanges.map((x) => x.http_status ?? null), [null, 429, null, null]);
});

test("a rerank that would pass the budget is refused whole: nothing reserved, nothing sent", async () => {
  const store = memoryStore();
  await api.setBudget(0.005, store);
  const before = store.text;
  let sent = 0;
  const { result } = api.rerankLive({ hasKey: true }, { post: async () => { sent++; return { status: 200, body: "" }; }, store });
  await assert.rejects(result, (err) => {
    assert.equal(err.name, "RunRefused");
    assert.equal(err.code, "budget_exceeded");
    assert.match(err.message, /over the budget of \$0\.00500000; nothing was sent/);
    return true;
  });
  assert.equal(sent, 0);
  assert.equal(store.text, before, "the ledger is unchanged");
  const plan = await api.rerankPlan({ hasKey: true }, store);
  assert.equal(plan.refusal.code, "budget_exceeded");

  // No key and no budget are refused the same way.
  await assert.rejects(api.rerankLive({ hasKey: false }, { post: async () => { sent++; }, store }).result, (e) => e.code === "missing_api_key");
  await assert.rejects(api.rerankLive({ hasKey: true }, { post: async () => { sent++; }, store: memoryStore() }).result, /set a budget first/);
  assert.equal(sent, 0);
});

test("a ledger that cannot be saved stops the run before anything is sent", async () => {
  const store = memoryStore();
  await api.setBudget(1, store);
  store.save = async () => { throw new Error("QuotaExceededError"); };
  let sent = 0;
  await assert.rejects(api.rerankLive({ hasKey: true }, { post: async () => { sent++; }, store }).result, /could not update it: QuotaExceededError/);
  assert.equal(sent, 0);
  const broken = memoryStore("{not a ledger");
  await assert.rejects(api.ledger(broken), /not reset/);
  await assert.rejects(api.setBudget("ten", memoryStore()), /must be a number/);
  await assert.rejects(api.setBudget(-1, memoryStore()), /at least 0/);
});
