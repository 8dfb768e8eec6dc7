// Question sets made in the page by clicking, in Debian's Chromium: on the
// Python pack's search results in the Corpus view, "Add to question set…"
// opens a form (focus in its "Question" field, Escape closes it, nothing
// added) where three cases are made: one naming an alias of a passage, one
// naming a whole page, one the documents cannot answer. The Experiments
// view lists the set; "Export (JSON)" downloads a ragagent-cases/1 file
// (the typed questions, the targets in target_urls, in the order added)
// that `ragagent retrieval --corpus <pack dir> --cases FILE --json`
// accepts, and the page's experiment on the set downloads the same bytes
// as that command; "Export (TSV)" writes the command line's three-column
// TSV, which imports again; the set survives a reload; a malformed file
// imported is refused with the command line's invalid_cases line (naming
// the case and the field), written once; axe-core finds no violation in
// the form and the set list, light and dark.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary, screenshot, axeClean as harnessAxeClean } from "./harness.mjs";

const PACK = "Python 3.11 documentation: library, language reference and tutorial";
const PACK_DIR = path.join(root, "fixtures", "packs", "python-3.11");
const SET_NAME = "Clicked questions";
let site, browser, page, problems, dir, ragagent;

/** cli runs ragagent with args and returns {stdout, stderr, status}. */
function cli(args) {
  try {
    return { stdout: execFileSync(ragagent, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] }), stderr: "", status: 0 };
  } catch (err) {
    return { stdout: err.stdout, stderr: String(err.stderr), status: err.status };
  }
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-sets-"));
  ragagent = goBinary("./cmd/ragagent");
  site = await serveSite();
  browser = await launch({ downloads: dir });
  ({ page, problems } = await openPage(browser.context, `${site.url}/#corpus`));
  await page.selectOption("#corpus-choice", { label: PACK });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && !document.querySelector("#search-run").disabled
    && document.querySelector("#corpus-summary").textContent.startsWith("Python"), null, { timeout: 180000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** form is the Add to question set form. */
const form = () => page.locator("#addset");

/** search runs the Corpus view's search and waits for its table. */
async function search(query) {
  await page.fill("#search-query", query);
  await page.fill("#search-k", "5");
  await page.evaluate(() => { document.querySelector("#search-result").replaceChildren(); });
  await page.click("#search-run");
  await page.waitForSelector("#search-result table.hits tbody tr");
}

/** openForm clicks a result's "Add to question set" (by its source id, or the first) and waits for the form. */
async function openForm(source) {
  const button = source
    ? page.getByRole("button", { name: `Add to question set… ${source}`, exact: true })
    : page.locator("#search-result tbody tr").first().getByRole("button", { name: /^Add to question set/ });
  await button.click();
  await page.waitForFunction(() => document.querySelector("#addset").open);
}

/** add presses Add and waits for the form to close on the case kept. */
async function add() {
  await form().getByRole("button", { name: "Add", exact: true }).click();
  await page.waitForFunction(() => !document.querySelector("#addset").open || !document.querySelector("#addset-message").hidden);
  assert.equal(await page.evaluate(() => document.querySelector("#addset").open), false, await page.textContent("#addset-message"));
}

/** axeClean is the harness's on this file's page. */
const axeClean = (selector, what) => harnessAxeClean(page, selector, what);

const ALIAS_SOURCE = "tutorial.inputoutput.reading-and-writing-files-2";
const ALIAS = "https://docs.python.org/3.11/tutorial/inputoutput.html#tut-files";
let pageTarget = "";

test("a search result's Add to question set opens a form with the query as its question; Escape closes it and adds nothing", async () => {
  await search("write text to a file");
  await openForm(ALIAS_SOURCE);
  assert.equal(await page.evaluate(() => document.activeElement.id), "addset-question", "focus moves to the question");
  assert.equal(await form().getByLabel("Question", { exact: true }).inputValue(), "write text to a file");
  const labels = await page.$$eval('#addset-choices label', (ls) => ls.map((l) => l.textContent));
  assert.ok(labels[0].startsWith("https://docs.python.org/3.11/tutorial/inputoutput.html#reading-and-writing-files"), labels.join(" | "));
  assert.ok(labels.some((l) => l.startsWith(ALIAS)), "its aliases are offered");
  assert.ok(labels.some((l) => l.startsWith("https://docs.python.org/3.11/tutorial/inputoutput.html — its whole page")), "its page is offered");
  assert.ok(labels.at(-1).startsWith("The documents cannot answer this"));
  await screenshot(page, "sets-form");
  await axeClean("#addset", "the Add to question set form");
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.querySelector("#addset").open);
  assert.match(await page.evaluate(() => document.activeElement.textContent), new RegExp(`^Add to question set… ${ALIAS_SOURCE}$`), "focus is back on the button that opened it");
  assert.equal(await page.evaluate(async () => (await import("/common/sets.js")).list("python-3.11").then((l) => l.length)), 0, "nothing was added");
});

