// Files the person gives the page, in Debian's Chromium: a recording over
// the engine's input cap (constants.max_input_bytes, 64 MiB) is refused
// before it is read, a file that is not UTF-8 or a drop of several files is
// refused with a clear message, and each refusal leaves the recording
// loaded before in place (its table, and its trials in the Trace view).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, openSync, ftruncateSync, closeSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage } from "./harness.mjs";

let site, browser, page, problems, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-inputs-"));
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#recordings`));
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const message = () => page.textContent("#rec-message");
const trialsShown = () => page.$$eval("#rec-result table.trials tbody tr", (r) => r.length);

test("a recording loads, then a file over the cap is refused unread and the loaded one is kept", async () => {
  const cap = await page.evaluate(async () => (await window.ragagentPage.engineReady).constants.max_input_bytes);
  assert.equal(cap, 64 * 1048576);
  await page.setInputFiles("#rec-file", path.join(root, "recordings", "agent-comparison.json"));
  await page.waitForFunction(() => /agent-comparison\.json: 16 trials replayed/.test(document.querySelector("#rec-message").textContent));
  assert.equal(await trialsShown(), 16);

  // A sparse file one byte over the cap.
  const big = path.join(dir, "big.json");
  const fd = openSync(big, "w");
  ftruncateSync(fd, cap + 1);
  closeSync(fd);
  const t0 = Date.now();
  await page.setInputFiles("#rec-file", big);
  await page.waitForFunction(() => /big\.json/.test(document.querySelector("#rec-message").textContent));
  assert.equal(await message(), `big.json is 64.0 MiB (${cap + 1} bytes), over the cap of ${cap} bytes (64.0 MiB) on a file the lab reads; it was not read.The recording loaded before is kept.`);
  assert.ok(Date.now() - t0 < 10000, "refused at once");
  assert.equal(await trialsShown(), 16, "the loaded recording's trials are still shown");
  assert.equal(await page.isEnabled('#trace-source option[value="loaded"]'), true, "and still offered in the Trace view");
});

test("a file that is not UTF-8 and a drop of several files are refused, the loaded recording kept", async () => {
  const latin1 = path.join(dir, "latin1.json");
  writeFileSync(latin1, Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d])); // {"é":1} in Latin-1
  await page.setInputFiles("#rec-file", latin1);
  await page.waitForFunction(() => /latin1\.json/.test(document.querySelector("#rec-message").textContent));
  assert.equal(await message(), "latin1.json is not UTF-8 text.The recording loaded before is kept.");

  const text = readFileSync(path.join(root, "recordings", "agent-comparison.json"), "utf8");
  await page.evaluate((t) => {
    const dt = new DataTransfer();
    dt.items.add(new File([t], "a.json", { type: "application/json" }));
    dt.items.add(new File([t], "b.json", { type: "application/json" }));
    document.querySelector("#rec-drop").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, text);
  await page.waitForFunction(() => /2 files were dropped/.test(document.querySelector("#rec-message").textContent));
  assert.equal(await message(), "2 files were dropped; drop one recording at a time.The recording loaded before is kept.");
  assert.equal(await trialsShown(), 16);

  await page.evaluate((t) => {
    const dt = new DataTransfer();
    dt.items.add(new File([t], "one.json", { type: "application/json" }));
    document.querySelector("#rec-drop").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, text);
  await page.waitForFunction(() => /^one\.json: 16 trials replayed/.test(document.querySelector("#rec-message").textContent));
});

test("no errors reached the console", () => {
  assert.deepEqual(problems, []);
});
