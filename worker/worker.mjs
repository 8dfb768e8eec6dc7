// The Worker's entry: one Go program per isolate, started by the first
// request and kept (the engine it opens serves every later request), with
// the two helpers the Go side awaits (D1 batches and Gemini requests), each
// one async function, so every I/O object it touches stays inside it.
// wasm_exec.js is syumai/workers' (Go's, with a per-program `context`).
import "./wasm_exec.js";
import mod from "./app.wasm";

let started; // the Go side's binding, once it said it is ready

// d1 runs statements ([sql, args] pairs) as D1 runs them: one alone, or a
// batch (one transaction); each statement's rows come back as arrays.
async function d1(db, stmts) {
  const prepared = stmts.map(([sql, args]) => db.prepare(sql).bind(...args));
  if (prepared.length === 1) {
    return [await prepared[0].raw()];
  }
  const results = await db.batch(prepared);
  return results.map((r) => (r.results ?? []).map((row) => Object.values(row)));
}

// gemini posts one generateContent request: only Content-Type and
// x-goog-api-key, no redirect followed, at most cap bytes of body read
// (one more tells the caller it was over), aborted with signal.
async function gemini(url, key, body, cap, signal) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-goog-api-key": key },
    body,
    redirect: "manual",
    signal,
  });
  const chunks = [];
  let size = 0;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > cap) {
        await reader.cancel();
        break;
      }
    }
  }
  const out = new Uint8Array(Math.min(size, cap + 1));
  let at = 0;
  for (const c of chunks) {
    const n = Math.min(c.byteLength, out.length - at);
    out.set(c.subarray(0, n), at);
    at += n;
  }
  return { status: res.status, body: out };
}

function start(env) {
  const binding = {};
  const go = new Go();
  return new Promise((resolve, reject) => {
    const instance = new WebAssembly.Instance(mod, {
      ...go.importObject,
      workers: { ready: () => resolve(binding) },
    });
    go.run(instance, { env, binding, d1, gemini }).then(
      () => reject(new Error("the Go program exited")),
      reject,
    );
  });
}

export default {
  async fetch(request, env, ctx) {
    started ??= start(env);
    const binding = await started;
    const response = await binding.handleRequest(request);
    // Runs go on after their response: the isolate is kept while any does.
    ctx.waitUntil(binding.settled());
    return response;
  },
};
