// bench-packs.mjs measures the Python pack (make bench-packs; not a test),
// natively and compiled to WebAssembly side by side in one run, with the
// machine's load average before and after (the machine is shared: compare
// the ratios): the pack made ready from its bytes (size and sha256
// checked, the image opened, the cases' targets looked up) and searched
// for 200 queries (fixtures/packs/testdata/queries.json, k 5, with snippets, as the
// Corpus view does), in
//   - native Go (go test -bench in fixtures/packs/),
//   - the engine (main.wasm) in node,
//   - @sqlite.org/sqlite-wasm in node on the same image bytes and queries
//     (SQLite's own C build; a comparison only, never the product): the
//     agent's query with FTS5's bm25() and snippet() in SQL,
//   - headless Chromium (the page: a fresh profile picks the pack, then
//     visits again with its bytes in Cache Storage, twice), with the
//     worker's WASM memory.
// RUNS (default 3) sets the Chromium visits' repeats.
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { root, serveSite, launch } from "../tests/browser/harness.mjs";
import { startEngine } from "../tests/node/engine.mjs";

const RUNS = Number(process.env.RUNS || 3);
const K = 5;
const PACK = "python-3.11";
const dir = path.join(root, "fixtures", "packs", PACK);
const manifestText = readFileSync(path.join(dir, "manifest.json"), "utf8");
const manifest = JSON.parse(manifestText);
const bytes = new Uint8Array(gunzipSync(readFileSync(path.join(dir, manifest.passages_file))));
const QUERIES = JSON.parse(readFileSync(path.join(root, "fixtures/packs/testdata/queries.json"), "utf8"));
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const sleep = (t) => new Promise((r) => setTimeout(r, t));

const sorted = (xs) => xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
const pct = (xs, p) => { const s = sorted(xs); return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : NaN; };
const median = (xs) => pct(xs, 0.5);
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "–");

/** goBench runs the packs benchmarks natively, or compiled to WASM under
 * node (wasm: true; Go's own sha256 there, not SubtleCrypto). */
