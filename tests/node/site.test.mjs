// The page's modules (site/) read as source, and the pure ones run in node:
// only key.js touches the key, its storage or its header (server.js the
// team server's token); no module writes
// HTML; no engine constant is written in the page (they come from load(),
// whose values are read from the built engine here); index.html preloads
// every module; each view exports mount; and the formatting and endpoint
// helpers behave.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { startEngine, site } from "./engine.mjs";

// Go's own wasm_exec.js is copied in by make wasm, and vendor/ (the
// cross-encoder's transformers.js and ONNX Runtime Web) by make vendor: not
// the page's code.
const NOT_OURS = new Set(["wasm_exec.js", "vendor"]);

// The workers' own scripts: engine/boot.js starts the engine's worker;
// engine/worker.js and the script it imports (engine/worker-packs.js) run
// inside it; the cross-encoder's worker and scorer (rerank/) run in theirs.
// Never loaded by the page.
const WORKERS = ["engine/boot.js", "engine/worker.js", "engine/worker-packs.js", "rerank/crossencoder-worker.js", "rerank/crossencoder-scorer.mjs"];

function modules(dir = site, prefix = "") {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix + e.name;
    if (NOT_OURS.has(rel)) continue;
    if (e.isDirectory()) out.push(...modules(path.join(dir, e.name), `${rel}/`));
    else if (/\.m?js$/.test(e.name)) out.push(rel);
  }
  return out.sort();
}

const files = modules();
const source = Object.fromEntries(files.map((f) => [f, readFileSync(path.join(site, f), "utf8")]));
const html = readFileSync(path.join(site, "index.html"), "utf8");

/** load imports a module that touches no document (site/package.json makes the page's .js files ES modules for node). */
const load = (f) => import(pathToFileURL(path.join(site, f)).href);

let constants;
before(async () => { ({ info: { constants } } = await startEngine()); });

