// worker.js hosts the engine (main.wasm) off the page's thread: start-up,
// FTS5 indexing, replays and runs happen here, so the page never freezes.
// It speaks a small message protocol with the page's engine.js:
//   page -> worker  {id, op, args}                       call an API method
//   worker -> page  {id, ok, value} | {id, ok: false, error}
//   worker -> page  {id, event, ...}                     progress of a call (trial, step, case, started, pack)
//   worker -> page  {type: "progress", stage, ...}       engine start-up ("ready" carries main.wasm's ETag)
//   worker -> page  {type: "fetch", fetchId, endpoint, body, timeoutMs}
//   page -> worker  {type: "fetched", fetchId, status, body} | {type: "fetchFailed", fetchId, kind, message}
//   worker -> page  {type: "abortFetch", fetchId}
// Live requests are fetched by the page, whose key.js alone holds the API key.
//   worker -> page  {type: "storage", storageId, op: "load" | "save", text}
//   page -> worker  {type: "stored", storageId, ok, value, message}
// The spending ledger lives in the page's localStorage, which a worker
// cannot reach, so its load/save bridge is relayed the same way.
"use strict";

// The engine's download starts first, before Go's support script loads.
const download = fetch("main.wasm");
importScripts("wasm_exec.js", "worker-packs.js");

const started = performance.now();
const since = () => Math.round(performance.now() - started);
// ms is on the worker's clock (from this script's start); at is wall-clock
// time, which the page turns into its own clock.
const progress = (stage, extra = {}) => self.postMessage({ type: "progress", stage, ms: since(), at: performance.timeOrigin + performance.now(), ...extra });

// countDownload reads a clone of the response only to report progress;
// the original goes to instantiateStreaming untouched, so the browser can
// stream-compile it and keep its compiled code for the next visit.
async function countDownload(response) {
  const total = Number(response.headers.get("X-Decoded-Length")) || 0;
  const reader = response.clone().body.getReader();
  let loaded = 0;
  let last = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    loaded += value.byteLength;
    if (loaded - last >= 512 * 1024 || loaded === total) {
      last = loaded;
      progress("download", { loaded, total });
    }
  }
  progress("compile", { loaded, total });
}

async function boot() {
  progress("download", { loaded: 0, total: 0 });
  const go = new Go();
  const ready = new Promise((resolve) => { self.ragagentReady = resolve; });
  const response = await download;
  if (!response.ok) throw new Error(`main.wasm: HTTP ${response.status}`);
  const etag = response.headers.get("ETag") || "";
  const counting = countDownload(response).catch(() => {});
  const { instance } = await WebAssembly.instantiateStreaming(response, go.importObject);
  await counting;
  memory = instance.exports.mem;
  progress("start");
  go.run(instance).then(() => progress("exited"));
  const api = await ready;
  if (api.version !== "ragagent-wasm/1") throw new Error(`unexpected engine API ${api.version}`);
  progress("index");
  const info = await api.load();
  progress("ready", { info, etag });
  return api;
}

// warmUp repeats the engine's start-up on throwaway labs in the background,
// WARM_ROUNDS rounds in slices, yielding between slices so the page's own
// calls wait at most one slice. The browser keeps compiled WASM across
// visits only for code V8 optimised, and V8 optimises only code that ran
// often: this makes the start-up code hot once, so the next visit starts
// from cached optimised code (wasm/warm.go; measured in docs/page.md).
const WARM_ROUNDS = 100;
const WARM_SLICE = 2;

