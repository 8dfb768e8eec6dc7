// The spending ledger shared by tabs, in Debian's Chromium: four tabs of
// the page in one browser (one site storage) start live reranks against
// cmd/fakegemini at the same instant with a budget that fits two runs. Each
// reservation is one IndexedDB transaction, run one at a time across the
// tabs, so the fake receives at most what the budget allows and every
// request it received has its entry in the ledger. A change made in one tab
// is shown in the others at once, even in a tab whose own rerank is still
// running; a ledger the page kept in localStorage before is carried over.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { serveSite, launch, startFake, observe, ledgerText, screenshot, SHOTS } from "./harness.mjs";

const KEY = "test-key-ledger-5d2e81aa";
const TABS = 4;
const RUN_USD = 0.0079135; // one live rerank: four requests (tests/browser/rerank.test.mjs)
const BUDGET = 0.016; // two runs, not three

let site, fake, slow, scripts, browser, consoleLines;
const posts = []; // every POST a tab sent to the fake: its body's sha256

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fake = await startFake();
  scripts = mkdtempSync(path.join(tmpdir(), "ragagent-fake-"));
  const script = path.join(scripts, "slow.json");
  // The first listwise reply takes 8 s, then the fake ranks as usual.
  writeFileSync(script, JSON.stringify({ format: "ragagent-fake/1", replies: [{ ranking: "coverage", delay_ms: 8000 }], then: "policy" }));
  slow = await startFake(["--script", script, "--quiet"]);
  site = await serveSite([fake.url, slow.url]);
  browser = await launch();
  consoleLines = [];
});

after(async () => {
  await browser?.close();
  for (const p of [site, fake, slow]) p?.stop();
  if (scripts) rmSync(scripts, { recursive: true, force: true });
});

/** openTab opens the Rerank view with its live endpoint on fakeURL, once the lab is replayed. */
async function openTab(fakeURL) {
  const page = await browser.context.newPage();
  observe(page, consoleLines);
  page.on("request", (r) => {
    if (r.url().startsWith(fake.url) && r.method() === "POST") posts.push(createHash("sha256").update(r.postDataBuffer() || "").digest("hex"));
  });
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fakeURL)}#rerank`);
  await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 240000 });
  await page.waitForFunction(() => document.querySelector("#rerank-ledger-budget"));
  return page;
}

const budgetShown = (page) => page.textContent("#rerank-ledger-budget");
const ledgerOf = async (page) => JSON.parse(await ledgerText(page));

async function showPlan(page) {
  await page.fill("#run-key", KEY);
  await page.click("#rerank-start");
  await page.waitForFunction(() => document.querySelector("#rerank-start").textContent === "Send 4 requests");
}

test("tabs starting live reranks at once never pass the budget, and every request sent has its entry", async () => {
  const tabs = [];
  for (let i = 0; i < TABS; i++) tabs.push(await openTab(fake.url));

  await tabs[0].fill("#rerank-budget", String(BUDGET));
  await tabs[0].click("#rerank-set-budget");
  for (const t of tabs) await t.waitForFunction((b) => document.querySelector("#rerank-ledger-budget").textContent === b, `$${BUDGET}`);

  for (const t of tabs) await showPlan(t);
  // Every tab presses Send at the same instant.
  const at = Date.now() + 1000;
  await Promise.all(tabs.map((t) => t.evaluate((when) => {
    delete document.body.dataset.rerankLive;
    setTimeout(() => document.querySelector("#rerank-start").click(), when - Date.now());
  }, at)));
  for (const t of tabs) await t.waitForFunction(() => document.body.dataset.rerankLive === "done", null, { timeout: 120000 });

  const statuses = await Promise.all(tabs.map((t) => t.textContent("#rerank-live-status")));
  const finished = statuses.filter((s) => /^Finished: 4 of 4 cases reranked\.$/.test(s)).length;
  const refused = statuses.filter((s) => /^Refused: budget_exceeded: .*over the budget/.test(s)).length;
  assert.equal(finished, 2, `two runs fit the budget: ${statuses.join(" / ")}`);
  assert.equal(refused, TABS - 2, `the others are refused before sending: ${statuses.join(" / ")}`);

  const received = (fake.log().match(/^POST \/v1beta\/models\/[^ ]+:generateContent -> 200/gm) || []).length;
  assert.equal(received, 8, "the fake received the two runs' requests and no more");
  assert.equal(posts.length, received, "every request the fake received was sent by a tab");

  const ledger = await ledgerOf(tabs[0]);
  const counted = ledger.entries.filter((e) => e.outcome !== "released");
  const spent = counted.reduce((s, e) => s + e.estimated_usd, 0);
  assert.ok(spent <= BUDGET, `reserved $${spent}, within $${BUDGET}`);
  assert.ok(Math.abs(spent - 2 * RUN_USD) < 1e-12, `two runs reserved: $${spent}`);
  assert.equal(counted.length, received, "one entry per request received");
  // Every request sent has its entry: as many entries for each body as bodies sent.
  const tally = (shas) => shas.reduce((m, s) => m.set(s, (m.get(s) || 0) + 1), new Map());
  const sent = tally(posts);
  const entries = tally(counted.map((e) => e.request_sha256));
  for (const [sha, n] of sent) assert.ok((entries.get(sha) || 0) >= n, `${n} requests with sha256 ${sha.slice(0, 12)}…, ${entries.get(sha) || 0} entries`);
  assert.deepEqual(counted.filter((e) => e.outcome !== "completed"), [], "each outcome came back");

  // Every tab shows the ledger as it is now.
  for (const t of tabs) {
    await t.waitForFunction((n) => document.querySelector("#rerank-ledger-spent").textContent.endsWith(`in ${n} reservations`), counted.length);
  }
  await screenshot(tabs[1], "ledger-tabs");
  for (const t of tabs) await t.close();
});