test("the page's modules are the expected ones", () => {
  for (const f of ["app.js", "engine/client.js", "engine/boot.js", "engine/worker.js", "common/key.js", "common/server.js", "common/serverlab.js", "common/dom.js", "common/state.js", "common/flow.js",
    "trace/trial.js", "rerank/crossencoder.js", "rerank/crossencoder-worker.js", "rerank/crossencoder-scorer.mjs"]) {
    assert.ok(files.includes(f), f);
  }
  const views = files.filter((f) => f.endsWith("/view.js"));
  assert.deepEqual(views, ["compare/view.js", "corpus/view.js", "experiments/view.js", "recordings/view.js", "replay/view.js", "rerank/view.js", "run/view.js", "runs/view.js", "trace/view.js"]);
  for (const v of views) assert.match(source[v], /^export function mount\(/m, `${v} exports mount`);
});

test("only key.js reads the key field, its storage or its header", () => {
  const keyOnly = ["run-key", "run-remember", "ragagent.key", "x-goog-api-key"];
  for (const word of keyOnly) {
    assert.ok(source["common/key.js"].includes(word), `common/key.js has ${word}, so this test can find it`);
    for (const f of files) {
      if (f !== "common/key.js") assert.ok(!source[f].includes(word), `${f} mentions ${word}`);
    }
  }
});

test("only server.js reads the team server's token field or its storage, and only the client it makes (serverlab.js) sends the token", () => {
  for (const word of ["srv-token", "srv-remember", "ragagent.server", "new ServerLab("]) {
    assert.ok(source["common/server.js"].includes(word), `common/server.js has ${word}, so this test can find it`);
    for (const f of files) {
      if (f !== "common/server.js") assert.ok(!source[f].includes(word), `${f} mentions ${word}`);
    }
  }
  for (const f of files) {
    if (f !== "common/serverlab.js") assert.doesNotMatch(source[f], /Authorization|Bearer /, `${f} sends a token itself`);
    if (!["common/key.js", "common/server.js"].includes(f)) assert.ok(!source[f].includes("sessionStorage"), `${f} mentions sessionStorage`);
    if (f !== "common/server.js") assert.doesNotMatch(source[f], /from "\.\/serverlab\.js"|from "\.\.\/common\/serverlab\.js"/, `${f} makes its own server client`);
  }
  assert.doesNotMatch(source["common/server.js"] + source["common/serverlab.js"], /console\./, "nothing of the connection is logged");
});

test("only engine/client.js talks to the engine's worker, and only rerank/crossencoder.js to the cross-encoder's", () => {
  for (const f of files) {
    if (["engine/client.js", "engine/boot.js", "engine/worker.js", "engine/worker-packs.js", "rerank/crossencoder.js", "rerank/crossencoder-worker.js"].includes(f)) continue;
    assert.doesNotMatch(source[f], /postMessage|\bWorker\b|ragagentBoot/, f);
  }
  assert.doesNotMatch(source["rerank/crossencoder.js"], /ragagentBoot|"engine\/worker\.js"/, "the cross-encoder block starts its own worker only");
  assert.match(source["rerank/crossencoder.js"], /new Worker\("rerank\/crossencoder-worker\.js", \{ type: "module" \}\)/);
  assert.doesNotMatch(source["rerank/crossencoder-worker.js"] + source["rerank/crossencoder-scorer.mjs"], /https:\/\/cdn|jsdelivr|unpkg/, "the runtime comes from site/vendor/, never a CDN");
});

test("every file the page offers is saved through dom.download, which key.js screens", () => {
  for (const f of files) {
    if (f !== "common/dom.js") assert.doesNotMatch(source[f], /createObjectURL|\{\s*download:|\.download\s*=/, `${f} saves a file itself`);
  }
  assert.match(source["common/dom.js"], /const withheld = screen\(text\);\n\s*if \(withheld\) throw/, "download asks the screen first");
  assert.match(source["app.js"], /^screenDownloads\(\(text\) => key\.screen\(text\) \?\? server\.screen\(text\)\);$/m, "the screen is key.js's, then server.js's");
});

test("every link that opens a new tab is dom.external's: no opener, no referrer", () => {
  for (const f of files) {
    if (f !== "common/dom.js") assert.doesNotMatch(source[f], /_blank|noopener/, `${f} makes its own new-tab link`);
  }
  assert.match(source["common/dom.js"], /rel: "noopener noreferrer", target: "_blank"/);
});

test("no module builds HTML from text", () => {
  for (const f of files) assert.doesNotMatch(source[f], /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser/, f);
});

test("no engine constant is written in the page; they come from load()", () => {
  const strings = [constants.model, constants.endpoint, constants.listwise_model, constants.listwise_endpoint,
    new URL(constants.endpoint).origin];
  for (const f of [...files, "index.html"]) {
    const text = f === "index.html" ? html : source[f];
    for (const s of strings) assert.ok(!text.includes(s), `${f} has ${s}`);
    assert.ok(!text.includes(`"${constants.default_version}"`) && !text.includes(`'${constants.default_version}'`), `${f} has the default version`);
    for (const n of [constants.caps.response_bytes, constants.caps.request_bytes]) {
      assert.doesNotMatch(text, new RegExp(`\\b${n}\\b`), `${f} has ${n}`);
    }
  }
  assert.doesNotMatch(html, /maxlength/i, "the question's maxlength is set from the constants");
  assert.match(html, /data-constant="listwise_model"/, "the listwise model's name is filled in from the constants");
});

test("index.html preloads every module app.js imports, and only those", () => {
  const preloaded = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]).sort();
  const imported = files.filter((f) => f !== "app.js" && !WORKERS.includes(f));
  assert.deepEqual(preloaded, imported);
  for (const f of files) {
    for (const [, spec] of source[f].matchAll(/^import .* from "([^"]+)";$/gm)) {
      assert.ok(files.includes(path.posix.join(path.posix.dirname(f), spec)), `${f} imports ${spec}`);
    }
  }
});

