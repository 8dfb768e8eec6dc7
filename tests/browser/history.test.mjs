// The Experiments view's history, in Debian's Chromium: two experiments
// run on the Python pack's own questions, one with seed alone and one with
// general alone, are kept in IndexedDB ("ragagent-experiments"), listed
// newest first, survive a reload, open again and delete; compared in the
// page (seed of the first against general of the second) they give the
// difference, interval and p-value of mrr@10 and recall@10 that `ragagent
// retrieval --json --config seed --config general` prints for the two run
// together; the comparison's link restores it in another page; an agent
// experiment is kept too (its eval result, the agent path's pass rate)
// and opens again, but is not offered for a retrieval comparison; axe-core
// finds no violation in the history and the comparison, and neither
// overflows the page at 360 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary, screenshot } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let site, browser, page, problems, ragagent;

before(async () => {
  ragagent = goBinary("./cmd/ragagent");
  site = await serveSite();
  browser = await launch();
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  await page.selectOption("#corpus-choice", { label: "Python 3.11 documentation: library, language reference and tutorial" });
  await ready(page);
});

after(async () => {
  await browser?.close();
  site?.stop();
});

/** ready waits for the Python pack open in the Experiments view, and its configurations listed. */
async function ready(p) {
  await p.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python")
    && document.querySelector('input[name="exp-config"]'), null, { timeout: 180000 });
}

/** experiment runs the pack's own questions under one configuration and returns the status line. */
async function experiment(config) {
  for (const box of await page.$$('input[name="exp-config"]')) {
    const want = (await box.getAttribute("value")) === config;
    if ((await box.isChecked()) !== want) await box.click();
  }
  await page.waitForFunction(() => !document.querySelector("#exp-run").disabled, null, { timeout: 60000 });
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => document.body.dataset.experiment === "done" && /Kept as experiment #\d+/.test(document.querySelector("#exp-status").textContent), null, { timeout: 180000 });
  return page.textContent("#exp-status");
}

/** rows are the history's rows, as [key, text]. */
const rows = (p) => p.$$eval("#exh-list tbody tr", (trs) => trs.map((tr) => [tr.dataset.key, tr.textContent]));

/** shown is the comparison's row for a pair and metric: the exact values from the cells' titles. */
async function shown(p, a, b, metric) {
  return p.$eval(`#exh-result tr[data-a="${a}"][data-b="${b}"][data-metric="${metric}"]`, (tr) => ({
    difference: Number(tr.querySelector('[data-value="difference"]').title),
    ci95: JSON.parse(tr.querySelector('[data-value="ci95"]').title),
    p_value: Number(tr.querySelector('[data-value="p_value"]').title),
  }));
}

