// The Runs and Compare views in Debian's Chromium: every run made in the
// Run view is kept in IndexedDB (across a reload), listed with its time,
// question, corpus, configuration and outcome, deletable, bounded (the
// bound the view states); one search looks through the runs and the
// recorded trials in what happened ("sufficient evidence" finds the
// recorded trial whose assessment says it, and nothing else); filters live
// in the address and a reload restores them; two trials compare step by
// step, aligned by model call, every differing fact marked, and the link
// restores the pair, recorded or your own; a kept scripted run downloads
// as OTLP/JSON; axe with no serious violation, no horizontal overflow at
// 360 and 1280 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { serveSite, launch, openPage, root } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const BUNDLED = JSON.parse(readFileSync(path.join(root, "recordings", "agent-comparison.json"), "utf8"));

let site, browser, page, problems, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-runs-"));
  site = await serveSite();
  browser = await launch({ downloads: dir });
  ({ page, problems } = await openPage(browser.context, `${site.url}/#run`));
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** scripted makes one scripted run of an authored question on a path, from the Run view. */
async function scripted(preset, mode) {
  await page.click('a[data-view="run"]');
  await page.selectOption("#run-preset", preset);
  await page.check(`input[name="mode"][value="${mode}"]`);
  await page.check('input[name="policy"][value="scripted"]');
  await page.click("#run-start");
  await page.waitForFunction(() => /Kept in Runs|Not kept/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  return page.textContent("#run-status");
}

async function showRuns(hash = "#runs") {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForFunction(() => !document.querySelector("#view-runs").hidden && document.body.dataset.runs === "listed");
}

const rowsOf = () => page.$$eval("#runs-list tbody tr", (trs) => trs.map((tr) => ({ ref: tr.dataset.ref, source: tr.dataset.source, outcome: tr.dataset.outcome, text: tr.textContent })));

async function overflowFree(view) {
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${view} at ${width} px: the page is ${scroll} px wide`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function axeClean(what) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ["violations"] });
    return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(found, [], what);
}

test("runs made in the page are kept across a reload, listed with time, question, corpus, configuration and outcome", async () => {
  assert.match(await scripted("overwrite", "agent"), /Kept in Runs/);
  assert.match(await scripted("overwrite", "fixed"), /Kept in Runs/);
  // A scripted run's trace exports too (the engine makes it again).
  const dl = page.waitForEvent("download");
  await page.click("#run-output button.export");
  const otlp = JSON.parse(readFileSync(await (await dl).path(), "utf8"));
  assert.ok(otlp.resourceSpans[0].scopeSpans[0].spans.some((sp) => sp.name.startsWith("fixed run: overwrite")));
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  await showRuns("#runs?source=runs");
  const rows = await rowsOf();
  assert.equal(rows.length, 2);
  const question = BUNDLED.trials.find((t) => t.case_id === "overwrite").question;
  for (const r of rows) {
    assert.equal(r.source, "runs");
    assert.ok(r.text.includes(question), r.text);
    assert.match(r.text, /seed/);
    assert.match(r.text, /scripted/);
  }
  assert.deepEqual(rows.map((r) => /agent path/.test(r.text) ? "agent" : "fixed"), ["fixed", "agent"], "newest first");
  assert.match(await page.textContent("#view-runs"), /the newest 100/);
  await axeClean("Runs view");
  await overflowFree("Runs");
  // A kept run shown in full.
  await page.click('#runs-list tbody tr:first-child button:has-text("Show")');
  await page.waitForSelector("#runs-detail article.trial");
  await axeClean("Runs view with a run shown");
});

test("a search looks in step content across your runs and the recorded trials, and its filters live in the address", async () => {
  await showRuns("#runs");
  await page.fill("#runs-q", '"sufficient evidence"');
  await page.waitForFunction(() => location.hash.includes("q="));
  const found = await rowsOf();
  // The recorded trials whose steps say it (the engine's replay of the
  // bundled file): counted here from the file's replies.
  const want = BUNDLED.trials.filter((t) => t.exchanges.some((e) => JSON.stringify(e.response || "").includes("sufficient evidence"))).map((t) => `bundled:${t.id}`);
  assert.ok(want.length >= 1);
  assert.deepEqual(found.map((r) => r.ref).sort(), want.sort());
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /q=%22sufficient\+evidence%22|q=%22sufficient%20evidence%22/);
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  await page.waitForFunction(() => document.body.dataset.runs === "listed");
  assert.equal(await page.inputValue("#runs-q"), '"sufficient evidence"');
  assert.deepEqual((await rowsOf()).map((r) => r.ref).sort(), want.sort(), "the reload restores the filter");
  // A filter by outcome and source.
  await showRuns("#runs?source=bundled&outcome=fail");
  const fails = await rowsOf();
  assert.ok(fails.length > 0);
  assert.ok(fails.every((r) => r.source === "bundled" && r.outcome === "fail"));
  // A word only a passage's text holds: the runs' reads are searched.
  await showRuns("#runs?source=runs&q=" + encodeURIComponent("no_such_word_anywhere"));
  assert.equal((await rowsOf()).length, 0);
});

test("two trials compare step by step, aligned by model call, differences marked, and the link restores the pair", async () => {
  const a = "bundled:serialize-and-save-fixed-1";
  const b = "bundled:serialize-and-save-agent-1";
  await page.evaluate((h) => { location.hash = h; }, `#compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`);
  await page.waitForFunction(() => document.body.dataset.compare === "shown" && !document.querySelector("#view-compare").hidden);
  assert.equal(await page.inputValue("#cmp-a"), a);
  assert.equal(await page.inputValue("#cmp-b"), b);
  const cells = await page.$$eval("#cmp-result tbody tr", (trs) => trs.map((tr) => ({ step: tr.dataset.step, field: tr.dataset.field, differs: tr.classList.contains("cmp-differs"), text: tr.textContent })));
  assert.ok(cells.some((c) => c.step.startsWith("0.") && c.field === "candidates"), "the fixed path's own retrieval is a step");
  assert.ok(cells.some((c) => c.differs), "the fixed and agent paths differ somewhere");
  assert.ok(cells.every((c) => c.text.includes(c.differs ? "differs" : "same")), "each row says in words whether it differs");
  assert.match(await page.textContent("#cmp-status"), /differ/);
  await axeClean("Compare view");
  await overflowFree("Compare");
  // Repeat 1 with repeat 2 of the same path.
  await page.selectOption("#cmp-a", "bundled:overwrite-agent-1");
  await page.click("#cmp-other-repeat");
  await page.waitForFunction(() => location.hash.includes("overwrite-agent-2"));
  // A trial with itself: no difference.
  await page.selectOption("#cmp-b", "bundled:overwrite-agent-1");
  await page.waitForFunction(() => /same, fact for fact/.test(document.querySelector("#cmp-status").textContent));
  // Your run against a recorded trial, from the Runs view's checkboxes, restored by its link.
  await showRuns("#runs");
  const rows = await rowsOf();
  const mine = rows.find((r) => r.source === "runs" && /agent path/.test(r.text)).ref;
  await page.check(`#runs-list tr[data-ref="${mine}"] input.runs-pick`);
  await page.check('#runs-list tr[data-ref="bundled:overwrite-agent-1"] input.runs-pick');
  await page.click("#runs-compare");
  await page.waitForFunction(() => !document.querySelector("#view-compare").hidden && document.body.dataset.compare === "shown");
  const link = await page.evaluate(() => location.hash);
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
  await page.waitForFunction((want) => document.querySelector("#cmp-a").value === want, mine);
  assert.equal(await page.evaluate(() => location.hash), link);
  assert.equal(await page.inputValue("#cmp-b"), "bundled:overwrite-agent-1");
});

