// engine.mjs starts the built engine (site/main.wasm with Go's
// wasm_exec.js, both made by `make wasm`) in this node process and returns
// its API object, the same object the page's worker uses.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";

const require = createRequire(import.meta.url);
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const site = path.join(root, "site");

let started;

/** startEngine instantiates the module (from dir, default site/) once per process and loads it. */
export function startEngine(dir = site) {
  started ??= (async () => {
    require(path.join(dir, "wasm_exec.js"));
    const go = new globalThis.Go();
    const ready = new Promise((resolve) => { globalThis.ragagentReady = resolve; });
    const t0 = performance.now();
    const { instance } = await WebAssembly.instantiate(readFileSync(path.join(dir, "main.wasm")), go.importObject);
    const t1 = performance.now();
    const exited = go.run(instance);
    const api = await ready;
    const t2 = performance.now();
    const info = await api.load();
    const t3 = performance.now();
    return { api, info, exited, go, timings: { instantiate: t1 - t0, start: t2 - t1, load: t3 - t2 } };
  })();
  return started;
}

/** bundled is the bundled comparison recording's text. */
export function bundled() {
  return readFileSync(path.join(root, "recordings", "agent-comparison.json"), "utf8");
}

/**
 * releaseTimers lets node exit once a file's tests are done. Under js/wasm
 * a Go timer that was stopped (a live call's 45 s timeout, after the call
 * ended) can stay scheduled as a JS timeout (wasm_exec's _scheduledTimeouts)
 * until it would have fired, holding the process that long. Call it from
 * after(): then nothing needs those timers any more.
 */
export async function releaseTimers() {
  if (!started) return;
  const { go } = await started;
  for (const t of go._scheduledTimeouts.values()) t.unref?.();
}
