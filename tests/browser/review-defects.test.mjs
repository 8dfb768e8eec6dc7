// The defects an outside review of the page found (issue 34, item 7), each
// held in Debian's Chromium: "Compare the two checked" shows the checked
// pair at once and back and forward follow it; the Replay view's filters
// live in the address (a link and back and forward restore them); two
// trials side by side name their price tables apart; counts read "1 trial"
// and "12,352", and an engine refusal is not prefixed with its code twice;
// a Run link names its corpus; your documents rank as ragagent corpus build
// and ragagent search rank them, and their targets are shown, and named in
// a question set, as the file's path and anchor.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary } from "./harness.mjs";

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

const NOTES = {
  "kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.\n\n## Filling\n\nFill the kettle with fresh cold water before boiling it.\n",
  "garden.md": "# Garden\n\nWater the tomatoes at dawn, never at noon.\n\n## Compost\n\nTurn the compost heap every week; water it when dry.\n",
  "bikes.md": "# Bikes\n\nOil the chain every month and check the tyres before riding.\n",
  "boiling.md": "# Boiling water\n\nA kettle boils water faster than a pan. Descaling keeps it fast.\n",
};

test("your documents rank as ragagent corpus build and ragagent search rank them, and a target is named as the page shows it", async () => {
  const from = path.join(dir, "notes");
  mkdirSync(from);
  for (const [name, text] of Object.entries(NOTES)) writeFileSync(path.join(from, name), text);
  const pack = path.join(dir, "pack");
  const bin = goBinary("./cmd/ragagent");
  execFileSync(bin, ["corpus", "build", "--from", from, "--out", pack, "--id", "documents", "--title", "Your documents", "--version", "1.0",
    "--base-url", "https://your-documents.invalid/", "--search-k", "3", "--licence", "Your own documents.", "--attribution", "The documents' authors."], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  await page.click('a[data-view="corpus"]');
  const dt = await page.evaluateHandle((notes) => {
    const d = new DataTransfer();
    for (const [name, text] of Object.entries(notes)) d.items.add(new File([text], name, { type: "text/markdown" }));
    return d;
  }, NOTES);
  await page.dispatchEvent("#docs-drop", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.docs), null, { timeout: 120000 });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#corpus-choice").value === "documents", null, { timeout: 60000 });
  for (const query of ["how often should I descale the kettle", "when to water the tomatoes", "boiling water"]) {
    const want = JSON.parse(execFileSync(bin, ["search", "--corpus", pack, "--limit", "5", "--json", query], { cwd: root, encoding: "utf8" })).results;
    await page.fill("#search-query", query);
    await page.fill("#search-k", "5");
    await page.$eval("#search-result", (el) => el.replaceChildren());
    await page.click("#search-run");
    await page.waitForSelector("#search-result table, #search-result .error");
    const got = await page.$$eval("#search-result tbody tr", (trs) => trs.map((tr) => ({ id: tr.querySelector("th").textContent.trim(), score: Number(tr.querySelector("td[title]")?.getAttribute("title")) })));
    assert.deepEqual(got.map((g) => g.id), want.map((w) => w.source_id), `the ranking of "${query}"`);
    got.forEach((g, i) => assert.equal(g.score, want[i].score, `the score of ${g.id}`));
  }
  const manifest = JSON.parse(readFileSync(path.join(pack, "manifest.json"), "utf8"));
  assert.match(await page.textContent("#search-result"), new RegExp(`Ranked by ${manifest.retrieval_config} `), "one default for both");
  // The target as a result shows it, then named so in a question set.
  await page.fill("#search-query", "how often should I descale the kettle");
  await page.$eval("#search-result", (el) => el.replaceChildren());
  await page.click("#search-run");
  await page.waitForSelector("#search-result tbody tr:first-child .hit-url");
  const shown = await page.$eval("#search-result tbody tr:first-child .hit-url code", (c) => c.textContent);
  assert.doesNotMatch(shown, /your-documents\.invalid/, "the target form, not the internal URL");
  assert.match(shown, /^kettle\.md#/);
  const set = path.join(dir, "mine.tsv");
  writeFileSync(set, `id\tquestion\ttarget_urls\ndescale\tHow often should I descale the kettle?\t${shown}\nnone\tWhat is the capital of France?\t-\n`);
  await page.click('a[data-view="experiments"]');
  await page.getByLabel("Question set", { exact: true }).setInputFiles(set);
  await page.waitForFunction(() => /mine\.tsv/.test(document.querySelector("#exp-cases-now").textContent) || !document.querySelector("#exp-message").hidden);
  assert.equal(await page.isHidden("#exp-message"), true, await page.textContent("#exp-message"));
  await page.click("#exp-run");
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.experiment), null, { timeout: 120000 });
  assert.equal(await page.evaluate(() => document.body.dataset.experiment), "done", await page.textContent("#exp-message"));
  assert.match(await page.textContent("#exp-status"), /1 answerable of 2 questions/);
  // A trace of a run over them shows the file, not a link to a host that resolves nowhere.
  await page.click('a[data-view="run"]');
  await page.fill("#run-question", "How often should I descale the kettle?");
  await page.check('input[name="policy"][value="scripted"]');
  await page.check('input[name="mode"][value="agent"]');
  await page.click("#run-start");
  await page.waitForFunction(() => /Kept in Runs|Not kept/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  assert.equal(await page.$('#run-output a[href*="your-documents.invalid"]'), null);
  assert.doesNotMatch(await page.textContent("#run-output"), /your-documents\.invalid/);
  assert.deepEqual(problems, []);
});

