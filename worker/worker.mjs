// The Worker's entry: one Go program per request (an instance of the
// module the isolate compiled once), which lives until the request's
// response is sent and the runs it started have ended. Workers ties every
// promise, timer and I/O object to the request that made it; a program
// shared by the isolate's requests had one request's cancel wait on
// another's fetch, and Workers cancelled it ("Promise will never
// complete"). The two helpers the Go side awaits (D1 batches, Gemini
// requests) are each one async function (internal/jsbridge.Await). wasm_exec.js is syumai/workers'
// (Go's, with a per-program `context`).
import "./wasm_exec.js";
import mod from "./app.wasm";

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

// gemini posts one generateContent request as internal/jsbridge's Fetch
// calls it (body a string, opts {signal, key, cap}): only Content-Type and
// x-goog-api-key, no redirect followed, at most cap bytes of body read
// (one more tells the caller it was over), aborted with signal.
async function gemini(url, body, { signal, key, cap }) {
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

// isolate is what the isolate's programs share: whether one of them has
// seen to D1's schema (then the others skip that batch).
const isolate = { schemaReady: false };

function start(env) {
  const binding = {};
  const go = new Go();
  return new Promise((resolve, reject) => {
    const instance = new WebAssembly.Instance(mod, {
      ...go.importObject,
      workers: { ready: () => resolve(binding) },
    });
    go.run(instance, { env, binding, d1, gemini, isolate }).then(
      () => reject(new Error("the Go program exited")),
      reject,
    );
  });
}

export default {
  async fetch(request, env, ctx) {
    const binding = await start(env);
    // A timer of this request's own, pending until its response has been
    // sent, keeps the runtime from taking a request that waits on the
    // program (a stream between two events) for hung.
    const alive = setInterval(() => {}, 1000);
    let response;
    try {
      response = await binding.handleRequest(request);
    } catch (e) {
      clearInterval(alive);
      throw e;
    }
    // Runs go on after their response: the request is kept while any does.
    ctx.waitUntil(binding.settled());
    if (!response.body) {
      clearInterval(alive);
      return response;
    }
    const { readable, writable } = new TransformStream();
    ctx.waitUntil(response.body.pipeTo(writable).catch(() => {}).finally(() => clearInterval(alive)));
    return new Response(readable, response);
  },
};