test("format.js formats money, numbers, sizes and scores for reading", async () => {
  const { usd, num, sig, plural, stamp, mb, mib, DASH } = await load("common/format.js");
  assert.equal(usd(0.0079135), "$0.0079135");
  assert.equal(usd(0.05), "$0.05");
  assert.equal(usd(0.0420865), "$0.0420865");
  assert.equal(usd(0), "$0");
  assert.equal(usd(4.2e-8), "$4.20e-8");
  assert.equal(usd(1 / 3), "$0.333333");
  assert.equal(usd(null), DASH);
  assert.equal(num(0.7777777777777778, 3), "0.778");
  assert.equal(num(3, 0), "3");
  assert.equal(num(undefined, 3), DASH);
  assert.equal(sig(-4.9e-6, 4), "-0.000004900");
  assert.equal(sig(0.032522474881015876, 5), "0.032522");
  assert.equal(sig(null, 4), DASH);
  assert.equal(plural(1, "reservation"), "1 reservation");
  assert.equal(plural(4, "reservation"), "4 reservations");
  assert.equal(plural(0, "attempt"), "0 attempts");
  assert.equal(plural(12352, "passage"), "12,352 passages", "a count reads as it does beside it elsewhere (the picker's 12,352)");
  assert.equal(stamp(new Date("2026-11-30T14:42:01.123Z")), "2026-11-30T14-42-01-123Z");
  assert.equal(mb(5619517), "5.6", "the Python pack's download, in MB as the README gives it (5.4 was MiB labelled MB)");
  assert.equal(mib(67108864), "64.0", "the engine's input cap, a whole number of MiB");
});

test("format.js's refusal names an engine error's reason code once", async () => {
  const { refusal } = await load("common/format.js");
  // The engine's rejection: the message already begins with the code.
  const err = Object.assign(new Error("invalid_cases: tune: 5 answerable questions; a choice needs at least 10"), { code: "invalid_cases", detail: "tune: 5 answerable questions; a choice needs at least 10" });
  assert.equal(refusal(err), "invalid_cases: tune: 5 answerable questions; a choice needs at least 10");
  assert.equal(refusal(Object.assign(new Error("stopped"), { code: "cancelled", detail: "" })), "cancelled: stopped");
  assert.equal(refusal(new Error("no code")), "no code");
});

test("counts of things are written by plural (no '1 trials', no 12352 beside 12,352) and codes by refusal", () => {
  const words = "trials|cases|questions|passages|files|runs|requests|steps|configurations|documents|tokens|exchanges|reservations";
  const bare = new RegExp(`\\$\\{[^}]+\\}\\s+(${words})\\b`);
  const twice = /\$\{err\.code\}: \$\{err\.message\}|\$\{err\.code \? `\$\{err\.code\}: ` : ""\}\$\{err\.message\}/;
  // The cross-encoder's scorer words its refusals as core/engine does
  // (pair_exceeds_model_context: "has 604 tokens", never one).
  for (const f of files.filter((x) => x !== "rerank/crossencoder-scorer.mjs")) {
    const lines = source[f].split("\n");
    lines.forEach((line, i) => {
      if (/^\s*(\/\/|\*)/.test(line)) return;
      assert.doesNotMatch(line, bare, `${f}:${i + 1} writes a count by hand: use plural`);
      assert.doesNotMatch(line, twice, `${f}:${i + 1} writes the reason code before a message that holds it: use refusal`);
    });
  }
});

test("format.js alone turns byte counts into MB or MiB", () => {
  for (const f of files) {
    if (f !== "common/format.js") assert.doesNotMatch(source[f], /\/\s*(1e6|1000000|1048576|1024\s*\*\s*1024)\b|\bMB = /, `${f} writes its own MB or MiB`);
  }
  assert.match(source["common/format.js"], /n \/ 1e6/);
});

