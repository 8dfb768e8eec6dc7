// crossencoder-worker.js scores the cross-encoder off the page's thread (a
// module worker of its own, started by crossencoder.js, apart from the
// engine's worker). It runs crossencoder-scorer.mjs with transformers.js
// and ONNX Runtime Web from site/vendor/ (copied there from the pinned npm
// packages by `make vendor`, never fetched from a CDN), loaded only once
// every model file has checked out, and keeps the verified files in the
// browser's Cache API for later visits.
// Its messages with crossencoder.js:
//   page -> worker  {id, op: "score", host, plan, weights}
//   worker -> page  {id, event: {phase, ...}}            progress (crossencoder-scorer.mjs's events)
//   page -> worker  {id, op: "cached", host, model, weights}  which of the files the cache holds
//   page -> worker  {id, op: "forget"}                    empty the cache
//   worker -> page  {id, ok: true, value} | {id, ok: false, error: {name, message, kind, path}}

import { runScoring, filesFor, fileURL } from "./crossencoder-scorer.mjs";

/** CACHE is the Cache API store of verified model files, by resolve URL. */
const CACHE = "ragagent-model-files-v1";

let transformers = null;

/** runtime loads transformers.js and points ONNX Runtime Web at its WebAssembly in site/vendor/. */
async function runtime() {
  if (!transformers) {
    const T = await import("../vendor/transformers.min.js");
    const wasm = T.env.backends.onnx.wasm;
    wasm.wasmPaths = {
      mjs: new URL("../vendor/ort-wasm-simd-threaded.mjs", import.meta.url).href,
      wasm: new URL("../vendor/ort-wasm-simd-threaded.wasm", import.meta.url).href,
    };
    // One thread: WebAssembly threads need a cross-origin isolated page.
    wasm.numThreads = 1;
    T.env.logLevel = 40;
    transformers = T;
  }
  return transformers;
}

const store = {
  async get(url) {
    const hit = await (await caches.open(CACHE)).match(url);
    return hit ? { bytes: new Uint8Array(await hit.arrayBuffer()), sha256: hit.headers.get("x-ragagent-sha256") } : null;
  },
  async put(url, bytes, sha256) {
    const headers = { "content-type": "application/octet-stream", "x-ragagent-sha256": sha256 };
    await (await caches.open(CACHE)).put(url, new Response(bytes, { headers }));
  },
  async delete(url) {
    await (await caches.open(CACHE)).delete(url);
  },
};

function browser() {
  const m = /(Chrome|Firefox|Version)\/[\d.]+/.exec(navigator.userAgent);
  return m ? `browser (${m[0].replace("Version", "Safari")})` : "browser";
}

async function handle({ id, op, host, plan, model, weights }) {
  switch (op) {
    case "score":
      return runScoring({
        T: runtime, host, plan, weights, fetchFn: fetch, store, device: "wasm", threads: 1,
        environment: { platform: browser() },
        onProgress: (event) => self.postMessage({ id, event }),
      });
    case "cached": {
      const cache = await caches.open(CACHE);
      const out = {};
      for (const f of filesFor(model, weights)) out[f.path] = Boolean(await cache.match(fileURL(host, model, f.path)));
      return out;
    }
    case "forget":
      return caches.delete(CACHE);
    default:
      throw new Error(`unknown operation ${op}`);
  }
}

self.onmessage = async (event) => {
  const msg = event.data || {};
  try {
    self.postMessage({ id: msg.id, ok: true, value: await handle(msg) });
  } catch (err) {
    self.postMessage({ id: msg.id, ok: false, error: { name: err?.name || "Error", message: String(err?.message || err), kind: err?.kind, path: err?.path } });
  }
};
