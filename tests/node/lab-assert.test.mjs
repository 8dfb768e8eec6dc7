// The node module's checks for CI pass on what should pass and fail, with
// a message naming the trial or case, the step and what changed, on what
// should fail.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  openLab, outcomesOf, replayProblems, assertReplay, citationProblems, assertCitations,
  unanswerableProblems, assertUnanswerableDeclined, metricProblems, assertMetric,
} from "ragagent-lab";
import { bundled } from "./engine.mjs";

let lab;
let rep;
before(async () => {
  lab = await openLab();
  rep = await lab.replay();
});
after(() => lab?.close());

// edit returns the bundled recording with fn applied to one trial.
function edit(id, fn) {
  const file = JSON.parse(bundled());
  fn(file.trials.find((t) => t.id === id));
  return JSON.stringify(file);
}

test("a replay equals its own outcomes; assertReplay passes", () => {
  assert.deepEqual(replayProblems(rep, outcomesOf(rep)), []);
  assertReplay(rep, outcomesOf(rep));
  assertReplay(rep, rep);
  assertReplay(rep);
});

test("an edited request fails assertReplay, naming the trial and the model call", async () => {
  const again = await lab.replay({ recording: edit("serialize-and-save-agent-1", (t) => { t.exchanges[3].request.contents[0].parts[0].text += " "; }) });
  const problems = replayProblems(again);
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^trial serialize-and-save-agent-1 \(serialize-and-save \/ 1, agent path\): model call 4: replay_request_mismatch: its request no longer equals the recorded one/);
  assert.throws(() => assertReplay(again), (err) => err instanceof assert.AssertionError && err.message.startsWith("the recording does not replay as expected:\n  trial serialize-and-save-agent-1"));
});