function goBench(wasm = false) {
  const goroot = execFileSync("go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
  const env = wasm ? { ...process.env, GOOS: "js", GOARCH: "wasm", PATH: `${goroot}/lib/wasm:${process.env.PATH}` } : process.env;
  const flags = wasm ? ["-gcflags=github.com/ncruces/go-sqlite3-wasm/v6/...=-B", "-bench", "PythonPack(Agent)?Search"] : ["-bench", "PythonPack"];
  const out = execFileSync("go", ["test", "./fixtures/packs", "-run", "^$", ...flags, "-benchtime", "200x"], { cwd: root, encoding: "utf8", env });
  const fig = {};
  for (const m of out.matchAll(/^BenchmarkPythonPack(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns\/op(.*)$/gm)) {
    const extra = Object.fromEntries([...m[3].matchAll(/([\d.]+) (\S+)/g)].map((x) => [x[2], Number(x[1])]));
    fig[m[1]] = { ms: Number(m[2]) / 1e6, ...extra };
  }
  return fig;
}

async function nodeFigures() {
  const { api, go } = await startEngine();
  await sleep(0); // V8 finishes its own work on the new module first (see docs/page.md)
  await sleep(100);
  const opens = [];
  for (let i = 0; i < 5; i++) {
    await api.removePack(PACK).catch(() => {});
    const t0 = performance.now();
    await api.loadPack(manifestText, bytes);
    opens.push(performance.now() - t0);
  }
  const wall = [];
  const engine = [];
  for (let pass = 0; pass < 2; pass++) {
    for (const q of QUERIES) {
      const t0 = performance.now();
      const r = await api.search({ corpus: PACK, query: q, version: manifest.default_version, k: K });
      if (pass === 1) { wall.push(performance.now() - t0); engine.push(r.elapsed_ms); }
    }
  }
  return { opens, wall, engine, wasmBytes: go._inst.exports.mem.buffer.byteLength };
}

async function sqliteWasmFigures() {
  const jswasm = path.join(root, "node_modules/@sqlite.org/sqlite-wasm/sqlite-wasm/jswasm");
  // The package is built for browsers: give it the globals it reads and
  // its .wasm file's bytes.
  globalThis.self ??= globalThis;
  globalThis.location ??= new URL(`file://${jswasm}/sqlite3.mjs`);
  const { default: init } = await import(path.join(jswasm, "sqlite3.mjs"));
  const sqlite3 = await init({ wasmBinary: readFileSync(path.join(jswasm, "sqlite3.wasm")), print: () => {}, printErr: () => {} });
  const { capi, wasm } = sqlite3;
  const t0 = performance.now();
  const db = new sqlite3.oo1.DB(":memory:");
  const p = wasm.allocFromTypedArray(bytes);
  const rc = capi.sqlite3_deserialize(db.pointer, "main", p, bytes.byteLength, bytes.byteLength,
    capi.SQLITE_DESERIALIZE_FREEONCLOSE | capi.SQLITE_DESERIALIZE_READONLY);
  if (rc) throw new Error(`sqlite3_deserialize: ${rc}`);
  db.selectValue("SELECT count(*) FROM meta");
  const open = performance.now() - t0;
  const terms = (q) => [...new Set((q.toLowerCase().match(/[a-z0-9]+/g) || []))].map((t) => `"${t}"`).join(" OR ");
  const run = (sql) => {
    const stmt = db.prepare(sql);
    const times = [];
    for (let pass = 0; pass < 2; pass++) {
      for (const q of QUERIES) {
        const t = performance.now();
        stmt.bind([terms(q), manifest.default_version, K]);
        while (stmt.step()) stmt.get([]);
        stmt.reset();
        if (pass === 1) times.push(performance.now() - t);
      }
    }
    stmt.finalize();
    return times;
  };
  const snippets = run(`SELECT rowid, bm25(passages), snippet(passages, 1, '⟦', '⟧', '…', 24) FROM passages
    WHERE passages MATCH ?1 AND version = ?2 ORDER BY bm25(passages), rowid LIMIT ?3`);
  const bm25 = run(`SELECT rowid, bm25(passages) FROM passages WHERE passages MATCH ?1 AND version = ?2 ORDER BY bm25(passages), rowid LIMIT ?3`);
  db.close();
  return { version: sqlite3.version.libVersion, open, snippets, bm25 };
}

/** visit opens the page, waits for its engine, replay and warm-up, and for
 * the corpus it opens by itself (the one chosen last time). */
async function visit(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 300000 });
  await page.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.corpus), null, { timeout: 300000 });
  return page;
}

const corpusTimings = (page) => page.evaluate(() => ({ ...window.ragagentPage.timings.corpus }));
const warmed = (page) => page.waitForFunction(() => ["done", "skipped", "failed"].includes(document.body.dataset.warm), null, { timeout: 600000 });

async function chromiumFigures(url) {
  const out = { network: [], cold: [], repeat: [], wall: [], engine: [], wasmBytes: [] };
  for (let i = 0; i < RUNS; i++) {
    const b = await launch({ optimizing: true });
    // Visit 1: the seed, the warm-up done, then the pack chosen: downloaded.
    const first = await visit(b.context, url);
    await warmed(first);
    await first.selectOption("#corpus-choice", PACK);
    await first.waitForFunction(() => document.body.dataset.corpus !== "loading", null, { timeout: 300000 });
    out.network.push(await corpusTimings(first));
    await first.close();
    await sleep(3000);
    // Visits 2 and 3: the remembered pack opens from Cache Storage while
    // the page starts (beside the bundled replay).
    const second = await visit(b.context, url);
    out.cold.push(await corpusTimings(second));
    await warmed(second);
    await second.close();
    await sleep(3000);
    const third = await visit(b.context, url);
    out.repeat.push(await corpusTimings(third));
    await warmed(third);
    for (let pass = 0; pass < 2; pass++) {
      const r = await third.evaluate(async ({ qs, k, pack, version }) => {
        const wall = [];
        const engine = [];
        for (const q of qs) {
          const t = performance.now();
          const res = await window.ragagentPage.call("search", [{ corpus: pack, query: q, version, k }]);
          wall.push(performance.now() - t);
          engine.push(res.elapsed_ms);
        }
        return { wall, engine };
      }, { qs: QUERIES, k: K, pack: PACK, version: manifest.default_version });
      if (pass === 1) { out.wall.push(...r.wall); out.engine.push(...r.engine); }
    }
    out.wasmBytes.push((await third.evaluate(() => window.ragagentPage.call("memory"))).wasm_bytes);
    await b.close();
  }
  return out;
}