test("three cases made by clicking: an alias target, a whole page, and one the documents cannot answer", async () => {
  await openForm(ALIAS_SOURCE);
  await form().getByLabel("Question", { exact: true }).fill("How do I write text to a file?");
  await form().getByLabel(ALIAS).check();
  await page.selectOption("#addset-split", "development");
  assert.equal(await page.inputValue("#addset-set"), "new", "a pack with no set starts a new one");
  await form().getByLabel("Name of the new set").fill(SET_NAME);
  await add();
  assert.match(await page.textContent("#addset-status"), /Added “How do I write text to a file\?” to Clicked questions \(1 question;/);

  await search("json load decode a file");
  const url = await page.locator("#search-result tbody tr").first().locator(".hit-url code").first().textContent();
  pageTarget = url.split("#")[0];
  await openForm(null);
  await form().getByLabel("Question", { exact: true }).fill("How do I read JSON from a file?");
  await form().getByLabel(/its whole page/).check();
  assert.equal(await page.inputValue("#addset-split"), "development", "the split chosen last stays chosen");
  await page.selectOption("#addset-split", "held-out");
  assert.equal(await page.$eval("#addset-set option:checked", (o) => o.textContent), `${SET_NAME} (1 question)`, "the set used last is offered first");
  await add();

  await search("pickle bread");
  await openForm(null);
  await form().getByLabel("Question", { exact: true }).fill("How long do I bake sourdough bread?");
  await form().getByLabel(/The documents cannot answer this/).check();
  await add();
  assert.match(await page.textContent("#addset-status"), /\(3 questions;/);
});

let exported;

test("the Experiments view lists the set; Export (JSON) downloads a ragagent-cases/1 file the command line accepts", async () => {
  await page.evaluate(() => { location.hash = "#experiments"; });
  await page.waitForSelector("#exs-list .exs-set tbody tr");
  assert.equal(await page.$$eval("#exs-list .exs-set", (s) => s.length), 1);
  assert.equal(await page.textContent("#exs-list .exs-set h4"), SET_NAME);
  await screenshot(page.locator("#exp-sets"), "sets-list", {});
  await axeClean("#exp-sets", "the question set list");
  const [download] = await Promise.all([page.waitForEvent("download"),
    page.getByRole("button", { name: /^Export \(JSON\)/ }).click()]);
  exported = readFileSync(await download.path());
  const file = JSON.parse(exported);
  assert.equal(file.format, "ragagent-cases/1");
  assert.deepEqual(file.cases.map((c) => c.question), ["How do I write text to a file?", "How do I read JSON from a file?", "How long do I bake sourdough bread?"]);
  assert.deepEqual(file.cases.map((c) => c.target_urls), [[ALIAS], [pageTarget], []]);
  assert.deepEqual(file.cases.map((c) => c.split), ["development", "held-out", "held-out"]);
  assert.equal(new Set(file.cases.map((c) => c.id)).size, 3, "ids are distinct");
  const setFile = path.join(dir, "clicked.cases.json");
  writeFileSync(setFile, exported);
  const accepted = cli(["retrieval", "--corpus", PACK_DIR, "--cases", setFile, "--json"]);
  assert.equal(accepted.status, 0, accepted.stderr);
  const result = JSON.parse(accepted.stdout);
  assert.equal(result.cases, 3);
  assert.equal(result.answerable, 2);
});

test("the page's experiment on the set gives the command line's figures, byte for byte", async () => {
  const value = await page.$eval("#exp-cases-choice", (sel) => [...sel.options].find((o) => o.textContent.startsWith("your set: Clicked questions")).value);
  await page.selectOption("#exp-cases-choice", value);
  await page.waitForFunction(() => /Clicked questions/.test(document.querySelector("#exp-cases-now").textContent));
  await page.waitForFunction(() => !document.querySelector("#exp-run").disabled, null, { timeout: 60000 });
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.experiment) && !document.querySelector("#exp-run").disabled, null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.experiment), "done", await page.textContent("#exp-message"));
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download results (JSON)", exact: true }).click()]);
  const got = readFileSync(await download.path());
  const setFile = path.join(dir, "clicked.cases.json");
  const want = cli(["retrieval", "--corpus", "python-3.11", "--cases", setFile, "--json"]);
  assert.equal(want.status, 0, want.stderr);
  assert.ok(got.equals(want.stdout), `the page's result is ragagent retrieval --json's:\n${got}\n---\n${want.stdout}`);
  // Tune is offered the same set.
  assert.match(await page.textContent("#exp-cases-now"), /your set “Clicked questions”/);
});

