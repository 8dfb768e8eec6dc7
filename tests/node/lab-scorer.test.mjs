// A cross-encoder second stage under the node module: the engine
// (WebAssembly) reorders the first stage's top 10 by the tiny
// cross-encoder's logits from lab/embed.mjs's openScorer in this process,
// and returns what `ragagent retrieval --json --model DIR` prints natively,
// where the same scorer runs as a child process (node lab/embed.mjs serve).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openLab } from "ragagent-lab";
import { root } from "./engine.mjs";
import { build, ragagent } from "./cli.mjs";

const MODEL = path.join(root, "tests", "fixtures", "tiny-cross-encoder");
const EMBEDDER = path.join(root, "tests", "fixtures", "tiny-embedder");
const SMALL = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
const ce = {
  name: "ce", tokenizer: "stemmed", stop_words: "english", fields: { text: 1, title: 0.5, anchor: 1 },
  proximity: { window: 4 }, second_stage: { method: "cross-encoder", model: "ragagent-test/tiny-cross-encoder", depth: 10 },
};

let lab, dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-scorer-"));
  [lab] = await Promise.all([openLab(), build()]);
  writeFileSync(path.join(dir, "ce.json"), JSON.stringify(ce));
});
after(() => { lab?.close(); rmSync(dir, { recursive: true, force: true }); });

test("a cross-encoder second stage ranks in the engine as it does natively", async () => {
  const got = await lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["proximity", ce], models: [MODEL] });
  const want = await ragagent(["retrieval", "--json", "--corpus", "python-3.11", "--cases", SMALL, "--config", "proximity", "--config", path.join(dir, "ce.json"),
    "--model", MODEL]);
  assert.deepEqual(got, want);
  const [first, second] = got.configs;
  assert.deepEqual(second.spec.second_stage, { method: "cross-encoder", model: "ragagent-test/tiny-cross-encoder", depth: 10 });
  // The stage reorders the first stage's top 10 (the tiny model's random
  // weights reorder them badly): the same passages within 10, other ranks.
  assert.equal(second.metrics["recall@10"].value, first.metrics["recall@10"].value);
  assert.notDeepEqual(second.cases.map((c) => c.rank), first.cases.map((c) => c.rank));
  // The scorer was closed with the call: another call opens its own.
  const again = await lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["proximity", ce], models: [MODEL] });
  assert.deepEqual(again, got);
});

test("a cross-encoder stage without its model's folder rejects with the command line's code", async () => {
  const cases = readFileSync(SMALL, "utf8");
  const tries = [
    [{}, "unknown_config", /reranks with the cross-encoder ragagent-test\/tiny-cross-encoder, which needs the model/],
    [{ models: [] }, "unknown_config", /no model folder was given/],
    [{ models: [EMBEDDER] }, "unknown_config", /no model folder holds it \(they hold ragagent-test\/tiny-embedder\)/],
  ];
  for (const [extra, code, says] of tries) {
    await assert.rejects(lab.retrieval({ corpus: "python-3.11", cases, configs: ["seed", ce], ...extra }),
      (err) => err.code === code && says.test(err.message), `${JSON.stringify(extra)}`);
  }
});
