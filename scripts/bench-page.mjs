// bench-page.mjs measures the page (make bench-page; not a test): main.wasm
// sizes; the shell's first paint; cold and repeat-visit engine-ready time in
// headless Chromium (median of RUNS, default 5); the background warm-up that
// primes the code cache; replay-all in the browser and in node; FTS5 search
// latency in WASM against native Go; an experiment (every built-in
// retrieval configuration over the Python pack's 40-question natural set,
// fixtures/cases/python-3.11-natural.json) in Chromium's worker against
// `ragagent retrieval --json` natively, the same bytes out. It prints a
// Markdown table for docs/page.md. Every time is on the page's clock (from navigation start).
//
// SITE=dir measures another build of the site (for a before/after table);
// pages without the warm-up (older builds) are measured the same way.
import { statSync, existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { root, serveSite, launch, goBinary, startProcess } from "../tests/browser/harness.mjs";
import { startEngine } from "../tests/node/engine.mjs";

const RUNS = Number(process.env.RUNS || 5);
const SITE = path.resolve(process.env.SITE || path.join(root, "site"));
// The same queries as core/lab's BenchmarkPageSearch.
const QUERIES = JSON.parse(readFileSync(path.join(root, "core/lab/testdata/page-search-queries.json"), "utf8"));
// How long a visit waits after the warm-up before the next visit, so the
// browser has written its code cache (V8 caches a couple of seconds after
// the last optimised function).
const SETTLE_MS = 4000;

const median = (xs) => {
  const s = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (x) => Number.isNaN(x) ? "–" : `${Math.round(x)} ms`;
const runs = (xs) => `(runs: ${xs.map((x) => typeof x === "number" ? Math.round(x) : "–").join(", ")})`;
const size = (f) => existsSync(f) ? statSync(f).size : null;
const mb = (n) => n === null ? "–" : `${(n / 1e6).toFixed(2)} MB (${n} bytes)`;
const sleep = (t) => new Promise((r) => setTimeout(r, t));
const loadavg = () => readFileSync("/proc/loadavg", "utf8").trim();

/** sections reads a WASM file's code and data section sizes. */
function sections(file) {
  const b = readFileSync(file);
  const out = {};
  let p = 8;
  const leb = () => { let r = 0, s = 0, x; do { x = b[p++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return r; };
  while (p < b.length) {
    const id = b[p++];
    const n = leb();
    if (id === 10) out.code = n;
    if (id === 11) out.data = n;
    p += n;
  }
  return out;
}

/** visit opens url, waits for the bundled replay and reads the page's marks. */
async function visit(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 300000 });
  const t = await page.evaluate(() => {
    const at = (n) => performance.getEntriesByName(n)[0]?.startTime;
    return { shell: at("shell-rendered"), fcp: at("first-contentful-paint"), ready: at("engine-ready"), engine: document.body.dataset.engine, timings: { ...window.ragagentPage.timings } };
  });
  if (t.engine !== "ready") throw new Error(`the engine did not start: ${t.engine}`);
  return { page, t };
}

/** warmed waits for the page's warm-up; null for a page without one. */
async function warmed(page) {
  const state = await page.waitForFunction(() => document.body.dataset.warm, null, { timeout: 2000 }).then(() => true, () => false);
  if (!state) return null;
  const t0 = Date.now();
  await page.waitForFunction(() => ["done", "skipped", "failed"].includes(document.body.dataset.warm), null, { timeout: 600000 });
  return { wall: Date.now() - t0, state: await page.evaluate(() => document.body.dataset.warm), engine: await page.evaluate(() => window.ragagentPage.timings.warm?.elapsed_ms) };
}

async function replayAgain(page, n = 3) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(await page.evaluate(async () => {
      const t0 = performance.now();
      await window.ragagentPage.call("replay", [{}]);
      return performance.now() - t0;
    }));
  }
  return median(out);
}

async function searches(page) {
  return page.evaluate(async (qs) => {
    const out = [];
    for (let r = 0; r < 5; r++) for (const q of qs) {
      const res = await window.ragagentPage.call("search", [{ query: q, version: "3.12", k: 2 }]);
      out.push(res.elapsed_ms);
    }
    return out;
  }, QUERIES);
}

/** engineTag is main.wasm's ETag as the browser's worker sees it (the server
 * names the encoding in it, and Chromium asks for brotli). */
async function engineTag(url) {
  const b = await launch({ optimizing: true });
  try {
    const page = await b.context.newPage();
    await page.goto(`${url}favicon.svg`);
    return await page.evaluate(() => fetch("main.wasm", { method: "HEAD" }).then((r) => r.headers.get("ETag")));
  } finally {
    await b.close();
  }
}

