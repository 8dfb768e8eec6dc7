// The Experiments view's agent experiment with Gemini in Debian's Chromium,
// against cmd/fakegemini on loopback: the plan first (refused with no
// budget, refused whole when the worst case is over the budget, nothing
// sent either time), then the eval sent through the key's header with
// every request reserved in the IndexedDB ledger, its rates equal, number
// for number, to `ragagent eval --policy gemini --execute-approved --json`
// against the same fake; and Stop, which ends it before the next trial
// with the trials that ran graded and the ledger settled.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, startFake, observe, ledgerText, goBinary } from "./harness.mjs";

const KEY = "test-key-8c2e41d09b7a";
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** accessible checks axe (no serious violation) and no horizontal overflow at 360 and 1280 px. */
async function accessible(page, what) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ["violations"] });
    return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(found, [], what);
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${what}, ${width} px: the page is ${scroll} px wide`);
  }
}
let site, fake, slow, browser, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-agent-gemini-"));
  fake = await startFake(["--quiet"]);
  const script = path.join(dir, "slow.json");
  writeFileSync(script, JSON.stringify({ format: "ragagent-fake/1", then: "policy", replies: [
    { decision: { action: "stop", assessment: "Too slow to matter.", query: "", source_id: "", answer: "", citations: [] }, delay_ms: 60000 },
  ] }));
  slow = await startFake(["--script", script, "--quiet"]);
  site = await serveSite([fake.url, slow.url]);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  site?.stop();
  fake?.stop?.();
  slow?.stop?.();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(fakeURL) {
  const page = await browser.context.newPage();
  const seen = observe(page);
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fakeURL)}#experiments`);
  await page.waitForFunction(() => document.body.dataset.engine !== "failed" && !document.querySelector("#exp-gemini-start").disabled && /Ledger:/.test(document.querySelector("#exp-ledger").textContent), null, { timeout: 180000 });
  // The page's one key box is in this form while the view is shown.
  assert.ok(await page.$("#exp-gemini-form #run-key"));
  await page.fill("#run-key", KEY);
  return { page, ...seen };
}

const toFake = (requests, url) => requests.filter((r) => r.url.startsWith(url));
const status = (page) => page.textContent("#exp-gemini-status");

async function setBudget(page, usd) {
  await page.fill("#exp-budget", String(usd));
  await page.click("#exp-set-budget");
  await page.waitForFunction(() => /^Budget set to/.test(document.querySelector("#exp-gemini-status").textContent));
}

async function showPlan(page) {
  await page.evaluate(() => { delete document.body.dataset.agentGemini; });
  await page.click("#exp-gemini-start");
  await page.waitForFunction(() => ["planned", "refused"].includes(document.body.dataset.agentGemini), null, { timeout: 20000 })
    .catch(async (err) => { throw new Error(`no plan: ${await status(page)} ${await page.evaluate(() => JSON.stringify([document.querySelector("#exp-gemini-start").disabled, document.querySelector("#exp-gemini-start").textContent, document.body.dataset.agentGemini, document.querySelector("#exp-gemini-plan").hidden]))} (${err.message})`); });
  return page.evaluate(() => document.body.dataset.agentGemini);
}

const fixed = (x) => Number(x).toFixed(3);

