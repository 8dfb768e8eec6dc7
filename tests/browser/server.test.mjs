// The page against a team's server, in Debian's Chromium: `ragagent
// serve-api` on loopback (a temporary database, a token from `ragagent
// tokens add`, --allow-origin for the page's origin, which the page's
// CSP allows with serve --connect). The Team server box connects and
// lists the server's packs; the Experiments view's retrieval experiment
// on one of the person's own question sets (IndexedDB) runs in the
// browser and then on the server, and the two results kept in the
// history are the same bytes, the server's marked with its URL; the
// server's progress events are shown; a wrong token shows the server's
// refusal (unauthorized and its message) without the token; the token's
// upload is offered and ranks a set file as the command line ranks the
// folder; a server the
// CSP does not allow the flag that allows it; Cancel on an
// experiment queued on the server leaves it cancelled there, Forget lets
// go of one that waits (the server's goes on); the scripted agent
// experiment on the person's set run on the server is the browser's (the
// same tables, the same object kept but for the measured seconds, marked
// with the server), and Cancel on one queued there cancels it; a server
// and token remembered for the tab are connected to again on reload
// (connected: its packs; refused: its refusal), and forgotten are not;
// the token is in no URL, no other request, no status line, the console
// or the storage (but the tab's remembered entry, while remembered);
// axe-core finds no violation in the new controls.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { openLab } from "ragagent-lab";
import { root, launch, openPage, goBinary, startProcess, observe, axeClean as harnessAxeClean } from "./harness.mjs";

const PYTHON_CASES = JSON.parse(readFileSync(path.join(root, "fixtures", "python-3.11-cases.json"), "utf8"));
// The pepper the server keeps tokens' HMACs under, a test value (as tests/node/server-client.test.mjs).
const PEPPER = "5c1d0e9a7b3f46e2a8d1c0b9f7e6d5c4b3a29180f7e6d5c4b3a2918070605040";
const SET_NAME = "Team set";

let dir, api, site, browser, page, problems, token, ragagent;
const consoleLines = [];
const requests = [];

/** freePort is a loopback port free a moment ago (the site's, which the server must allow before the site starts). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-page-server-"));
  ragagent = goBinary("./cmd/ragagent");
  const db = path.join(dir, "api.db");
  process.env.RAGAGENT_TOKEN_PEPPER = PEPPER;
  token = execFileSync(ragagent, ["tokens", "add", "--db", db, "--name", "page", "--scopes", "read,run,corpora"], { env: process.env }).toString().trim();
  const origin = `http://127.0.0.1:${await freePort()}`;
  api = await startProcess(ragagent, ["serve-api", "--db", db, "--addr", "127.0.0.1:0", "--allow-origin", origin]);
  site = await startProcess(goBinary("./cmd/serve"), ["--addr", origin.slice("http://".length), "--dir", path.join(root, "site"), "--connect", api.url]);
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  observe(page, consoleLines, requests);
  await page.waitForFunction(() => document.body.dataset.views === "ready" && !document.querySelector("#exp-run").disabled, null, { timeout: 60000 });
  // One of the person's own question sets for the seed, kept in IndexedDB as the page keeps one.
  await page.evaluate(async (name) => {
    const sets = await import("/common/sets.js");
    const cases = [
      { id: "write-text", question: "Does write_text overwrite the file?", version: "3.12", split: "held-out", targets: [], sources: ["path-write"], answer_patterns: [], forbidden_patterns: [], note: "" },
      { id: "json-dump", question: "How do I save JSON text to a file?", version: "3.12", split: "held-out", targets: [], sources: ["json-text"], answer_patterns: [], forbidden_patterns: [], note: "" },
      { id: "read-newline", question: "How does read_text handle newlines in 3.13?", version: "3.13", split: "held-out", targets: [], sources: ["path-read-3-13"], answer_patterns: [], forbidden_patterns: [], note: "" },
    ];
    await sets.put({ pack: "seed", name, time: new Date().toISOString(), cases });
  }, SET_NAME);
  await useTeamSet();
});

/** useTeamSet makes the person's own set the view's question set. */
async function useTeamSet() {
  await page.waitForFunction((name) => [...document.querySelectorAll("#exp-cases-choice option")].some((o) => o.textContent.includes(name)), SET_NAME);
  const value = await page.$$eval("#exp-cases-choice option", (os, name) => os.find((o) => o.textContent.includes(name)).value, SET_NAME);
  await page.selectOption("#exp-cases-choice", value);
  await page.waitForFunction((name) => document.querySelector("#exp-cases-now").textContent.includes(name), SET_NAME);
}