test("Export (TSV) writes the command line's three columns, which import again as a set", async () => {
  const [download] = await Promise.all([page.waitForEvent("download"),
    page.getByRole("button", { name: /^Export \(TSV\)/ }).click()]);
  const tsv = readFileSync(await download.path(), "utf8");
  const ids = JSON.parse(exported).cases.map((c) => c.id);
  assert.equal(tsv, `id\tquestion\ttarget_urls\n${ids[0]}\tHow do I write text to a file?\t${ALIAS}\n${ids[1]}\tHow do I read JSON from a file?\t${pageTarget}\n${ids[2]}\tHow long do I bake sourdough bread?\t-\n`);
  const tsvFile = path.join(dir, "clicked.tsv");
  writeFileSync(tsvFile, tsv);
  assert.equal(cli(["retrieval", "--corpus", PACK_DIR, "--cases", tsvFile, "--json"]).status, 0);
  await page.setInputFiles("#exs-file", tsvFile);
  await page.waitForFunction(() => document.querySelectorAll("#exs-list .exs-set").length === 2);
  assert.match(await page.textContent("#exs-status"), /Imported clicked\.tsv as clicked: 3 questions\./);
});

test("the sets survive a reload", async () => {
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python")
    && document.querySelectorAll("#exs-list .exs-set").length === 2, null, { timeout: 180000 });
  const questions = await page.$$eval("#exs-list .exs-set:first-child tbody tr", (trs) => trs.map((tr) => tr.querySelector('input[type="text"]').value));
  assert.deepEqual(questions, ["How do I write text to a file?", "How do I read JSON from a file?", "How long do I bake sourdough bread?"]);
  // The view's address named the set in use, so the reload uses it again.
  assert.match(decodeURIComponent(new URL(page.url()).hash), /cases=set&set=Clicked\+questions/);
  await page.waitForFunction(() => /Clicked questions/.test(document.querySelector("#exp-cases-now").textContent));
});