async function browserFigures(url) {
  const f = { cold: [], shell: [], fcp: [], stages: [], replayFirst: [], warmWall: [], warmEngine: [], replayAgain: [], repeat: [], repeatStages: [], repeatReplay: [], searches: [], plain: [], plainReplay: [], warms: false };
  const etag = await engineTag(url);
  for (let i = 0; i < RUNS; i++) {
    // A fresh profile: the cold visit, the warm-up, then a repeat visit
    // (the tests' browsers report Save-Data, which skips the warm-up; this
    // one does not).
    const b = await launch({ warmUp: true });
    const first = await visit(b.context, url);
    f.cold.push(first.t.ready); f.shell.push(first.t.shell); f.fcp.push(first.t.fcp);
    f.stages.push(first.t.timings); f.replayFirst.push(first.t.timings.replayMs);
    const w = await warmed(first.page);
    if (w) { f.warms = true; f.warmWall.push(w.wall); f.warmEngine.push(w.engine); }
    f.replayAgain.push(await replayAgain(first.page));
    await first.page.close();
    await sleep(SETTLE_MS);
    const second = await visit(b.context, url);
    f.repeat.push(second.t.ready); f.repeatStages.push(second.t.timings); f.repeatReplay.push(second.t.timings.replayMs);
    f.searches.push(...(await searches(second.page)));
    await b.close();
    if (!f.warms) continue;
    // The same two visits with the warm-up switched off (its marker set
    // beforehand): what the code cache alone gives.
    const p = await launch({ warmUp: true });
    await p.context.addInitScript((tag) => localStorage.setItem("ragagent.warmed", tag), etag);
    const a = await visit(p.context, url);
    await a.page.close();
    await sleep(SETTLE_MS);
    const again = await visit(p.context, url);
    f.plain.push(again.t.ready); f.plainReplay.push(again.t.timings.replayMs);
    await p.close();
  }
  return f;
}

// The experiment: the set every built-in configuration ranks, the pack it
// ranks on, and the picker's option for it.
const EXP_SET = path.join(root, "fixtures", "cases", "python-3.11-natural.json");
const EXP_CORPUS = "python-3.11";
const EXP_RUNS = Number(process.env.EXP_RUNS || 3);

/** experimentFigures runs the experiment in the page's worker EXP_RUNS
 * times after the pack is open (the pack's opening timed apart), each
 * result's bytes kept to compare with the command's. */
async function experimentFigures(url) {
  const b = await launch({ optimizing: true });
  try {
    const page = await b.context.newPage();
    await page.goto(`${url}#experiments`);
    await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 300000 });
    const t0 = Date.now();
    await page.selectOption("#corpus-choice", EXP_CORPUS);
    await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 300000 });
    const open = Date.now() - t0;
    const cases = readFileSync(EXP_SET, "utf8");
    const times = [];
    let text = "";
    for (let i = 0; i < EXP_RUNS; i++) {
      const r = await page.evaluate(async ({ corpus, cases }) => {
        const t = performance.now();
        const v = await window.ragagentPage.call("retrieval", [{ corpus, cases, configs: ["all"] }]);
        return { ms: performance.now() - t, text: typeof v === "string" ? v : v.json };
      }, { corpus: EXP_CORPUS, cases });
      times.push(r.ms);
      text = r.text;
    }
    return { open, times, text };
  } finally {
    await b.close();
  }
}

