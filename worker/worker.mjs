// The Worker's entry, and its run objects (class Runner, a Durable Object).
//
// The front: one Go program per isolate (started by its first request,
// role "front"), shared by every request the isolate serves. Workers ties
// each promise, timer and fetch to the request in whose turn it was made,
// and a request's I/O must settle before the request ends or it is lost
// (a shared program once had one request's cancel wait on another's
// fetch, "Promise will never complete"). So each request here:
//   - hands the program plain values only (its body read in its own
//     context), never an I/O object of its own;
//   - is the "current" request while its turns run: every turn that enters
//     the program is one this file sees begin (the request's start, the
//     settling of a helper's promise, a timer the program set), and the
//     helpers' promises and the program's timers are counted against the
//     request whose turn made them;
//   - stays (ctx.waitUntil) until everything counted against it has
//     settled, and keeps a timer of its own while it waits on the program,
//     so the runtime does not take it for hung.
// Runs do not live in requests: the front hands each to its run object.
//
// A run object (role "runner", one Go program per object): every turn of
// its program is the object's own, and the object outlives any request,
// so its runs go on without a client for as long as their limits allow;
// it serves their event streams, takes their cancels as calls, and keeps
// an alarm while it holds runs or runs wait, which, firing in a fresh
// object after an eviction, ends the runs the old one lost. Its
// experiments run in pieces, a round at each alarm (set soon while any
// runs), each from what D1 kept: a piece lost with the object loses
// nothing kept.
//
// wasm_exec.js is syumai/workers' (Go's, with a per-program `context`).
import "./wasm_exec.js";
import mod from "./app.wasm";
import { packs } from "./packs.mjs";
import { decodeBatch, encodeResults } from "./d1wire.mjs";
import { r2 } from "./r2.mjs";

// The helpers the Go side awaits (D1 batches, R2 operations on uploaded
// packs (r2.mjs), Gemini requests, calls to a run object) are each one
// async function (internal/jsbridge.Await).

// d1 runs a batch of statements as D1 runs them: one alone, or several
// as one transaction. The batch comes from the Go program, and each
// statement's rows go back to it, in the D1 wire form (d1wire.mjs).
async function d1(db, batch) {
  const stmts = decodeBatch(batch);
  if (counting) countD1(stmts);
  const prepared = stmts.map(([sql, args]) => db.prepare(sql).bind(...args));
  if (prepared.length === 1) {
    return encodeResults([await prepared[0].raw()]);
  }
  const results = await db.batch(prepared);
  return encodeResults(results.map((r) => (r.results ?? []).map((row) => Object.values(row))));
}

// counting is whether this isolate counts its D1 calls and times its
// streamed POSTs: RAGAGENT_D1_CALLS is "1" (make bench-server reads the
// counts; never on otherwise, where naming each call's kind would cost
// every call a dozen regular expressions for nothing).
let counting = false;

// d1Calls counts the isolate's D1 calls by kind (every program of the
// isolate: under wrangler dev the front and the run objects share one),
// answered at GET /_d1-calls.
const d1Calls = {};
// d1Statements counts the statements of those calls by the same kinds
// (a batch's statements each cost the local D1 a query).
const d1Statements = {};
// stages: when front requests arrived, had the front's answer, and had
// their run object's stream (first and last, ms since the first arrival).
const stages = {};
function stage(name) {
  if (!counting) return;
  const now = Date.now();
  stages.t0 ??= now;
  const s = (stages[name] ??= { n: 0, first: now - stages.t0 });
  s.n++;
  s.last = now - stages.t0;
}

// kinds caches d1Kind by SQL text: the store's statements are a fixed
// set, so a call costs the benchmark a lookup, not a dozen regular
// expressions (bounded all the same).
const kinds = new Map();

// d1Kind names what a D1 call is for, from its first statement's SQL.
function d1Kind(stmts) {
  const sql = stmts[0][0];
  let kind = kinds.get(sql);
  if (kind === undefined) {
    kind = kindOf(sql);
    if (kinds.size < 1000) kinds.set(sql, kind);
  }
  return kind;
}

