// Runs through the JS API: the offline scripted policy, and live Gemini runs
// over an injected fetch double (success, HTTP error, cancellation, timeout,
// a throwing fetch), proving the Promise bridge, the per-step callback,
// cancellation and the session's recording.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEngine, releaseTimers } from "./engine.mjs";

const GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.8-flash:generateContent";
const OVERWRITE = "In Python 3.12, does Path.write_text append to an existing file or overwrite it?";

let api;
before(async () => { ({ api } = await startEngine()); });
// The live runs' stopped 45 s call timeouts would hold node that long.
after(releaseTimers);

const spec = (change = {}) => ({ question: OVERWRITE, version: "3.12", mode: "agent", limits: null, policy: "gemini", hasKey: true, ...change });

function decision(action, fields = {}) {
  return { action, assessment: `${action} next.`, query: "", source_id: "", answer: "", citations: [], ...fields };
}

// reply is a generateContent response carrying a decision.
function reply(d, n) {
  return JSON.stringify({
    candidates: [{ content: { role: "model", parts: [{ text: JSON.stringify(d) }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 100 * n, candidatesTokenCount: 20, totalTokenCount: 100 * n + 20 },
    modelVersion: "gemini-3.8-flash-test",
  });
}

const SCRIPT = [
  decision("search", { query: "write_text overwrite existing file" }),
  decision("read", { source_id: "path-write" }),
  decision("answer", { answer: "It overwrites the file.", citations: [{ source_id: "path-write", quote: "An existing file is overwritten." }] }),
];

// scriptedFetch answers each request with the next decision, as Uint8Array.
function scriptedFetch(log) {
  return async (endpoint, body, opts) => {
    log.push({ endpoint, body, opts });
    await new Promise((r) => setTimeout(r, 5));
    return { status: 200, body: new TextEncoder().encode(reply(SCRIPT[log.length - 1], log.length)) };
  };
}

test("the scripted policy runs offline, step by step", async () => {
  const steps = [];
  const { id, result } = api.run({ ...spec(), policy: "scripted", hasKey: false }, { onStep: (s, o) => steps.push([s, o]) });
  assert.equal(typeof id, "number");
  const report = await result;
  assert.equal(report.result.status, "answered");
  assert.equal(report.checks.outcome, "pass");
  assert.equal(steps.length, report.result.steps.length);
  assert.ok(steps.some(([s, o]) => s.action === "read" && o && o.result.source_id === "path-write"));
  assert.equal(report.exchanges, 0, "nothing is sent or recorded");
});

test("a live run: each request goes through post, steps stream, the recording replays", async () => {
  const before = (await api.recording()).trials;
  const log = [];
  const steps = [];
  let stepsBeforeResult = -1;
  const { result } = api.run(spec(), { post: scriptedFetch(log), onStep: (s) => steps.push(s) });
  const report = await result.then((r) => { stepsBeforeResult = steps.length; return r; });
  assert.equal(report.result.status, "answered");
  assert.equal(report.result.reason, "citation_contract_passed");
  assert.equal(report.checks.outcome, "pass");
  assert.equal(stepsBeforeResult, 3, "every step arrived before the result");
  assert.equal(log.length, 3);
  for (const { endpoint, body, opts } of log) {
    assert.equal(endpoint, GEMINI);
    const payload = JSON.parse(body);
    assert.deepEqual(Object.keys(payload), ["systemInstruction", "contents", "generationConfig"]);
    assert.ok(opts.signal instanceof AbortSignal);
    assert.ok(opts.timeoutMs > 0 && opts.timeoutMs <= 45000);
  }
  assert.equal(report.result.tokens.total, 120 + 220 + 320);
  const rec = await api.recording();
  assert.equal(rec.trials, before + 1);
  const file = JSON.parse(rec.text);
  const trial = file.trials.at(-1);
  assert.equal(trial.exchanges.length, 3);
  assert.equal(file.endpoint, GEMINI);
  const replayed = await api.replay({ recording: rec.text });
  const again = replayed.trials.find((t) => t.id === trial.id);
  assert.equal(again.result.answer, report.result.answer);
  assert.equal(again.exchanges_used, 3);
  // The Run view's trace download: the session's own trial, from memory.
  const trace = JSON.parse(await api.exportOTLP({ source: "session", trial: trial.id, corpus: "seed" }));
  const spans = trace.resourceSpans[0].scopeSpans[0].spans;
  assert.ok(!JSON.stringify(spans).includes("ragagent.refused"), "the session's trial replays (its limits were refused once)");
  assert.equal(spans.filter((sp) => sp.attributes.some((a) => a.key === "openinference.span.kind" && a.value.stringValue === "LLM")).length, 3);
});

test("an HTTP error ends the run and is recorded with its status", async () => {
  const { result } = api.run(spec(), { post: async () => ({ status: 429, body: '{"error": {"message": "quota"}}' }) });
  const report = await result;
  assert.equal(report.result.status, "failed");
  assert.equal(report.result.reason, "model_transport_failed:HTTPError");
  assert.match(report.result.detail, /HTTP 429: quota/);
  const trial = JSON.parse((await api.recording()).text).trials.at(-1);
  assert.deepEqual(trial.exchanges.map((x) => [x.error, x.http_status]), [["HTTPError", 429]]);
});

// hanging is a fetch that settles only when its signal aborts.
function hanging(seen) {
  return (endpoint, body, opts) => new Promise((resolve, reject) => {
    seen.started = true;
    opts.signal.addEventListener("abort", () => { seen.aborted = true; reject({ kind: "URLError", message: "aborted" }); });
  });
}

test("cancel stops a run waiting on the network: incomplete, cancelled", async () => {
  const seen = {};
  const { id, result } = api.run(spec(), { post: hanging(seen) });
  while (!seen.started) await new Promise((r) => setTimeout(r, 5));
  assert.equal(api.cancel(id), true);
  const report = await result;
  assert.equal(report.result.status, "incomplete");
  assert.equal(report.result.reason, "cancelled");
  assert.equal(seen.aborted, true, "the fetch was aborted");
  assert.equal(api.cancel(id), false, "a finished run cannot be cancelled");
});

test("a reply that never comes times out at the run's deadline", async () => {
  const seen = {};
  const { result } = api.run(spec({ limits: { seconds: 1 } }), { post: hanging(seen) });
  const report = await result;
  assert.equal(report.result.status, "failed");
  assert.equal(report.result.reason, "model_transport_failed:TimeoutError");
  assert.equal(seen.aborted, true);
});

// Changed deliberately (issue 11): a live run without a key used to be
// recorded and graded as a failed trial (missing_api_key), and its
// recording then replayed as replay_exhausted. It is now refused before it
// starts, like an invalid task: nothing sent, nothing recorded, no grade;
// and the plan says so first.
test("without a key nothing is sent or recorded, and the plan says why", async () => {
  const before = (await api.recording()).trials;
  let called = false;
  const { result } = api.run(spec({ hasKey: false }), { post: async () => { called = true; return { status: 200, body: "" }; } });
  const report = await result;
  assert.equal(report.error, "missing_api_key");
  assert.equal(report.result, null);
  assert.equal(report.checks, null);
  assert.equal(called, false);
  assert.equal((await api.recording()).trials, before, "nothing recorded");
  const plan = await api.plan(spec({ hasKey: false }));
  assert.equal(plan.refusal.code, "missing_api_key");
  assert.equal((await api.plan(spec())).refusal, undefined, "with a key the plan may be sent");
});

test("a refused key (HTTP 403) is a key problem, not a fixture failure", async () => {
  const { result } = api.run(spec(), { post: async () => ({ status: 403, body: new TextEncoder().encode('{"error": {"message": "API key not valid."}}') }) });
  const report = await result;
  assert.equal(report.result.reason, "model_transport_failed:HTTPError");
  assert.equal(report.key_refused.http_status, 403);
  assert.match(report.key_refused.detail, /API key not valid/);
  assert.equal(report.checks, null);
});

test("a trial's exchanges and its OTLP export come from the recording", async () => {
  const ex = await api.exchanges({ source: "bundled", trial: "overwrite-agent-1" });
  assert.equal(ex.exchanges.length, 3);
  assert.deepEqual(Object.keys(JSON.parse(ex.exchanges[0].request)), ["systemInstruction", "contents", "generationConfig"]);
  assert.ok(JSON.parse(ex.exchanges[0].response).usageMetadata);
  const text = await api.exportOTLP({ source: "bundled", trial: "overwrite-agent-1" });
  const spans = JSON.parse(text).resourceSpans[0].scopeSpans[0].spans;
  assert.equal(spans.length, 1 + 3 + 1 + 1, "the run, three model calls, a search and a read");
  assert.match(spans[0].traceId, /^[0-9a-f]{32}$/);
  assert.equal(text, await api.exportOTLP({ source: "bundled", trial: "overwrite-agent-1" }), "deterministic");
  await assert.rejects(api.exchanges({ source: "bundled", trial: "x" }), /no trial "x"/);
});

test("a fetch that throws is a URLError, not a crash", async () => {
  const { result } = api.run(spec(), { post: () => { throw new Error("no network"); } });
  const report = await result;
  assert.equal(report.result.reason, "model_transport_failed:URLError");
  const { result: missing } = api.run(spec(), {});
  await assert.rejects(missing, /needs hooks.post/);
});

test("the plan names model, endpoint, allowance, caps and the worst case", async () => {
  const plan = await api.plan(spec({ limits: { model_calls: 5 } }));
  assert.equal(plan.model, "gemini-3.8-flash");
  assert.equal(plan.endpoint, GEMINI);
  assert.equal(plan.allowance.limit, 200);
  assert.equal(plan.allowance.remaining, 200 - plan.allowance.used);
  assert.equal(plan.worst_case_requests, 5);
  assert.equal(plan.caps.request_bytes, 30000);
  assert.equal(plan.caps.response_bytes, 262144);
  assert.equal(plan.caps.call_timeout_seconds, 45);
  const fixed = await api.plan(spec({ mode: "fixed" }));
  assert.equal(fixed.worst_case_requests, 1, "the fixed path makes one call");
  const local = await api.plan(spec({ endpoint: "http://127.0.0.1:9" }));
  assert.equal(local.endpoint, "http://127.0.0.1:9/v1beta/models/gemini-3.8-flash:generateContent");
  const offline = await api.plan({ ...spec(), policy: "scripted" });
  assert.equal(offline.worst_case_requests, 0);
});
