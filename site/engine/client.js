// engine/client.js is the engine client, the only module that talks to the worker
// (worker.js, which hosts main.wasm and forwards each call to the engine's
// export of that name). It numbers calls and settles them, makes the
// stand-ins a call passes for what cannot cross to the worker (events,
// FETCH, LEDGER), hands each call's events (trial, step, case, pack,
// started) to its caller,
// reports start-up progress, relays the engine's live fetches (sent by
// key.js, which alone holds the key) and tells the page, and its other
// tabs, when the spending ledger changed (the worker keeps it in
// IndexedDB). The message protocol is described at the top of worker.js.

// LEDGER_KEY is where the page kept the spending ledger before it moved to
// IndexedDB: handed to the worker, which reads it until IndexedDB holds
// one, then dropped.
const LEDGER_KEY = "ragagent.ledger";
// Every tab of the site hears of a ledger change on this channel.
const ledgerChannel = typeof BroadcastChannel === "function" ? new BroadcastChannel("ragagent.ledger") : null;
const ledgerListeners = [];

// boot.js has usually started the worker already; else it is started here
// the same way. What the worker posted before connect() waits in `early`.
const boot = self.ragagentBoot ??= startWorker();
const worker = boot.worker;

function startWorker() {
  const started = { worker: new Worker("engine/worker.js"), early: [] };
  started.worker.onmessage = started.worker.onerror = (event) => started.early.push(event);
  return started;
}

let nextCall = 0;
const calls = new Map();
const inflight = new Map(); // live fetches by fetchId: their AbortControllers
let transport = null;
let onProgress = () => {};

let resolveReady, rejectReady;
/** ready settles with load()'s result once the engine has started (or why it could not). */
export const ready = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });

/** EngineError is an engine method's rejection: name, message, and a reason code and detail when it has them. */
export class EngineError extends Error {
  constructor(e) {
    super(e.message);
    this.name = e.name || "Error";
    this.code = e.code;
    this.detail = e.detail;
  }
}

/**
 * call invokes the engine's export op in the worker with args, as the
 * export takes them (wasm/main.go lists them), or one of the worker's own
 * operations (warmUp, memory, packLoad, docsStored, docsLoad, docsAdd,
 * docsRemove); onEvent sees its events. What cannot cross to the worker
 * is given as a stand-in, as an argument or a field of one:
 *   call("replay", [{}, events("trial", "done", "total", "trial")], onEvent)
 *   call("run", [spec, { onStep: events("step", "step", "observation"), post: FETCH }], onEvent)
 *   call("setBudget", [usd, LEDGER])
 * A job (run, rerankLive) first sends a started event with its runId, for
 * call("cancel", [runId]). A rejection is an EngineError with the engine's
 * reason code when it has one.
 */
export function call(op, args = [], onEvent) {
  const id = ++nextCall;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject, onEvent });
    worker.postMessage({ id, op, args });
  });
}

/**
 * events(name, ...fields) stands for a progress callback: each time the
 * engine calls it, the call's onEvent sees {event: name, ...}, the
 * callback's arguments under the names fields gives (with no fields, its
 * one object argument's own fields).
 */
export function events(name, ...fields) {
  return { standIn: "events", name, fields };
}

/** FETCH stands for the live-fetch hook, post(endpoint, body, opts): the
 * worker asks this page to send the request (key.send, through connect). */
export const FETCH = Object.freeze({ standIn: "fetch" });

/** LEDGER stands for the spending ledger's store, which the worker keeps in IndexedDB. */
export const LEDGER = Object.freeze({ standIn: "ledger" });

/**
 * connect starts listening to the worker, first handing over what it
 * posted before: progress(p) sees each start-up stage ({stage, at, ...};
 * "ready" carries info and main.wasm's ETag), send({url, body, signal}) is
 * how a live request goes out (key.send).
 */
export function connect({ progress, send }) {
  onProgress = progress;
  transport = send;
  let legacy = null;
  try {
    legacy = localStorage.getItem(LEDGER_KEY);
  } catch { /* storage blocked: nothing was kept there */ }
  worker.postMessage({ type: "legacyLedger", text: legacy });
  worker.onmessage = receive;
  worker.onerror = (event) => startup({ stage: "failed", message: event.message || "the engine worker failed to start" });
  for (const event of boot.early.splice(0)) (event.type === "error" ? worker.onerror : worker.onmessage)(event);
}

function receive(event) {
  const msg = event.data;
  if (msg.type === "progress") return startup(msg);
  if (msg.type === "fetch") return relayFetch(msg);
  if (msg.type === "abortFetch") return inflight.get(msg.fetchId)?.abort();
  if (msg.type === "ledgerChanged") return ledgerChanged();
  const pending = calls.get(msg.id);
  if (!pending) return;
  if (msg.event) {
    pending.onEvent?.(msg);
    return;
  }
  calls.delete(msg.id);
  if (msg.ok) pending.resolve(msg.value);
  else pending.reject(new EngineError(msg.error));
}

function startup(p) {
  onProgress(p);
  if (p.stage === "ready") resolveReady(p.info);
  if (p.stage === "failed") rejectReady(new Error(p.message));
}

/** relayFetch sends a live request for the engine and posts the outcome
 * back: {status, body}, or the error kind the engine expects (TimeoutError
 * once the engine's timeout passed, else URLError). */
async function relayFetch({ fetchId, endpoint, body, timeoutMs }) {
  const reply = (msg, transfer = []) => worker.postMessage({ fetchId, ...msg }, transfer);
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = typeof timeoutMs === "number" ? setTimeout(() => { timedOut = true; ctrl.abort(); }, timeoutMs) : null;
  inflight.set(fetchId, ctrl);
  try {
    const res = await transport({ url: endpoint, body, signal: ctrl.signal });
    reply({ type: "fetched", status: res.status, body: res.body }, [res.body.buffer]);
  } catch (err) {
    if (err && err.kind && !timedOut) return reply({ type: "fetchFailed", kind: err.kind, message: err.message });
    reply({ type: "fetchFailed", kind: timedOut ? "TimeoutError" : "URLError", message: timedOut ? "timed out" : "the request failed" });
  } finally {
    clearTimeout(timer);
    inflight.delete(fetchId);
  }
}

/**
 * onLedgerChange calls fn after another tab changed the spending ledger (a
 * budget, a reservation, its outcome), so the page can show it at once.
 */
export function onLedgerChange(fn) {
  ledgerListeners.push(fn);
}

if (ledgerChannel) ledgerChannel.onmessage = () => { for (const fn of ledgerListeners) fn(); };

/** ledgerChanged: this tab's engine changed the ledger; the copy kept in
 * localStorage before is no longer read, and the other tabs are told. */
function ledgerChanged() {
  try {
    localStorage.removeItem(LEDGER_KEY);
  } catch { /* storage blocked: nothing was kept there */ }
  ledgerChannel?.postMessage("changed");
}