test("a malformed file imported is refused with the command line's invalid_cases line, naming the case and the field", async () => {
  const bad = path.join(dir, "bad.json");
  writeFileSync(bad, JSON.stringify({ format: "ragagent-cases/1", cases: [{ id: "ok", question: "What is pathlib?", split: "held-out", target_urls: [] }, { id: "later", question: "When?", split: "later", target_urls: [] }] }));
  const want = cli(["retrieval", "--corpus", PACK_DIR, "--cases", bad, "--json"]);
  assert.equal(want.status, 1);
  const line = want.stderr.trim().slice(want.stderr.indexOf("invalid_cases:"));
  assert.match(line, /^invalid_cases: case 2 \("later"\): split: /);
  await page.setInputFiles("#exs-file", bad);
  await page.waitForFunction(() => !document.querySelector("#exs-message").hidden);
  const shown = await page.textContent("#exs-message");
  assert.equal(shown, `bad.json was not imported: ${line}`);
  assert.equal(shown.split("invalid_cases").length, 2, "the code is written once");
  assert.equal(await page.$$eval("#exs-list .exs-set", (s) => s.length), 2, "nothing was imported");
});

test("a case is edited and deleted, a set renamed and deleted, each kept", async () => {
  const first = page.locator("#exs-list .exs-set").first();
  await first.getByLabel(/^Question of /).first().fill("How do I write a string to a text file?");
  await first.getByLabel(/^Question of /).first().press("Tab");
  await page.waitForFunction(() => /^Changed /.test(document.querySelector("#exs-status").textContent));
  await first.getByLabel("Name", { exact: true }).fill("Renamed set");
  await first.getByRole("button", { name: /^Rename/ }).click();
  await page.waitForFunction(() => document.querySelector("#exs-list .exs-set h4").firstChild.textContent === "Renamed set");
  await page.waitForFunction(() => /your set “Renamed set”/.test(document.querySelector("#exp-cases-now").textContent), null, { timeout: 10000 });
  // A target no passage has is refused as the command line refuses it, and the field shows the kept one again.
  const targets = first.getByLabel(/^Targets of /).first();
  await targets.fill("https://docs.python.org/3.11/nope.html");
  await targets.press("Tab");
  await page.waitForFunction(() => !document.querySelector("#exs-message").hidden);
  assert.match(await page.textContent("#exs-message"), /^Not changed: invalid_cases: case 1 \("[^"]+"\): target_urls: no passage is on the page https:\/\/docs\.python\.org\/3\.11\/nope\.html$/);
  assert.equal(await page.locator("#exs-list .exs-set").first().getByLabel(/^Targets of /).first().inputValue(), ALIAS);
  const second = page.locator("#exs-list .exs-set").nth(1);
  await second.getByRole("button", { name: /^Delete (?!set )/ }).first().click();
  await page.waitForFunction(() => document.querySelectorAll("#exs-list .exs-set")[1]?.querySelectorAll("tbody tr").length === 2);
  await page.locator("#exs-list .exs-set").nth(1).getByRole("button", { name: /^Delete set/ }).click();
  await page.waitForFunction(() => document.querySelectorAll("#exs-list .exs-set").length === 1);
  const kept = await page.evaluate(async () => (await import("/common/sets.js")).list("python-3.11"));
  assert.equal(kept.length, 1);
  assert.equal(kept[0].name, "Renamed set");
  assert.equal(kept[0].cases[0].question, "How do I write a string to a text file?");
  assert.equal(kept[0].cases[0].id, JSON.parse(exported).cases[0].id, "a case's id stays as it was made");
  assert.deepEqual(problems, []);
});

test("a passage read in a trace and a run in the Runs view are offered to a question set too, with the trial's question", async () => {
  await page.evaluate(() => { location.hash = "#trace"; });
  const button = page.locator("#view-trace").getByRole("button", { name: /^Add to question set… / }).first();
  await button.waitFor();
  const want = await page.evaluate(async () => (await import("/common/state.js")).state.bundled.trials);
  await button.click();
  await page.waitForFunction(() => document.querySelector("#addset").open);
  const question = await form().getByLabel("Question", { exact: true }).inputValue();
  assert.ok(want.some((t) => t.result?.question === question), `the trial's question: ${question}`);
  const first = await page.textContent("#addset-choices label");
  assert.match(first, /^https:\/\/\S+ — this passage$/, "the passage read is the first target");
  await form().getByLabel("Name of the new set").fill("From the trace");
  await add();
  const seedSets = await page.evaluate(async () => (await import("/common/sets.js")).list("seed"));
  assert.deepEqual(seedSets.map((s) => [s.name, s.cases[0].question, s.cases[0].targets]), [["From the trace", question, [first.split(" ")[0]]]],
    "kept in the seed's sets, the pack the trial ran on");

  await page.evaluate(() => { location.hash = "#runs"; });
  await page.waitForSelector("#runs-list tbody tr");
  const row = page.locator("#runs-list tbody tr").first();
  const rowQuestion = (await row.locator("td").nth(1).locator(".cell").evaluate((c) => c.firstChild.textContent)).trim();
  await row.getByRole("button", { name: /^Add to question set… from / }).click();
  await page.waitForFunction(() => document.querySelector("#addset").open);
  assert.equal(await form().getByLabel("Question", { exact: true }).inputValue(), rowQuestion);
  const labels = await page.$$eval("#addset-choices label", (ls) => ls.map((l) => l.textContent));
  assert.ok(labels.length >= 2 && labels.at(-1).startsWith("The documents cannot answer this"), labels.join(" | "));
  assert.equal(await page.$eval("#addset-set option:checked", (o) => o.textContent), "From the trace (1 question)");
  await form().getByRole("button", { name: "Cancel", exact: true }).click();
  await page.waitForFunction(() => !document.querySelector("#addset").open);

  // Another module (an annotation's "the passage that answers it is ...") opens the form with target URLs of its own.
  const page0 = "https://docs.python.org/3.12/library/json.html";
  const added = page.evaluate(async (url) => (await import("/common/addtoset.js")).addToSet({ pack: "seed", question: "How do I dump JSON?", targets: [url] }), page0);
  await page.waitForFunction(() => document.querySelector("#addset").open);
  assert.deepEqual(await page.$$eval("#addset-choices label", (ls) => ls.map((l) => l.textContent.split(" — ")[0])), [page0, "The documents cannot answer this (no target: only an explicit stop passes it)"]);
  await add();
  const kept = await added;
  assert.deepEqual([kept.set.name, kept.case.question, kept.case.targets], ["From the trace", "How do I dump JSON?", [page0]]);
  assert.deepEqual(problems, []);
});

test("a passage given without its aliases, as a run's read returns it, is offered its aliases from the pack", async () => {
  const read = await page.evaluate(async (id) => {
    const { call } = await import("/engine/client.js");
    const p = await call("passage", [{ corpus: "python-3.11", source_id: id }]);
    return { source_id: p.source_id, url: p.url, version: p.version, text: p.text };
  }, ALIAS_SOURCE);
  page.evaluate(async (p) => (await import("/common/addtoset.js")).addToSet({ pack: "python-3.11", question: "How do I write text to a file?", passages: [p] }), read);
  await page.waitForFunction(() => document.querySelector("#addset").open);
  const labels = await page.$$eval("#addset-choices label", (ls) => ls.map((l) => l.textContent));
  assert.ok(labels.some((l) => l.startsWith(`${ALIAS} — an alias`)), labels.join(" | "));
  await form().getByRole("button", { name: "Cancel", exact: true }).click();
  await page.waitForFunction(() => !document.querySelector("#addset").open);
});

const NOTES = {
  "kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.\n\n## Filling\n\nFill the kettle with fresh cold water before boiling it.\n",
  "garden.md": "# Garden\n\nWater the tomatoes at dawn, never at noon.\n",
};

test("a set on your documents names its targets as the page shows them (path and anchor), and runs as the command line runs the same set", async () => {
  const from = path.join(dir, "notes");
  mkdirSync(from);
  for (const [name, text] of Object.entries(NOTES)) writeFileSync(path.join(from, name), text);
  const pack = path.join(dir, "pack");
  execFileSync(ragagent, ["corpus", "build", "--from", from, "--out", pack, "--id", "documents", "--title", "Your documents", "--version", "1.0",
    "--base-url", "https://your-documents.invalid/", "--search-k", "3", "--licence", "Your own documents.", "--attribution", "The documents' authors."], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  await page.evaluate(() => { location.hash = "#corpus"; });
  const dt = await page.evaluateHandle((notes) => {
    const d = new DataTransfer();
    for (const [name, text] of Object.entries(notes)) d.items.add(new File([text], name, { type: "text/markdown" }));
    return d;
  }, NOTES);
  await page.dispatchEvent("#docs-drop", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.docs), null, { timeout: 120000 });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#corpus-choice").value === "documents", null, { timeout: 60000 });
  await search("how often should I descale the kettle");
  const shown = await page.$eval("#search-result tbody tr:first-child .hit-url code", (c) => c.textContent);
  assert.match(shown, /^kettle\.md#/);
  await openForm(null);
  const first = await page.textContent("#addset-choices label");
  assert.equal(first.split(" ")[0], shown, "offered as the page shows it");
  await form().getByLabel("Name of the new set").fill("My notes");
  await add();
  await search("water the tomatoes");
  await openForm(null);
  await form().getByLabel("Question", { exact: true }).fill("What is the capital of France?");
  await form().getByLabel(/The documents cannot answer this/).check();
  await add();
  await page.evaluate(() => { location.hash = "#experiments"; });
  await page.waitForFunction(() => document.querySelector("#exs-list .exs-set h4")?.firstChild.textContent === "My notes");
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /^Export \(JSON\) My notes/ }).click()]);
  const file = JSON.parse(readFileSync(await download.path(), "utf8"));
  assert.deepEqual(file.cases.map((c) => c.target_urls), [[shown], []], "kept and exported as shown");
  const value = await page.$eval("#exp-cases-choice", (sel) => [...sel.options].find((o) => o.textContent.startsWith("your set: My notes")).value);
  await page.selectOption("#exp-cases-choice", value);
  await page.waitForFunction(() => /My notes/.test(document.querySelector("#exp-cases-now").textContent));
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.experiment) && !document.querySelector("#exp-run").disabled, null, { timeout: 120000 });
  assert.equal(await page.evaluate(() => document.body.dataset.experiment), "done", await page.textContent("#exp-message"));
  const [result] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download results (JSON)", exact: true }).click()]);
  // The command line reads targets as absolute URLs: the same set with the pack's base URL before each.
  const absolute = path.join(dir, "notes.cases.json");
  writeFileSync(absolute, JSON.stringify({ ...file, cases: file.cases.map((c) => ({ ...c, target_urls: c.target_urls.map((t) => `https://your-documents.invalid/${t}`) })) }));
  const want = cli(["retrieval", "--corpus", pack, "--cases", absolute, "--json"]);
  assert.equal(want.status, 0, want.stderr);
  assert.equal(readFileSync(await result.path(), "utf8"), want.stdout.toString(), "the page's figures are the command line's");
  assert.deepEqual(problems, []);
});

