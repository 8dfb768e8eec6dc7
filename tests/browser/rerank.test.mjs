// The Rerank view end to end in Debian's Chromium: the reranking lab is
// replayed in the page (its tables are the published numbers, computed in
// the browser, not pre-rendered), and a live Gemini listwise rerank goes to
// cmd/fakegemini on loopback (which ranks listwise requests by coverage)
// with the key only in x-goog-api-key and the spending ledger in the
// browser's storage. Screenshots go to tests/browser/screenshots/ under make screenshots.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { root, serveSite, launch, startFake, observe, ledgerText, screenshot, SHOTS } from "./harness.mjs";

const KEY = "test-key-rerank-93b1e07c";
const published = (name) => JSON.parse(readFileSync(path.join(root, "fixtures", "rerank", "published", name), "utf8"));
const COVERAGE = published("rerank-coverage-result.json");
const GEMINI = published("rerank-gemini-result.json");
const CROSS = published("rerank-cross-encoder-result.json");
const sources = (rows) => rows.map((r) => r.source_id).join(", ");

let site, fake, browser, page, listwise, consoleLines, requests;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fake = await startFake();
  site = await serveSite([fake.url]);
  browser = await launch({ downloads: SHOTS });
  page = await browser.context.newPage();
  ({ consoleLines, requests } = observe(page));
  listwise = `${fake.url}/v1beta/models/gemini-3.1-flash-lite:generateContent`;
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#replay`);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 180000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
  fake?.stop();
});

const shot = (name) => screenshot(page, name);

/** cells reads a table's body rows as "|"-joined cell texts. */
function cells(selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) =>
    [...tr.cells].map((c) => c.textContent.replace(/\s+/g, " ").trim()).join("|")));
}

async function openRerank() {
  await page.click('a[data-view="rerank"]');
  await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 120000 });
}