test("recorded replies that changed the outcome fail against the stored expectation: which trial, which step, what changed", async () => {
  const expected = outcomesOf(rep);
  // The model's third reply now answers without reading path-write.
  const again = await lab.replay({
    recording: edit("overwrite-agent-1", (t) => {
      const reply = t.exchanges[1].response;
      const part = reply.candidates[0].content.parts[0];
      part.text = JSON.stringify({ action: "stop", assessment: "Giving up.", query: "", source_id: "", answer: "", citations: [] });
      t.exchanges.length = 2;
    }),
  });
  const problems = replayProblems(again, expected);
  assert.equal(problems.length, 1, problems.join("\n"));
  assert.match(problems[0], /^trial overwrite-agent-1 \(overwrite \/ 1, agent path\): status was answered, now incomplete; reason was citation_contract_passed, now model_stopped; outcome was pass, now incomplete; step 2 was "read "path-write" admitted", now "stop /);
  assert.match(problems[0], /citations were \[path-write\], now \[\]$/);
});

test("a trial gone or new is named", () => {
  const expected = outcomesOf(rep);
  const fewer = { trials: rep.trials.slice(1) };
  assert.deepEqual(replayProblems(fewer, expected), ["trial overwrite-fixed-1 (overwrite / 1, fixed path): expected, but the recording no longer has it"]);
  const more = outcomesOf(rep);
  delete more["unsupported-agent-2"];
  assert.deepEqual(replayProblems(rep, more), ["trial unsupported-agent-2 (unsupported / 2, agent path): not in the expectation (store a new one with outcomesOf)"]);
});

// answered is a copy of the first answered agent trial with fn applied.
function answered(fn) {
  const t = structuredClone(rep.trials.find((x) => x.id === "overwrite-agent-1"));
  fn(t.result);
  return { trials: [t] };
}

test("valid citations pass; an answer without one fails, naming the trial and the citation", () => {
  assert.deepEqual(citationProblems(rep), []);
  assertCitations(rep);
  const cases = [
    ["no citation", (r) => { r.citations = []; }, /the answer "In Python 3\.12, Path\.write_text overwrites.*" cites nothing$/],
    ["an unread source", (r) => { r.citations[0].source_id = "path-read"; }, /citation 1 \(path-read\) names a passage the trial never read \(read: path-write\)$/],
    ["a quote not in the passage", (r) => { r.citations[0].quote = "An existing file is kept."; }, /citation 1 \(path-write\) quotes "An existing file is kept\.", which is not in the passage read$/],
    ["another URL", (r) => { r.citations[0].url = "https://docs.python.org/3.12/library/os.html"; }, /gives the URL https:\/\/docs\.python\.org\/3\.12\/library\/os\.html, the passage read is https:\/\/docs\.python\.org\/3\.12\/library\/pathlib\.html#pathlib\.Path\.write_text$/],
    ["another ending", (r) => { r.reason = "model_stopped"; }, /ended model_stopped, not citation_contract_passed$/],
  ];
  for (const [name, fn, message] of cases) {
    const bad = answered(fn);
    const problems = citationProblems(bad);
    assert.equal(problems.length, 1, name);
    assert.match(problems[0], /^trial overwrite-agent-1 \(overwrite \/ 1, agent path\): /, name);
    assert.match(problems[0], message, name);
    assert.throws(() => assertCitations(bad), /^AssertionError|an answer without valid citations/, name);
  }
});

test("the bundled comparison's unanswerable case was answered, and assertUnanswerableDeclined says so for each trial", () => {
  const problems = unanswerableProblems(rep);
  assert.deepEqual(problems.map((p) => p.split(":")[0]), [
    "trial unsupported-fixed-1 (unsupported / 1, fixed path)",
    "trial unsupported-agent-1 (unsupported / 1, agent path)",
    "trial unsupported-fixed-2 (unsupported / 2, fixed path)",
    "trial unsupported-agent-2 (unsupported / 2, agent path)",
  ]);
  assert.match(problems[1], /the documents cannot answer "In Python 3\.12, how many days does Path\.write_text retain backup copies\?", but it answered ".*", citing path-write \(abstention_expected\)$/);
  assert.throws(() => assertUnanswerableDeclined(rep), /a question the documents cannot answer was answered:\n  trial unsupported-fixed-1/);
  // The answerable cases alone pass.
  assertUnanswerableDeclined({ trials: rep.trials.filter((t) => t.case_id !== "unsupported") });
});

test("an eval's declined unanswerable case passes; an answered one fails", () => {
  const declined = { id: "no-such-api", mode: "agent", question: "Q?", checks: { retrieval_reason: { code: "no_targets" }, answer_reason: { code: "abstained" } } };
  const answeredCase = { ...declined, checks: { ...declined.checks, answer_reason: { code: "abstention_expected" } } };
  assert.deepEqual(unanswerableProblems({ cases: [declined] }), []);
  assert.deepEqual(unanswerableProblems({ cases: [declined, answeredCase] }), [
    'case no-such-api (agent path): the documents cannot answer "Q?", but it answered (abstention_expected)',
  ]);
});

// compared is retrieval()'s shape with two configurations.
const compared = {
  corpus: "python-3.11", k: 10, cases: 6, answerable: 5,
  configs: [
    { name: "seed", metrics: { "mrr@10": { value: 0.35, ci95: [0.2, 0.5] }, "recall@10": { value: 0.6, ci95: [0.2, 1] } },
      cases: [{ id: "a", rank: 1 }, { id: "b", rank: null }, { id: "c", rank: 3 }, { id: "d", rank: null }, { id: "e", rank: 10 }] },
    { name: "stemmed", metrics: { "mrr@10": { value: 0.5, ci95: [0.3, 0.7] } }, cases: [] },
  ],
};

test("a metric above its threshold passes; below it fails with the value, its CI and the cases missed", () => {
  assert.deepEqual(metricProblems(compared, { min: 0.3 }), []);
  assertMetric(compared, { metric: "mrr@10", min: 0.45, config: "stemmed" });
  assert.deepEqual(metricProblems(compared, { min: 0.4 }), [
    "seed: mrr@10 is 0.350 (95% CI 0.200 to 0.500, 5 answerable cases), below 0.4; no target in the top 10 for 2: b, d; the interval spans the threshold, so more cases would tell a real drop from noise",
  ]);
  assert.deepEqual(metricProblems(compared, { metric: "recall@10", min: 0.7 }), [
    "seed: recall@10 is 0.600 (95% CI 0.200 to 1.000, 5 answerable cases), below 0.7; no target in the top 10 for 2: b, d; the interval spans the threshold, so more cases would tell a real drop from noise",
  ]);
  assert.deepEqual(metricProblems(compared, { min: 0.6, config: "stemmed" }), ["stemmed: mrr@10 is 0.500 (95% CI 0.300 to 0.700, 5 answerable cases), below 0.6; the interval spans the threshold, so more cases would tell a real drop from noise"]);
  assert.deepEqual(metricProblems(compared, { min: 0.1, config: "rm3" }), ['no configuration "rm3" was compared (compared: seed, stemmed)']);
  assert.deepEqual(metricProblems(compared, { min: 0.1, metric: "ndcg@10" }), ["configuration seed has no metric ndcg@10 (it has mrr@10, recall@10)"]);
  assert.throws(() => assertMetric(compared, { min: 0.9 }), /a retrieval metric fell below its threshold:\n  seed: mrr@10 is 0\.350 \(95% CI 0\.200 to 0\.500/);
  assert.throws(() => metricProblems(compared, {}), /min must be a finite number/);
});