/** experimentNative times `ragagent retrieval --json` on the same set (process start and pack open included). */
function experimentNative() {
  const bin = goBinary("./cmd/ragagent");
  const times = [];
  let text = "";
  for (let i = 0; i < EXP_RUNS; i++) {
    const t = performance.now();
    text = execFileSync(bin, ["retrieval", "--corpus", EXP_CORPUS, "--cases", EXP_SET, "--json"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    times.push(performance.now() - t);
  }
  return { times, text };
}

async function nodeFigures() {
  const { api, timings } = await startEngine(SITE);
  const t0 = performance.now();
  await api.replay({});
  const first = performance.now() - t0;
  const again = [];
  for (let i = 0; i < 5; i++) { const t = performance.now(); await api.replay({}); again.push(performance.now() - t); }
  const s = [];
  for (let r = 0; r < 5; r++) for (const q of QUERIES) s.push((await api.search({ query: q, version: "3.12", k: 2 })).elapsed_ms);
  return { timings, first, again: median(again), search: median(s.slice(QUERIES.length)) };
}

function nativeFigures() {
  const out = execFileSync("go", ["test", "./core/lab", "-run", "^$", "-bench", "^BenchmarkPage", "-benchtime", "20x"], { cwd: root, encoding: "utf8" });
  const fig = {};
  for (const m of out.matchAll(/^BenchmarkPage(\w+)-\d+\s+\d+\s+([\d.]+) ns\/op/gm)) fig[m[1]] = Number(m[2]) / 1e6;
  return fig;
}

const loadBefore = loadavg();
const site = await startProcess(goBinary("./cmd/serve"), ["--addr", "127.0.0.1:0", "--dir", SITE]);
const url = `${site.url}/`;
const wasm = path.join(SITE, "main.wasm");
const raw = size(wasm), gz = size(`${wasm}.gz`), br = size(`${wasm}.br`);
const sec = sections(wasm);
const chrome = process.env.EXPERIMENT_ONLY ? null : await browserFigures(url);
const expPage = await experimentFigures(url);
site.stop();
const expNative = experimentNative();
const expCases = JSON.parse(readFileSync(EXP_SET, "utf8")).cases.length;
const expConfigs = JSON.parse(expNative.text).configs.length;
const expLines = [
  `| experiment: ${expConfigs} built-in configurations over ${expCases} questions (${path.relative(root, EXP_SET)}), Chromium worker, pack open, median of ${EXP_RUNS} | ${ms(median(expPage.times))} ${runs(expPage.times)} |`,
  `| the same, \`ragagent retrieval --json\` natively (process start and pack open included), median of ${EXP_RUNS} | ${ms(median(expNative.times))} ${runs(expNative.times)} |`,
  `| ratio page / native: the page's first experiment (its searchers' statistics built then) / the median after it | ${(expPage.times[0] / median(expNative.times)).toFixed(1)}x / ${(median(expPage.times.slice(1)) / median(expNative.times)).toFixed(1)}x (aim: within 10x) |`,
  `| the page's result and the command's, byte for byte | ${expPage.text === expNative.text ? "equal" : "DIFFERENT"} |`,
  `| opening the Python pack in the page before it (fetch, gunzip, index) | ${ms(expPage.open)} |`,
];
if (!chrome) {
  console.log([`| figure | value |`, `| --- | --- |`, ...expLines, `| machine load average before / after | ${loadBefore} / ${loadavg()} |`].join("\n"));
  process.exit(0);
}
const node = await nodeFigures();
const native = nativeFigures();
const loadAfter = loadavg();

const stage = (list, key) => ms(median(list.map((s) => s[key])));
const lines = [
  `| figure | value |`,
  `| --- | --- |`,
  `| main.wasm raw (code / data sections) | ${mb(raw)} (${(sec.code / 1e6).toFixed(2)} / ${(sec.data / 1e6).toFixed(2)} MB) |`,
  `| main.wasm gzip -9 | ${mb(gz)} |`,
  `| main.wasm brotli -q 11 (served when present) | ${mb(br)} |`,
  `| first contentful paint (the static shell with its progress bar), median of ${RUNS} | ${ms(median(chrome.fcp))} ${runs(chrome.fcp)} |`,
  `| shell-rendered mark (the module shell ran), median | ${ms(median(chrome.shell))} |`,
  `| engine ready, cold (fresh profile), median of ${RUNS} | ${ms(median(chrome.cold))} ${runs(chrome.cold)} |`,
  `| cold stages, median (worker running / downloaded / Go started / indexed) | ${["download", "compile", "start", "ready"].map((k) => stage(chrome.stages, k)).join(" / ")} |`,
  `| replay all 16 trials in Chromium, first (right after ready, cold) | ${ms(median(chrome.replayFirst))} |`,
  chrome.warms ? `| background warm-up after the first replay (wall / engine) | ${ms(median(chrome.warmWall))} / ${ms(median(chrome.warmEngine))} ${runs(chrome.warmWall)} |` : `| background warm-up | none |`,
  `| replay all in Chromium, again (same visit${chrome.warms ? ", after the warm-up" : ""}) | ${ms(median(chrome.replayAgain))} |`,
  `| engine ready, repeat visit (same profile), median of ${RUNS} | ${ms(median(chrome.repeat))} ${runs(chrome.repeat)} |`,
  `| repeat stages, median (worker running / downloaded / Go started / indexed) | ${["download", "compile", "start", "ready"].map((k) => stage(chrome.repeatStages, k)).join(" / ")} |`,
  `| replay all in Chromium, first on the repeat visit | ${ms(median(chrome.repeatReplay))} |`,
  ...(chrome.warms ? [
    `| engine ready, repeat visit without the warm-up (code cache alone) | ${ms(median(chrome.plain))} ${runs(chrome.plain)} |`,
    `| replay all, first on that repeat visit | ${ms(median(chrome.plainReplay))} |`,
  ] : []),
  `| replay all in node, first / again | ${ms(node.first)} / ${ms(node.again)} |`,
  `| replay all natively, first on a fresh lab | ${native.FirstReplay.toFixed(2)} ms |`,
  `| engine start in node (instantiate / Go start / load) | ${ms(node.timings.instantiate)} / ${ms(node.timings.start)} / ${ms(node.timings.load)} |`,
  `| lab open natively (corpus, cases, FTS5 index) | ${native.Open.toFixed(2)} ms |`,
  `| search as the page asks it (FTS5, terms explained, snippets), WASM in Chromium (repeat visit), median of ${chrome.searches.length} | ${median(chrome.searches).toFixed(2)} ms |`,
  `| the same search, WASM in node, median | ${node.search.toFixed(2)} ms |`,
  `| FTS5 query with scores only, native Go | ${native.Search.toFixed(3)} ms |`,
  ...expLines,
  `| machine load average before / after | ${loadBefore} / ${loadAfter} |`,
];
console.log(lines.join("\n"));
process.exit(0);