test("Tune is offered the pack's sets: on an imported set it chooses what ragagent tune --json chooses on the set's export", async () => {
  await page.selectOption("#corpus-choice", { label: PACK });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
  await page.setInputFiles("#exs-file", path.join(root, "fixtures", "cases", "python-3.11-natural.json"));
  await page.waitForFunction(() => /^Imported python-3\.11-natural\.json as python-3\.11-natural/.test(document.querySelector("#exs-status").textContent)
    || !document.querySelector("#exs-message").hidden);
  assert.equal(await page.isHidden("#exs-message"), true, await page.textContent("#exs-message"));
  const block = page.locator('#exs-list .exs-set:has(h4:text-is("python-3.11-natural"))');
  const [download] = await Promise.all([page.waitForEvent("download"), block.getByRole("button", { name: /^Export \(JSON\)/ }).click()]);
  const exportedSet = path.join(dir, "natural.cases.json");
  writeFileSync(exportedSet, readFileSync(await download.path()));
  const want = JSON.parse(cli(["tune", "--json", "--corpus", "python-3.11", "--cases", exportedSet]).stdout);
  const value = await page.$eval("#exp-cases-choice", (sel) => [...sel.options].find((o) => o.textContent.startsWith("your set: python-3.11-natural")).value);
  await page.selectOption("#exp-cases-choice", value);
  await page.waitForFunction(() => !document.querySelector("#exp-tune-run").disabled, null, { timeout: 60000 });
  await page.getByRole("button", { name: "Tune", exact: true }).click();
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.tune), null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.tune), "done", await page.textContent("#exp-tune-status"));
  assert.equal(await page.getAttribute("#exp-tune-result [data-chosen]", "data-chosen"), want.chosen.name);
  assert.ok((await page.textContent("#exp-tune-result")).includes(want.estimate["mrr@10"].value.toFixed(3)), "the cross-validated MRR@10");
});

