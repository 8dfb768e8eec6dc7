// The defects an outside review of the page found (issue 34, item 7), each
// held in Debian's Chromium: "Compare the two checked" shows the checked
// pair at once and back and forward follow it; the Replay view's filters
// live in the address (a link and back and forward restore them); two
// trials side by side name their price tables apart; counts read "1 trial"
// and "12,352", and an engine refusal is not prefixed with its code twice.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage } from "./harness.mjs";

const SMALL = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
let site, browser, page, problems, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-review-"));
  site = await serveSite();
  browser = await launch({ downloads: dir });
  ({ page, problems } = await openPage(browser.context, `${site.url}/#compare`));
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const hash = () => page.evaluate(() => location.hash);
const pair = () => page.evaluate(() => [document.querySelector("#cmp-a").value, document.querySelector("#cmp-b").value,
  [...document.querySelectorAll("#cmp-result .cmp-pair dd")].map((dd) => dd.textContent)]);

test("Compare the two checked shows the checked pair at once, and back and forward follow it", async () => {
  await page.waitForFunction(() => document.body.dataset.compare === "shown");
  const [a0] = await pair();
  assert.equal(a0, "bundled:serialize-and-save-fixed-1", "the default pair is shown first");
  await page.click('a[data-view="runs"]');
  await page.waitForFunction(() => document.body.dataset.runs === "listed");
  await page.check('#runs-list tr[data-ref="bundled:overwrite-fixed-2"] input.runs-pick');
  await page.check('#runs-list tr[data-ref="bundled:unsupported-agent-1"] input.runs-pick');
  await page.click("#runs-compare");
  await page.waitForFunction(() => !document.querySelector("#view-compare").hidden);
  const [a, b, dds] = await pair();
  // The rows are listed in the Runs view's order: the pair as checked there.
  assert.deepEqual([a, b].sort(), ["bundled:overwrite-fixed-2", "bundled:unsupported-agent-1"]);
  assert.match(dds.join(" | "), /overwrite \/ 2, fixed path/, "the comparison drawn is the checked pair's");
  assert.match(dds.join(" | "), /unsupported \/ 1, agent path/);
  const checked = await hash();
  // Another pair chosen in the view, then back to the checked one, back to Runs and forward again.
  await page.selectOption("#cmp-b", "bundled:serialize-and-save-agent-2");
  await page.waitForFunction(() => location.hash.includes("serialize-and-save-agent-2"));
  await page.goBack();
  await page.waitForFunction((h) => location.hash === h, checked);
  await page.waitForFunction(() => document.querySelector("#cmp-b").value !== "bundled:serialize-and-save-agent-2");
  assert.deepEqual((await pair()).slice(0, 2), [a, b], "back shows the checked pair again");
  await page.goBack();
  await page.waitForFunction(() => !document.querySelector("#view-runs").hidden);
  await page.goForward();
  await page.waitForFunction(() => !document.querySelector("#view-compare").hidden);
  assert.deepEqual((await pair()).slice(0, 2), [a, b], "forward shows it too");
  await page.goForward();
  await page.waitForFunction(() => document.querySelector("#cmp-b").value === "bundled:serialize-and-save-agent-2");
  assert.match((await pair())[2].join(" | "), /serialize-and-save \/ 2, agent path/);
});

const shownRows = () => page.$$eval("#trials tbody tr", (trs) => trs.filter((tr) => !tr.hidden).map((tr) => ({ case: tr.dataset.case, mode: tr.dataset.mode, outcome: tr.dataset.outcome })));
const filterValues = () => page.evaluate(() => ["case", "path", "outcome", "reason", "text"].map((f) => document.querySelector(`#filter-${f}`).value));

test("the Replay view's filters are kept in the address, and a link, a reload and back and forward restore them", async () => {
  await page.click('a[data-view="replay"]');
  await page.selectOption("#filter-case", "overwrite");
  await page.selectOption("#filter-path", "agent");
  await page.fill("#filter-text", "overwrite");
  await page.waitForFunction(() => /[?&]q=overwrite/.test(location.hash) && /case=overwrite/.test(location.hash) && /path=agent/.test(location.hash));
  const rows = await shownRows();
  assert.ok(rows.length > 0 && rows.every((r) => r.case === "overwrite" && r.mode === "agent"), JSON.stringify(rows));
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  assert.deepEqual(await filterValues(), ["overwrite", "agent", "", "", "overwrite"], "the reload restores every filter");
  assert.deepEqual(await shownRows(), rows, "and the rows they show");
  // A link followed, then another, then back and forward.
  await page.evaluate(() => { location.hash = "#replay?outcome=fail&case=unsupported"; });
  await page.waitForFunction(() => document.querySelector("#filter-outcome").value === "fail");
  assert.deepEqual(await filterValues(), ["unsupported", "", "fail", "", ""]);
  const fails = await shownRows();
  assert.ok(fails.length > 0 && fails.every((r) => r.case === "unsupported" && r.outcome === "fail"));
  await page.evaluate(() => { location.hash = "#replay?path=fixed"; });
  await page.waitForFunction(() => document.querySelector("#filter-path").value === "fixed");
  assert.deepEqual(await filterValues(), ["", "fixed", "", "", ""]);
  await page.goBack();
  await page.waitForFunction(() => document.querySelector("#filter-outcome").value === "fail");
  assert.deepEqual(await filterValues(), ["unsupported", "", "fail", "", ""], "back restores the link's filters");
  await page.goForward();
  await page.waitForFunction(() => document.querySelector("#filter-path").value === "fixed");
  assert.deepEqual(await filterValues(), ["", "fixed", "", "", ""]);
  await page.evaluate(() => { location.hash = "#replay"; });
  await page.waitForFunction(() => document.querySelector("#filter-path").value === "");
});

