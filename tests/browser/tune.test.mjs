// Tune in the Experiments view, in Debian's Chromium: the Python pack's
// natural question set uploaded, "Tune" run in the engine's worker with
// its progress, and the choice shown equal to `ragagent tune --json` for
// the same input (the chosen name, the cross-validated MRR@10, every
// against-row's difference); "Use it for this pack" makes it the pack's
// default for the session, which the Corpus view's search then names;
// "Save as configuration" keeps the choice under a name as one of the
// view's own configurations (checked, in localStorage, in the link, and
// offered again after a reload), a built-in's name refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary } from "./harness.mjs";

const SET = path.join(root, "fixtures", "cases", "python-3.11-natural.json");
let site, browser, page, problems, ragagent;

before(async () => {
  ragagent = goBinary("./cmd/ragagent");
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  await page.selectOption("#corpus-choice", { label: "Python 3.11 documentation: library, language reference and tutorial" });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
});

test("Tune chooses what ragagent tune --json chooses, with progress, and its choice applies to the pack", async () => {
  const want = JSON.parse(execFileSync(ragagent, ["tune", "--json", "--corpus", "python-3.11", "--cases", SET], { cwd: root, stdio: ["ignore", "pipe", "pipe"] }));
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SET);
  await page.waitForFunction(() => /python-3\.11-natural\.json/.test(document.querySelector("#exp-cases-now").textContent));
  const tune = page.getByRole("button", { name: "Tune", exact: true });
  await page.waitForFunction(() => !document.querySelector("#exp-tune-run").disabled, null, { timeout: 60000 });
  assert.equal(await page.getByRole("button", { name: "Use it for this pack (this session)" }).isDisabled(), true, "nothing to apply before tuning");
  await tune.click();
  await page.waitForFunction(() => /^Tuning: \d+ of \d+/.test(document.querySelector("#exp-tune-status").textContent) || document.body.dataset.tune === "done",
    null, { timeout: 60000, polling: "raf" });
  await page.waitForFunction(() => document.body.dataset.tune === "done", null, { timeout: 180000 });
  const chosen = await page.getAttribute("#exp-tune-result [data-chosen]", "data-chosen");
  assert.equal(chosen, want.chosen.name);
  const text = await page.textContent("#exp-tune-result");
  assert.ok(text.includes(want.estimate["mrr@10"].value.toFixed(3)), "the cross-validated MRR@10");
  for (const a of want.against) {
    assert.ok(text.includes((a.difference >= 0 ? "+" : "") + a.difference.toFixed(3)), `the difference against ${a.name} on ${a.metric}`);
  }
  if (want.warning) assert.ok(text.includes(want.warning));
  const size = page.viewportSize();
  await page.setViewportSize({ width: 360, height: 800 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(wide <= 0, `at 360 px the result's tables scroll within their regions (the page was ${wide} px too wide)`);
  await page.setViewportSize(size);
  await page.getByRole("button", { name: "Use it for this pack (this session)" }).click();
  await page.waitForFunction((name) => document.querySelector("#exp-tune-status").textContent.includes(`now searches by ${name}`), want.chosen.name, { timeout: 30000 });
  const ranked = await page.evaluate(async () => {
    const { call } = await import("./engine/client.js");
    return (await call("search", [{ corpus: "python-3.11", query: "read a file line by line" }])).retrieval;
  });
  assert.equal(ranked, want.chosen.name, "the pack's searches rank by the choice");
  assert.deepEqual(problems, []);
});

test("Save as configuration keeps the choice under a name among the view's own configurations, in this browser and the link", async () => {
  const want = JSON.parse(execFileSync(ragagent, ["tune", "--json", "--corpus", "python-3.11", "--cases", SET], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })).chosen;
  const save = page.getByRole("button", { name: "Save as configuration", exact: true });
  const name = page.getByLabel("Name for the configuration", { exact: true });
  // A built-in's name is refused, and nothing is kept.
  await name.fill("seed");
  await save.click();
  assert.match(await page.textContent("#exp-tune-status"), /^Not saved: seed is a built-in's name/);
  assert.equal(await page.locator('li.exp-own:has(input[value="seed"])').count(), 0);
  await name.fill("my-tuned");
  await save.click();
  assert.match(await page.textContent("#exp-tune-status"), /^Saved as my-tuned/);
  const own = page.locator('li.exp-own:has(input[value="my-tuned"])');
  assert.match(await own.textContent(), /my-tuned \(your own\)/);
  assert.equal(await own.locator("input").isChecked(), true, "checked for the next experiment");
  const settings = (s) => { const { name: _n, description: _d, ...rest } = s; return rest; };
  const kept = await page.evaluate(() => JSON.parse(localStorage.getItem("ragagent.experiment.configs")));
  const mine = kept.find((s) => s.name === "my-tuned");
  assert.deepEqual(settings(mine), settings(want), "the chosen settings under the new name");
  assert.ok(new URLSearchParams(new URL(page.url()).hash.split("?")[1]).getAll("spec").some((t) => JSON.parse(t).name === "my-tuned"), "carried by the link");
  await page.reload();
  await page.waitForFunction(() => document.querySelector('li.exp-own input[value="my-tuned"]'), null, { timeout: 120000 });
  assert.deepEqual(problems, []);
});