const before = loadavg();
const native = goBench();
const goWasm = goBench(true);
const node = await nodeFigures();
const lite = await sqliteWasmFigures();
const site = await serveSite();
const chrome = await chromiumFigures(`${site.url}/#corpus`);
site.stop();
const after = loadavg();

const ms = (list, key) => median(list.map((t) => t[key]));
const nat = native.Search;
const rows = [
  ["pack ready from its bytes (checked, opened, cases looked up), median", `${f(native.Open.ms)} ms`, `${f(median(node.opens))} ms`, `${f(lite.open)} ms (deserialize only)`,
    `from the cache, cold ${f(ms(chrome.cold, "ms"))} ms (engine ${f(ms(chrome.cold, "open_ms"))}, cache read ${f(ms(chrome.cold, "read_ms"))}); repeat ${f(ms(chrome.repeat, "ms"))} ms (engine ${f(ms(chrome.repeat, "open_ms"))}); first visit with the download ${f(ms(chrome.network, "ms"))} ms`],
  ["search with snippets, p50 / p95 (k 5, 200 queries, second pass)", `${f(nat["p50-ms"], 2)} / ${f(nat["p95-ms"], 2)} ms`,
    `${f(median(node.wall), 2)} / ${f(pct(node.wall, 0.95), 2)} ms`, `${f(median(lite.snippets), 2)} / ${f(pct(lite.snippets, 0.95), 2)} ms`,
    `${f(median(chrome.wall), 2)} / ${f(pct(chrome.wall, 0.95), 2)} ms (engine ${f(median(chrome.engine), 2)} / ${f(pct(chrome.engine, 0.95), 2)})`],
  ["the same, as a multiple of native (p50 / p95)", "1", `${f(median(node.wall) / nat["p50-ms"])}x / ${f(pct(node.wall, 0.95) / nat["p95-ms"])}x`,
    `${f(median(lite.snippets) / nat["p50-ms"])}x / ${f(pct(lite.snippets, 0.95) / nat["p95-ms"])}x`,
    `${f(median(chrome.wall) / nat["p50-ms"])}x / ${f(pct(chrome.wall, 0.95) / nat["p95-ms"])}x`],
  ["the agent's search (k 3, no snippet), p50 / p95", `${f(native.AgentSearch["p50-ms"], 3)} / ${f(native.AgentSearch["p95-ms"], 3)} ms`,
    `${f(goWasm.AgentSearch["p50-ms"], 3)} / ${f(goWasm.AgentSearch["p95-ms"], 3)} ms (go test, GOOS=js; ${f(goWasm.AgentSearch["p50-ms"] / native.AgentSearch["p50-ms"])}x / ${f(goWasm.AgentSearch["p95-ms"] / native.AgentSearch["p95-ms"])}x)`,
    `bm25 only: ${f(median(lite.bm25), 2)} / ${f(pct(lite.bm25, 0.95), 2)} ms`, ""],
  ["memory", `${f(native.Open.heapMB)} MB Go heap held by the open pack`, `${f(node.wasmBytes / 1048576)} MiB WASM memory`, "",
    `${f(median(chrome.wasmBytes) / 1048576)} MiB worker WASM memory`],
];
console.log(`| figure (load average ${before} before, ${after} after; 2 cores) | native Go | engine WASM in node | sqlite-wasm ${lite.version} in node | engine WASM in Chromium (${RUNS} profiles) |`);
console.log("| --- | --- | --- | --- | --- |");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
process.exit(0);
