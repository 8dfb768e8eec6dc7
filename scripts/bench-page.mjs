// bench-page.mjs measures the page (make bench-page; not a test): main.wasm
// sizes; cold and repeat-visit engine-ready time in headless Chromium
// (median of 5); time to the rendered shell showing progress; replay-all in
// the browser and in node; FTS5 search latency in WASM against native Go.
// It prints a Markdown table for docs/page.md.
import { statSync, existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { root, serveSite, launch } from "../tests/browser/harness.mjs";
import { startEngine } from "../tests/node/engine.mjs";

const RUNS = Number(process.env.RUNS || 5);
// The same queries as core/lab's BenchmarkPageSearch.
const QUERIES = JSON.parse(readFileSync(path.join(root, "core/lab/testdata/page-search-queries.json"), "utf8"));

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const ms = (x) => `${Math.round(x)} ms`;
const size = (f) => existsSync(f) ? statSync(f).size : null;
const mb = (n) => n === null ? "–" : `${(n / 1e6).toFixed(2)} MB (${n} bytes)`;

async function visit(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 180000 });
  const t = await page.evaluate(() => {
    const mark = (n) => performance.getEntriesByName(n)[0]?.startTime;
    const fcp = performance.getEntriesByName("first-contentful-paint")[0]?.startTime;
    return { shell: mark("shell-rendered"), fcp, ready: mark("engine-ready"), replay: window.ragagentPage.timings.replayMs, timings: window.ragagentPage.timings };
  });
  return { page, t };
}

async function browserFigures(url) {
  const cold = [], repeat = [], shell = [], fcp = [], replayFirst = [], replayAgain = [], searches = [], stages = [];
  for (let i = 0; i < RUNS; i++) {
    const b = await launch();
    const first = await visit(b.context, url);
    cold.push(first.t.ready); shell.push(first.t.shell); fcp.push(first.t.fcp); replayFirst.push(first.t.replay);
    stages.push(first.t.timings);
    // a warm replay and searches on the first visit's engine
    const again = await first.page.evaluate(async () => {
      const t0 = performance.now();
      const rep = await window.ragagentPage.call("replay", [{}]);
      return { wall: performance.now() - t0, engine: rep.elapsed_ms };
    });
    replayAgain.push(again.wall);
    const s = await first.page.evaluate(async (qs) => {
      const out = [];
      for (let r = 0; r < 5; r++) for (const q of qs) {
        const res = await window.ragagentPage.call("search", [{ query: q, version: "3.12", k: 2 }]);
        out.push(res.elapsed_ms);
      }
      return out;
    }, QUERIES);
    searches.push(...s);
    await first.page.close();
    await new Promise((r) => setTimeout(r, 1500));
    const second = await visit(b.context, url);
    repeat.push(second.t.ready);
    await b.close();
  }
  return { cold, repeat, shell, fcp, replayFirst, replayAgain, searches, stages };
}

async function nodeFigures() {
  const { api, timings } = await startEngine();
  const t0 = performance.now();
  await api.replay({});
  const first = performance.now() - t0;
  const again = [];
  for (let i = 0; i < 5; i++) { const t = performance.now(); await api.replay({}); again.push(performance.now() - t); }
  const searches = [];
  for (let r = 0; r < 5; r++) for (const q of QUERIES) searches.push((await api.search({ query: q, version: "3.12", k: 2 })).elapsed_ms);
  return { timings, first, again: median(again), search: median(searches.slice(QUERIES.length)) };
}

function nativeFigures() {
  const out = execFileSync("go", ["test", "./core/lab", "-run", "^$", "-bench", "^BenchmarkPage", "-benchtime", "20x"], { cwd: root, encoding: "utf8" });
  const fig = {};
  for (const m of out.matchAll(/^BenchmarkPage(\w+)-\d+\s+\d+\s+([\d.]+) ns\/op/gm)) fig[m[1]] = Number(m[2]) / 1e6;
  return fig;
}

const site = await serveSite();
const url = `${site.url}/`;
const raw = size(path.join(root, "site/main.wasm"));
const gz = size(path.join(root, "site/main.wasm.gz"));
const br = size(path.join(root, "site/main.wasm.br"));
const chrome = await browserFigures(url);
site.stop();
const node = await nodeFigures();
const native = nativeFigures();
const load = execFileSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).trim();

const lines = [
  `| figure | value |`,
  `| --- | --- |`,
  `| main.wasm raw | ${mb(raw)} |`,
  `| main.wasm gzip -9 | ${mb(gz)} |`,
  `| main.wasm brotli -q 11 (served when present) | ${mb(br)} |`,
  `| shell rendered with progress (mark after the module ran), median of ${RUNS} | ${ms(median(chrome.shell))} |`,
  `| first contentful paint, median | ${ms(median(chrome.fcp))} |`,
  `| engine ready, cold (fresh profile), median of ${RUNS} | ${ms(median(chrome.cold))} (runs: ${chrome.cold.map(Math.round).join(", ")}) |`,
  `| engine ready, repeat visit (same profile), median of ${RUNS} | ${ms(median(chrome.repeat))} (runs: ${chrome.repeat.map(Math.round).join(", ")}) |`,
  `| cold stages, median (download done / compiled / Go started / indexed) | ${["compile", "start", "index", "ready"].map((k) => ms(median(chrome.stages.map((s) => s[k])))).join(" / ")} |`,
  `| replay all 16 trials in Chromium, first (right after ready) | ${ms(median(chrome.replayFirst))} |`,
  `| replay all in Chromium, again | ${ms(median(chrome.replayAgain))} |`,
  `| replay all in node, first / again | ${ms(node.first)} / ${ms(node.again)} |`,
  `| replay all natively, first on a fresh lab | ${native.FirstReplay.toFixed(2)} ms |`,
  `| engine start in node (instantiate / Go start / load) | ${ms(node.timings.instantiate)} / ${ms(node.timings.start)} / ${ms(node.timings.load)} |`,
  `| lab open natively (corpus, cases, FTS5 index) | ${native.Open.toFixed(2)} ms |`,
  `| FTS5 search, WASM in Chromium, median of ${chrome.searches.length} | ${median(chrome.searches).toFixed(2)} ms |`,
  `| FTS5 search, WASM in node, median | ${node.search.toFixed(2)} ms |`,
  `| FTS5 search, native Go | ${native.Search.toFixed(3)} ms |`,
  `| machine load average during the run | ${load} |`,
];
console.log(lines.join("\n"));
process.exit(0);
