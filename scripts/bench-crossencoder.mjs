// bench-crossencoder.mjs measures the cross-encoder (make bench-crossencoder;
// not a test): the model's download size; in headless Chromium, the page's
// own scoring (click to accepted scores) with a cold browser (a new profile:
// every file downloaded) and a warm one (the files from the Cache API), as
// time from the files being ready to the first score (loading
// transformers.js and the model, then the first call) and inference time
// per pair (ONNX Runtime Web, one thread: the page is not cross-origin
// isolated); under node, the same scorer on onnxruntime-node with 1 and 2
// threads. Medians of RUNS (default 3), with the load average.
//
// By default it measures the tests' tiny model from a loopback host. With
// a network, --host https://huggingface.co measures the published model
// (about 92 MB; the page fetches it from the hub as a visitor's would).
import { readFileSync } from "node:fs";
import os from "node:os";
import { serveSite, launch } from "../tests/browser/harness.mjs";
import { startEngine, releaseTimers } from "../tests/node/engine.mjs";
import { startModelHost } from "./modelhost.mjs";
import { HUB, runScoring } from "../site/rerank/crossencoder-scorer.mjs";

const RUNS = Number(process.env.RUNS || 3);
const hubArg = process.argv.indexOf("--host");
const real = hubArg > 0 && process.argv[hubArg + 1] === HUB;
if (hubArg > 0 && !real) throw new Error(`--host takes ${HUB} (the default is the tests' tiny model on loopback)`);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f1 = (x) => (Math.round(x * 10) / 10).toString();
const loadavg = () => readFileSync("/proc/loadavg", "utf8").trim().split(" ").slice(0, 3).join(" ");

const local = real ? null : await startModelHost();
const site = await serveSite(local ? [local.url] : []);
const pageURL = local ? `${site.url}/?modelHost=${encodeURIComponent(local.url)}#rerank` : `${site.url}/#rerank`;

/** scoreInPage clicks the button and returns the page's timings of that scoring. */
async function scoreInPage(context) {
  const page = await context.newPage();
  await page.goto(pageURL);
  await page.waitForFunction(() => !document.querySelector("#xenc-start").disabled, null, { timeout: 300000 });
  const t0 = Date.now();
  await page.click("#xenc-start");
  await page.waitForFunction(() => ["done", "refused"].includes(document.body.dataset.xenc), null, { timeout: 900000 });
  const wall = Date.now() - t0;
  const state = await page.evaluate(() => document.body.dataset.xenc);
  if (state !== "done") throw new Error(await page.textContent("#xenc-message"));
  const t = await page.evaluate(() => window.ragagentPage.timings.crossEncoder);
  await page.close();
  return { ...t, wall_ms: wall };
}

console.log(`load average before: ${loadavg()}; ${os.cpus().length} cores`);
const cold = [], warm = [];
for (let i = 0; i < RUNS; i++) {
  const browser = await launch({ optimizing: true });
  try {
    cold.push(await scoreInPage(browser.context));
    warm.push(await scoreInPage(browser.context));
  } finally {
    await browser.close();
  }
}

const { api } = await startEngine();
const manifest = local ? await (await fetch(`${local.url}/ragagent-model.json`)).text() : undefined;
const plan = await api.crossEncoderPlan(manifest);
const node = {};
for (const threads of [1, 2]) {
  node[threads] = [];
  for (let i = 0; i < RUNS; i++) {
    const payload = await runScoring({
      T: async () => { const T = await import("@huggingface/transformers"); T.env.logLevel = 40; return T; },
      host: local ? local.url : HUB, plan, weights: plan.model.weights[0].id, fetchFn: fetch, device: "cpu", threads,
    });
    node[threads].push(payload.timings);
  }
}
const size = plan.model.files.concat(plan.model.weights[0]).reduce((n, f) => n + f.bytes, 0);
const m = (xs, k) => f1(median(xs.map((x) => x[k])));

console.log(`\nCross-encoder: ${plan.model.model} at ${plan.model.revision}, weights ${plan.model.weights[0].path}; ${plan.pairs} pairs in ${plan.calls.length} calls; medians of ${RUNS}\n`);
console.log("| | download | files ready (ms) | load (ms) | first score after the files (ms) | inference per pair (ms) | all 16 calls (ms) |");
console.log("|---|---|---|---|---|---|---|");
console.log(`| Chromium, cold (new profile) | ${(median(cold.map((t) => t.download_bytes)) / 1e6).toFixed(2)} MB | ${m(cold, "files_ms")} | ${m(cold, "load_ms")} | ${m(cold, "first_score_ms")} | ${m(cold, "inference_ms_per_pair")} | ${m(cold, "score_ms")} |`);
console.log(`| Chromium, cached (Cache API) | ${(median(warm.map((t) => t.download_bytes)) / 1e6).toFixed(2)} MB | ${m(warm, "files_ms")} | ${m(warm, "load_ms")} | ${m(warm, "first_score_ms")} | ${m(warm, "inference_ms_per_pair")} | ${m(warm, "score_ms")} |`);
for (const threads of [1, 2]) {
  console.log(`| node, onnxruntime-node, ${threads} thread${threads > 1 ? "s" : ""} | ${(median(node[threads].map((t) => t.download_bytes)) / 1e6).toFixed(2)} MB | ${m(node[threads], "files_ms")} | ${m(node[threads], "load_ms")} | ${m(node[threads], "first_score_ms")} | ${m(node[threads], "inference_ms_per_pair")} | ${m(node[threads], "score_ms")} |`);
}
console.log(`\nmodel download size: ${size} bytes as the manifest lists it${plan.model.weights[0].approximate ? " (approximate)" : ""}; runtime ${cold[0].environment.onnxruntime} in Chromium`);
console.log(`load average after: ${loadavg()}`);
site.stop();
await local?.stop();
await releaseTimers();
process.exit(0);
