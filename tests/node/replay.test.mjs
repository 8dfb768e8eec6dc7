// The engine replays the bundled comparison in node exactly as the seed
// published it, reports progress, and turns a malformed recording into an
// error, never a crash.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startEngine, bundled } from "./engine.mjs";

// The seed's table (section 5): case / repeat, path, expected sources read,
// answer fixture, stop reason, model calls.
const PUBLISHED = [
  "overwrite/1 fixed true pass citation_contract_passed 1",
  "overwrite/1 agent true pass citation_contract_passed 3",
  "serialize-and-save/1 fixed true pass citation_contract_passed 1",
  "serialize-and-save/1 agent true pass citation_contract_passed 6",
  "newline-version/1 fixed true incomplete model_stopped 1",
  "newline-version/1 agent true fail duplicate_query 3",
  "unsupported/1 fixed none fail citation_contract_passed 1",
  "unsupported/1 agent none fail citation_contract_passed 3",
  "overwrite/2 fixed true pass citation_contract_passed 1",
  "overwrite/2 agent true pass citation_contract_passed 3",
  "serialize-and-save/2 fixed true pass citation_contract_passed 1",
  "serialize-and-save/2 agent true pass citation_contract_passed 6",
  "newline-version/2 fixed true incomplete model_stopped 1",
  "newline-version/2 agent true incomplete model_stopped 5",
  "unsupported/2 fixed none fail citation_contract_passed 1",
  "unsupported/2 agent none fail citation_contract_passed 3",
];

export function row(t) {
  const r = t.checks.retrieval_targets_read;
  return `${t.case_id}/${t.repeat} ${t.mode} ${r === null ? "none" : r} ${t.checks.outcome} ${t.result.reason} ${t.result.usage.model_calls}`;
}

let api;
before(async () => { ({ api } = await startEngine()); });

test("replaying the bundled recording gives the published table", async () => {
  const progress = [];
  const rep = await api.replay({}, (done, total, id) => progress.push([done, total, id]));
  assert.deepEqual(rep.trials.map(row), PUBLISHED);
  assert.deepEqual(rep.summary, { fixed: { pass: 4, fail: 2, incomplete: 2 }, agent: { pass: 4, fail: 3, incomplete: 1 } });
  assert.equal(rep.exchanges, 40);
  assert.equal(rep.exchanges_used, 40);
  assert.equal(rep.source, "bundled");
  assert.equal(progress.length, 16);
  assert.deepEqual(progress.at(-1), [16, 16, "unsupported-agent-2"]);
});

test("the trace of serialize-and-save / 1 shows the second search after the reads", async () => {
  const rep = await api.replay({ caseId: "serialize-and-save" });
  assert.equal(rep.trials.length, 4);
  const agent = rep.trials.find((t) => t.mode === "agent" && t.repeat === 1);
  const actions = agent.result.steps.map((s) => `${s.action} ${s.argument ?? ""} ${s.outcome}`);
  assert.deepEqual(actions, [
    "search json dump ensure_ascii utf-8 admitted",
    "read json-text admitted",
    "read path-read admitted",
    "search write_text encoding utf-8 open admitted",
    "read path-write admitted",
    "answer  finished",
  ]);
  const read = agent.result.observations[agent.result.steps[1].observation];
  assert.equal(read.result.source_id, "json-text");
  assert.match(read.result.url, /^https:\/\/docs\.python\.org\/3\.12\//);
  assert.equal(read.result.text_sha256.length, 64);
  assert.deepEqual(agent.result.citations.map((c) => c.source_id).sort(), ["json-text", "path-write"]);
});

test("a loaded recording replays the same as the bundled one", async () => {
  const rep = await api.replay({ recording: bundled() });
  assert.equal(rep.source, "loaded");
  assert.deepEqual(rep.trials.map(row), PUBLISHED);
});

test("a malformed recording is an error, not a crash", async (t) => {
  const good = JSON.parse(bundled());
  const cases = [
    ["truncated", bundled().slice(0, 500), /not valid JSON/],
    ["not an object", "[]", /top level is not an object/],
    ["wrong format", JSON.stringify({ ...good, format: "other/1" }), /format is "other\/1"/],
    ["trials not a list", JSON.stringify({ ...good, trials: {} }), /trials is not a list/],
    ["exchange without request", JSON.stringify({ ...good, trials: [{ ...good.trials[0], exchanges: [{}] }] }), /trial 1 \(overwrite-fixed-1\) exchange 1: has no request/],
    ["empty", "", /not valid JSON/],
  ];
  for (const [name, text, message] of cases) {
    await t.test(name, async () => {
      await assert.rejects(api.replay({ recording: text }), (err) => {
        assert.equal(err.name, "RecordingError");
        assert.match(err.message, message);
        assert.doesNotMatch(err.message, /\n/, "one line");
        return true;
      });
    });
  }
  // The engine is still alive.
  const rep = await api.replay({ caseId: "overwrite" });
  assert.equal(rep.trials.length, 4);
});

test("a changed request stops its trial with a mismatch naming trial and exchange", async () => {
  const rec = JSON.parse(bundled());
  const trial = rec.trials.find((t) => t.id === "serialize-and-save-agent-1");
  trial.question = trial.question.replace("UTF-8", "UTF-16");
  const rep = await api.replay({ recording: JSON.stringify(rec) });
  const t = rep.trials.find((x) => x.id === "serialize-and-save-agent-1");
  assert.equal(t.result.status, "failed");
  assert.equal(t.result.reason, "replay_request_mismatch");
  assert.match(t.result.detail, /^trial serialize-and-save-agent-1, exchange 1: the request differs at /);
  assert.equal(rep.trials.filter((x) => x.result && x.result.reason === "replay_request_mismatch").length, 1, "other trials are unaffected");
});
