// The defects a new user hit (issue 19, item 6), each held in Debian's
// Chromium: Run stays disabled while a pack opens (a run started then went
// to the corpus before), the background warm-up pauses while the page
// works for the person and its notice neither shifts the layout nor
// guesses its length, traces of your own documents are not labelled
// "Python 1.0", the Replay table fits at 1280 px, the sticky tab bar does
// not cover the heading a deep link scrolls to, the unsupported question's
// failing rows say why, the request's user message is shown parsed, inline
// code in answers is code, and the Trace links are at least 24 px tall.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveSite, launch, openPage } from "./harness.mjs";

let site, browser, page, problems;

before(async () => {
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#replay`));
});

after(async () => {
  await browser?.close();
  site?.stop();
});

/** holdPack delays the pack's passages file until release() is called (later requests pass at once). */
async function holdPack(p, id) {
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const pattern = `**/packs/${id}/passages.sqlite.gz`;
  await p.context().route(pattern, async (route) => {
    await held;
    await route.continue();
  });
  return async () => release();
}

const settled = (p) => p.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.corpus), null, { timeout: 180000 });

test("Run and Run experiment are disabled while a pack opens, so a run never goes to the corpus before", async () => {
  await page.click('a[data-view="run"]');
  await page.check('input[name="policy"][value="scripted"]');
  assert.equal(await page.isEnabled("#run-start"), true, "enabled on the seed");
  const release = await holdPack(page, "sqlite-3.40");
  await page.selectOption("#corpus-choice", "sqlite-3.40");
  await page.waitForFunction(() => document.body.dataset.corpus === "loading");
  assert.equal(await page.isEnabled("#run-start"), false, "Run is disabled while the pack opens");
  assert.match(await page.textContent("#run-why"), /opens/);
  await page.click('a[data-view="experiments"]');
  assert.equal(await page.isEnabled("#exp-run"), false, "Run experiment too");
  await page.click('a[data-view="run"]');
  await release();
  await settled(page);
  assert.equal(await page.evaluate(() => document.body.dataset.corpus), "ready");
  assert.equal(await page.isEnabled("#run-start"), true, "enabled once it is open");
  assert.match(await page.textContent("#run-corpus"), /SQLite 3\.40/);
  await page.selectOption("#corpus-choice", "seed");
  await settled(page);
});

test("the Replay table fits its box at 1280 px (no column clipped)", async () => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.click('a[data-view="replay"]');
  const [scroll, client] = await page.$eval("#trials", (t) => [t.parentElement.scrollWidth, t.parentElement.clientWidth]);
  assert.ok(scroll <= client, `the trials table is ${scroll} px wide in its ${client} px box`);
});

test("the unsupported question's failing rows say why (it answered where only a stop passes)", async () => {
  const rows = await page.$$eval('#trials tbody tr[data-case="unsupported"][data-outcome="fail"]', (trs) => trs.map((tr) => tr.textContent));
  assert.ok(rows.length > 0, "the recorded comparison has failing unsupported rows");
  for (const text of rows) assert.match(text, /answered where only a stop passes/);
});

test("the Trace links are at least 24 px tall on a phone", async () => {
  await page.setViewportSize({ width: 360, height: 780 });
  const boxes = await page.$$eval("#trials tbody a", (as) => as.map((a) => { const r = a.getBoundingClientRect(); return [r.width, r.height]; }));
  assert.ok(boxes.length >= 16);
  for (const [w, hgt] of boxes) assert.ok(w >= 24 && hgt >= 24, `a Trace link is ${Math.round(w)}x${Math.round(hgt)} px`);
  await page.setViewportSize({ width: 1280, height: 900 });
});

/** coveredBy says how far the sticky tab bar covers el's top (0 when it does not). */
const covered = (p, sel) => p.$eval(sel, (el) => Math.max(0, document.querySelector(".tabbar").getBoundingClientRect().bottom - el.getBoundingClientRect().top));