test("a plan is refused without a budget and refused whole over it; then the eval runs through the ledger as the command line's", async () => {
  const { page, requests, consoleLines } = await open(fake.url);
  assert.equal(await showPlan(page), "refused");
  assert.match(await page.textContent("#exp-gemini-refusal"), /set a budget first/);

  await setBudget(page, 0.0001);
  assert.equal(await showPlan(page), "refused");
  assert.match(await page.textContent("#exp-gemini-refusal"), /budget_exceeded: .*over the budget.*nothing was sent/);
  assert.match(await status(page), /^Refused: budget_exceeded\. Nothing was sent\./);
  await accessible(page, "a refused plan");
  assert.equal(toFake(requests, fake.url).length, 0, "a refused plan sends nothing");
  assert.equal(JSON.parse(await ledgerText(page)).entries.length, 0, "and reserves nothing");

  await setBudget(page, 100);
  assert.equal(await showPlan(page), "planned");
  const trials = Number((await page.textContent("#exp-plan-trials")).split(":")[0]);
  assert.ok(trials >= 2, `${trials} trials`);
  assert.match(await page.textContent("#exp-gemini-start"), /^Send up to \d+ requests$/);
  await page.click("#exp-gemini-start");
  await page.waitForFunction(() => ["done", "failed", "stopped"].includes(document.body.dataset.agentGemini), null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.agentGemini), "done", await status(page));
  assert.match(await status(page), new RegExp(`^Finished: ${trials} trials of ${trials}, \\d+ requests sent`));

  const sent = toFake(requests, fake.url);
  assert.ok(sent.length >= trials, `${sent.length} requests`);
  for (const r of sent) assert.equal(r.headers["x-goog-api-key"], KEY, "the key goes only as its header");
  const ledger = JSON.parse(await ledgerText(page));
  assert.equal(ledger.entries.length, sent.length, "one reservation per request sent");
  for (const e of ledger.entries) assert.equal(e.outcome, "completed");

  // The command line's live eval against the same fake grades the same.
  const out = path.join(dir, "cli-recording.json");
  const want = JSON.parse(execFileSync(goBinary("./cmd/ragagent"), ["eval", "--policy", "gemini", "--execute-approved", "--endpoint", fake.url, "--output", out, "--json"],
    { cwd: root, encoding: "utf8", env: { ...process.env, GEMINI_API_KEY: KEY, GOOGLE_API_KEY: "" }, stdio: ["ignore", "pipe", "ignore"] }));
  const paths = want.experiment.paths;
  for (const rate of paths[0].rates.map((r) => r.name)) {
    const cells = await page.$$eval(`#exp-gemini-results .agent-rates tr[data-rate="${rate}"] td .ci-text`, (ts) => ts.map((t) => t.textContent));
    assert.deepEqual(cells, paths.map((p) => {
      const r = p.rates.find((x) => x.name === rate);
      return r.value === null ? "0/0 (applies to no trial)" : `${r.count}/${r.of} ${fixed(r.value)} [${fixed(r.ci95[0])}, ${fixed(r.ci95[1])}]`;
    }), rate);
  }
  assert.equal(await page.isDisabled("#exp-gemini-download"), false, "the recording is offered");
  // Kept in the history beside the scripted experiments, with the agent path's pass rate.
  await page.waitForFunction(() => document.body.dataset.agentGeminiKept === "yes", null, { timeout: 20000 });
  assert.match(await status(page), /Kept as experiment #\d+ in this browser's history/);
  const listed = await page.$$eval("#exh-list tbody tr", (trs) => trs.map((tr) => tr.textContent));
  const pass = paths.find((p) => p.path === "agent").rates.find((r) => r.name === "pass");
  assert.ok(listed.some((t) => t.includes("agent experiment, policy gemini") && t.includes(fixed(pass.value))), `listed: ${listed.join(" | ")}`);
  await accessible(page, "a Gemini agent experiment's result");
  assert.ok(!consoleLines.some((l) => l.includes(KEY)), "the key is never logged");
  await page.close();
});

test("Stop ends a Gemini agent experiment before the next trial, the trials that ran graded and the ledger settled", async () => {
  const { page, requests } = await open(slow.url);
  await setBudget(page, 100);
  // The ledger is the browser's, shared with the test before.
  const before = JSON.parse(await ledgerText(page)).entries.length;
  assert.equal(await showPlan(page), "planned");
  await page.click("#exp-gemini-start");
  await page.waitForFunction(() => document.body.dataset.agentGemini === "running");
  for (let i = 0; i < 200 && toFake(requests, slow.url).length === 0; i++) await page.waitForTimeout(50);
  assert.equal(toFake(requests, slow.url).length, 1, "the first request is in flight");
  await page.click("#exp-gemini-stop");
  await page.waitForFunction(() => ["done", "failed", "stopped"].includes(document.body.dataset.agentGemini), null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => document.body.dataset.agentGemini), "stopped", await status(page));
  assert.match(await status(page), /^Stopped: 1 trial of \d+, 1 request sent/);
  assert.equal(toFake(requests, slow.url).length, 1, "nothing is sent after Stop");
  const entries = JSON.parse(await ledgerText(page)).entries.slice(before);
  assert.equal(entries.length, 1, "one reservation, for the one request sent");
  assert.equal(entries[0].outcome, "cancelled", "the reservation is settled");
  assert.equal(await page.isDisabled("#exp-gemini-stop"), true);
  await page.close();
});