test("the Rerank tab replays the lab in the page and shows the published numbers", async () => {
  const html = readFileSync(path.join(root, "site", "index.html"), "utf8");
  assert.ok(!html.includes("0.778") && !html.includes("heldout-existing"), "nothing is pre-rendered");
  await openRerank();
  assert.equal(await page.evaluate(() => document.activeElement.id), "rerank-title", "focus moves to the view's heading");
  assert.match(await page.textContent("#rerank-status"), /Replayed in \d+ ms .*4 development cases, 4 recorded Gemini replies and 16 recorded cross-encoder scorings used; no API call/);

  assert.equal(await page.$$eval(".rcase", (a) => a.length), 4);
  for (const d of COVERAGE.development_cases) {
    const article = `.rcase[data-case="${d.case_id}"]`;
    assert.match(await page.textContent(`${article} h4`), new RegExp(`${d.case_id} \\(Python ${d.requested_version}\\)`));
    const rows = await cells(`${article} .cands-table`);
    // Scores for reading (changed deliberately: four significant digits,
    // a tiny one in exponent form), each cell's title the exact value.
    const read = (x) => (x === null || x === undefined ? "–" : x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential(2) : String(Number(x.toPrecision(4))));
    assert.deepEqual(rows, d.before.map((c) => [c.source_id, c.version, c.lexical_rank ?? "–", read(c.lexical_score),
      c.vector_rank ?? "–", read(c.vector_score), read(c.lexical_contribution), read(c.vector_contribution),
      read(c.fused_score)].join("|")));
    const exact = await page.$$eval(`${article} .cands-table tbody tr`, (trs) => trs.map((tr) => tr.cells[8].title));
    assert.deepEqual(exact, d.before.map((c) => String(c.fused_score)), "the exact fused scores, as published");

    assert.equal(await page.$$eval(`${article} svg.slope line`, (l) => l.length) > 0, true, "the orders as a slopegraph");
    const columns = await page.$$eval(`${article} .orders tbody tr`, (trs) => [1, 2, 3, 4].map((i) =>
      trs.map((tr) => tr.cells[i].querySelector("code")?.textContent).join(", ")));
    const g = GEMINI.cases.find((c) => c.case_id === d.case_id);
    const x = CROSS.original_candidate_comparison.find((c) => c.case_id === d.case_id);
    assert.deepEqual(columns, [sources(d.before), sources(d.after), sources(g.gemini), sources(x.cross_encoder)], d.case_id);
    const detail = await page.textContent(`${article} .orders tbody tr:first-child`);
    assert.ok(detail.includes(`logit ${x.cross_encoder[0].cross_encoder_logit.toFixed(3)}`), "logits are shown");
    assert.ok(detail.includes(`matched ${d.after[0].rerank_features.matched_tokens.join(", ")}`), "matched terms are shown");
  }

  assert.equal(await page.textContent("#rerank-mechanism-after"), "path-write, json-text, path-read");
  assert.equal(await page.textContent("#rerank-altered"), "candidate_payload_mismatch");
  assert.equal((await cells(".expanded")).length, 12);
  assert.equal((await cells(".expanded")).find((r) => r.startsWith("heldout-existing")),
    "heldout-existing|diagnostic|previously-observed|3.12|path-write|json-text, path-read, path-write top-1 miss reciprocal rank 0.333|path-write, path-read, json-text top-1 hit reciprocal rank 1.000");
  assert.match((await cells(".expanded")).find((r) => r.startsWith("validation-backup")), /\|none\|.* not counted no_supported_target\|.* not counted no_supported_target$/);
  assert.deepEqual(await cells(".rerank-summary"), [
    "diagnostic|coverage|2 of 3|0.778|1 of 4",
    "diagnostic|cross-encoder|3 of 3|1.000|1 of 4",
    "validation|coverage|6 of 6|1.000|2 of 8",
    "validation|cross-encoder|6 of 6|1.000|2 of 8",
  ]);
  assert.equal(requests.filter((r) => r.url.startsWith(fake.url)).length, 0, "no API call");
  await shot("rerank");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot("rerank-phone");
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("the live form shows the prices and refuses clearly, sending nothing, without a budget or over it", async () => {
  await page.waitForFunction(() => /not set/.test(document.querySelector("#rerank-ledger-budget")?.textContent || ""));
  assert.equal(await page.isVisible("#rerank-key-slot #run-key"), true, "the Run view's key field, moved here");
  assert.match(await page.textContent("#rerank-prices"), /gemini-3\.1-flash-lite \(reranks\)\s*\$0\.25\s*\$1\.5\s*assumed list price \(Gemini Flash-Lite tier\); change it in the price fields/);
  assert.equal(await page.inputValue("#rerank-price-in"), "0.25");
  await page.fill("#run-key", KEY);
  const before = requests.length;

  await page.click("#rerank-start");
  await page.waitForSelector("#rerank-refusal");
  assert.match(await page.textContent("#rerank-refusal"), /set a budget first/);

  await page.fill("#rerank-budget", "0.005");
  await page.click("#rerank-set-budget");
  await page.waitForFunction(() => document.querySelector("#rerank-ledger-budget").textContent === "$0.005");
  await page.click("#rerank-start");
  await page.waitForFunction(() => /budget_exceeded/.test(document.querySelector("#rerank-refusal")?.textContent || ""));
  assert.match(await page.textContent("#rerank-refusal"), /over the budget of \$0\.00500000; nothing was sent/);
  assert.match(await page.textContent("#rerank-live-status"), /Refused: budget_exceeded\. Nothing was sent\./);
  assert.equal(await page.textContent("#rerank-start"), "Show the plan", "a refused plan cannot be sent");
  await shot("rerank-refused");
  assert.equal(requests.slice(before).filter((r) => r.url.startsWith(fake.url)).length, 0, "nothing was sent");
  assert.equal(JSON.parse(await ledgerText(page)).entries.length, 0);
});

test("a live rerank sends the key only as x-goog-api-key and the ledger keeps its reservations across a reload", async () => {
  await page.fill("#rerank-budget", "0.05");
  await page.click("#rerank-set-budget");
  await page.waitForFunction(() => document.querySelector("#rerank-ledger-budget").textContent === "$0.05");
  const before = requests.length;
  await page.click("#rerank-start");
  await page.waitForFunction(() => document.querySelector("#rerank-start").textContent === "Send 4 requests");
  const plan = await page.textContent("#rerank-plan");
  assert.ok(plan.includes(listwise), "the plan names the loopback listwise endpoint");
  assert.match(plan, /\$0\.0079135 in all/);
  assert.match(plan, /\$0\.05: \$0 reserved, \$0\.05 remaining, \$0\.0420865 after this rerank/);
  assert.deepEqual((await cells("#rerank-plan table")).map((r) => r.split("|").at(-1)), ["$0.00198", "$0.0019785", "$0.001976", "$0.001979"]);
  assert.equal(requests.length, before, "nothing is sent before the plan is confirmed");
  await shot("rerank-plan");

  await page.evaluate(() => { delete document.body.dataset.rerankLive; });
  await page.click("#rerank-start");
  await page.waitForFunction(() => document.body.dataset.rerankLive === "done", null, { timeout: 60000 });
  assert.match(await page.textContent("#rerank-live-status"), /Finished: 4 of 4 cases reranked\./);
  // The fake ranks by coverage, so its live order is the coverage order.
  for (const row of await cells(".live-orders")) {
    const [, , coverage, live] = row.split("|");
    assert.equal(live.replace(/ (same as recorded|differs from the recorded order.*)$/, ""), coverage, row);
  }
  // Where the live order differs from the recorded one, the cell says so and marks the positions.
  const differing = await page.$$eval(".live-orders td.differs", (tds) => tds.map((td) => td.querySelectorAll("mark.diff").length));
  assert.ok(differing.every((n) => n > 0), "each differing cell marks its positions");

  const posts = requests.slice(before).filter((r) => r.url.startsWith(fake.url) && r.method === "POST");
  assert.equal(posts.length, 4, "one request per case");
  for (const r of posts) {
    assert.equal(r.url, listwise);
    assert.equal(r.headers["x-goog-api-key"], KEY);
    assert.ok(!r.url.includes(KEY) && !r.body.includes(KEY), "the key is only a header");
    for (const [name, value] of Object.entries(r.headers)) {
      if (name !== "x-goog-api-key") assert.ok(!value.includes(KEY), `header ${name}`);
    }
    assert.equal(JSON.parse(r.body).systemInstruction.parts[0].text.slice(0, 32), "Rank the supplied documentation ");
  }
  for (const r of requests) {
    if (!r.url.startsWith(fake.url)) assert.ok(!JSON.stringify(r).includes(KEY), `the key went nowhere else (${r.url})`);
  }
  assert.match(fake.log(), /POST \/v1beta\/models\/gemini-3\.1-flash-lite:generateContent -> 200 \(headers: .*x-goog-api-key/);

  // The ledger reflects the reservations, in the page and in its storage.
  assert.equal(await page.textContent("#rerank-ledger-spent"), "$0.0079135 in 4 reservations");
  assert.equal(await page.textContent("#rerank-ledger-remaining"), "$0.0420865");
  const stored = await ledgerText(page);
  assert.ok(!stored.includes(KEY), "the key is not in the ledger");
  const ledger = JSON.parse(stored);
  assert.deepEqual(ledger.entries.map((e) => [e.outcome, e.model, e.request_bytes]),
    [["completed", "gemini-3.1-flash-lite", 1776], ["completed", "gemini-3.1-flash-lite", 1770],
      ["completed", "gemini-3.1-flash-lite", 1760], ["completed", "gemini-3.1-flash-lite", 1772]]);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "the key is not remembered unless asked");
  await shot("rerank-live");

  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#rerank-download")]);
  const file = path.join(SHOTS, "rerank-recording.json");
  await download.saveAs(file);
  const text = readFileSync(file, "utf8");
  assert.ok(!text.includes(KEY), "the key is not in the recording");
  assert.equal(JSON.parse(text).trials[0].exchanges.length, 4);

  // A reload keeps what was reserved.
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 180000 });
  await page.waitForFunction(() => /4 reservations/.test(document.querySelector("#rerank-ledger-spent")?.textContent || ""));
  assert.equal(await page.textContent("#rerank-ledger-remaining"), "$0.0420865");
  assert.equal(await page.$$eval("#rerank-entries tbody tr", (r) => r.length), 4);
  assert.equal(await page.inputValue("#run-key"), "", "the key is gone after a reload");
  assert.ok(!consoleLines.some((l) => l.includes(KEY)), "the key never reached the console");
});

test("the key box goes back to the Run view", async () => {
  await page.click('a[data-view="run"]');
  // hashchange is handled after the click returns
  await page.waitForFunction(() => document.querySelector("#view-rerank").hidden && document.querySelector("#run-form").contains(document.querySelector("#key-fields")));
  await page.check('input[name="policy"][value="scripted"]');
  assert.equal(await page.isHidden("#key-fields"), true);
  await page.check('input[name="policy"][value="gemini"]');
  assert.equal(await page.isVisible("#run-key"), true);
});

test("no errors reached the console", () => {
  assert.deepEqual(consoleLines.filter((l) => /^(error|pageerror)/.test(l)), []);
});
