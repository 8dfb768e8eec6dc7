// A configuration with a Gemini listwise stage under the node module: the
// command line runs it live against the loopback fake (plan, ledger,
// recording), and lab.retrieval({gemini}) replays that recording in the
// engine to what `ragagent retrieval --gemini FILE --json` prints; a
// changed configuration is refused as a changed request.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openLab } from "ragagent-lab";
import { root } from "./engine.mjs";
import { fakeGemini, ragagent } from "./cli.mjs";

const SMALL = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
const lw = { name: "lw", tokenizer: "stemmed", second_stage: { method: "listwise", depth: 5 } };

let lab, dir, fake;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-listwise-"));
  [lab, fake] = await Promise.all([openLab(), fakeGemini()]);
  writeFileSync(path.join(dir, "lw.json"), JSON.stringify(lw));
});
after(async () => { lab?.close(); await fake?.stop(); rmSync(dir, { recursive: true, force: true }); });

test("a listwise recording replays in the engine as it does natively", async () => {
  const rec = path.join(dir, "rec.json");
  const base = ["retrieval", "--json", "--corpus", "python-3.11", "--cases", SMALL, "--config", "seed", "--config", path.join(dir, "lw.json")];
  const live = await ragagent([...base, "--live", "--ledger", path.join(dir, "ledger.json"), "--budget", "0.05", "--record", rec,
    "--endpoint", new URL(fake.endpoint).origin], { GEMINI_API_KEY: "dummy-test-key-not-a-real-key" });
  const replayed = await ragagent([...base, "--gemini", rec]);
  assert.deepEqual(replayed, live);
  const got = await lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["seed", lw], gemini: readFileSync(rec, "utf8") });
  assert.deepEqual(got, live);

  await assert.rejects(
    lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["seed", { ...lw, second_stage: { method: "listwise", depth: 4 } }], gemini: readFileSync(rec, "utf8") }),
    (err) => err.code === "replay_request_mismatch");
  await assert.rejects(lab.retrieval({ corpus: "python-3.11", cases: readFileSync(SMALL, "utf8"), configs: ["seed", lw] }),
    (err) => err.code === "unknown_config" && /--gemini FILE/.test(err.message));
});
