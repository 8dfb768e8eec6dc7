// worker.js hosts the engine (main.wasm) off the page's thread: start-up,
// FTS5 indexing, replays and runs happen here, so the page never freezes.
// It forwards each call to the engine's export of the same name (the API
// object wasm/main.go sets as globalThis.ragagent), with the arguments as
// the page gave them, so a new export needs no change here. What an export
// takes that cannot cross from the page (a progress callback, the live-fetch
// hook, the ledger's store) the page names with a stand-in, and the worker
// puts its own in its place (standIn, below). Besides the exports, a few
// operations of the worker's own (OPS: the warm-up, the memory figure, and
// the corpus picker's, in worker-packs.js).
// It speaks a small message protocol with the page's engine/client.js:
//   page -> worker  {id, op, args}                       call an export (or one of OPS)
//   worker -> page  {id, ok, value} | {id, ok: false, error: {name, message, code, detail}}
//   worker -> page  {id, event, ...}                     progress of a call: a stand-in callback's
//                                                        (trial, step, case, pack), or started {runId}
//                                                        for an engine job ({id, result}: run, rerankLive)
//   worker -> page  {type: "progress", stage, ...}       engine start-up ("ready" carries main.wasm's ETag)
//   worker -> page  {type: "fetch", fetchId, endpoint, body, timeoutMs}
//   page -> worker  {type: "fetched", fetchId, status, body} | {type: "fetchFailed", fetchId, kind, message}
//   worker -> page  {type: "abortFetch", fetchId}
// Live requests are fetched by the page, whose key.js alone holds the API key.
//   page -> worker  {type: "legacyLedger", text}    the ledger the page kept in localStorage before, or null
//   worker -> page  {type: "ledgerChanged"}          a change to the spending ledger was committed
// The spending ledger lives in IndexedDB, kept by this worker (below).
"use strict";

// The engine's download starts first, before Go's support script loads.
// This script is site/engine/worker.js; the files it fetches are named from
// the site's root (site/), as the page names them.
const SITE = new URL("../", self.location.href);
const download = fetch(new URL("main.wasm", SITE));
importScripts(new URL("wasm_exec.js", SITE).href, "worker-packs.js");

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
  wasmMemory = instance.exports.mem;
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
// WARM_ROUNDS rounds in slices, yielding between slices. It never stands
// in the way of what the person asked for: before each slice it waits
// until no other call has been in flight for WARM_IDLE_MS (so a pack
// opening, a search or a run has the worker to itself, and a call that
// arrives during a slice waits at most that slice), reporting
// event({stage: "paused" | "running", done, total}) as it pauses and goes
// on. The browser keeps compiled WASM across visits only for code V8
// optimised, and V8 optimises only code that ran often: this makes the
// start-up code hot once, so the next visit starts from cached optimised
// code (wasm/warm.go; measured in docs/page.md).
const WARM_ROUNDS = 100;
const WARM_SLICE = 2;
const WARM_IDLE_MS = 750;

// busy counts the page's calls in flight other than the warm-up's own;
// idleSince is when the last of them ended.
let busy = 0;
let idleSince = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const workerBusy = () => busy > 0 || performance.now() - idleSince < WARM_IDLE_MS;

async function warmUp(api, event = () => {}) {
  let ms = 0;
  let pausedMs = 0;
  let pauses = 0;
  const t0 = performance.now();
  for (let done = 0; done < WARM_ROUNDS; done += WARM_SLICE) {
    if (workerBusy()) {
      pauses++;
      event({ stage: "paused", done, total: WARM_ROUNDS });
      const p0 = performance.now();
      while (workerBusy()) await sleep(100);
      pausedMs += performance.now() - p0;
    }
    event({ stage: "running", done, total: WARM_ROUNDS });
    ms += (await api.warm(WARM_SLICE, done)).elapsed_ms;
    await sleep(0);
  }
  event({ stage: "running", done: WARM_ROUNDS, total: WARM_ROUNDS });
  return { rounds: WARM_ROUNDS, elapsed_ms: ms, wall_ms: performance.now() - t0, paused_ms: pausedMs, pauses };
}

// The engine's linear memory (Go's heap and SQLite's), for the
// benchmark's worker-memory figure (memory, below).
let wasmMemory = null;
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

// The spending ledger's store for the engine. Its text is kept in
// IndexedDB, which this worker reaches itself, and every change is one
// readwrite transaction: the latest text is read, the engine applies its
// change to it (apply is synchronous, so the transaction stays open) and
// the result is written. IndexedDB runs readwrite transactions on the same
// store one at a time across every tab and worker of the site, so tabs
// never reserve past the budget together or drop each other's entries.
// (localStorage cannot do this: a tab reads its own copy, which another
// tab's write reaches later, even inside a Web Lock; measured in
// docs/page.md.) A ledger the page kept in localStorage before is read
// until IndexedDB holds one; the page then drops it.
const LEDGER_DB = "ragagent-ledger";
const LEDGER_STORE = "ledger";
const LEDGER_ID = "ledger";
let legacyLedger = null;
let ledgerDB = null;

/** openStore opens an IndexedDB database of one object store (made on
 * first use): the ledger's here, the documents' in worker-packs.js. */
function openStore(name, store) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(store);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function openLedger() {
  if (!self.indexedDB) throw new Error("this browser gives the page no IndexedDB, where the spending ledger is kept");
  const db = await openStore(LEDGER_DB, LEDGER_STORE);
  // The site's data was cleared, or another version needs the database: open it again next time.
  db.onclose = () => { ledgerDB = null; legacyLedger = null; };
  db.onversionchange = () => { db.close(); ledgerDB = null; };
  return db;
}

