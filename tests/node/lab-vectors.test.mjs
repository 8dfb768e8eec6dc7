// A configuration with a vector branch under the node module: the
// engine (WebAssembly) ranks with the pack's vectors file and the tiny
// model's query vectors from lab/embed.mjs, and returns what `ragagent
// retrieval --json --model DIR --vectors DIR` prints natively (the same
// file, the same runtime under node for the questions).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { openLab } from "ragagent-lab";
import { root } from "./engine.mjs";
import { build, ragagent } from "./cli.mjs";

const run = promisify(execFile);
const MODEL = path.join(root, "tests", "fixtures", "tiny-embedder");
const SMALL = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
const hybrid = {
  name: "hybrid", tokenizer: "stemmed", stop_words: "english", fields: { text: 1, title: 0.5, anchor: 1 },
  proximity: { window: 4 }, fusion: { model: "ragagent-test/tiny-embedder", vectors: "vectors-tiny-embedder.bin" },
};

let lab, dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-vectors-"));
  const bin = await build();
  [lab] = await Promise.all([
    openLab(),
    run(path.join(bin, "ragagent"), ["corpus", "embed", "--corpus", "python-3.11", "--model", MODEL, "--batch", "64", "--out", path.join(dir, "vectors-tiny-embedder.bin")], { cwd: root }),
  ]);
  writeFileSync(path.join(dir, "hybrid.json"), JSON.stringify(hybrid));
});
after(() => { lab?.close(); rmSync(dir, { recursive: true, force: true }); });

test("a vector branch ranks in the engine as it does natively", async () => {
  const got = await lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["proximity", hybrid], models: [MODEL], vectors: [dir] });
  const want = await ragagent(["retrieval", "--json", "--corpus", "python-3.11", "--cases", SMALL, "--config", "proximity", "--config", path.join(dir, "hybrid.json"),
    "--model", MODEL, "--vectors", dir]);
  assert.deepEqual(got, want);
  assert.equal(got.configs[1].spec.fusion.k, 60);
});

test("a vector branch without its model or vectors rejects with the command line's codes", async () => {
  const cases = readFileSync(SMALL, "utf8");
  const tries = [
    [{}, "unknown_config", /needs the model and the pack's vectors/],
    [{ models: [MODEL] }, "unknown_config", /no vectors file vectors-tiny-embedder\.bin/],
    [{ vectors: [dir] }, "unknown_config", /no model folder was given/],
    [{ models: "tests/fixtures/tiny-embedder" }, "invalid_argument", /models must be an array/],
  ];
  for (const [extra, code, says] of tries) {
    await assert.rejects(lab.retrieval({ corpus: "python-3.11", cases, configs: ["seed", hybrid], ...extra }),
      (err) => err.code === code && says.test(err.message), JSON.stringify(extra));
  }
});