async function axeClean(p, what) {
  if (!(await p.evaluate(() => Boolean(window.axe)))) await p.evaluate(AXE);
  const found = await p.evaluate(async () => {
    const res = await window.axe.run(document.querySelector("#exp-history"), { resultTypes: ["violations"] });
    return res.violations.map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(found, [], what);
}

let keyA, keyB;

test("each experiment run is kept and listed newest first with its corpus, set, cases, configurations and best mrr@10; the list survives a reload", async () => {
  const cli = JSON.parse(execFileSync(ragagent, ["retrieval", "--json", "--corpus", "python-3.11", "--config", "seed", "--config", "general"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] }));
  keyA = (await experiment("seed")).match(/Kept as experiment #(\d+)/)[1];
  keyB = (await experiment("general")).match(/Kept as experiment #(\d+)/)[1];
  let list = await rows(page);
  assert.deepEqual(list.map(([k]) => k), [keyB, keyA], "newest first");
  assert.match(list[0][1], /python-3\.11/);
  assert.match(list[0][1], /authored questions of python-3\.11/);
  const manifest = JSON.parse(readFileSync(path.join(root, "fixtures", "packs", "python-3.11", "manifest.json"), "utf8"));
  assert.match(list[0][1], new RegExp(`python-3\\.11, passages sha256 ${manifest.passages_sha256.slice(0, 12)}`), "the pack's receipt");
  // The kept record: the configurations with the engine's spec sha256, the set's cases, the result's bytes.
  const record = await page.evaluate(async (k) => (await import("./experiments/store.js")).get(k), keyB);
  assert.deepEqual(record.configs.map((c) => c.name), ["general"]);
  assert.match(record.configs[0].sha256, /^[0-9a-f]{64}$/);
  assert.equal(record.set.cases.length, cli.cases);
  assert.equal(JSON.parse(record.text).configs[0].name, "general");
  assert.match(list[0][1], new RegExp(`${cli.answerable} of ${cli.cases}`));
  assert.match(list[0][1], new RegExp(`${cli.configs[1].metrics["mrr@10"].value.toFixed(3)} \\(general\\)`));
  assert.match(list[1][1], new RegExp(`${cli.configs[0].metrics["mrr@10"].value.toFixed(3)} \\(seed\\)`));
  await page.reload();
  await ready(page);
  await page.waitForFunction(() => document.querySelectorAll("#exh-list tbody tr").length === 2, null, { timeout: 60000 });
  list = await rows(page);
  assert.deepEqual(list.map(([k]) => k), [keyB, keyA], "kept across the reload");
  // Opened again: its result drawn and downloadable, as when it ran.
  await page.getByRole("button", { name: `Open experiment #${keyA}`, exact: true }).click();
  await page.waitForFunction(() => /^Experiment #\d+, kept/.test(document.querySelector("#exp-status").textContent));
  assert.deepEqual(await page.$$eval(".exp-metrics .ci-row", (rs) => [...new Set(rs.map((r) => r.dataset.config))]), ["seed"]);
  assert.equal(await page.getByRole("button", { name: "Download results (JSON)", exact: true }).isDisabled(), false);
  await axeClean(page, "the history");
});

test("two experiments compared in the page give the command line's paired difference, interval and p-value, and the link restores the comparison", async () => {
  const cli = JSON.parse(execFileSync(ragagent, ["retrieval", "--json", "--corpus", "python-3.11", "--config", "seed", "--config", "general"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] }));
  await page.selectOption("#exh-a", keyA);
  await page.selectOption("#exh-b", keyB);
  await page.selectOption("#exh-ca", "seed");
  await page.selectOption("#exh-cb", "general");
  await page.getByRole("button", { name: "Compare experiments", exact: true }).click();
  await page.waitForFunction(() => document.body.dataset.experimentCompare === "done", null, { timeout: 60000 });
  const check = async (p) => {
    for (const metric of ["mrr@10", "recall@10"]) {
      const want = cli.comparisons.find((c) => c.a === "seed" && c.b === "general" && c.metric === metric);
      assert.deepEqual(await shown(p, "seed", "general", metric), { difference: want.difference, ci95: want.ci95, p_value: want.p_value }, metric);
    }
    // The chart: an image with a title and a description, and its table of every question.
    const chart = await p.$eval("#exh-result svg.rank-scatter", (s) => ({ role: s.getAttribute("role"), title: s.querySelector("title")?.textContent, desc: s.querySelector("desc")?.textContent }));
    assert.equal(chart.role, "img");
    assert.match(chart.title, /under seed .* against general/);
    assert.match(chart.desc, new RegExp(`^${cli.answerable} questions:`));
    const ranks = await p.$$eval("#exh-result table.exh-q tbody tr", (trs) => trs.map((tr) => [tr.dataset.case, ...[...tr.querySelectorAll("td.num")].map((td) => td.textContent)]));
    const rank = (r) => (r === null ? "not found" : String(r));
    assert.deepEqual(ranks, cli.configs[0].cases.map((c, i) => [c.id, rank(c.rank), rank(cli.configs[1].cases[i].rank)]));
  };
  await check(page);
  const url = page.url();
  assert.match(new URL(url).hash, new RegExp(`^#experiments/compare/${keyA}/${keyB}\\?a=seed&b=general$`));
  await axeClean(page, "the comparison");
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${width} px: the page is ${scroll} px wide`);
    await screenshot(page.locator("#exp-history"), `experiments-history-${width}`, {});
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  // The link in another page of the same browser (the same IndexedDB).
  const other = await openPage(browser.context, url);
  await other.page.waitForFunction(() => document.body.dataset.experimentCompare === "done", null, { timeout: 180000 });
  await check(other.page);
  assert.equal(await other.page.inputValue("#exh-a"), keyA);
  assert.equal(await other.page.inputValue("#exh-cb"), "general");
  assert.equal(new URL(other.page.url()).hash, new URL(url).hash, "the address still names the comparison");
  assert.deepEqual(other.problems, []);
  await other.page.close();
});

test("an experiment deleted leaves the history", async () => {
  await page.getByRole("button", { name: `Delete experiment #${keyA}`, exact: true }).click();
  await page.waitForFunction((k) => document.querySelector("#exh-status").textContent === `Deleted experiment #${k}.`, keyA);
  assert.deepEqual((await rows(page)).map(([k]) => k), [keyB]);
  assert.deepEqual(problems, []);
});

test("an agent experiment is kept too, with the agent path's pass rate, and opens again", async () => {
  const set = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
  const want = JSON.parse(execFileSync(ragagent, ["eval", "--corpus", "python-3.11", "--cases", set, "--json"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  const pass = want.experiment.paths.find((p) => p.path === "agent").rates.find((r) => r.name === "pass");
  await page.getByLabel("Question set", { exact: true }).setInputFiles(set);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  await page.waitForFunction(() => !document.querySelector("#exp-agent-run").disabled, null, { timeout: 60000 });
  await page.getByRole("button", { name: "Run agent experiment", exact: true }).click();
  await page.waitForFunction(() => document.body.dataset.agentExperiment === "done", null, { timeout: 180000 });
  const key = (await page.textContent("#exp-agent-status")).match(/Kept as experiment #(\d+)/)[1];
  const [first] = await rows(page);
  assert.equal(first[0], key, "newest first");
  assert.match(first[1], /small-set\.tsv/);
  assert.match(first[1], new RegExp(`agent pass ${pass.count}/${pass.of} ${pass.value.toFixed(3)}`));
  const record = await page.evaluate(async (k) => (await import("./experiments/store.js")).get(k), key);
  assert.equal(record.kind, "agent");
  // The eval result kept as the command prints it (but for the seconds each path took).
  const untimed = (x) => ({ ...x, paths: x.paths.map(({ mean_seconds: _m, seconds: _s, ...p }) => p) });
  assert.deepEqual(untimed(JSON.parse(record.text).experiment), untimed(want.experiment));
  assert.deepEqual(JSON.parse(record.text).summary, want.summary);
  // Not offered for a retrieval comparison.
  assert.ok(!(await page.$$eval("#exh-a option", (os) => os.map((o) => o.value))).includes(key));
  await page.evaluate(() => { document.querySelector("#exp-agent-results").replaceChildren(); });
  await page.getByRole("button", { name: `Open experiment #${key}`, exact: true }).click();
  await page.waitForFunction((k) => document.querySelector("#exp-agent-status").textContent.startsWith(`Experiment #${k}, kept`), key);
  assert.ok(await page.$("#exp-agent-results .agent-rates"), "its rates drawn again");
  await axeClean(page, "the history with an agent experiment");
  assert.deepEqual(problems, []);
});