test("a kept scripted run downloads as OTLP/JSON, and Delete removes it", async () => {
  await showRuns("#runs?source=runs");
  const [first] = await rowsOf();
  const dl = page.waitForEvent("download");
  await page.click(`#runs-list tr[data-ref="${first.ref}"] button:has-text("OTLP")`);
  const file = await (await dl).path();
  const doc = JSON.parse(readFileSync(file, "utf8"));
  const spans = doc.resourceSpans[0].scopeSpans[0].spans;
  assert.ok(spans.some((s) => s.attributes.some((a) => a.key === "openinference.span.kind" && a.value.stringValue === "RETRIEVER")));
  await page.click(`#runs-list tr[data-ref="${first.ref}"] button:has-text("Delete")`);
  await page.waitForFunction((ref) => !document.querySelector(`#runs-list tr[data-ref="${ref}"]`), first.ref);
  assert.equal((await rowsOf()).length, 1);
});

test("the store keeps the newest 100 and drops the oldest", async () => {
  const kept = await page.evaluate(async () => {
    const runs = await import("/common/runs.js");
    const before = (await runs.list()).length;
    let dropped = 0;
    for (let i = 0; i < runs.LIMIT + 3 - before; i++) dropped += (await runs.keep({ time: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), question: `q${i}`, corpus: { id: "seed", title: "" }, config: "seed", policy: "scripted", mode: "agent", outcome: "none", report: { id: `r${i}`, mode: "agent" }, recording: null })).dropped;
    const all = await runs.list();
    return { n: all.length, dropped, newest: all[0].question, want: `q${runs.LIMIT + 3 - before - 1}`, limit: runs.LIMIT };
  });
  assert.equal(kept.n, kept.limit);
  assert.equal(kept.dropped, 3);
  assert.equal(kept.newest, kept.want);
  assert.deepEqual(problems, []);
});

test("a trace shows each candidate's score beside it, the engine's search's for the same query", async () => {
  await page.evaluate(() => { location.hash = "#trace/serialize-and-save/1"; });
  await page.waitForSelector("#trial-serialize-and-save-agent-1 .cands li .score");
  const first = await page.$eval("#trial-serialize-and-save-agent-1 .step-box", (box) => ({
    query: box.querySelector(".arg")?.textContent,
    cands: [...box.querySelectorAll(".cands li")].map((li) => ({ id: li.dataset.source, score: li.querySelector(".score")?.getAttribute("title") })),
  }));
  assert.ok(first.cands.length > 0);
  const want = await page.evaluate(async (q) => (await window.ragagentPage.call("search", [{ query: q, version: "3.12" }])).hits, first.query);
  first.cands.forEach((c, i) => {
    assert.equal(c.id, want[i].source_id);
    assert.equal(Number(c.score), want[i].score);
  });
  assert.match(await page.textContent("#trial-serialize-and-save-agent-1"), /bm25 \(lower is better\); the model saw only the ranks/);
});