test("two trials side by side in an expanded trace name each region apart (no two 'Price table')", async () => {
  await page.evaluate(() => { location.hash = "#trace/serialize-and-save/1"; });
  await page.waitForSelector("#trial-serialize-and-save-agent-1 details.prices");
  await page.$$eval("#view-trace details", (ds) => ds.forEach((d) => { d.open = true; }));
  const names = await page.$$eval("#view-trace [role=region], #view-trace [role=group]", (els) => els.map((el) => {
    const by = el.getAttribute("aria-labelledby");
    return by ? by.split(/\s+/).map((id) => document.getElementById(id)?.textContent || "").join(" ") : el.getAttribute("aria-label") || "";
  }));
  assert.ok(names.filter((n) => /^Price table/.test(n)).length >= 2, `two price tables: ${names.join(" | ")}`);
  const twice = names.filter((n, i) => n && names.indexOf(n) !== i);
  assert.deepEqual(twice, [], "each region's and group's accessible name is its own");
});

test("counts are written one way: 12,352 passages, 1 trial, and an engine refusal names its code once", async () => {
  // A question set of one question: the agent experiment's trials and cases.
  const one = path.join(dir, "one.tsv");
  writeFileSync(one, "id\tquestion\ttarget_urls\npretty-json\tHow can I pretty-print JSON with indentation?\thttps://docs.python.org/3.11/library/json.html#json.dumps\n");
  await page.click('a[data-view="experiments"]');
  await page.selectOption("#corpus-choice", "python-3.11");
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
  const head = await page.textContent("#corpus-status");
  assert.match(head, /12,352 passages/, head);
  // Tune refuses a set of five questions (invalid_cases).
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SMALL);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  await page.waitForFunction(() => !document.querySelector("#exp-tune-run").disabled, null, { timeout: 60000 });
  await page.click("#exp-tune-run");
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.tune), null, { timeout: 120000 });
  const refused = await page.textContent("#exp-tune-status");
  assert.match(refused, /invalid_cases/, refused);
  assert.doesNotMatch(refused, /invalid_cases: invalid_cases/, refused);
  await page.getByLabel("Question set", { exact: true }).setInputFiles(one);
  await page.waitForFunction(() => /one\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  await page.click("#exp-agent-run");
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.agentExperiment), null, { timeout: 120000 });
  const text = await page.evaluate(() => document.querySelector("#view-experiments").innerText + "\n" + document.querySelector("header").innerText);
  assert.doesNotMatch(text, /\b1 (trials|cases|questions|passages|files|runs|requests|steps|configurations|tokens|bytes)\b/, "no '1 trials'");
  assert.match(text, /\(1 trial\)/, "a path's one trial");
  assert.doesNotMatch(text, /\b12352\b/, "the pack's passages, formatted as elsewhere");
  assert.deepEqual(problems, []);
});

test("a Run link names its corpus: opened in another browser it selects that pack before anything runs; one naming your documents says it cannot be shared", async () => {
  // Made on the Python pack (chosen above): the link carries corpus=python-3.11.
  await page.click('a[data-view="run"]');
  await page.waitForFunction(() => document.querySelector("#run-preset").options.length > 1);
  const preset = await page.$eval("#run-preset", (s) => s.options[1].value);
  await page.selectOption("#run-preset", preset);
  const version = await page.inputValue("#run-version");
  await page.waitForFunction(() => location.hash.startsWith("#run?") && location.hash.includes("corpus=python-3.11"));
  const link = await hash();
  const question = await page.inputValue("#run-question");
  // Another browser (a fresh profile, which would open the seed).
  const other = await launch();
  try {
    const { page: p, problems: theirs } = await openPage(other.context, `${site.url}/${link}`);
    await p.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#corpus-choice").value === "python-3.11", null, { timeout: 180000 });
    assert.equal(await p.inputValue("#run-question"), question);
    assert.equal(await p.inputValue("#run-version"), version, "the link's version, among the pack's");
    assert.match(await p.textContent("#run-corpus"), /Python 3\.11/);
    assert.equal(await p.isEnabled("#run-start"), true);
    // A link made on someone's own documents, which this browser does not keep.
    await p.evaluate(() => { location.hash = "#run?corpus=documents&question=What+does+my+README+say%3F&mode=agent&policy=scripted"; });
    await p.waitForFunction(() => /own documents/.test(document.querySelector("#run-why").textContent));
    assert.equal(await p.isDisabled("#run-start"), true, "nothing runs on the pack open in their place");
    assert.match(await p.textContent("#run-why"), /cannot carry them/);
    assert.equal(await p.inputValue("#corpus-choice"), "python-3.11");
    // Choosing a corpus here runs the question on it.
    await p.selectOption("#corpus-choice", "seed");
    await p.waitForFunction(() => document.body.dataset.corpus === "ready" && !document.querySelector("#run-start").disabled);
    assert.equal(await p.textContent("#run-why"), "");
    assert.deepEqual(theirs, []);
  } finally {
    await other.close();
  }
});
