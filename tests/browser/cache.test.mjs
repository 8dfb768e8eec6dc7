// The page primes the browser's compiled-code cache once per engine build:
// after the first replay the worker repeats the start-up work in the
// background (wasm/warm.go), the page remembers main.wasm's ETag, and a
// second visit in the same profile skips it. No timing is asserted: what
// the cache saves is measured by make bench-page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveSite, launch, openPage } from "./harness.mjs";

let site, browser;

before(async () => {
  site = await serveSite();
  browser = await launch();
});

after(async () => {
  await browser?.close();
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