test("endpoints.js takes the constants' endpoints, or a loopback fake only from a loopback page", async () => {
  const { liveEndpoints, isLoopbackHost } = await load("common/endpoints.js");
  const real = { run: constants.endpoint, listwise: constants.listwise_endpoint };
  const runPath = new URL(constants.endpoint).pathname;
  const listwisePath = new URL(constants.listwise_endpoint).pathname;
  const fake = "http://127.0.0.1:9999";
  const at = (page, endpoint) => liveEndpoints(constants, endpoint === undefined ? page : `${page}?endpoint=${encodeURIComponent(endpoint)}`);
  for (const [name, page, endpoint, want] of [
    ["no override", "http://127.0.0.1:8080/", undefined, real],
    ["a bare loopback origin gets the API's paths", "http://127.0.0.1:8080/", fake, { run: `${fake}${runPath}`, listwise: `${fake}${listwisePath}` }],
    ["a loopback URL is kept", "http://localhost:8080/", `${fake}/v1beta/models/m:generateContent`, { run: `${fake}/v1beta/models/m:generateContent`, listwise: `${fake}${listwisePath}` }],
    ["IPv6 loopback", "http://[::1]:8080/", "http://[::1]:9999", { run: `http://[::1]:9999${runPath}`, listwise: `http://[::1]:9999${listwisePath}` }],
    ["a page not on loopback", "https://lab.example/", fake, real],
    ["an endpoint not on loopback", "http://127.0.0.1:8080/", "https://evil.example/", real],
    ["a query", "http://127.0.0.1:8080/", `${fake}/?x=1`, real],
    ["a user", "http://127.0.0.1:8080/", "http://u@127.0.0.1:9999/", real],
    ["not http", "http://127.0.0.1:8080/", "ftp://127.0.0.1/", real],
    ["not a URL", "http://127.0.0.1:8080/", "not a url", real],
  ]) {
    assert.deepEqual(at(page, endpoint), want, name);
  }
  assert.equal(isLoopbackHost("127.1.2.3"), true);
  assert.equal(isLoopbackHost("128.0.0.1"), false);
  assert.equal(isLoopbackHost("localhost.example"), false);
});

test("endpoints.js takes the hub for the cross-encoder's files, or a loopback model host only from a loopback page", async () => {
  const { modelHost } = await load("common/endpoints.js");
  const hub = "https://huggingface.co";
  const at = (page, host) => modelHost(hub, host === undefined ? page : `${page}?modelHost=${encodeURIComponent(host)}`);
  for (const [name, page, host, want] of [
    ["no override", "http://127.0.0.1:8080/", undefined, { url: hub, test: false }],
    ["a loopback host", "http://127.0.0.1:8080/", "http://127.0.0.1:9999", { url: "http://127.0.0.1:9999", test: true }],
    ["with a slash", "http://localhost:8080/", "http://localhost:9999/", { url: "http://localhost:9999", test: true }],
    ["IPv6", "http://[::1]:8080/", "http://[::1]:9999", { url: "http://[::1]:9999", test: true }],
    ["a page not on loopback", "https://lab.example/", "http://127.0.0.1:9999", { url: hub, test: false }],
    ["a host not on loopback", "http://127.0.0.1:8080/", "https://models.example", { url: hub, test: false }],
    ["a path", "http://127.0.0.1:8080/", "http://127.0.0.1:9999/models", { url: hub, test: false }],
    ["a user", "http://127.0.0.1:8080/", "http://u@127.0.0.1:9999", { url: hub, test: false }],
    ["not a URL", "http://127.0.0.1:8080/", "nope", { url: hub, test: false }],
  ]) {
    assert.deepEqual(at(page, host), want, name);
  }
});

test("the cross-encoder's requests carry no credentials and its runtime fetches nothing itself", () => {
  const scorer = source["rerank/crossencoder-scorer.mjs"];
  assert.match(scorer, /credentials: "omit", referrerPolicy: "no-referrer"/);
  assert.match(scorer, /useBrowserCache: false, useFSCache: false, useWasmCache: false/);
  assert.match(scorer, /fetch: async \(url\) => \{ throw new Error/);
  assert.match(source["rerank/crossencoder.js"], /fetch\(`\$\{s\.host\.url\}\/ragagent-model\.json`, \{ credentials: "omit" \}\)/);
});
