// The Experiments view's agent experiment in Debian's Chromium: a question
// set uploaded through "Question set", "Run agent experiment" (the
// scripted policy on both paths, offline, in the engine's worker, with its
// progress), and each path's rates with their intervals and the agent
// against fixed comparison equal, number for number, to `ragagent eval
// --corpus python-3.11 --cases FILE --json` run by this test; axe with no
// serious violation and no horizontal overflow at 360 and 1280 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const SET = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
let site, browser, page, problems;

before(async () => {
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  await page.selectOption("#corpus-choice", "python-3.11");
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
});

const fixed = (x) => Number(x).toFixed(3);

test("the scripted policy over a question set on both paths: the command line's rates, intervals and comparisons", async () => {
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SET);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  const statuses = [];
  await page.exposeFunction("__agentStatus", (t) => statuses.push(t));
  await page.evaluate(() => new MutationObserver(() => window.__agentStatus(document.querySelector("#exp-agent-status").textContent))
    .observe(document.querySelector("#exp-agent-status"), { childList: true, characterData: true, subtree: true }));
  await page.getByRole("button", { name: "Run agent experiment", exact: true }).click();
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.agentExperiment), null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.agentExperiment), "done", await page.textContent("#exp-agent-status"));
  assert.ok(statuses.some((s) => /^Trial \d+ of 10 /.test(s)), statuses.join(" | "));
  const want = JSON.parse(execFileSync(goBinary("./cmd/ragagent"), ["eval", "--corpus", "python-3.11", "--cases", SET, "--json"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  const paths = want.experiment.paths;
  for (const rate of paths[0].rates.map((r) => r.name)) {
    const cells = await page.$$eval(`.agent-rates tr[data-rate="${rate}"] td .ci-text`, (ts) => ts.map((t) => t.textContent));
    assert.deepEqual(cells, paths.map((p) => {
      const r = p.rates.find((x) => x.name === rate);
      return r.value === null ? "0/0 (applies to no trial)" : `${r.count}/${r.of} ${fixed(r.value)} [${fixed(r.ci95[0])}, ${fixed(r.ci95[1])}]`;
    }), rate);
  }
  for (const c of want.experiment.comparisons) {
    const row = await page.$eval(`.agent-cmp tr[data-rate="${c.rate}"]`, (tr) => [...tr.querySelectorAll("td")].map((td) => td.getAttribute("title") ?? td.textContent));
    assert.equal(row[0], String(c.pairs), c.rate);
    if (c.difference !== null) assert.equal(Number(row[1]), c.difference, c.rate);
    assert.equal(Number(row[6]), c.mcnemar_p, c.rate);
    assert.equal(row[4], String(c.a_only));
    assert.equal(row[5], String(c.b_only));
  }
});

test("the agent experiment's result is accessible and fits at 360 and 1280 px", async () => {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ["violations"] });
    return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(found, []);
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${width} px: the page is ${scroll} px wide`);
  }
  assert.deepEqual(problems, []);
});

test("Cancel stops the agent experiment in the browser between two trials, keeping nothing", async () => {
  // The small set twenty times over (ids made unique): hundreds of trials,
  // so Cancel comes long before the end.
  const lines = readFileSync(SET, "utf8").trim().split("\n");
  const head = lines.filter((l) => l.startsWith("#") || l.startsWith("id\t"));
  const rows = lines.filter((l) => !head.includes(l));
  const many = [...head];
  for (let i = 0; i < 20; i++) for (const r of rows) many.push(r.replace(/^([^\t]+)/, `$1-${i}`));
  await page.getByLabel("Question set", { exact: true }).setInputFiles({ name: "many.tsv", mimeType: "text/tab-separated-values", buffer: Buffer.from(many.join("\n") + "\n") });
  await page.waitForFunction(() => /many\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  const total = 2 * (many.length - head.length);
  await page.getByRole("button", { name: "Run agent experiment", exact: true }).click();
  await page.waitForFunction(() => /^Trial \d+ of \d+/.test(document.querySelector("#exp-agent-status").textContent), null, { timeout: 60000 });
  const cancel = page.locator("#exp-agent-cancel");
  assert.equal(await cancel.isEnabled(), true, "Cancel is offered for a run in this browser");
  await cancel.click();
  await page.waitForFunction(() => ["cancelled", "done", "failed"].includes(document.body.dataset.agentExperiment), null, { timeout: 60000 });
  const status = await page.textContent("#exp-agent-status");
  assert.equal(await page.evaluate(() => document.body.dataset.agentExperiment), "cancelled", status);
  assert.match(status, /^Cancelled: nothing was kept/);
  assert.equal(await page.locator("#exp-agent-download").isDisabled(), true, "nothing to download");
  assert.equal(await cancel.isDisabled(), true);
  assert.equal(await page.getByRole("button", { name: "Run agent experiment", exact: true }).isEnabled(), true, "a new experiment may start");
  assert.ok(total > 100);
  assert.deepEqual(problems, []);
});
