// crossencode.mjs scores the reranking lab's cross-encoder pairs under node
// (the 4 original development cases' frozen candidates and the 12 expanded
// cases' pools, 44 pairs) with the page's own scorer
// (site/rerank/crossencoder-scorer.mjs: transformers.js, here on onnxruntime-node),
// takes the logits through the engine's acceptance contract (site/main.wasm,
// as the page does) and writes the recording `ragagent rerank
// --cross-encoder FILE` replays. It prints how the logits compare with the
// published ones.
//
//   node scripts/crossencode.mjs --output FILE [--weights fp32] [--threads N]
//                                [--host URL | --model-dir DIR]
//
// By default the model files come from the Hugging Face hub at the
// published revision, each checked against the published record's sha256
// where it pins one. --model-dir reads the same files from a folder laid
// out as the repository (e.g. a download of it); --host names a loopback
// test host serving a ragagent-model.json manifest (scripts/modelhost.mjs).
// `make crossencode OUT=FILE` runs it.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startEngine, releaseTimers } from "../tests/node/engine.mjs";
import { HUB, runScoring } from "../site/rerank/crossencoder-scorer.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const USAGE = "usage: node scripts/crossencode.mjs --output FILE [--weights ID] [--threads N] [--host URL | --model-dir DIR]";

function parseArgs(argv) {
  const opts = { host: HUB, weights: null, threads: os.availableParallelism(), output: null, modelDir: null };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (!["--output", "--weights", "--threads", "--host", "--model-dir"].includes(flag) || value === undefined) throw new Error(USAGE);
    i++;
    if (flag === "--output") opts.output = value;
    if (flag === "--weights") opts.weights = value;
    if (flag === "--threads") opts.threads = Number(value);
    if (flag === "--host") opts.host = value.replace(/\/+$/, "");
    if (flag === "--model-dir") opts.modelDir = value;
  }
  if (!opts.output) throw new Error(USAGE);
  if (!Number.isInteger(opts.threads) || opts.threads < 1) throw new Error("--threads takes a whole number of at least 1");
  if (opts.host !== HUB && !/^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/.test(opts.host)) {
    throw new Error(`--host ${opts.host}: only the hub (${HUB}) or a loopback test host`);
  }
  return opts;
}

/** folderFetch answers a resolve URL from dir/<path>, as fetch would. */
function folderFetch(dir) {
  return async (url) => {
    const rel = decodeURIComponent(new URL(url).pathname).replace(/^\/[^/]+\/[^/]+\/resolve\/[^/]+\//, "");
    const file = path.join(dir, rel);
    if (!existsSync(file)) return new Response("missing", { status: 404 });
    return new Response(readFileSync(file));
  };
}

/** crossencode runs the whole scoring; log gets progress lines. Returns the engine's accepted run. */
export async function crossencode(opts, log = (line) => process.stderr.write(`${line}\n`)) {
  const { api } = await startEngine();
  let manifest;
  if (opts.host !== HUB && !opts.modelDir) {
    const res = await fetch(`${opts.host}/ragagent-model.json`);
    if (!res.ok) throw new Error(`${opts.host}/ragagent-model.json: HTTP ${res.status}`);
    manifest = await res.text();
  } else if (opts.modelDir && existsSync(path.join(opts.modelDir, "ragagent-model.json"))) {
    manifest = readFileSync(path.join(opts.modelDir, "ragagent-model.json"), "utf8");
  }
  const plan = await api.crossEncoderPlan(manifest);
  const model = plan.model;
  const weights = opts.weights || model.weights[0].id;
  log(`${model.model} at ${model.revision} (${model.license}), weights ${weights}; ${plan.calls.length} calls, ${plan.pairs} pairs`);
  let last = 0;
  const payload = await runScoring({
    host: opts.host, plan, weights, fetchFn: opts.modelDir ? folderFetch(opts.modelDir) : fetch,
    device: "cpu", threads: opts.threads, environment: { platform: `node ${process.version}`, cpus: os.cpus().length },
    T: async () => {
      const T = await import("@huggingface/transformers");
      T.env.logLevel = T.LogLevel?.ERROR ?? 40;
      return T;
    },
    onProgress: (p) => {
      if (p.phase === "verified") log(`  ${p.path}: verified, ${(p.loaded / 1e6).toFixed(1)} of ${(p.total / 1e6).toFixed(1)} MB`);
      else if (p.phase === "download" && p.loaded - last > 8e6) log(`  ${p.path}: ${(p.loaded / 1e6).toFixed(1)} of ${(p.total / 1e6).toFixed(1)} MB`);
      else if (p.phase === "load") log("  loading the model");
      else if (p.phase === "score" && (p.done % 4 === 0 || p.done === p.total)) log(`  scored ${p.done} of ${p.total} calls`);
      if (p.loaded) last = p.loaded;
    },
  });
  for (const [p, h] of Object.entries(payload.model.files)) log(`  ${p} sha256 ${h} (${payload.verification[p]})`);
  const run = await api.acceptCrossEncoder(payload);
  return { run, payload };
}

function report(run, payload, output) {
  const c = run.comparison;
  const t = payload.timings;
  const agree = (x) => (x ? "agrees" : "DIFFERS");
  return [
    `Wrote ${output}: ${run.recording.trials} calls (replay it: ragagent rerank --cross-encoder ${output})`,
    `Runtime: ${payload.environment["transformers.js"]} transformers.js, ${payload.environment.onnxruntime}, ${payload.environment.threads} thread(s), weights ${payload.environment.weights}`,
    `Timings: load ${t.load_ms} ms, first score ${t.first_score_ms} ms after the files were ready, ${t.inference_ms_per_pair} ms inference per pair (${t.pairs} pairs)`,
    `Against the published logits: max |difference| ${c.max_abs_diff.toPrecision(3)}, mean ${c.mean_abs_diff.toPrecision(3)} over ${c.pairs} pairs; ${c.orders_agree} of ${c.calls.length} orders agree; summary ${agree(c.summary.agrees)}`,
  ].join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  let code = 0;
  try {
    const opts = parseArgs(process.argv.slice(2));
    if (existsSync(opts.output)) throw new Error(`${opts.output} exists; choose a new output path`);
    const { run, payload } = await crossencode(opts);
    writeFileSync(opts.output, run.recording.text, { flag: "wx" });
    console.log(report(run, payload, opts.output));
  } catch (err) {
    console.error(`crossencode: ${err.message}`);
    code = 1;
  }
  await releaseTimers();
  process.exit(code);
}

export { root };