test("a budget changed in one tab is shown at once in another, even while its rerank runs", async () => {
  const running = await openTab(slow.url);
  const other = await openTab(fake.url);
  await other.fill("#rerank-budget", "1");
  await other.click("#rerank-set-budget");
  await running.waitForFunction(() => document.querySelector("#rerank-ledger-budget").textContent === "$1");

  await showPlan(running);
  await running.click("#rerank-start"); // its first reply takes 8 s
  await running.waitForFunction(() => /Sending|Case/.test(document.querySelector("#rerank-live-status").textContent));
  await other.waitForFunction(() => /in \d+ reservations?$/.test(document.querySelector("#rerank-ledger-spent").textContent) &&
    !/in 0 reservations/.test(document.querySelector("#rerank-ledger-spent").textContent));
  await other.fill("#rerank-budget", "0.5");
  await other.click("#rerank-set-budget");
  await running.waitForFunction(() => document.querySelector("#rerank-ledger-budget").textContent === "$0.5", null, { timeout: 4000 });
  assert.match(await running.textContent("#rerank-live-status"), /^(Sending|Case)/, "shown while the rerank still runs");
  await running.waitForFunction(() => document.body.dataset.rerankLive === "done", null, { timeout: 60000 });
  assert.match(await running.textContent("#rerank-live-status"), /^Finished: 4 of 4/);
  assert.equal((await ledgerOf(running)).budget_usd, 0.5, "the run's settlements kept the other tab's budget");
});

test("a ledger the page kept in localStorage before is carried over, nothing lost", async () => {
  const fresh = await launch();
  try {
    const entry = (seq, usd) => ({ seq, at: "2026-11-29T12:00:00Z", label: `rerank listwise: case ${seq}`, model: "gemini-3.1-flash-lite",
      request_sha256: "ab".repeat(32), request_bytes: 1776, estimated_usd: usd, outcome: "completed" });
    const before = { format: "ragagent-ledger/1", budget_usd: 0.03, spent_usd: 0.004, entries: [entry(1, 0.0015), entry(2, 0.0025)] };
    const setup = await fresh.context.newPage();
    await setup.goto(`${site.url}/published.json`);
    await setup.evaluate((text) => localStorage.setItem("ragagent.ledger", text), JSON.stringify(before));
    await setup.close();

    const page = await fresh.context.newPage();
    observe(page, consoleLines);
    await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#rerank`);
    await page.waitForFunction(() => /in 2 reservations/.test(document.querySelector("#rerank-ledger-spent")?.textContent || ""), null, { timeout: 240000 });
    assert.equal(await budgetShown(page), "$0.03");
    assert.equal(await ledgerText(page), null, "read where it was, nothing written yet");
    await page.fill("#rerank-budget", "0.02");
    await page.click("#rerank-set-budget");
    await page.waitForFunction(() => document.querySelector("#rerank-ledger-budget").textContent === "$0.02");
    const after = await ledgerOf(page);
    assert.equal(after.budget_usd, 0.02);
    assert.deepEqual(after.entries, before.entries, "every reservation kept");
    assert.equal(await page.evaluate(() => localStorage.getItem("ragagent.ledger")), null, "one copy: the old one is dropped");
    await page.reload();
    await page.waitForFunction(() => /in 2 reservations/.test(document.querySelector("#rerank-ledger-spent")?.textContent || ""), null, { timeout: 240000 });
    assert.equal(await budgetShown(page), "$0.02");
  } finally {
    await fresh.close();
  }
});

test("no errors reached the console", () => {
  assert.deepEqual(consoleLines.filter((l) => /^(error|pageerror)/.test(l)), []);
});