async function warmUp(api) {
  let ms = 0;
  for (let done = 0; done < WARM_ROUNDS; done += WARM_SLICE) {
    ms += (await api.warm(WARM_SLICE, done)).elapsed_ms;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return { rounds: WARM_ROUNDS, elapsed_ms: ms };
}

// The engine's linear memory (Go's heap and SQLite's), for the
// benchmark's worker-memory figure.
let memory = null;
const engine = boot();
engine.catch((err) => progress("failed", { message: String(err && err.message || err) }));

// Live fetches in flight, by id: the page answers each.
const fetches = new Map();
let nextFetch = 0;

// post is the engine's transport hook: the page fetches with the key.
function post(endpoint, body, opts) {
  return new Promise((resolve, reject) => {
    const fetchId = ++nextFetch;
    fetches.set(fetchId, { resolve, reject });
    const signal = opts && opts.signal;
    if (signal) {
      signal.addEventListener("abort", () => {
        if (!fetches.delete(fetchId)) return;
        self.postMessage({ type: "abortFetch", fetchId });
        reject({ kind: "TimeoutError", message: "the request was stopped" });
      }, { once: true });
    }
    self.postMessage({ type: "fetch", fetchId, endpoint, body, timeoutMs: opts && opts.timeoutMs });
  });
}

// The ledger's store for the engine: each load or save is answered by the page.
const stored = new Map();
let nextStorage = 0;
function storage(op, text) {
  return new Promise((resolve, reject) => {
    const storageId = ++nextStorage;
    stored.set(storageId, { resolve, reject });
    self.postMessage({ type: "storage", storageId, op, text });
  });
}
const ledgerStore = { load: () => storage("load"), save: (text) => storage("save", text) };

function errorOf(err) {
  if (err && typeof err === "object") {
    return { name: err.name || "Error", message: String(err.message || err), code: err.code, detail: err.detail };
  }
  return { name: "Error", message: String(err) };
}

async function call(id, op, args) {
  const api = await engine;
  switch (op) {
    case "replay":
      return api.replay(args[0] || {}, (done, total, trial) => self.postMessage({ id, event: "trial", done, total, trial }));
    case "run": {
      const handle = api.run(args[0], {
        post,
        onStep: (step, observation) => self.postMessage({ id, event: "step", step, observation }),
      });
      self.postMessage({ id, event: "started", runId: handle.id });
      return handle.result;
    }
    case "rerankLive": {
      const handle = api.rerankLive(args[0], {
        post,
        store: ledgerStore,
        onCase: (done, total) => self.postMessage({ id, event: "case", done, total }),
      });
      self.postMessage({ id, event: "started", runId: handle.id });
      return handle.result;
    }
    case "rerankPlan":
      return api.rerankPlan(args[0], ledgerStore);
    case "ledger":
      return api.ledger(ledgerStore);
    case "setBudget":
      return api.setBudget(args[0], ledgerStore);
    case "rerank": case "rerankRecording":
    case "crossEncoderPlan": case "acceptCrossEncoder":
      return api[op](...args);
    case "cancel":
      return api.cancel(args[0]);
    case "warm":
      return warmUp(api);
    case "load": case "corpus": case "search": case "plan": case "policies": case "recording": case "exchanges": case "exportOTLP":
    case "packInfo": case "passage": case "packCases":
      return api[op](...args);
    // The corpus picker (worker-packs.js): events carry each stage's progress.
    case "packLoad":
      return packLoad(api, args[0], (e) => self.postMessage({ id, event: "pack", ...e }));
    case "docsStored":
      return docsStored();
    case "docsLoad":
      return docsLoad(api, (e) => self.postMessage({ id, event: "pack", ...e }));
    case "docsAdd":
      return docsAdd(api, args[0], (e) => self.postMessage({ id, event: "pack", ...e }));
    case "docsRemove":
      return docsRemove(api);
    case "memory":
      return { wasm_bytes: memory ? memory.buffer.byteLength : 0, js_heap_bytes: performance.memory?.usedJSHeapSize ?? null };
    default:
      throw new Error(`unknown operation ${op}`);
  }
}

self.onmessage = async (event) => {
  const msg = event.data || {};
  if (msg.type === "fetched" || msg.type === "fetchFailed") {
    const pending = fetches.get(msg.fetchId);
    if (!pending) return;
    fetches.delete(msg.fetchId);
    if (msg.type === "fetched") pending.resolve({ status: msg.status, body: msg.body });
    else pending.reject({ kind: msg.kind, message: msg.message });
    return;
  }
  if (msg.type === "stored") {
    const pending = stored.get(msg.storageId);
    if (!pending) return;
    stored.delete(msg.storageId);
    if (msg.ok) pending.resolve(msg.value ?? null);
    else pending.reject(new Error(msg.message || "the page could not use its storage"));
    return;
  }
  const { id, op, args } = msg;
  try {
    const value = await call(id, op, args || []);
    self.postMessage({ id, ok: true, value });
  } catch (err) {
    self.postMessage({ id, ok: false, error: errorOf(err) });
  }
};
