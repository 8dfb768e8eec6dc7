// The page primes the browser's compiled-code cache once per engine build:
// after the first replay the worker repeats the start-up work in the
// background (wasm/warm.go), the page remembers main.wasm's ETag, and a
// second visit in the same profile skips it; under Save-Data (what every
// other browser test's profile reports, see launch) it never runs and the
// page says why. No timing is asserted: what the cache saves is measured
// by make bench-page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveSite, launch, openPage } from "./harness.mjs";

let site, browser, saving;

before(async () => {
  site = await serveSite();
  browser = await launch({ warmUp: true });
  saving = await launch();
});

after(async () => {
  await browser?.close();
  await saving?.close();
  site?.stop();
});

const warmState = (page) => page.waitForFunction(() => ["done", "skipped", "failed"].includes(document.body.dataset.warm),
  null, { timeout: 600000 }).then(() => page.evaluate(() => document.body.dataset.warm));

test("the first visit warms the engine once; the next visit skips it", async () => {
  const first = await openPage(browser.context, `${site.url}/`);
  assert.equal(await first.page.evaluate(() => document.body.dataset.engine), "ready");
  assert.equal(await warmState(first.page), "done");
  const { etag, warmed, rounds } = await first.page.evaluate(async () => ({
    etag: (await fetch("main.wasm", { method: "HEAD" })).headers.get("ETag"),
    warmed: localStorage.getItem("ragagent.warmed"),
    rounds: window.ragagentPage.timings.warm.rounds,
  }));
  assert.ok(etag, "main.wasm has an ETag");
  assert.equal(warmed, etag);
  assert.equal(rounds, 100);
  // The session is untouched: the table is still the published one.
  assert.equal(await first.page.$$eval("#trials tbody tr", (trs) => trs.length), 16);
  assert.deepEqual(first.problems, []);
  await first.page.close();

  const second = await openPage(browser.context, `${site.url}/`);
  assert.equal(await second.page.evaluate(() => document.body.dataset.engine), "ready");
  assert.equal(await warmState(second.page), "skipped");
  assert.equal(await second.page.$$eval("#trials tbody tr", (trs) => trs.length), 16);
  assert.deepEqual(second.problems, []);
});

test("under Save-Data the warm-up is skipped, and the page says so", async () => {
  const { page, problems } = await openPage(saving.context, `${site.url}/`);
  assert.equal(await page.evaluate(() => navigator.connection.saveData), true);
  assert.equal(await warmState(page), "skipped");
  assert.equal(await page.evaluate(() => localStorage.getItem("ragagent.warmed")), null, "nothing remembered: a later visit without Save-Data still warms");
  const note = page.locator("#warm-status");
  assert.ok(await note.isVisible());
  assert.match(await note.textContent(), /^Save-Data is on: warm-up skipped\.$/);
  assert.deepEqual(problems, []);
});
