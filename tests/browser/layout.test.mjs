// Every view, filled as a person would fill it (a trace with its request
// and reply open, a live plan, the rerank lab replayed, a loaded recording,
// a search): no serious or critical accessibility violation (axe-core,
// pinned in package-lock.json, run in Chromium), and no horizontal page
// overflow at 360 px wide. Screenshots of each view on a phone go to
// tests/browser/screenshots/ under make screenshots.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { root, serveSite, launch, startFake, screenshot, SHOTS } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const VIEWS = ["replay", "trace", "run", "rerank", "recordings", "corpus", "experiments", "runs", "compare"];

let site, fake, browser, page, problems;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fake = await startFake();
  site = await serveSite([fake.url]);
  browser = await launch();
  page = await browser.context.newPage();
  problems = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#trace/serialize-and-save/1`);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 180000 });
  // Fill every view.
  await page.waitForSelector("#trial-serialize-and-save-agent-1");
  await page.click("#trial-serialize-and-save-agent-1 .exchange[data-call='1'] summary");
  await page.waitForSelector("#trial-serialize-and-save-agent-1 .exchange[data-call='1'] pre");
  await page.click('a[data-view="run"]');
  await page.selectOption("#run-preset", "serialize-and-save");
  await page.check('input[name="policy"][value="gemini"]');
  await page.fill("#run-key", "layout-test-key-0123");
  await page.click("#run-start");
  await page.waitForSelector("#run-plan:not([hidden])");
  await page.click("#run-start");
  await page.waitForFunction(() => /^Finished/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  await page.click('a[data-view="rerank"]');
  await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 120000 });
  await page.click('a[data-view="recordings"]');
  const rec = readFileSync(path.join(root, "recordings", "agent-comparison.json"));
  await page.setInputFiles("#rec-file", { name: "comparison.json", mimeType: "application/json", buffer: rec });
  await page.waitForSelector("#rec-result table");
  await page.click('a[data-view="corpus"]');
  await page.fill("#search-query", "write_text encoding utf-8");
  await page.click("#search-run");
  await page.waitForSelector("#search-result table");
  await page.evaluate(AXE);
});

after(async () => {
  await browser?.close();
  site?.stop();
  fake?.stop();
});

async function show(view) {
  await page.click(`a[data-view="${view}"]`);
  await page.waitForFunction((v) => !document.querySelector(`#view-${v}`).hidden, view);
}

test("no serious or critical accessibility violation in any view (axe-core)", async () => {
  for (const view of VIEWS) {
    await show(view);
    const found = await page.evaluate(async () => {
      const res = await window.axe.run(document, { resultTypes: ["violations"] });
      return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
    });
    assert.deepEqual(found, [], `${view} view`);
  }
});

test("no horizontal page overflow at 360 px in any view", async () => {
  await page.setViewportSize({ width: 360, height: 780 });
  for (const view of VIEWS) {
    await show(view);
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${view}: the page is ${scroll} px wide in a ${client} px window`);
    await screenshot(page, `${view}-360`);
  }
  // The tabs stay reachable while a long view scrolls: they are the last
  // row of the bar, which sticks to the top.
  await show("trace");
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight / 2));
  const [top, tabsTop, tabsBottom, barBottom] = await page.evaluate(() => {
    const bar = document.querySelector("header.top").getBoundingClientRect();
    const tabs = document.querySelector(".tabbar").getBoundingClientRect();
    return [bar.top, tabs.top, tabs.bottom, bar.bottom];
  });
  assert.equal(Math.round(top), 0, "the bar sticks to the top");
  assert.ok(tabsTop >= 0 && tabsBottom <= barBottom, "the tabs are in the bar");
  assert.equal(await page.isVisible('a[data-view="rerank"]'), true);
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(problems, []);
});