function kindOf(sql) {
  const rules = [
    [/^INSERT INTO runs /, "admission"],
    [/json_each/, "steps and end"],
    [/AS n FROM events WHERE run_id/, "change (start, end, cancel)"],
    [/^INSERT INTO events /, "step events"],
    [/FROM tokens WHERE id = \?1$/, "token"],
    [/allowance/, "usage"],
    [/^SELECT .* FROM runs WHERE seq = \(/s, "promotion read"],
    [/FROM runs r\s+LEFT JOIN/, "events read (tail)"],
    [/^SELECT seq, type, data, at FROM events/, "events read"],
    [/FROM runs WHERE id = \?1$/, "run read"],
    [/FROM runs WHERE status = 'running' ORDER BY seq$/, "running read (recovery)"],
    [/FROM cancels/, "cancel poll"],
    [/INTO cancels/, "cancel request"],
    [/recordings/, "recording"],
    [/CREATE /, "schema"],
    [/^SELECT 1 WHERE EXISTS/, "promotion"],
    [/^SELECT \(SELECT count\(\*\) FROM runs WHERE status = 'running'/, "counts (recovery)"],
  ];
  for (const [re, kind] of rules) if (re.test(sql)) return kind;
  return "other: " + sql.slice(0, 60).replace(/\s+/g, " ");
}

function countD1(stmts) {
  const kind = d1Kind(stmts);
  d1Calls[kind] = (d1Calls[kind] ?? 0) + 1;
  d1Statements[kind] = (d1Statements[kind] ?? 0) + stmts.length;
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

// plain is a request as the Go programs take it: plain values, the body
// read here, in the request's own context.
async function plain(request) {
  const body = request.body ? new Uint8Array(await request.arrayBuffer()) : null;
  return { method: request.method, url: request.url, headers: [...request.headers], body };
}

// call has a run object's program answer one call whole (worker/runner.go).
async function call(program, request) {
  const out = await program.binding.call(await plain(request));
  return new Response(out.body, { status: out.status, headers: out.headers });
}

// streamed has a run object's program answer a call (req: plain values)
// whose body it writes as it goes (an event stream, worker/runner.go): the
// program pushes each chunk into a ReadableStream of this file's, which,
// cancelled (its reader gone: the client closed its connection, which
// workerd notices at the next write), calls gone; the program's pushes
// after that are dropped.
async function streamed(program, req, gone) {
  let controller;
  let open = true;
  const body = new ReadableStream({
    start(c) {
      controller = c;
    },
    cancel() {
      open = false;
      return gone();
    },
  });
  const sink = {
    push(chunk) {
      if (open) controller.enqueue(chunk);
    },
    close() {
      if (open) {
        open = false;
        controller.close();
      }
    },
  };
  const head = await program.binding.stream(req, sink);
  return new Response(body, { status: head.status, headers: head.headers });
}

// stub is the run object numbered shard.
function stub(env, shard) {
  return env.RUNNER.get(env.RUNNER.idFromName("runner-" + shard));
}

// runner makes one call to a run object (body a string, "" for none):
// its status and body text.
async function runner(env, shard, method, path, body) {
  const res = await stub(env, shard).fetch("https://runner" + path, {
    method,
    headers: { "X-Ragagent-Shard": String(shard) },
    body: body || undefined,
  });
  return { status: res.status, body: await res.text() };
}

// Pending counts what a request's turns started that has not settled.
class Pending {
  constructor() {
    this.n = 0;
    this.wake = [];
  }
  add() {
    this.n++;
  }
  done() {
    if (--this.n === 0) {
      for (const w of this.wake.splice(0)) w();
    }
  }
  // settled resolves once nothing counted is pending, and still nothing is
  // a turn later (a settling turn may start more).
  async settled() {
    for (;;) {
      if (this.n > 0) {
        await new Promise((r) => this.wake.push(r));
        continue;
      }
      await new Promise((r) => setTimeout(r, 0));
      if (this.n === 0) return;
    }
  }
}

// current is the request whose turn is running the front program now.
let current = null;

// counted wraps a helper: its promise is counted against the current
// request, and the turn it settles in is that request's again.
function counted(f) {
  return (...args) => {
    const owner = current;
    owner?.add();
    return f(...args).then(
      (v) => {
        current = owner;
        owner?.done();
        return v;
      },
      (e) => {
        current = owner;
        owner?.done();
        throw e;
      },
    );
  };
}

// countTimers makes the Go runtime's timers (it keeps one, for its
// sleeping goroutines) count against the request whose turn set them, and
// their turns that request's.
function countTimers(go) {
  const gojs = go.importObject.gojs;
  const owners = new Map();
  const schedule = gojs["runtime.scheduleTimeoutEvent"];
  const clear = gojs["runtime.clearTimeoutEvent"];
  gojs["runtime.scheduleTimeoutEvent"] = (sp) => {
    const owner = current;
    const set = globalThis.setTimeout;
    globalThis.setTimeout = (fn, ms) => {
      owner?.add();
      const t = set(() => {
        if (owners.delete(t)) owner?.done();
        current = owner;
        fn();
      }, ms);
      owners.set(t, owner);
      return t;
    };
    try {
      schedule(sp);
    } finally {
      globalThis.setTimeout = set;
    }
  };
  gojs["runtime.clearTimeoutEvent"] = (sp) => {
    const unset = globalThis.clearTimeout;
    globalThis.clearTimeout = (t) => {
      if (owners.has(t)) {
        const owner = owners.get(t);
        owners.delete(t);
        owner?.done();
      }
      unset(t);
    };
    try {
      clear(sp);
    } finally {
      globalThis.clearTimeout = unset;
    }
  };
}

// isolate is what the isolate's programs share: whether one of them has
// seen to D1's schema (then the others skip that batch).
const isolate = { schemaReady: false };

// start runs the Go program in a role: its binding once it is ready.
function start(role, env, helpers, extra = {}) {
  const binding = {};
  const go = new Go();
  if (role === "front") countTimers(go);
  return new Promise((resolve, reject) => {
    const instance = new WebAssembly.Instance(mod, {
      ...go.importObject,
      workers: { ready: () => resolve({ binding, instance }) },
    });
    go.run(instance, { role, env, binding, packs, isolate, ...helpers, ...extra }).then(
      () => reject(new Error("the Go program exited")),
      reject,
    );
  });
}

// memory is a program's WebAssembly memory in bytes (it only grows).
function memory(program) {
  return program.instance.exports.mem.buffer.byteLength;
}

let front = null;

function frontProgram(env) {
  if (!front) {
    front = start("front", env, {
      d1: counted(d1),
      r2: counted(r2),
      gemini: counted(gemini),
      runner: counted((shard, method, path, body) => runner(env, shard, method, path, body)),
    });
  }
  return front;
}

function misconfigured(message) {
  return Response.json(
    { error: { code: "unavailable", message: "the Worker is misconfigured: " + message } },
    { status: 503 },
  );
}

// wakeRunners has every run object see to its alarm (Runner's wake),
// once an isolate's front has started: an object whose alarm was lost
// with its process (a restart of the local Worker loses the pending
// alarms; on Cloudflare they last) and whom no request reaches would
// otherwise never end the runs it lost (TestWorkerRecoversTheRunsOfAKilledProcess).
async function wakeRunners(env, n) {
  await Promise.all(
    Array.from({ length: n }, async (_, shard) => {
      const res = await stub(env, shard).fetch("https://runner/runner/wake", {
        method: "POST",
        headers: { "X-Ragagent-Shard": String(shard) },
      });
      await res.arrayBuffer();
    }),
  );
}

// forwardable are the front's marker headers (worker/front.go), never sent on.
const FORWARD = "x-ragagent-forward";
const SHARD = "x-ragagent-runner";

export default {
  async fetch(request, env, ctx) {
    counting = env.RAGAGENT_D1_CALLS === "1";
    if (counting && new URL(request.url).pathname === "/_d1-calls") {
      const { t0, ...rest } = stages;
      return Response.json({
        ...d1Calls,
        ...Object.fromEntries(Object.entries(d1Statements).map(([k, n]) => ["statements " + k, n])),
        ...Object.fromEntries(Object.entries(rest).map(([k, v]) => ["stage " + k + " (n, first ms, last ms)", [v.n, v.first, v.last]])),
      });
    }
    const mine = new Pending();
    const alive = setInterval(() => {}, 1000);
    try {
      if (request.method === "POST") stage("1 arrived");
      const fresh = front === null;
      const program = await frontProgram(env);
      if (program.binding.error) return misconfigured(program.binding.error);
      if (fresh) {
        ctx.waitUntil(wakeRunners(env, program.binding.runners).catch((e) => console.error("waking the run objects: " + e)));
      }
      const req = await plain(request);
      current = mine;
      const out = await program.binding.serve(req);
      current = mine;
      if (request.method === "POST") stage("2 front answered");
      const headers = new Headers(out.headers);
      const path = headers.get(FORWARD);
      if (path === null) {
        return new Response(request.method === "HEAD" ? null : out.body, { status: out.status, headers });
      }
      // A run's event stream: its object serves it.
      const shard = Number(headers.get(SHARD));
      headers.delete(FORWARD);
      headers.delete(SHARD);
      const res = await stub(env, shard).fetch("https://runner" + path, {
        headers: { "X-Ragagent-Shard": String(shard) },
        signal: request.signal,
      });
      if (request.method === "POST") stage("3 object's stream began");
      if (res.status !== 200) return res;
      for (const [k, v] of res.headers) headers.set(k, v);
      return new Response(res.body, { status: 200, headers });
    } finally {
      clearInterval(alive);
      ctx.waitUntil(mine.settled());
    }
  },
};

// ALARM_MS is how often a run object that holds or awaits runs wakes to
// recover the runs an eviction lost and start queued ones.
const ALARM_MS = 15_000;

// pause is how long a run object waits between two rounds of its
// experiments' pieces (RAGAGENT_EXPERIMENT_PAUSE_MS, 0 by default: the
// next round's alarm is set for now). Tests set it to stage a restart
// between two rounds.
function pause(env) {
  const ms = Number(env.RAGAGENT_EXPERIMENT_PAUSE_MS ?? 0);
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

// answer has a program answer one call whole: its status and its JSON.
async function answer(program, path) {
  const out = await program.binding.call({ method: "POST", url: "https://runner" + path, headers: [], body: null });
  if (out.status !== 200) throw new Error(path + ": " + out.status + " " + new TextDecoder().decode(out.body));
  return JSON.parse(new TextDecoder().decode(out.body));
}

export class Runner {
  constructor(state, env) {
    this.state = state;
    this.env = env;
    counting = env.RAGAGENT_D1_CALLS === "1";
    this.program = null;
    this.said = 0; // the memory last logged (bytes)
    this.streams = 0; // the streams served so far (each one's name)
    this.armed = false; // whether this instance has set the alarm
  }

  // run starts the object's program once (its promise is set before any
  // await, so two calls never start two); its shard comes with the first
  // call (the front's header) or from storage (an alarm).
  run(shard) {
    this.program ??= (async () => {
      if (shard === null) shard = (await this.state.storage.get("shard")) ?? 0;
      else await this.state.storage.put("shard", shard);
      const env = this.env;
      const began = Date.now();
      const program = await start("runner", env, {
        d1,
        r2,
        gemini,
        runner: (s, method, path, body) => runner(env, s, method, path, body),
      }, { shard });
      console.log(`run object ${shard}: program started in ${Date.now() - began} ms`);
      return program;
    })();
    return this.program;
  }

  // soon sets the alarm ms from now (an experiment's next round): before
  // any alarm pending, which keepAlarm then leaves.
  async soon(ms) {
    await this.state.storage.setAlarm(Date.now() + ms);
    this.armed = true;
  }

  // experiments has the program start queued experiments and sets the
  // alarm for now when the object runs any (after a restart: those it
  // left running, which its rounds resume from what D1 kept).
  async experiments(program) {
    const { running } = await answer(program, "/runner/experiments");
    if (running > 0) await this.soon(0);
  }

  // keepAlarm sets the alarm unless this instance has and it is pending.
  // An instance's first call sets it anew even when one is stored: a local
  // Worker's workerd keeps the time of a pending alarm across a restart
  // but never fires it (TestWorkerRecoversTheRunsOfAKilledProcess).
  async keepAlarm() {
    if (!this.armed || (await this.state.storage.getAlarm()) === null) {
      await this.state.storage.setAlarm(Date.now() + ALARM_MS);
      this.armed = true;
    }
  }

  async fetch(request) {
    const header = request.headers.get("X-Ragagent-Shard");
    if (new URL(request.url).pathname === "/runner/wake") {
      // A front has started: an alarm, so that the runs this object lost
      // end (its alarm then recovers them, or finds nothing to do), and
      // its program, started now rather than by the first run handed to
      // it, which would otherwise wait for the Go runtime and the engine
      // to start (TestWorker logs how long that takes).
      await this.keepAlarm();
      this.run(header === null ? null : Number(header))
        .then((program) => (program.binding.error ? null : this.experiments(program)))
        .catch((e) => console.error("starting the run object's program: " + e));
      return new Response(null, { status: 204 });
    }
    const program = await this.run(header === null ? null : Number(header));
    if (program.binding.error) return misconfigured(program.binding.error);
    const url = new URL(request.url);
    if (url.pathname === "/runner/start") {
      await this.keepAlarm();
      // What the isolate holds in WebAssembly memory (it only grows), against
      // Workers' 128 MB an isolate: this object's program, and the front's
      // when it shares the isolate (it does under wrangler dev). Said when it
      // has grown, not at every start: under wrangler dev each console line
      // crosses its DevTools session to node.
      const fronts = front ? memory(await front) : 0;
      if (memory(program) + fronts > this.said) {
        this.said = memory(program) + fronts;
        console.log(`run object memory: ${memory(program)} bytes; front program ${fronts} bytes`);
      }
    }
    if (url.pathname === "/runner/experiments") {
      // An experiment this object owns runs (the front or another object
      // started it): its rounds begin at the alarm, set for now.
      const res = await call(program, request);
      const { running } = await res.clone().json();
      if (running > 0) await this.soon(0);
      return res;
    }
    if (url.pathname !== "/runner/events") return call(program, request);
    // A stream goes under a name of its own: when its reader goes, the
    // program is told through /runner/gone, and its stream ends as a
    // native one does when its client goes (the run cancelled if it
    // asked, on_disconnect "cancel").
    const key = String(++this.streams);
    url.searchParams.set("stream", key);
    const gone = async () => {
      await program.binding.call({ method: "POST", url: "https://runner/runner/gone?stream=" + key, headers: [], body: null });
    };
    return streamed(program, { method: request.method, url: url.href, headers: [...request.headers], body: null }, gone);
  }

  async alarm() {
    const program = await this.run(null);
    if (program.binding.error) return;
    const res = await call(program, new Request("https://runner/runner/recover", { method: "POST" }));
    const { held, queued, grace } = await res.json();
    // A round of the experiments' pieces: each ends within the piece's
    // bounds, well within the CPU an alarm may spend.
    const { running, kept } = await answer(program, "/runner/experiments/piece");
    console.log(`run object: ${held} runs held, ${queued} queued, ${grace} not held in their grace; ${running} experiments running (${kept} kept this round); memory ${Math.round(memory(program) / 1048576)} MiB`);
    this.armed = false; // this one has fired
    if (running > 0) await this.soon(pause(this.env));
    else if (held > 0 || queued > 0 || grace > 0) await this.keepAlarm();
  }
}