test("an agent experiment shows each question on both paths, each linking to its trial's trace kept in Runs, and downloads ragagent eval --json", async () => {
  await page.selectOption("#corpus-choice", "python-3.11");
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
  await page.click('a[data-view="experiments"]');
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SMALL);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  const before = await page.evaluate(async () => (await (await import("/common/runs.js")).list()).length);
  await page.click("#exp-agent-run");
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.agentExperiment), null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.agentExperiment), "done", await page.textContent("#exp-agent-status"));
  const cli = execFileSync(goBinary("./cmd/ragagent"), ["eval", "--corpus", "python-3.11", "--cases", SMALL, "--json"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const want = JSON.parse(cli);
  // Each question on both paths, as the command line grades it.
  const rows = await page.$$eval(".agent-questions tbody tr", (trs) => trs.map((tr) => ({ id: tr.dataset.case,
    cells: [...tr.querySelectorAll("td[data-mode]")].map((td) => ({ mode: td.dataset.mode, outcome: td.dataset.outcome, text: td.textContent, href: td.querySelector("a")?.getAttribute("href") })) })));
  assert.deepEqual(rows.map((r) => r.id), [...new Set(want.cases.map((c) => c.id))]);
  for (const c of want.cases) {
    const cell = rows.find((r) => r.id === c.id).cells.find((x) => x.mode === c.mode);
    assert.equal(cell.outcome, c.outcome, `${c.id} ${c.mode}`);
    assert.ok(cell.text.includes(c.reason), `${c.id} ${c.mode}: ${cell.text}`);
    assert.match(cell.href || "", /^#trace\/run\/\d+$/, `${c.id} ${c.mode} links to its trace`);
  }
  // The trials are kept in Runs.
  const after = await page.evaluate(async () => (await (await import("/common/runs.js")).list()).length);
  assert.equal(after - before, want.cases.length, "every trial kept in Runs");
  // A row's link opens that trial's trace, and the link reloads to it.
  const target = want.cases.find((c) => c.mode === "agent");
  const href = rows.find((r) => r.id === target.id).cells.find((x) => x.mode === "agent").href;
  await page.click(`.agent-questions a[href="${href}"]`);
  await page.waitForFunction(() => !document.querySelector("#view-trace").hidden && document.querySelector("#trace-pair article.trial"));
  assert.ok((await page.textContent("#trace-pair")).includes(target.question), "the trial's question");
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  await page.waitForFunction(() => document.querySelector("#trace-pair article.trial") && document.body.dataset.traceKept);
  assert.ok((await page.textContent("#trace-pair")).includes(target.question), "the link reloads to the trial");
  // The download is the command line's JSON byte for byte (its measured seconds apart).
  await page.click('a[data-view="experiments"]');
  await page.waitForFunction(() => document.body.dataset.corpus === "ready", null, { timeout: 180000 });
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SMALL);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  await page.waitForFunction(() => !document.querySelector("#exp-agent-run").disabled, null, { timeout: 60000 });
  await page.click("#exp-agent-run");
  await page.waitForFunction(() => document.body.dataset.agentExperiment === "done" && !document.querySelector("#exp-agent-download").disabled, null, { timeout: 180000 });
  const dl = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download the agent experiment (JSON)" }).click();
  const text = readFileSync(await (await dl).path(), "utf8");
  const timeless = (s) => s.replace(/"(mean_)?seconds": [0-9.e+-]+/g, '"$1seconds": 0');
  assert.equal(timeless(text), timeless(cli));
  assert.deepEqual(problems, []);
});
