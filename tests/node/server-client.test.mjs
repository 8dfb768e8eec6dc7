// openLab({ server, token }) runs retrieval on a team's server (`ragagent
// serve-api`, started here on a temporary database): the value is the one
// a local lab's retrieval returns for the same inputs, and the server
// holds the experiment it came from; progress reaches the total; the
// server's refusals reject with its codes; the token appears in no error;
// a signal cancels the experiment there; a broken event stream is
// resumed; with no event stream left for the token the experiment is
// read instead; a pack folder uploads and is
// ranked on. eval runs a scripted agent experiment there: the local
// lab's eval object for the same inputs, its measured seconds aside, and
// a signal cancels it on the server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import http from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { inspect, promisify } from "node:util";
import { createInterface } from "node:readline";
import { openLab, LabError } from "ragagent-lab";
import { root } from "./engine.mjs";
import { build } from "./cli.mjs";

const run = promisify(execFile);
const SMALL = readFileSync(path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv"), "utf8");
const PYTHON_CASES = readFileSync(path.join(root, "fixtures", "python-3.11-cases.json"), "utf8");
// The pepper the server keeps tokens' HMACs under (cmd/ragagent's
// RAGAGENT_TOKEN_PEPPER), a test value.
const PEPPER = "5c1d0e9a7b3f46e2a8d1c0b9f7e6d5c4b3a29180f7e6d5c4b3a2918070605040";

// Node's warnings, for the listener check (a leak warns past 10).
const warnings = [];
process.on("warning", (w) => warnings.push(w));

let dir, server, url, token, local, remote;
let serverLog = "";

before(async () => {
  const bin = await build();
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-server-client-"));
  const db = path.join(dir, "api.db");
  const env = { ...process.env, RAGAGENT_TOKEN_PEPPER: PEPPER };
  delete env.GOOGLE_API_KEY;
  delete env.GEMINI_API_KEY;
  ({ stdout: token } = await run(path.join(bin, "ragagent"), ["tokens", "add", "--db", db, "--name", "ci", "--scopes", "read,run,corpora"], { env }));
  token = token.trim();
  server = spawn(path.join(bin, "ragagent"), ["serve-api", "--db", db, "--addr", "127.0.0.1:0", "--streams-per-token", "1"], { env, stdio: ["ignore", "pipe", "pipe"] });
  // The server's log, kept (not printed) to tell why a test failed.
  server.stderr.on("data", (b) => { serverLog += b; });
  const [line] = await Promise.race([
    createInterface({ input: server.stdout })[Symbol.asyncIterator]().next().then((r) => [r.value]),
    new Promise((_, reject) => server.once("exit", (code) => reject(new Error(`serve-api exited ${code}`)))),
  ]);
  url = line.trim();
  [local, remote] = await Promise.all([openLab(), openLab({ server: url, token })]);
});

after(async () => {
  if (process.exitCode) console.error(serverLog);
  await remote?.close();
  await local?.close();
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// api is one request to the server with the token, its JSON answer: the
// test's own look at what the server holds.
async function api(method, where) {
  const r = await fetch(new URL(where, url), { method, headers: { Authorization: `Bearer ${token}` } });
  return r.json();
}

// longExperiment admits an experiment of the Python cases over and over
// (2000 of them) on the test's own, one the lab's experiments queue
// behind (the server runs one at a time) until the test cancels it.
async function longExperiment() {
  const set = JSON.parse(PYTHON_CASES);
  const many = Array.from({ length: 2000 }, (_, i) => ({ ...set.cases[i % set.cases.length], id: `c${i}` })).filter((c) => c.sources.length + (c.target_urls?.length ?? 0) > 0);
  const r = await fetch(new URL("/v1/experiments", url), { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ kind: "retrieval", corpus: "python-3.11", cases: { ...set, cases: many }, configs: ["seed"] }) });
  const held = await r.json();
  assert.equal(r.status, 202, JSON.stringify(held));
  return held;
}

// noToken asserts the token is nowhere in err: message, detail, stack, or
// anything inspect shows of it (its cause too).
function noToken(err) {
  assert.ok(err instanceof LabError, `a LabError: ${err}`);
  for (const text of [err.message, String(err.detail), String(err.stack), inspect(err, { depth: 10 }), JSON.stringify(err)]) {
    assert.ok(!text.includes(token), "the token is in the error");
    assert.ok(!text.includes(token.slice(-20)), "the token's secret is in the error");
  }
}

test("retrieval on the server returns what the local lab's retrieval returns: a TSV and a JSON set, names and a spec's JSON text, and the server holds that experiment", async () => {
  const fields = (await local.retrieval({ corpus: "python-3.11", cases: SMALL, configs: ["fields"], k: 5 })).configs[0].spec;
  const mine = { ...fields, name: "mine" };
  const rows = [
    [{ corpus: "python-3.11", cases: SMALL, configs: ["seed", "fields"], k: 5 }, {}],
    [{ corpus: "python-3.11", cases: PYTHON_CASES, configs: ["seed", mine] }, { configs: ["seed", JSON.stringify(mine)] }],
  ];
  for (const [opts, remoteOpts] of rows) {
    const before = (await api("GET", "/v1/experiments")).experiments.length;
    const progress = [];
    const got = await remote.retrieval({ ...opts, ...remoteOpts, onCase: (done, total) => progress.push([done, total]) });
    const want = await local.retrieval(opts);
    assert.deepEqual(got, want, JSON.stringify(remoteOpts));
    const listed = (await api("GET", "/v1/experiments")).experiments;
    assert.equal(listed.length, before + 1, "the server ran one experiment");
    const x = await api("GET", `/v1/experiments/${listed[0].id}`);
    assert.equal(x.state, "succeeded");
    assert.deepEqual(x.result, got, "the value is the server's result");
    assert.ok(progress.length > 0, "progress reached onCase");
    assert.deepEqual(progress.at(-1), [want.answerable * want.configs.length, want.answerable * want.configs.length], "progress reaches the total");
  }
});

test("the server's refusals reject with its codes and messages; a set the parser refuses is not sent", async () => {
  const before = (await api("GET", "/v1/experiments")).experiments.length;
  await assert.rejects(remote.retrieval({ corpus: "python-3.11", cases: "id\tquestion\ttarget_urls\nx\t\t-\n" }), (err) => {
    assert.equal(err.code, "invalid_cases");
    return true;
  });
  // Parsed fine, refused by the server against the pack: no answerable case.
  await assert.rejects(remote.retrieval({ corpus: "python-3.11", cases: "a\tHow do I install Django?\t-\n" }), (err) => {
    assert.equal(err.code, "invalid_cases");
    assert.ok(!err.message.startsWith("invalid_cases:"), `the server's message: ${err.message}`);
    return true;
  });
  await assert.rejects(remote.retrieval({ corpus: "no-such-pack" }), { code: "unknown_corpus", message: /no corpus "no-such-pack"/ });
  await assert.rejects(remote.retrieval({ corpus: "python-3.11", configs: ["no-such-config"] }), { code: "unknown_config" });
  await assert.rejects(remote.retrieval({ corpus: "python-3.11", configs: ["{not json"] }), { code: "invalid_config" });
  assert.equal((await api("GET", "/v1/experiments")).experiments.length, before, "nothing was admitted");
});

test("a wrong token rejects with the server's code, and no error carries the token", async () => {
  const wrong = await openLab({ server: url, token: token.slice(0, -4) + "0000" });
  try {
    await assert.rejects(wrong.retrieval({ corpus: "python-3.11", cases: SMALL }), (err) => {
      assert.equal(err.code, "unauthorized");
      noToken(err);
      return true;
    });
  } finally {
    await wrong.close();
  }
  for (const call of [() => remote.retrieval({ corpus: "no-such-pack" }), () => remote.retrieval({ corpus: "python-3.11", cases: "x\ty\n" })]) {
    await assert.rejects(call(), (err) => { noToken(err); return true; });
  }
  const down = await openLab({ server: "http://127.0.0.1:9", token });
  try {
    await assert.rejects(down.corpora(), (err) => { assert.equal(err.code, "server_unreachable"); noToken(err); return true; });
  } finally {
    await down.close();
  }
});

test("a server that is not http(s) is refused, local-only calls reject with not_on_server, a closed lab with lab_closed", async () => {
  for (const server of ["file:///etc/passwd", "ftp://example.com/", "not a url", `http://user:${token}@127.0.0.1/`]) {
    await assert.rejects(openLab({ server, token }), (err) => { assert.equal(err.code, "invalid_argument", server); noToken(err); return true; });
  }
  await assert.rejects(openLab({ server: url }), { code: "invalid_argument" });
  for (const name of ["replay", "run", "tune", "recording"]) {
    await assert.rejects(remote[name]({}), { code: "not_on_server" }, name);
  }
  await assert.rejects(remote.retrieval({ models: ["m"] }), { code: "not_on_server" });
  const lab = await openLab({ server: url, token });
  await lab.close();
  await assert.rejects(lab.retrieval({}), { code: "lab_closed" });
});

test("with the token's one stream taken, a retrieval follows its experiment by reading it, to the same value", async () => {
  // The test holds the token's one stream, following a long experiment
  // (the Python cases over and over, 2000 of them) that the lab's queues
  // behind, and cancels it once the lab's stream was refused.
  const auth = { Authorization: `Bearer ${token}` };
  const held = await longExperiment();
  assert.equal(held.state, "running", JSON.stringify(held));
  const stream = new AbortController();
  try {
    const events = await fetch(new URL(held.links.events, url), { headers: auth, signal: stream.signal });
    assert.equal(events.status, 200);
    await events.body.getReader().read(); // the stream is open, its slot taken
    const seen = [];
    const opts = { corpus: "python-3.11", cases: SMALL, configs: ["seed", "fields"] };
    const call = remote.retrieval({ ...opts, onCase: (done, total) => seen.push([done, total]) });
    for (let i = 0; !/events status=429/.test(serverLog); i++) {
      assert.ok(i < 500, "the lab's stream was refused");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const cancelled = await (await fetch(new URL(held.links.cancel, url), { method: "POST", headers: auth })).json();
    assert.equal(cancelled.state, "cancelled", "the held experiment was still running");
    const got = await call;
    assert.deepEqual(got, await local.retrieval(opts));
    assert.deepEqual(seen.at(-1), [2 * got.answerable, 2 * got.answerable], "polled progress reaches the total");
  } finally {
    stream.abort();
  }
});

test("an event stream that breaks is resumed after its last event: progress goes on to the total, no event twice", async () => {
  // A proxy in front of the server passes the first events request only
  // its first event, then drops the connection.
  const resumedFrom = [];
  let cut = true;
  const proxy = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = {};
    for (const h of ["authorization", "content-type", "accept", "last-event-id"]) if (req.headers[h] !== undefined) headers[h] = req.headers[h];
    const up = await fetch(new URL(req.url, url), { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
    res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
    const stream = req.url.endsWith("/events");
    if (stream) resumedFrom.push(req.headers["last-event-id"] ?? null);
    let text = "";
    for await (const c of up.body) {
      if (stream && cut) {
        text += Buffer.from(c).toString();
        const end = text.indexOf("\n\n");
        if (end < 0) continue;
        cut = false;
        // Dropped once the event is on its way, without the response's end.
        res.write(text.slice(0, end + 2), () => setTimeout(() => res.destroy(), 50));
        return;
      }
      res.write(c);
    }
    res.end();
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const lab = await openLab({ server: `http://127.0.0.1:${proxy.address().port}`, token });
  try {
    const seen = [];
    const opts = { corpus: "python-3.11", cases: SMALL, configs: ["seed", "fields"] };
    const got = await lab.retrieval({ ...opts, onCase: (done) => seen.push(done) });
    assert.deepEqual(got, await local.retrieval(opts));
    assert.deepEqual(resumedFrom, [null, "1"], "resumed once, after the first event");
    assert.deepEqual(seen, Array.from({ length: 2 * got.answerable }, (_, i) => i + 1), "each progress once, in order, to the total");
  } finally {
    await lab.close();
    proxy.closeAllConnections();
    proxy.close();
  }
});

test("a signal cancels the experiment on the server; close aborts an open stream and cancels nothing", async () => {
  const controller = new AbortController();
  await assert.rejects(remote.retrieval({ corpus: "python-3.11", cases: PYTHON_CASES, configs: ["all"], signal: controller.signal, onCase: () => controller.abort() }), { code: "cancelled" });
  const [cancelled] = (await api("GET", "/v1/experiments")).experiments;
  assert.equal(cancelled.state, "cancelled");
  assert.ok(cancelled.progress.done < cancelled.progress.total);

  const lab = await openLab({ server: url, token });
  let closing;
  await assert.rejects(lab.retrieval({ corpus: "python-3.11", configs: ["seed", "fields"], onCase: () => { closing ??= lab.close(); } }), { code: "lab_closed" });
  await closing;
  const [left] = (await api("GET", "/v1/experiments")).experiments;
  assert.notEqual(left.state, "cancelled", "close cancelled nothing");
});

test("a pack folder uploads as the token's own, is listed, and ranks as the local lab ranks the folder", async () => {
  const docs = path.join(dir, "docs");
  const pack = path.join(dir, "pack");
  mkdirSync(docs);
  writeFileSync(path.join(docs, "kettle.md"), "# Kettle\n\nDescale the kettle monthly with white vinegar and rinse it twice.\n\n## Filter\n\nThe limescale filter slides out of the spout for cleaning.\n");
  writeFileSync(path.join(docs, "toaster.md"), "# Toaster\n\nEmpty the crumb tray weekly; never use a knife to free bread.\n");
  await run(path.join(await build(), "ragagent"), ["corpus", "build", "--from", docs, "--out", pack, "--id", "team-notes", "--title", "Team notes", "--version", "1.0", "--base-url", "https://notes.example/", "--licence", "CC0-1.0", "--attribution", "The team", "--gzip"]);
  const up = await remote.uploadCorpus({ folder: pack });
  assert.equal(up.id, "team-notes");
  assert.equal(up.origin, "uploaded");
  assert.ok((await remote.packs()).includes("team-notes"));
  await assert.rejects(remote.uploadCorpus({ folder: pack }), { code: "corpus_exists" });
  const set = "descale\tHow do I descale the kettle?\thttps://notes.example/kettle.md\ncrumbs\tHow often do I empty the crumb tray?\thttps://notes.example/toaster.md\n";
  const got = await remote.retrieval({ corpus: "team-notes", cases: set, configs: ["seed"] });
  assert.deepEqual(got, await local.retrieval({ corpus: pack, cases: set, configs: ["seed"] }));
  assert.equal(got.corpus, "team-notes");

  // An experiment that ends failed rejects with its error: the pack
  // deleted while the experiment waited behind another.
  const held = await longExperiment();
  // Its rejection is taken at once: it may come while the test still awaits the cancel below.
  const failing = remote.retrieval({ corpus: "team-notes", cases: set, configs: ["seed"] }).then(() => null, (err) => err);
  let queued;
  for (let i = 0; i < 500 && queued === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    queued = (await api("GET", "/v1/experiments")).experiments.find((x) => x.corpus === "team-notes" && x.state === "queued");
  }
  assert.ok(queued, "the lab's experiment waits");
  assert.equal((await fetch(new URL("/v1/corpora/team-notes", url), { method: "DELETE", headers: { Authorization: `Bearer ${token}` } })).status, 204);
  await api("POST", held.links.cancel);
  const x = await failing;
  const ended = await api("GET", `/v1/experiments/${queued.id}`);
  assert.equal(ended.state, "failed");
  assert.ok(x instanceof LabError, String(x));
  assert.equal(x.code, ended.error.code);
  assert.equal(x.message, ended.error.message);
});

test("a lab's requests leave no listener behind: many calls on one lab and one signal raise no leak warning", async () => {
  const controller = new AbortController();
  for (let i = 0; i < 30; i++) await remote.corpora();
  for (let i = 0; i < 12; i++) await remote.retrieval({ corpus: "python-3.11", cases: SMALL, configs: ["seed"], signal: controller.signal });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message), []);
});

test("retrievalText is the result's bytes as the server sent them, and onState hears the experiment's states once each", async () => {
  const states = [];
  const text = await remote.retrievalText({ corpus: "python-3.11", cases: SMALL, configs: ["seed"], onState: (s, id) => states.push([s, id]) });
  const [x] = (await api("GET", "/v1/experiments")).experiments;
  const sent = await (await fetch(new URL(x.links.result, url), { headers: { Authorization: `Bearer ${token}` } })).text();
  assert.equal(text, sent);
  assert.deepEqual(JSON.parse(text), await local.retrieval({ corpus: "python-3.11", cases: SMALL, configs: ["seed"] }));
  const said = states.map(([s]) => s);
  assert.ok(["queued,running", "running"].includes(said.join()), `states: ${said}`);
  assert.ok(states.every(([, id]) => id === x.id), "each with the experiment's id");
});

// unmeasured is an eval object with its measured durations (each path's
// seconds and mean_seconds) set to 0: two runs of the same experiment
// differ only there.
function unmeasured(r) {
  return { ...r, experiment: { ...r.experiment, paths: r.experiment.paths.map((p) => ({ ...p, seconds: 0, mean_seconds: 0 })) } };
}

test("eval on the server returns what the local lab's eval returns for the same inputs, measured seconds aside, and the server holds that agent experiment", async () => {
  const fields = (await local.retrieval({ corpus: "python-3.11", cases: SMALL, configs: ["fields"], k: 5 })).configs[0].spec;
  const rows = [
    // A TSV set under the pack's default configuration.
    [{ corpus: "python-3.11", cases: SMALL }, {}],
    // The pack's own cases, a built-in's name.
    [{ corpus: "seed", config: "fields" }, {}],
    // A JSON set and a spec of one's own, sent as its JSON text.
    [{ corpus: "python-3.11", cases: PYTHON_CASES, config: { ...fields, name: "mine" } }, { config: JSON.stringify({ ...fields, name: "mine" }) }],
  ];
  for (const [opts, remoteOpts] of rows) {
    const progress = [];
    const states = [];
    const got = await remote.eval({ ...opts, ...remoteOpts, onTrial: (done, total) => progress.push([done, total]), onState: (st) => states.push(st) });
    const want = await local.eval(opts);
    assert.ok(got.experiment.paths.every((p) => p.seconds > 0), "the server measured its trials");
    assert.deepEqual(unmeasured(got), unmeasured(want), JSON.stringify(opts).slice(0, 80));
    const [x] = (await api("GET", "/v1/experiments")).experiments;
    assert.equal(x.kind, "agent");
    const held = await api("GET", `/v1/experiments/${x.id}`);
    assert.equal(held.state, "succeeded");
    assert.deepEqual(held.result, got, "the value is the server's result");
    assert.equal(held.request.policy, "scripted");
    assert.deepEqual(progress.at(-1), [want.cases.length, want.cases.length], "progress reaches the trials' count");
    assert.ok(["queued,running", "running"].includes(states.join()), `states: ${states}`);
  }
  const text = await remote.evalText({ corpus: "python-3.11", cases: SMALL });
  const [x] = (await api("GET", "/v1/experiments")).experiments;
  const sent = await (await fetch(new URL(x.links.result, url), { headers: { Authorization: `Bearer ${token}` } })).text();
  assert.equal(text, sent, "evalText is the result's bytes as the server sent them");
});

test("eval's refusals: the server's for another policy, a bad pack or set, and not_on_server for a recording", async () => {
  const before = (await api("GET", "/v1/experiments")).experiments.length;
  await assert.rejects(remote.eval({ corpus: "python-3.11", policy: "replay" }), { code: "unsupported_policy" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", policy: "gemini" }), { code: "unsupported_policy" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", policy: "nonsense" }), { code: "invalid_policy" });
  await assert.rejects(remote.eval({ corpus: "no-such-pack" }), { code: "unknown_corpus" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", config: "no-such-config" }), { code: "unknown_config" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", cases: "id\tquestion\ttarget_urls\nx\t\t-\n" }), { code: "invalid_cases" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", recording: "{}" }), { code: "not_on_server" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", onTrial: 1 }), { code: "invalid_argument" });
  await assert.rejects(remote.eval({ corpus: "python-3.11", nonsense: 1 }), { code: "invalid_argument" });
  assert.equal((await api("GET", "/v1/experiments")).experiments.length, before, "nothing was admitted");
});

test("a signal cancels an agent experiment on the server", async () => {
  const controller = new AbortController();
  await assert.rejects(remote.eval({ corpus: "python-3.11", cases: PYTHON_CASES, signal: controller.signal, onTrial: () => controller.abort() }), { code: "cancelled" });
  const [cancelled] = (await api("GET", "/v1/experiments")).experiments;
  assert.equal(cancelled.kind, "agent");
  assert.equal(cancelled.state, "cancelled");
  assert.ok(cancelled.progress.done < cancelled.progress.total, JSON.stringify(cancelled.progress));
  // Aborted before it is sent, nothing is admitted.
  const before = (await api("GET", "/v1/experiments")).experiments.length;
  await assert.rejects(remote.eval({ corpus: "python-3.11", signal: AbortSignal.abort() }), { code: "cancelled" });
  assert.equal((await api("GET", "/v1/experiments")).experiments.length, before);
});