/** ledgerTx runs work(text, store) on the ledger's latest text (null when
 * none is kept) in one transaction and resolves with its result once the
 * transaction has committed (durably, for a change). */
async function ledgerTx(mode, work) {
  const db = await (ledgerDB ??= openLedger().catch((err) => { ledgerDB = null; throw err; }));
  return new Promise((resolve, reject) => {
    const tx = db.transaction(LEDGER_STORE, mode, { durability: "strict" });
    const store = tx.objectStore(LEDGER_STORE);
    let out;
    const get = store.get(LEDGER_ID);
    get.onsuccess = () => {
      const kept = typeof get.result === "string";
      if (kept) legacyLedger = null;
      try {
        out = work(kept ? get.result : legacyLedger, store);
      } catch (err) {
        reject(err);
        tx.abort();
      }
    };
    tx.oncomplete = () => resolve(out);
    tx.onerror = tx.onabort = () => reject(tx.error || new Error("the ledger's transaction was aborted"));
  });
}

const ledgerStore = {
  load: () => ledgerTx("readonly", (text) => text),
  // apply returns the text to write, or null when the engine refused the
  // change (it knows why); other tabs are told of each change.
  async update(apply) {
    const wrote = await ledgerTx("readwrite", (text, store) => {
      const next = apply(text);
      if (typeof next !== "string") return false;
      store.put(next, LEDGER_ID);
      return true;
    });
    if (wrote) {
      legacyLedger = null;
      self.postMessage({ type: "ledgerChanged" });
    }
  },
};

function errorOf(err) {
  if (err && typeof err === "object") {
    return { name: err.name || "Error", message: String(err.message || err), code: err.code, detail: err.detail };
  }
  return { name: "Error", message: String(err) };
}

/** memory is the engine's linear memory and the worker's JS heap, in bytes. */
function memory() {
  return { wasm_bytes: wasmMemory ? wasmMemory.buffer.byteLength : 0, js_heap_bytes: performance.memory?.usedJSHeapSize ?? null };
}

// OPS are the worker's own operations, called as op(api, ...args): the
// warm-up's loop (over the engine's warm export), the memory figure, and
// the corpus picker's (worker-packs.js), which keep packs in Cache Storage
// and your documents in IndexedDB around the engine's loadPack and
// buildPack. Every other name is the engine's.
const OPS = { warmUp, memory, packLoad, docsStored, docsLoad, docsAdd, docsRemove };

// NOT_CALLED are exports the page may not call: exit ends the engine's
// program, which this worker owns for the page's lifetime.
const NOT_CALLED = new Set(["exit"]);

/**
 * standIn returns what a call's argument stands for. A stand-in is a plain
 * object {standIn: kind, ...} (engine/client.js makes them), given as an
 * argument or as a field of one (a hooks object):
 *   {standIn: "events", name, fields}  a callback that posts {id, event: name, ...}
 *        to the call, its arguments under the names in fields (with no
 *        fields, its one object argument's own fields)
 *   {standIn: "fetch"}   post, the live-fetch hook: the page sends the request
 *   {standIn: "ledger"}  the spending ledger's store in IndexedDB
 * Anything else crosses as it is.
 */
function standIn(id, v) {
  if (!isPlain(v)) return v;
  switch (v.standIn) {
    case undefined:
      return v;
    case "events": {
      const { name, fields } = v;
      return (...values) => self.postMessage({ id, event: name,
        ...(fields.length ? Object.fromEntries(fields.map((f, i) => [f, values[i]])) : values[0]) });
    }
    case "fetch":
      return post;
    case "ledger":
      return ledgerStore;
    default:
      throw new Error(`unknown stand-in ${JSON.stringify(v.standIn)}`);
  }
}

const isPlain = (v) => v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype;

/** withStandIns is an argument with its stand-ins replaced: itself, or its fields (a hooks object's). */
function withStandIns(id, arg) {
  const v = standIn(id, arg);
  if (v !== arg || !isPlain(arg)) return v;
  return Object.fromEntries(Object.entries(arg).map(([k, field]) => [k, standIn(id, field)]));
}

/** isJob says whether an export's value is an engine job, {id, result: Promise}. */
const isJob = (v) => v !== null && typeof v === "object" && typeof v.id === "number" && typeof v.result?.then === "function";

async function call(id, op, args) {
  const api = await engine;
  const given = args.map((a) => withStandIns(id, a));
  let value;
  if (Object.hasOwn(OPS, op)) value = await OPS[op](api, ...given);
  else if (typeof api[op] === "function" && !NOT_CALLED.has(op)) value = await api[op](...given);
  else throw new Error(`unknown operation ${op}`);
  if (!isJob(value)) return value;
  // A job returns at once: the page learns its id (cancel(id) stops it), then its result.
  self.postMessage({ id, event: "started", runId: value.id });
  return value.result;
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
  if (msg.type === "legacyLedger") {
    legacyLedger = typeof msg.text === "string" ? msg.text : null;
    return;
  }
  const { id, op, args } = msg;
  const counted = op !== "warmUp";
  if (counted) busy++;
  try {
    const value = await call(id, op, args || []);
    self.postMessage({ id, ok: true, value });
  } catch (err) {
    self.postMessage({ id, ok: false, error: errorOf(err) });
  } finally {
    if (counted) {
      busy--;
      idleSince = performance.now();
    }
  }
};