after(async () => {
  await browser?.close();
  site?.stop();
  api?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** call is one request to the server with the token: the test's own look at what it holds. */
async function call(method, where, body) {
  const r = await fetch(new URL(where, api.url), { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

/** axeClean is the harness's on this file's page. */
const axeClean = (selector, what) => harnessAxeClean(page, selector, what);

/** connect types the server and a token into the Team server box, connects and waits for the answer. */
async function connect(withToken) {
  await page.fill("#srv-url", api.url);
  await page.fill("#srv-token", withToken);
  await page.click("#srv-connect");
  await page.waitForFunction(() => ["connected", "refused"].includes(document.body.dataset.server), null, { timeout: 20000 });
  return page.textContent("#srv-status");
}

/** runExperiment runs the view's experiment and resolves with the statuses it showed and how it ended. */
async function runExperiment() {
  await page.evaluate(() => {
    document.body.dataset.experiment = "";
    window.__statuses = [];
    window.__observer?.disconnect();
    window.__observer = new MutationObserver(() => window.__statuses.push(document.querySelector("#exp-status").textContent));
    window.__observer.observe(document.querySelector("#exp-status"), { childList: true, characterData: true, subtree: true });
  });
  await page.click("#exp-run");
  await page.waitForFunction(() => ["done", "failed", "cancelled"].includes(document.body.dataset.experiment) && document.querySelector("#exp-cancel").disabled, null, { timeout: 30000 });
  return { ended: await page.evaluate(() => document.body.dataset.experiment), statuses: await page.evaluate(() => window.__statuses), message: await page.textContent("#exp-message") };
}

/** kept is the history's newest experiment, as the page keeps it. */
const kept = () => page.evaluate(async () => (await (await import("/experiments/store.js")).list())[0]);

/** noToken asserts the token is in nothing the page shows, logs, keeps or
 * sends but its requests' Authorization header to the server and, when
 * remembered, the tab's remembered entry (sessionStorage's ragagent.server). */
async function noToken(what, { remembered = false } = {}) {
  const secret = token.slice(-20);
  const [shown, entry] = await page.evaluate(() => {
    const session = { ...sessionStorage };
    const entry = session["ragagent.server"] ?? null;
    delete session["ragagent.server"];
    return [document.body.innerText + location.href + JSON.stringify({ ...localStorage }) + JSON.stringify(session), entry];
  });
  assert.ok(!shown.includes(secret), `${what}: the token is on the page, in its address or storage`);
  if (remembered) assert.equal(JSON.parse(entry).token, token, `${what}: the tab remembers the token`);
  else assert.ok(!String(entry).includes(secret), `${what}: the token is remembered though it should not be`);
  assert.ok(!consoleLines.join("\n").includes(secret), `${what}: the token is in the console`);
  for (const r of requests) {
    const { authorization, ...rest } = r.headers;
    assert.ok(!(r.url + r.body + JSON.stringify(rest)).includes(secret), `${what}: the token is in ${r.method} ${r.url} besides its Authorization header`);
    if (authorization?.includes(secret)) assert.equal(new URL(r.url).origin, new URL(api.url).origin, `${what}: the token went to ${r.url}`);
  }
}

test("connected, the server's packs are listed; the experiment on a set of the person's own run on the server is the browser's result, kept marked with the server", async () => {
  assert.equal(await page.isDisabled("#exp-where-server"), true, "no server to run on before connecting");
  const status = await connect(token);
  assert.equal(await page.evaluate(() => document.body.dataset.server), "connected", status);
  const { json: { corpora } } = await call("GET", "/v1/corpora");
  assert.ok(status.startsWith(`Connected to ${api.url}/: ${corpora.length} packs offered there`), status);
  for (const c of corpora) assert.ok(status.includes(c.id), `${c.id} is listed: ${status}`);
  await axeClean("#srv-form", "the Team server box, connected");

  const local = await runExperiment();
  assert.equal(local.ended, "done", local.message);
  const inBrowser = await kept();
  assert.equal(inBrowser.server, null);

  await page.check("#exp-where-server");
  assert.equal(await page.inputValue("#exp-server-pack"), "seed", "the page's pack, which the server has, is chosen");
  assert.deepEqual(await page.$$eval("#exp-server-pack option", (os) => os.map((o) => o.value)), corpora.map((c) => c.id), "the server's packs are offered");
  await axeClean("#exp-where", "Run on, the server chosen");
  const remote = await runExperiment();
  assert.equal(remote.ended, "done", remote.message);
  const onServer = await kept();
  assert.equal(onServer.server, `${api.url}/`);
  assert.equal(onServer.text, inBrowser.text, "the server's result is the browser's, byte for byte");
  assert.deepEqual({ ...onServer, key: 0, time: "", server: null }, { ...inBrowser, key: 0, time: "", server: null }, "kept as the local one is");
  assert.equal(onServer.set.name, inBrowser.set.name);
  assert.match(inBrowser.set.name, new RegExp(SET_NAME), "the person's own set");
  const total = JSON.parse(onServer.text).answerable * JSON.parse(onServer.text).configs.length;
  assert.ok(remote.statuses.some((s) => s.startsWith("Running on the team server (experiment exp_")), remote.statuses.join(" | "));
  assert.ok(remote.statuses.some((s) => s.startsWith(`Ranking on the team server: ${total} of ${total}`)), remote.statuses.join(" | "));
  assert.match(await page.textContent("#exp-status"), new RegExp(`^Done in \\d+ ms on the team server ${api.url}/`));
  const row = page.locator(`#exh-list tr[data-key="${onServer.key}"] td[data-ran="server"]`);
  assert.match(await row.textContent(), new RegExp(`run on the team server ${api.url}/`));
  const { json: { experiments } } = await call("GET", "/v1/experiments");
  assert.equal(experiments.length, 1, "one experiment ran on the server");
  assert.equal(experiments[0].state, "succeeded");
  const sent = (await call("GET", `/v1/experiments/${experiments[0].id}`)).json.request;
  assert.deepEqual(sent.cases.cases.map((c) => c.id), ["write-text", "json-dump", "read-newline"], "the set was sent");
  assert.deepEqual(sent.configs, JSON.parse(inBrowser.text).configs.map((c) => c.name), "the configurations checked, the baseline first");
  await noToken("after the experiment");
  assert.deepEqual(problems, []);
});

test("a wrong token shows the server's refusal, its code and message, and never the token", async () => {
  const wrong = `${token.slice(0, -4)}0000`;
  const status = await connect(wrong);
  assert.equal(await page.evaluate(() => document.body.dataset.server), "refused", status);
  const r = await fetch(new URL("/v1/corpora", api.url), { headers: { Authorization: `Bearer ${wrong}` } });
  const { error } = await r.json();
  assert.equal(error.code, "unauthorized");
  assert.ok(status.startsWith(`Refused by ${api.url}: unauthorized: ${error.message}`), status);
  assert.ok(!status.includes(wrong.slice(-20)) && !status.includes(token.slice(-20)), "no token in the refusal");
  assert.equal(await page.isDisabled("#exp-where-server"), true, "nothing to run on");
  assert.equal(await page.isChecked('input[name="exp-where"][value="browser"]'), true, "the experiment runs in the browser again");
  await axeClean("#srv-form", "the Team server box, refused");
  await noToken("after the refusal");
  // The browser's own line for the refused request, and nothing else.
  assert.deepEqual(problems.splice(0), ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]);
});

test("a server this page's CSP does not allow is refused by the browser, and the status names the serve flag that allows it", async () => {
  await page.fill("#srv-url", "http://127.0.0.1:9");
  await page.fill("#srv-token", token);
  await page.click("#srv-connect");
  await page.waitForFunction(() => document.body.dataset.server === "refused", null, { timeout: 20000 });
  assert.equal(await page.textContent("#srv-status"), "Not connected: this page's Content-Security-Policy does not let it connect to http://127.0.0.1:9. Serve the page with that origin allowed (serve --api-origin http://127.0.0.1:9).");
  // The browser's own line for the blocked request, and nothing else.
  assert.deepEqual(problems.splice(0).filter((p) => !p.includes("Content Security Policy")), []);
  await noToken("after the CSP's refusal");
});

test("the token's upload is offered as a pack on the server, and a question set file for it is ranked there as the command line ranks the folder", async () => {
  const docs = path.join(dir, "docs");
  const pack = path.join(dir, "pack");
  mkdirSync(docs);
  writeFileSync(path.join(docs, "kettle.md"), "# Kettle\n\nDescale the kettle monthly with white vinegar and rinse it twice.\n\n## Filter\n\nThe limescale filter slides out of the spout for cleaning.\n");
  writeFileSync(path.join(docs, "toaster.md"), "# Toaster\n\nEmpty the crumb tray weekly; never use a knife to free bread.\n");
  execFileSync(ragagent, ["corpus", "build", "--from", docs, "--out", pack, "--id", "team-notes", "--title", "Team notes", "--version", "1.0", "--base-url", "https://notes.example/", "--licence", "CC0-1.0", "--attribution", "The team", "--gzip"], { stdio: "ignore" });
  const lab = await openLab({ server: api.url, token });
  try {
    await lab.uploadCorpus({ folder: pack });
  } finally {
    await lab.close();
  }
  const status = await connect(token);
  assert.match(status, /team-notes \(your upload\)/);
  await page.check("#exp-where-server");
  await page.selectOption("#exp-server-pack", "team-notes");
  const set = path.join(dir, "notes.tsv");
  writeFileSync(set, "descale\tHow do I descale the kettle?\thttps://notes.example/kettle.md\ncrumbs\tHow often do I empty the crumb tray?\thttps://notes.example/toaster.md\n");
  await page.setInputFiles("#exp-cases-file", set);
  await page.waitForFunction(() => /notes\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  assert.equal(await page.isHidden("#exp-message"), true, await page.textContent("#exp-message"));
  const ran = await runExperiment();
  assert.equal(ran.ended, "done", ran.message);
  const record = await kept();
  assert.equal(record.corpus.id, "team-notes");
  assert.equal(record.server, `${api.url}/`);
  const configs = JSON.parse(record.text).configs.flatMap((c) => ["--config", c.name]);
  const want = execFileSync(ragagent, ["retrieval", "--corpus", pack, "--cases", set, ...configs, "--json"]).toString();
  assert.equal(record.text, want, "the command line's bytes for the folder");
  // Its questions' passages are the server's: opening one says so.
  await page.locator("#exp-results .exp-open").first().click();
  await page.waitForSelector("#exp-results .exp-detail:not([hidden]) [role=alert]");
  assert.match(await page.textContent("#exp-results .exp-detail:not([hidden]) [role=alert]"), /the pack team-notes is not open in this page \(it is the team server's\)/);
  await page.click("#exp-cases-authored");
  await page.selectOption("#exp-server-pack", "seed");
  await noToken("after the upload's experiment");
});

test("Cancel on an experiment queued on the server cancels it there", async () => {
  await connect(token);
  // An experiment of the test's own (the Python cases over and over) that
  // the page's waits behind: the server runs one at a time.
  const many = Array.from({ length: 2000 }, (_, i) => ({ ...PYTHON_CASES.cases[i % PYTHON_CASES.cases.length], id: `c${i}` }))
    .filter((c) => c.sources.length + (c.target_urls?.length ?? 0) > 0);
  const held = await call("POST", "/v1/experiments", { kind: "retrieval", corpus: "python-3.11", cases: { ...PYTHON_CASES, cases: many }, configs: ["seed"] });
  assert.equal(held.status, 202, JSON.stringify(held.json));
  try {
    await page.check("#exp-where-server");
    await page.click("#exp-run");
    await page.waitForFunction(() => document.body.dataset.experimentServer === "queued", null, { timeout: 20000 });
    assert.match(await page.textContent("#exp-status"), /^Queued on the team server \(experiment exp_\w+\)/);
    const id = (await page.textContent("#exp-status")).match(/experiment (exp_\w+)/)[1];
    await page.click("#exp-cancel");
    await page.waitForFunction(() => document.body.dataset.experiment === "cancelled", null, { timeout: 20000 });
    assert.match(await page.textContent("#exp-status"), new RegExp(`^Cancelled on the team server ${api.url}/: nothing was kept`));
    assert.equal((await call("GET", `/v1/experiments/${id}`)).json.state, "cancelled", "cancelled on the server");
    assert.equal((await call("GET", `/v1/experiments/${held.json.id}`)).json.state, "running", "the other goes on");

    // Forget while one waits: the page lets go of it and says so; the server's goes on.
    await page.evaluate(() => { document.body.dataset.experiment = ""; document.body.dataset.experimentServer = ""; });
    await page.check("#exp-where-server");
    await page.click("#exp-run");
    await page.waitForFunction(() => document.body.dataset.experimentServer === "queued", null, { timeout: 20000 });
    const waiting = (await page.textContent("#exp-status")).match(/experiment (exp_\w+)/)[1];
    await page.click("#srv-forget");
    await page.waitForFunction(() => document.body.dataset.experiment === "failed", null, { timeout: 20000 });
    assert.match(await page.textContent("#exp-message"), /^disconnected: the connection ended \(the server or token was edited or forgotten\) before the experiment did; it goes on on the server/);
    assert.equal(await page.inputValue("#srv-token"), "", "the token field is emptied");
    assert.equal(await page.isDisabled("#exp-where-server"), true);
    assert.equal((await call("GET", `/v1/experiments/${waiting}`)).json.state, "queued", "the server's experiment goes on");
    await call("POST", `/v1/experiments/${waiting}/cancel`);
  } finally {
    await call("POST", `/v1/experiments/${held.json.id}/cancel`);
  }
  await noToken("after the cancel");
  assert.deepEqual(problems, []);
});

/** runAgent runs the view's agent experiment and resolves with the statuses it showed and how it ended. */
async function runAgent() {
  await page.evaluate(() => {
    document.body.dataset.agentExperiment = "";
    window.__agentStatuses = [];
    window.__agentObserver?.disconnect();
    window.__agentObserver = new MutationObserver(() => window.__agentStatuses.push(document.querySelector("#exp-agent-status").textContent));
    window.__agentObserver.observe(document.querySelector("#exp-agent-status"), { childList: true, characterData: true, subtree: true });
  });
  await page.click("#exp-agent-run");
  await page.waitForFunction(() => ["done", "failed", "cancelled"].includes(document.body.dataset.agentExperiment), null, { timeout: 60000 });
  return { ended: await page.evaluate(() => document.body.dataset.agentExperiment), statuses: await page.evaluate(() => window.__agentStatuses), status: await page.textContent("#exp-agent-status") };
}

/** unmeasured is an eval object with each path's measured seconds set to 0 (two runs differ only there). */
const unmeasured = (r) => ({ ...r, experiment: { ...r.experiment, paths: r.experiment.paths.map((p) => ({ ...p, seconds: 0, mean_seconds: 0 })) } });

/** agentTables is the text of the agent experiment's rates and comparison tables, as drawn. */
const agentTables = () => page.$$eval("#exp-agent-results .agent-rates, #exp-agent-results .agent-cmp", (ts) => ts.map((t) => t.innerText));

test("the scripted agent experiment on the person's set run on the server is the browser's: the same tables, kept alike but for the measured seconds, marked with the server", async () => {
  await connect(token);
  await useTeamSet();
  assert.equal(await page.isDisabled("#exp-agent-where-server"), false, "connected, the agent experiment may run there");
  await page.check('input[name="exp-agent-where"][value="browser"]');
  const local = await runAgent();
  assert.equal(local.ended, "done", local.status);
  const inBrowser = await kept();
  const localTables = await agentTables();
  assert.equal(inBrowser.kind, "agent");
  assert.equal(inBrowser.server, null);

  await page.check("#exp-agent-where-server");
  assert.equal(await page.inputValue("#exp-agent-server-pack"), "seed", "the page's pack, which the server has, is chosen");
  const { json: { corpora } } = await call("GET", "/v1/corpora");
  assert.deepEqual(await page.$$eval("#exp-agent-server-pack option", (os) => os.map((o) => o.value)), corpora.map((c) => c.id), "the server's packs are offered");
  await axeClean("#exp-agent", "the agent experiment, the server chosen");
  const remote = await runAgent();
  assert.equal(remote.ended, "done", remote.status);
  const onServer = await kept();
  assert.equal(onServer.server, `${api.url}/`);
  assert.deepEqual(await agentTables(), localTables, "the same rates and comparisons, as drawn");
  assert.deepEqual(unmeasured(JSON.parse(onServer.text)), unmeasured(JSON.parse(inBrowser.text)), "the server's result is the browser's, measured seconds aside");
  assert.deepEqual({ ...onServer, key: 0, time: "", server: null, text: "" }, { ...inBrowser, key: 0, time: "", server: null, text: "" }, "kept as the local one is");
  assert.match(inBrowser.set.name, new RegExp(SET_NAME), "the person's own set");
  const trials = JSON.parse(onServer.text).cases.length;
  assert.ok(remote.statuses.some((s) => s.startsWith("Running on the team server (experiment exp_")), remote.statuses.join(" | "));
  assert.ok(remote.statuses.some((s) => s === `Trial ${trials} of ${trials} on the team server…`), remote.statuses.join(" | "));
  assert.match(remote.status, new RegExp(`^Done in \\d+ ms on the team server ${api.url}/: ${trials} trials on seed\\. Kept as experiment #${onServer.key}`));
  assert.equal(await page.locator("#exp-agent-results a").count(), 0, "no trace is linked: the trials are the server's");
  const row = page.locator(`#exh-list tr[data-key="${onServer.key}"] td[data-ran="server"]`);
  assert.match(await row.textContent(), new RegExp(`run on the team server ${api.url}/`));
  const [x] = (await call("GET", "/v1/experiments")).json.experiments;
  assert.equal(x.kind, "agent");
  assert.equal(x.state, "succeeded");
  const sent = (await call("GET", `/v1/experiments/${x.id}`)).json.request;
  assert.equal(sent.policy, "scripted");
  assert.equal(sent.corpus, "seed");
  assert.deepEqual(sent.cases.cases.map((c) => c.id), ["write-text", "json-dump", "read-newline"], "the set was sent");
  // Opened again from the history, it says where it ran.
  await page.locator(`#exh-list tr[data-key="${onServer.key}"] button`, { hasText: "Open" }).first().click();
  await page.waitForFunction((key) => document.querySelector("#exp-agent-status").textContent.startsWith(`Experiment #${key},`), onServer.key);
  assert.match(await page.textContent("#exp-agent-status"), new RegExp(`^Experiment #${onServer.key}, kept .*, run on the team server ${api.url}/\\.$`));
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${width} px: the page is ${scroll} px wide`);
  }
  await noToken("after the agent experiment");
  assert.deepEqual(problems, []);
});

test("Cancel on an agent experiment queued on the server cancels it there", async () => {
  await connect(token);
  const many = Array.from({ length: 2000 }, (_, i) => ({ ...PYTHON_CASES.cases[i % PYTHON_CASES.cases.length], id: `c${i}` }))
    .filter((c) => c.sources.length + (c.target_urls?.length ?? 0) > 0);
  const held = await call("POST", "/v1/experiments", { kind: "retrieval", corpus: "python-3.11", cases: { ...PYTHON_CASES, cases: many }, configs: ["seed"] });
  assert.equal(held.status, 202, JSON.stringify(held.json));
  try {
    await page.evaluate(() => { document.body.dataset.agentExperiment = ""; document.body.dataset.agentExperimentServer = ""; });
    await page.check("#exp-agent-where-server");
    assert.equal(await page.isDisabled("#exp-agent-cancel"), true, "nothing to cancel yet");
    await page.click("#exp-agent-run");
    await page.waitForFunction(() => document.body.dataset.agentExperimentServer === "queued", null, { timeout: 20000 });
    assert.match(await page.textContent("#exp-agent-status"), /^Queued on the team server \(experiment exp_\w+\)/);
    const id = (await page.textContent("#exp-agent-status")).match(/experiment (exp_\w+)/)[1];
    await page.click("#exp-agent-cancel");
    await page.waitForFunction(() => document.body.dataset.agentExperiment === "cancelled", null, { timeout: 20000 });
    assert.match(await page.textContent("#exp-agent-status"), new RegExp(`^Cancelled on the team server ${api.url}/: nothing was kept`));
    const x = (await call("GET", `/v1/experiments/${id}`)).json;
    assert.equal(x.kind, "agent");
    assert.equal(x.state, "cancelled", "cancelled on the server");
    assert.equal((await call("GET", `/v1/experiments/${held.json.id}`)).json.state, "running", "the other goes on");
    assert.equal(await page.isDisabled("#exp-agent-cancel"), true);
    assert.equal(await page.isDisabled("#exp-agent-run"), false, "it may run again");
  } finally {
    await call("POST", `/v1/experiments/${held.json.id}/cancel`);
  }
  await noToken("after the agent experiment's cancel");
  assert.deepEqual(problems, []);
});

/** reload reloads the page, keeping each status #srv-status showed from the start, and waits for the views. */
async function reload() {
  await page.addInitScript(() => {
    window.__srvStatuses = [];
    document.addEventListener("DOMContentLoaded", () => {
      const el = document.querySelector("#srv-status");
      const keep = () => window.__srvStatuses.push(el.textContent);
      keep();
      new MutationObserver(keep).observe(el, { childList: true, characterData: true, subtree: true });
    });
  });
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.views === "ready", null, { timeout: 60000 });
}

test("a server and token remembered for the tab are connected to again on reload: its packs, or its refusal; forgotten, nothing is", async () => {
  await connect(token);
  await page.check("#srv-remember");
  await reload();
  await page.waitForFunction(() => ["connected", "refused"].includes(document.body.dataset.server), null, { timeout: 20000 });
  const status = await page.textContent("#srv-status");
  assert.equal(await page.evaluate(() => document.body.dataset.server), "connected", status);
  const { json: { corpora } } = await call("GET", "/v1/corpora");
  assert.ok(status.startsWith(`Reconnected to ${api.url}/ (remembered for this tab): ${corpora.length} packs offered there`), status);
  const statuses = await page.evaluate(() => window.__srvStatuses);
  assert.ok(statuses.includes(`Reconnecting to ${api.url}, remembered for this tab…`), statuses.join(" | "));
  assert.equal(await page.inputValue("#srv-url"), api.url);
  assert.equal(await page.isChecked("#srv-remember"), true);
  assert.equal(await page.isDisabled("#exp-where-server"), false, "the retrieval experiment may run there");
  assert.equal(await page.isDisabled("#exp-agent-where-server"), false, "the agent experiment may run there");
  await axeClean("#srv-form", "the Team server box, reconnected");
  await noToken("after the reconnect", { remembered: true });

  // A remembered token the server refuses: its refusal, never the token.
  const wrong = `${token.slice(0, -4)}0000`;
  await page.evaluate(([url, t]) => sessionStorage.setItem("ragagent.server", JSON.stringify({ url, token: t })), [api.url, wrong]);
  await reload();
  await page.waitForFunction(() => ["connected", "refused"].includes(document.body.dataset.server), null, { timeout: 20000 });
  const refused = await page.textContent("#srv-status");
  assert.equal(await page.evaluate(() => document.body.dataset.server), "refused", refused);
  assert.match(refused, new RegExp(`^Refused by ${api.url}: unauthorized: .*\\(The server and token were remembered for this tab: edit them, or Forget the token\\.\\)$`));
  assert.ok(!refused.includes(wrong.slice(-20)), "no token in the refusal");
  assert.equal(await page.isDisabled("#exp-agent-where-server"), true);
  assert.deepEqual(problems.splice(0), ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]);

  // Forgotten, a reload connects to nothing.
  await page.click("#srv-forget");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("ragagent.server")), null);
  await reload();
  assert.equal(await page.evaluate(() => document.body.dataset.server), undefined, "no connection is attempted");
  assert.equal(await page.textContent("#srv-status"), "");
  assert.equal(await page.inputValue("#srv-token"), "");
  await noToken("after forgetting and reloading");
  assert.deepEqual(problems, []);
});