test("a deep link's heading is not under the sticky tab bar", async () => {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 780 });
    await page.click('a[data-view="rerank"]');
    await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 120000 });
    const last = await page.$$eval(".rcase", (as) => as.at(-1).id.replace(/^rcase-/, ""));
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.evaluate((c) => { location.hash = `#rerank/${encodeURIComponent(c)}`; }, last);
    await page.waitForFunction(() => window.scrollY > 0);
    assert.equal(await covered(page, `#rcase-${last} h4`), 0, `${width} px: the rerank case's heading is under the tab bar`);
    // A trace row further down, followed from the Replay table.
    await page.click('a[data-view="replay"]');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.click('#trials tbody tr[data-id="unsupported-agent-2"] a');
    await page.waitForFunction(() => document.activeElement?.id === "trial-unsupported-agent-2");
    assert.equal(await covered(page, "#trial-unsupported-agent-2 h3"), 0, `${width} px: the trial's heading is under the tab bar`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("the request's user message is shown parsed and indented, and inline code in answers is code", async () => {
  await page.goto(`${site.url}/#trace/serialize-and-save/1`);
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  const ex = "#trial-serialize-and-save-agent-1 .exchange[data-call='1']";
  await page.click(`${ex} summary`);
  await page.waitForSelector(`${ex} .user-message pre`);
  const shown = await page.textContent(`${ex} .user-message pre`);
  assert.match(shown, /^\{\n {2}"/, "the user message is a JSON object shown indented");
  assert.ok(!shown.includes('\\"'), "not one escaped string");
  const answer = "#trial-serialize-and-save-agent-1 .answer";
  const codes = await page.$$eval(`${answer} code`, (cs) => cs.map((c) => c.textContent));
  assert.ok(codes.includes("json.dumps(obj, ensure_ascii=False)"), codes.join(" | "));
  assert.equal((await page.textContent(answer)).includes("`"), false, "no literal backticks");
});

test("a trace of your own documents names no Python version", async () => {
  await page.click('a[data-view="corpus"]');
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer();
    d.items.add(new File(["# Kettle\n\nDescale the kettle with citric acid every month.\n"], "kettle.md", { type: "text/markdown" }));
    return d;
  });
  await page.dispatchEvent("#docs-drop", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.docs), null, { timeout: 120000 });
  await settled(page);
  assert.equal(await page.inputValue("#corpus-choice"), "documents");
  await page.click('a[data-view="run"]');
  await page.fill("#run-question", "How often should the kettle be descaled with citric acid?");
  await page.check('input[name="policy"][value="scripted"]');
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Refused|Could not)/.test(document.querySelector("#run-status").textContent), null, { timeout: 120000 });
  const text = await page.textContent("#run-output");
  assert.ok(text.includes("kettle.kettle"), "the run searched the documents");
  assert.doesNotMatch(text, /Python/, "no Python label on a trace of your own documents");
  assert.match(text, /version 1\.0/);
  await page.click('a[data-view="corpus"]');
  await page.click("#docs-remove");
  await settled(page);
  assert.deepEqual(problems, []);
});

test("the warm-up pauses while a pack opens, says how far it is, and shifts nothing", async () => {
  const warm = await launch({ warmUp: true });
  try {
    await warm.context.addInitScript(() => {
      window.__shifts = [];
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) if (!e.hadRecentInput) window.__shifts.push({ value: e.value, at: e.startTime });
      }).observe({ type: "layout-shift", buffered: true });
      // When the warm-up started: the moment body's data-warm first reads running.
      new MutationObserver(() => {
        if (window.__warmAt === undefined && document.body?.dataset.warm === "running") window.__warmAt = performance.now();
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-warm"] });
    });
    const { page: p, problems: probs } = await openPage(warm.context, `${site.url}/#corpus`);
    await settled(p);
    await p.waitForFunction(() => document.body.dataset.warm === "running", null, { timeout: 60000 });
    const warmStart = await p.evaluate(() => window.__warmAt);
    assert.doesNotMatch(await p.textContent("#warm-status"), /about \d+ s/, "no guessed length");
    await p.waitForFunction(() => /\d+%/.test(document.querySelector("#warm-status").textContent), null, { timeout: 60000 });
    const release = await holdPack(p, "python-3.11");
    const since = await p.evaluate(() => performance.now());
    await p.selectOption("#corpus-choice", "python-3.11");
    await p.waitForFunction(() => document.body.dataset.warm === "paused", null, { timeout: 30000 });
    const pausedAt = await p.textContent("#warm-status");
    assert.match(pausedAt, /paused/);
    await p.waitForTimeout(1500);
    assert.equal(await p.textContent("#warm-status"), pausedAt, "no warm-up round ran while the pack was opening");
    await release();
    await settled(p);
    await p.waitForTimeout(500);
    const until = await p.evaluate(() => performance.now());
    await p.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.warm), null, { timeout: 240000 });
    assert.equal(await p.evaluate(() => document.body.dataset.warm), "done");
    assert.match(await p.textContent("#warm-status"), /Warm-up done/);
    // The pack's own opening (its progress bar and status line) may move
    // the page; nothing else may from the warm-up's start to its end.
    const shifts = await p.evaluate(([a, b, c]) => window.__shifts.filter((s) => s.at >= c && (s.at < a || s.at > b)), [since, until, warmStart]);
    assert.deepEqual(shifts, [], "the warm-up's notice shifted the layout");
    assert.deepEqual(probs, []);
  } finally {
    await warm.close();
  }
});
