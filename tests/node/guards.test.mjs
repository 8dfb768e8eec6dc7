// The controller's guards, reached through the JS API: a task refused before
// it starts (in the reference order: limits, question, version, mode), and
// the run-time guards exercised by doctored recordings.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startEngine, bundled } from "./engine.mjs";

let api;
before(async () => { ({ api } = await startEngine()); });

const base = { question: "Does Path.write_text overwrite?", version: "3.12", mode: "agent", limits: null, policy: "scripted" };

test("a task is refused before it starts, first failing check first", async (t) => {
  const rows = [
    ["limits out of range", { limits: { model_calls: 13 } }, "invalid_limits"],
    ["limits not whole", { limits: { reads: 1.5 } }, "invalid_limits"],
    ["unknown limit", { limits: { tokens: 5 } }, "invalid_limits"],
    ["limits before question", { limits: { seconds: 0 }, question: "" }, "invalid_limits"],
    ["blank question", { question: " \n\t" }, "invalid_question"],
    ["question too long", { question: "é".repeat(513) }, "invalid_question"],
    ["question before version", { question: 7, version: "x" }, "invalid_question"],
    ["bad version", { version: "3.12.1" }, "invalid_version"],
    ["version before mode", { version: "3", mode: "other" }, "invalid_version"],
    ["bad mode", { mode: "hybrid" }, "invalid_mode"],
  ];
  for (const [name, change, code] of rows) {
    await t.test(name, async () => {
      const spec = { ...base, ...change };
      await assert.rejects(api.plan(spec), (err) => err.name === "RunRefused" && err.code === code);
      const { id, result } = api.run(spec, {});
      assert.equal(typeof id, "number");
      await assert.rejects(result, (err) => err.name === "RunRefused" && err.code === code);
    });
  }
});

test("an unknown policy is refused with the list of policies", async () => {
  const { result } = api.run({ ...base, policy: "oracle" }, {});
  await assert.rejects(result, /policy "oracle" is not one of/);
});

test("a live endpoint other than Gemini must be loopback", async () => {
  const live = (await api.policies()).find((p) => p.live);
  if (!live) return;
  await assert.rejects(api.plan({ ...base, policy: live.name, endpoint: "https://example.com/v1" }), /refused: its host is not a loopback address/);
  const plan = await api.plan({ ...base, policy: live.name, endpoint: "http://127.0.0.1:9/fake" });
  assert.equal(plan.endpoint, "http://127.0.0.1:9/fake");
});

test("search: ranked bm25 candidates, the version filter, and an empty query", async () => {
  const res = await api.search({ query: "write_text encoding utf-8", version: "3.12", k: 4 });
  assert.equal(res.terms, '"write" OR "text" OR "encoding" OR "utf" OR "8"');
  assert.deepEqual(res.hits.map((h) => h.rank), res.hits.map((_, i) => i + 1));
  assert.ok(res.hits.every((h) => h.version === "3.12"));
  for (let i = 1; i < res.hits.length; i++) assert.ok(res.hits[i - 1].score <= res.hits[i].score, "lower bm25 first");
  const all = await api.search({ query: "newline", version: "", k: 4 });
  assert.deepEqual(all.hits.map((h) => `${h.source_id}@${h.version}`), ["path-read-3-13@3.13", "path-write@3.12"], "no version searches every version");
  const only = await api.search({ query: "newline", version: "3.13", k: 4 });
  assert.deepEqual(only.hits.map((h) => h.source_id), ["path-read-3-13"]);
  await assert.rejects(api.search({ query: "?!", version: "3.12" }), (err) => err.code === "invalid_query");
  await assert.rejects(api.search({ query: "x", k: 11 }), /k must be from 1 to 10/);
});

// doctor edits one trial's recorded decisions and replays it.
async function doctor(id, edit) {
  const rec = JSON.parse(bundled());
  const trial = rec.trials.find((t) => t.id === id);
  edit(trial);
  rec.trials = [trial];
  const rep = await api.replay({ recording: JSON.stringify(rec) });
  return rep.trials[0];
}

function setDecision(exchange, change) {
  const part = exchange.response.candidates[0].content.parts[0];
  part.text = JSON.stringify({ ...JSON.parse(part.text), ...change });
}

test("run-time guards fire from recorded replies", async (t) => {
  const rows = [
    ["unknown action", (tr) => setDecision(tr.exchanges[0], { action: "browse" }), "unknown_action"],
    ["missing key", (tr) => { const p = tr.exchanges[0].response.candidates[0].content.parts[0]; const d = JSON.parse(p.text); delete d.query; p.text = JSON.stringify(d); }, "invalid_decision"],
    ["unfinished reply", (tr) => { tr.exchanges[0].response.candidates[0].finishReason = "MAX_TOKENS"; }, "unfinished_model_reply"],
    ["undecodable JSON", (tr) => { tr.exchanges[0].response.candidates[0].content.parts[0].text = "{not json"; }, "invalid_model_json"],
    ["transport error", (tr) => { tr.exchanges[0] = { request: tr.exchanges[0].request, error: "HTTPError", http_status: 503 }; }, "model_transport_failed:HTTPError"],
    ["unissued source", (tr) => setDecision(tr.exchanges[1], { source_id: "path-read-3-13" }), "unissued_source"],
    ["exhausted recording", (tr) => { tr.exchanges = tr.exchanges.slice(0, 1); }, "replay_exhausted"],
  ];
  for (const [name, edit, code] of rows) {
    await t.test(name, async () => {
      const trial = await doctor("overwrite-agent-1", edit);
      assert.equal(trial.result.status, "failed");
      assert.equal(trial.result.reason, code);
    });
  }
});

test("an altered quote fails the citation contract", async () => {
  const trial = await doctor("overwrite-fixed-1", (tr) => {
    const part = tr.exchanges[0].response.candidates[0].content.parts[0];
    const d = JSON.parse(part.text);
    d.citations[0].quote = "An existing file is appended to.";
    part.text = JSON.stringify(d);
  });
  assert.equal(trial.result.reason, "unread_or_changed_citation");
  assert.equal(trial.result.answer, "", "no answer is returned");
});
