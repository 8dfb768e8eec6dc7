// The node module's retrieval and eval return exactly what `ragagent
// retrieval --json` and `ragagent eval --json` print for the same inputs,
// and a malformed question set or an unknown configuration rejects with
// the command line's code.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { openLab, assertMetric, assertUnanswerableDeclined } from "ragagent-lab";
import { root } from "./engine.mjs";
import { build, ragagent, withoutPriceHint, withoutTimes } from "./cli.mjs";

const SMALL = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");

let lab;
before(async () => { [lab] = await Promise.all([openLab(), build()]); });
after(() => lab?.close());

test("retrieval returns what ragagent retrieval --json prints: the seed's cases, and a TSV question set over the Python pack", async () => {
  const cases = [
    [{}, ["retrieval", "--json"]],
    [{ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["seed", "fields"], k: 5 },
      ["retrieval", "--json", "--corpus", "python-3.11", "--cases", SMALL, "--config", "seed", "--config", "fields", "--k", "5"]],
  ];
  for (const [opts, args] of cases) {
    const progress = [];
    const got = await lab.retrieval({ ...opts, onCase: (done, total, config) => progress.push([done, total, config]) });
    assert.deepEqual(got, await ragagent(args), args.join(" "));
    assert.equal(progress.at(-1)[0], progress.at(-1)[1], "progress reaches the total");
  }
});

test("a metric check reads retrieval's value", async () => {
  const got = await lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["seed"] });
  assert.equal(got.answerable, 4);
  assertMetric(got, { metric: "recall@10", min: 0.25 });
  assert.throws(() => assertMetric(got, { metric: "mrr@10", min: 1.01 }), /seed: mrr@10 is \d\.\d{3} \(95% CI \d\.\d{3} to \d\.\d{3}, 4 answerable cases\), below 1\.01/);
});

test("eval returns what ragagent eval --json prints, on the pack's cases and on a question set", async () => {
  const got = await lab.eval({ corpus: "seed" });
  const want = await ragagent(["eval", "--corpus", "seed", "--json"]);
  const same = (v) => withoutTimes(withoutPriceHint(v));
  assert.deepEqual(same(got), same(want));
  const set = await lab.eval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8") });
  assert.deepEqual(same(set), same(await ragagent(["eval", "--corpus", "python-3.11", "--cases", SMALL, "--json"])));
  // The scripted policy declines the case the documents cannot answer.
  assert.ok(got.summary.unanswerable_cases > 0);
  assertUnanswerableDeclined(got);
});

test("a malformed question set, an unknown or invalid configuration reject with the command line's codes", async () => {
  const cases = [
    [{ cases: "id\tquestion\ttarget_urls\nx\t\t-\n" }, "invalid_cases"],
    [{ configs: ["no-such-config"] }, "unknown_config"],
    [{ configs: [{ name: "bad", k: "ten" }] }, "invalid_config"],
  ];
  for (const [opts, code] of cases) {
    await assert.rejects(lab.retrieval({ corpus: "python-3.11", ...opts }), (err) => { assert.equal(err.code, code, JSON.stringify(opts)); return true; });
  }
  await assert.rejects(lab.eval({ corpus: "python-3.11", cases: "id\tquestion\ttarget_urls\nx\t\t-\n" }), (err) => err.code === "invalid_cases");
  await assert.rejects(lab.eval({ cases: 7 }), (err) => err.code === "invalid_argument");
});

test("tune returns what ragagent tune --json prints, with progress; a set too small is refused with the command line's code", async () => {
  const NATURAL = path.join(root, "fixtures", "cases", "python-3.11-natural.json");
  const progress = [];
  const got = await lab.tune({ corpus: "python-3.11", cases: readFileSync(NATURAL, "utf8"), onCase: (done, total) => progress.push([done, total]) });
  assert.deepEqual(got, await ragagent(["tune", "--json", "--corpus", "python-3.11", "--cases", NATURAL]));
  assert.ok(got.chosen.name, "a configuration is chosen");
  assert.equal(progress.at(-1)[0], progress.at(-1)[1], "progress reaches the total");
  await assert.rejects(lab.tune({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8") }), (err) => { assert.equal(err.code, "invalid_cases"); return true; });
  await assert.rejects(lab.tune({ corpus: "python-3.11", folds: 1 }), (err) => { assert.equal(err.code, "invalid_argument"); return true; });
});

test("a signal stops a local retrieval: it rejects with cancelled, as a server lab's does", async () => {
  const controller = new AbortController();
  const progress = [];
  await assert.rejects(lab.retrieval({ corpus: "python-3.11", configs: ["all"], signal: controller.signal, onCase: (done, total) => {
    progress.push([done, total]);
    controller.abort();
  } }), { code: "cancelled" });
  assert.ok(progress.length >= 1 && progress.at(-1)[0] < progress.at(-1)[1], "stopped before the total");
  await assert.rejects(lab.retrieval({ signal: controller.signal }), { code: "cancelled" });
  // The lab goes on.
  assert.equal((await lab.retrieval({ configs: ["seed"] })).configs.length, 1);
});