test("the form and the set list fit a 360 px screen", async () => {
  await page.setViewportSize({ width: 360, height: 740 });
  await page.locator("#exp-sets").scrollIntoViewIfNeeded();
  // The set list's parts stay inside the screen (a table scrolls in its own region).
  const wide = await page.evaluate(() => [...document.querySelectorAll("#exp-sets, #exp-sets *, #exp-cases-choice")]
    .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !el.parentElement.closest(".scroll"))
    .slice(0, 5).map((el) => `${el.tagName}#${el.id}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`));
  assert.deepEqual(wide, [], "the Experiments view's set list at 360 px");
  await page.evaluate(() => { location.hash = "#corpus"; });
  await search("write text to a file");
  await openForm(ALIAS_SOURCE);
  const box = await page.$eval("#addset", (d) => { const r = d.getBoundingClientRect(); return { left: r.left, right: r.right, scroll: d.scrollWidth - d.clientWidth }; });
  assert.ok(box.left >= 0 && box.right <= 360 && box.scroll <= 0, JSON.stringify(box));
  await axeClean("#addset", "the form at 360 px");
  await page.keyboard.press("Escape");
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(problems, []);
});

test("an annotation's answering passage becomes a case: Add to question set… beside it", async () => {
  await page.evaluate(() => { location.hash = "#trace/overwrite/1"; });
  await page.waitForSelector("#trial-overwrite-agent-1 .annotation");
  const region = page.getByRole("region", { name: "Your annotation of overwrite / 1, agent path" });
  const select = region.getByLabel("The passage that answers it is");
  const option = await select.evaluate((s) => [...s.options].find((o) => /\(read\)$/.test(o.textContent)).value);
  await select.selectOption(option);
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForFunction(() => /Annotation saved/.test(document.querySelector("#trial-overwrite-agent-1 .annotation-status").textContent));
  const trial = await page.evaluate(async () => (await import("/common/state.js")).state.bundled.trials.find((t) => t.id === "overwrite-agent-1"));
  const url = trial.result.observations.find((o) => o.tool === "read" && o.result.source_id === option).result.url;
  await region.getByRole("button", { name: /^Add to question set… with the passage that answers overwrite \/ 1, agent path$/ }).click();
  await page.waitForFunction(() => document.querySelector("#addset").open);
  assert.equal(await form().getByLabel("Question", { exact: true }).inputValue(), trial.result.question);
  assert.equal((await page.textContent("#addset-choices label")).split(" — ")[0], url, "the answering passage is the first target");
  await add();
  const kept = await page.evaluate(async () => (await import("/common/sets.js")).list("seed"));
  assert.deepEqual(kept.at(-1).cases.at(-1).targets, [url]);
  assert.equal(kept.at(-1).cases.at(-1).question, trial.result.question);
  assert.deepEqual(problems, []);
});
