// The Experiments view (#experiments) in Debian's Chromium: the engine's
// own result (core/engine/testdata/retrieval-python.json, the golden
// TestRetrievalOnThePythonPack holds engine.Retrieval to, natively and
// under WASM; never invented) drawn as intervals whose points sit at the values and
// whose text says the same numbers, the paired differences with their
// p-values, the per-question table with its wins, losses and ties and its
// rows that open; a configuration of your own kept in localStorage and
// carried by the link, which restores the setup; a question set over the
// input cap refused unread; axe with no serious violation and no
// horizontal overflow at 360 and 1280 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, openSync, ftruncateSync, closeSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage, screenshot } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const GOLDEN = JSON.parse(readFileSync(path.join(root, "core", "engine", "testdata", "retrieval-python.json"), "utf8"));
const METRICS = ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"];

let site, browser, page, problems, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-exp-"));
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  await page.waitForFunction(() => document.body.dataset.corpus === "ready", null, { timeout: 120000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** draw renders a result with the view's own renderers into #exp-results. */
function draw(result) {
  return page.evaluate(async (r) => {
    const m = await import("/experiments/results.js");
    const out = document.querySelector("#exp-results");
    out.replaceChildren(m.metricsBlock(r), m.comparisonsBlock(r),
      m.questionsBlock(r, new Map(), async (id) => { throw new Error(`asked for ${id}`); }));
  }, result);
}

test("the engine's result is drawn: each metric's point and interval where its numbers say, with the same numbers as text", async () => {
  await draw(GOLDEN);
  for (const m of METRICS) {
    const rows = await page.$$eval(`.ci-figure[data-metric="${m}"] .ci-row`, (lis) => lis.map((li) => ({
      name: li.dataset.config,
      text: li.querySelector(".ci-text").textContent,
      cx: Number(li.querySelector("circle").getAttribute("cx")),
      x1: Number(li.querySelector(".ci-range").getAttribute("x1")),
      x2: Number(li.querySelector(".ci-range").getAttribute("x2")),
      hidden: li.querySelector("svg").getAttribute("aria-hidden"),
    })));
    assert.deepEqual(rows.map((r) => r.name), GOLDEN.configs.map((c) => c.name), m);
    rows.forEach((r, i) => {
      const v = GOLDEN.configs[i].metrics[m];
      assert.equal(r.text, `${v.value.toFixed(3)} [${v.ci95[0].toFixed(3)}, ${v.ci95[1].toFixed(3)}]`);
      assert.ok(Math.abs(r.cx - 200 * v.value) < 1e-6, `${m} ${r.name}: the point at ${r.cx}, the value ${v.value}`);
      assert.ok(Math.abs(r.x1 - 200 * v.ci95[0]) < 1e-6 && Math.abs(r.x2 - 200 * v.ci95[1]) < 1e-6);
      assert.equal(r.hidden, "true", "the drawing is hidden from screen readers; the text says it");
    });
  }
});

test("the paired differences against the baseline: every comparison with its interval and p-value", async () => {
  const rows = await page.$$eval(".exp-cmp tbody tr", (trs) => trs.map((tr) => ({ b: tr.dataset.b, metric: tr.dataset.metric, cells: [...tr.children].map((c) => c.textContent) })));
  assert.equal(rows.length, GOLDEN.comparisons.length);
  rows.forEach((r, i) => {
    const c = GOLDEN.comparisons[i];
    assert.equal(c.a, GOLDEN.configs[0].name);
    assert.equal(r.b, c.b);
    assert.equal(r.metric, c.metric);
    assert.match(r.cells[2], new RegExp(`${Math.abs(c.difference).toFixed(3).replace(".", "\\.")}$`));
    assert.ok(r.cells[4].endsWith(c.p_value < 0.001 ? "< 0.001" : c.p_value.toFixed(3)), `${r.cells[4]} for ${c.p_value}`);
  });
  assert.match(await page.textContent(".exp-comparisons h3"), new RegExp(`against ${GOLDEN.configs[0].name}$`));
});

test("the per-question table: each question's rank under each configuration and its win, loss or tie", async () => {
  const base = GOLDEN.configs[0];
  const rows = await page.$$eval(".exp-q tbody tr[data-case]", (trs) => trs.map((tr) => ({
    id: tr.dataset.case,
    ranks: [...tr.querySelectorAll("td[data-config].num")].map((td) => td.textContent),
    verdicts: [...tr.querySelectorAll("td[data-verdict]")].map((td) => td.dataset.verdict),
  })));
  assert.equal(rows.length, GOLDEN.answerable);
  rows.forEach((r, j) => {
    assert.equal(r.id, base.cases[j].id);
    assert.deepEqual(r.ranks, GOLDEN.configs.map((c) => (c.cases[j].rank === null ? "–" : String(c.cases[j].rank))));
    const want = GOLDEN.configs.slice(1).map((c) => {
      const a = base.cases[j].rank ?? Infinity;
      const b = c.cases[j].rank ?? Infinity;
      return a === b ? "tie" : b < a ? "win" : "loss";
    });
    assert.deepEqual(r.verdicts, want, r.id);
  });
  // A row opens its question's results (here the stand-in refuses, and says so).
  const first = ".exp-q tbody tr[data-case] .exp-open";
  await page.click(first);
  assert.equal(await page.getAttribute(first, "aria-expanded"), "true");
  await page.waitForSelector(".exp-detail:not([hidden]) [role=alert]");
  assert.match(await page.textContent(".exp-detail:not([hidden])"), new RegExp(`asked for ${base.cases[0].id}`));
  await page.click(first);
  assert.equal(await page.isHidden(".exp-detail"), true);
});

test("the Experiments view with a result has no serious accessibility violation and no horizontal overflow at 360 and 1280 px", async () => {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const res = await window.axe.run(document.querySelector("#view-experiments"), { resultTypes: ["violations"] });
    return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(found, []);
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${width} px: the page is ${scroll} px wide`);
    await screenshot(page, `experiments-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("a configuration of your own is kept in this browser and carried by the link, which restores the setup", async () => {
  await page.click(".exp-make summary");
  await page.fill("#exp-spec", JSON.stringify({ name: "mine", tokenizer: "stemmed" }));
  await page.click("#exp-spec-add");
  assert.match(await page.textContent("#exp-spec-status"), /Added mine/);
  const kept = await page.evaluate(() => JSON.parse(localStorage.getItem("ragagent.experiment.configs")));
  assert.deepEqual(kept, [{ name: "mine", tokenizer: "stemmed" }]);
  assert.equal(await page.isChecked('input[name="exp-config"][value="mine"]'), true);
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /^#experiments\?/);
  assert.ok(new URLSearchParams(hash.split("?")[1]).getAll("spec").includes(JSON.stringify({ name: "mine", tokenizer: "stemmed" })));
  // A bad name is refused with its reason, nothing kept.
  await page.fill("#exp-spec", JSON.stringify({ name: "Not A Name" }));
  await page.click("#exp-spec-add");
  assert.match(await page.textContent("#exp-spec-status"), /^Not added: the configuration's name must be/);
  // Another browser's profile opens the link: the configuration comes with it.
  const other = await launch();
  try {
    const { page: p, problems: probs } = await openPage(other.context, `${site.url}/${hash}`);
    await p.waitForFunction(() => document.querySelector('input[name="exp-config"][value="mine"]'), null, { timeout: 60000 });
    assert.equal(await p.isChecked('input[name="exp-config"][value="mine"]'), true);
    assert.equal(await p.inputValue("#exp-baseline"), new URLSearchParams(hash.split("?")[1]).get("baseline"));
    assert.deepEqual(await p.evaluate(() => JSON.parse(localStorage.getItem("ragagent.experiment.configs"))), [{ name: "mine", tokenizer: "stemmed" }]);
    assert.deepEqual(probs, []);
  } finally {
    await other.close();
  }
});

test("a question set over the input cap is refused unread, with its reason", async () => {
  const cap = await page.evaluate(async () => (await window.ragagentPage.engineReady).constants.max_input_bytes);
  const big = path.join(dir, "big.tsv");
  const fd = openSync(big, "w");
  ftruncateSync(fd, cap + 1);
  closeSync(fd);
  await page.getByLabel("Question set", { exact: true }).setInputFiles(big);
  await page.waitForSelector("#exp-message:not([hidden])");
  assert.equal(await page.textContent("#exp-message"), `big.tsv is 64.0 MiB (${cap + 1} bytes), over the cap of ${cap} bytes (64.0 MiB) on a file the lab reads; it was not read.`);
  assert.match(await page.textContent("#exp-cases-now"), /authored/);
  assert.deepEqual(problems, []);
});
