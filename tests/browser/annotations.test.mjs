// Annotations in Debian's Chromium (issue 34, items 2 and 6): a run made
// in the page (scripted) and a recorded trial are annotated in their
// traces (a verdict, a note, the passage that answers it: one the run
// read, or a URL typed); the annotations survive a reload, show in the
// trace and on the Runs list (a verdict badge and the note's first words),
// the list filters by verdict with the filter in the address (a reload
// restores it), an experiment's question is annotated below its results,
// the OTLP download carries each as a "ragagent.annotation"
// event on the run's span (author "user", its time), a deleted one leaves
// the export's bytes as they were, every annotation downloads as JSON,
// and axe finds no violation in light or dark, nor the page any
// horizontal overflow at 360 px.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { serveSite, launch, openPage } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const TYPED = "https://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text";
const NOTE = "Read the wrong section first; the answer is in the passage read second, which says it replaces the file";

let site, browser, page, problems, dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-annotations-"));
  site = await serveSite();
  browser = await launch({ downloads: dir });
  ({ page, problems } = await openPage(browser.context, `${site.url}/#run`));
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function reload() {
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 120000 });
}

async function showRuns(hash = "#runs") {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForFunction(() => !document.querySelector("#view-runs").hidden && document.body.dataset.runs === "listed");
}

const rowsOf = () => page.$$eval("#runs-list tbody tr", (trs) => trs.map((tr) => ({ ref: tr.dataset.ref, verdict: tr.dataset.verdict,
  annotation: tr.querySelector(".runs-annotation")?.textContent || "" })));

/** download clicks a button and parses the file it saves. */
async function download(selector) {
  const dl = page.waitForEvent("download");
  await page.click(selector);
  return JSON.parse(readFileSync(await (await dl).path(), "utf8"));
}

/** annotationEvents is each run span's "ragagent.annotation" events, and any on another span. */
function annotationEvents(otlp) {
  const spans = otlp.resourceSpans[0].scopeSpans[0].spans;
  const attrs = (e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value.stringValue]));
  const on = (s) => (s.events || []).filter((e) => e.name === "ragagent.annotation");
  return {
    root: spans.filter((s) => !s.parentSpanId).flatMap((s) => on(s).map((e) => ({ time: e.timeUnixNano, ...attrs(e) }))),
    elsewhere: spans.filter((s) => s.parentSpanId).flatMap(on).length,
  };
}

/** overflowFree checks that the page is no wider than the window at 360 and 1280 px. */
async function overflowFree(what) {
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${what} at ${width} px: the page is ${scroll} px wide`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const nanos = (iso) => (BigInt(Date.parse(iso)) * 1000000n).toString();

async function axeClean(what) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(AXE);
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    const found = await page.evaluate(async () => {
      const res = await window.axe.run(document, { resultTypes: ["violations"] });
      return res.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
    });
    assert.deepEqual(found, [], `${what}, ${scheme}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

let runRef = ""; // the kept run's row ("run:<key>")
let readPassage = null; // {source_id, url} the run read, chosen as the answer

test("a run made in the page is annotated in its trace: verdict, note and a passage it read", async () => {
  await page.selectOption("#run-preset", "overwrite");
  await page.check('input[name="mode"][value="agent"]');
  await page.check('input[name="policy"][value="scripted"]');
  await page.click("#run-start");
  await page.waitForFunction(() => /Kept in Runs|Not kept/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  assert.match(await page.textContent("#run-status"), /Kept in Runs/);
  await showRuns("#runs?source=runs");
  const [row] = await rowsOf();
  runRef = row.ref;
  assert.equal(row.verdict, "unannotated");
  await page.click(`#runs-list tr[data-ref="${runRef}"] button:has-text("Show")`);
  const region = page.getByRole("region", { name: /^Your annotation of overwrite \/ \d+, agent path$/ });
  await region.waitFor();
  assert.match(await region.textContent(), /Not annotated yet/);
  // The answering passage: one the run read, offered by its source id.
  const key = Number(runRef.split(":")[1]);
  const kept = await page.evaluate(async (k) => (await (await import("/common/runs.js")).get(k)).report.result.observations.filter((o) => o.tool === "read").map((o) => ({ source_id: o.result.source_id, url: o.result.url })), key);
  assert.ok(kept.length >= 1, "the scripted run read a passage");
  readPassage = kept[0];
  await region.getByRole("radio", { name: "wrong" }).check();
  await region.getByLabel("Note").fill(NOTE);
  await region.getByLabel("The passage that answers it is").selectOption(readPassage.source_id);
  assert.equal(await region.getByLabel("Its URL").isVisible(), false, "a passage of the run needs no URL");
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForFunction(() => /Annotation saved/.test(document.querySelector("#runs-detail .annotation-status").textContent));
  assert.match(await region.textContent(), /wrong by user/);
  assert.ok((await region.textContent()).includes(readPassage.url));
  // The list shows it at once: the verdict and the note's first words.
  const shown = (await rowsOf()).find((r) => r.ref === runRef);
  assert.equal(shown.verdict, "wrong");
  assert.match(shown.annotation, /^wrong/);
  assert.ok(shown.annotation.includes("Read the wrong section first; the answer is…"), shown.annotation);
  await axeClean("Runs view with an annotated run shown");
  await overflowFree("Runs view with an annotated run shown");
});

test("a recorded trial is annotated in the Trace view with a typed URL; a URL that is not one is refused", async () => {
  await page.evaluate(() => { location.hash = "#trace/overwrite/1"; });
  await page.waitForSelector("#trial-overwrite-agent-1 .annotation");
  const region = page.getByRole("region", { name: "Your annotation of overwrite / 1, agent path" });
  await region.getByRole("radio", { name: "correct" }).check();
  await region.getByLabel("The passage that answers it is").selectOption("typed");
  const url = region.getByLabel("Its URL");
  assert.ok(await url.evaluate((el) => el === document.activeElement), "choosing to type moves focus to the URL");
  await url.fill("not a url");
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForFunction(() => /Not saved/.test(document.querySelector("#trial-overwrite-agent-1 .annotation-status").textContent));
  assert.equal(await url.getAttribute("aria-invalid"), "true");
  assert.ok(await url.evaluate((el) => el === document.activeElement), "focus goes to the field to fix");
  assert.equal(await page.evaluate(() => document.querySelector('#trial-overwrite-agent-1 .annotation').dataset.verdict), "unannotated");
  await url.fill(TYPED);
  await region.getByLabel("Note").fill("Right answer, right passage.");
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForFunction(() => /Annotation saved/.test(document.querySelector("#trial-overwrite-agent-1 .annotation-status").textContent));
  assert.equal(await url.getAttribute("aria-invalid"), null);
  // The fixed path beside it is another trial, still unannotated.
  assert.equal(await page.getAttribute("#trial-overwrite-fixed-1 .annotation", "data-verdict"), "unannotated");
  await axeClean("Trace view with an annotated trial");
  await overflowFree("Trace view with an annotated trial");
});

test("annotations survive a reload, in the trace and on the Runs list", async () => {
  await reload();
  await page.evaluate(() => { location.hash = "#trace/overwrite/1"; });
  await page.waitForSelector('#trial-overwrite-agent-1 .annotation[data-verdict="correct"]');
  const region = page.getByRole("region", { name: "Your annotation of overwrite / 1, agent path" });
  assert.equal(await region.getByRole("radio", { name: "correct" }).isChecked(), true);
  assert.equal(await region.getByLabel("Its URL").inputValue(), TYPED);
  assert.match(await region.textContent(), /Right answer, right passage\./);
  // The kept run's own trace link shows its annotation too.
  await page.evaluate((k) => { location.hash = `#trace/run/${k}`; }, runRef.split(":")[1]);
  await page.waitForSelector('#trace-pair .annotation[data-verdict="wrong"]');
  const kept = page.locator("#trace-pair .annotation");
  assert.equal(await kept.getByLabel("The passage that answers it is").inputValue(), readPassage.source_id);
  assert.equal(await kept.getByLabel("Note").inputValue(), NOTE);
  await showRuns("#runs");
  const rows = await rowsOf();
  assert.equal(rows.find((r) => r.ref === runRef).verdict, "wrong");
  const recorded = rows.find((r) => r.ref === "bundled:overwrite-agent-1");
  assert.equal(recorded.verdict, "correct");
  assert.match(recorded.annotation, /^correct\s*Right answer, right passage\./);
  assert.equal(rows.filter((r) => r.verdict === "unannotated").length, rows.length - 2, "every other trial is unannotated");
});

test("the Runs view filters by verdict, the filter is in the address, and a reload restores it", async () => {
  await showRuns("#runs");
  await page.selectOption("#runs-verdict", "wrong");
  await page.waitForFunction(() => location.hash.includes("verdict=wrong"));
  assert.deepEqual((await rowsOf()).map((r) => r.ref), [runRef]);
  await page.selectOption("#runs-verdict", "correct");
  await page.waitForFunction(() => location.hash.includes("verdict=correct"));
  assert.deepEqual((await rowsOf()).map((r) => r.ref), ["bundled:overwrite-agent-1"]);
  await page.selectOption("#runs-verdict", "partly");
  await page.waitForFunction(() => location.hash.includes("verdict=partly"));
  assert.deepEqual(await rowsOf(), []);
  await page.selectOption("#runs-verdict", "");
  await page.waitForFunction(() => !location.hash.includes("verdict="));
  const every = (await rowsOf()).length;
  await page.selectOption("#runs-verdict", "unannotated");
  await page.waitForFunction(() => location.hash.includes("verdict=unannotated"));
  const open = (await rowsOf()).map((r) => r.ref);
  assert.equal(open.length, every - 2);
  assert.ok(!open.includes(runRef) && !open.includes("bundled:overwrite-agent-1"));
  await page.selectOption("#runs-verdict", "wrong");
  await page.waitForFunction(() => location.hash.includes("verdict=wrong"));
  await reload();
  await page.waitForFunction(() => document.body.dataset.runs === "listed" && !document.querySelector("#view-runs").hidden);
  assert.equal(await page.inputValue("#runs-verdict"), "wrong");
  assert.deepEqual((await rowsOf()).map((r) => r.ref), [runRef], "the reload restores the filter");
  await axeClean("Runs view filtered by verdict");
});

test("the OTLP download carries each annotation as a span event on the run's span, author user", async () => {
  const saved = await page.evaluate(async () => (await import("/common/annotations.js")).exportText());
  const byRef = Object.fromEntries(JSON.parse(saved).annotations.map((a) => [`${a.kind}:${a.id}`, a]));
  // The kept run, from its row.
  await showRuns("#runs?verdict=wrong");
  const mine = annotationEvents(await download(`#runs-list tr[data-ref="${runRef}"] button:has-text("OTLP")`));
  assert.equal(mine.elsewhere, 0);
  assert.deepEqual(mine.root, [{ time: nanos(byRef[runRef].time), "ragagent.annotation.author": "user", "ragagent.annotation.verdict": "wrong",
    "ragagent.annotation.note": NOTE, "ragagent.annotation.passage_url": readPassage.url, "ragagent.annotation.passage_id": readPassage.source_id }]);
  // The recorded trial, from its trace's download button.
  await page.evaluate(() => { location.hash = "#trace/overwrite/1"; });
  await page.waitForSelector('#trial-overwrite-agent-1 .annotation[data-verdict="correct"]');
  const trace = annotationEvents(await download("#trial-overwrite-agent-1 button.export"));
  assert.deepEqual(trace.root, [{ time: nanos(byRef["trial:bundled:overwrite-agent-1"].time), "ragagent.annotation.author": "user",
    "ragagent.annotation.verdict": "correct", "ragagent.annotation.note": "Right answer, right passage.", "ragagent.annotation.passage_url": TYPED }]);
  // An unannotated trial's download has none.
  assert.deepEqual(annotationEvents(await download("#trial-overwrite-fixed-1 button.export")).root, []);
});

test("annotations are edited and deleted; a deleted one leaves the export's bytes as they were", async () => {
  const region = page.getByRole("region", { name: "Your annotation of overwrite / 1, agent path" });
  await region.getByRole("radio", { name: "partly" }).check();
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForSelector('#trial-overwrite-agent-1 .annotation[data-verdict="partly"]');
  await region.getByRole("button", { name: "Delete annotation" }).click();
  await page.waitForSelector('#trial-overwrite-agent-1 .annotation[data-verdict="unannotated"]');
  assert.match(await page.textContent("#trial-overwrite-agent-1 .annotation-status"), /Annotation deleted/);
  assert.ok(await region.getByRole("radio", { name: "no verdict" }).evaluate((el) => el === document.activeElement), "focus stays in the form");
  assert.equal(await region.getByRole("button", { name: "Delete annotation" }).isDisabled(), true);
  const dl = page.waitForEvent("download");
  await page.click("#trial-overwrite-agent-1 button.export");
  const after = readFileSync(await (await dl).path(), "utf8");
  const plain = await page.evaluate(() => window.ragagentPage.call("exportOTLP", [{ source: "bundled", trial: "overwrite-agent-1" }]));
  assert.equal(after, plain);
  await showRuns("#runs?verdict=unannotated");
  assert.ok((await rowsOf()).some((r) => r.ref === "bundled:overwrite-agent-1"));
});

let caseRef = ""; // the annotated experiment question ("case:<pack>/<case id>")

test("an experiment's question is annotated below its side-by-side results, and the annotation survives a reload", async () => {
  await page.evaluate(() => { location.hash = "#experiments"; });
  await page.waitForSelector('input[name="exp-config"]');
  for (const box of await page.$$('input[name="exp-config"]')) {
    if ((await box.getAttribute("value")) === "seed") await box.check();
    else await box.uncheck();
  }
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => !document.querySelector("#exp-download").disabled || document.body.dataset.experiment === "failed", null, { timeout: 180000 });
  const first = ".exp-q tbody tr[data-case] .exp-open";
  await page.waitForSelector(first);
  const caseID = await page.getAttribute(".exp-q tbody tr[data-case]", "data-case");
  await page.click(first);
  const region = page.getByRole("region", { name: `Your annotation of question ${caseID}` });
  await region.waitFor();
  caseRef = await region.getAttribute("data-ref");
  assert.match(caseRef, new RegExp(`^case:[^/]+/${caseID}$`));
  // The answering passage: one of the ranked passages, by its source id.
  const ranked = await page.$$eval(".exp-detail:not([hidden]) .exp-hits li", (lis) => lis.map((li) => ({ source_id: li.dataset.source, url: li.dataset.url })));
  assert.ok(ranked.length > 0);
  await region.getByRole("radio", { name: "partly" }).check();
  await region.getByLabel("The passage that answers it is").selectOption(ranked[0].source_id);
  await region.getByRole("button", { name: "Save annotation" }).click();
  await page.waitForFunction(() => /Annotation saved/.test(document.querySelector(".exp-detail:not([hidden]) .annotation-status").textContent));
  await axeClean("Experiments view with a question annotated");
  await overflowFree("Experiments view with a question annotated");
  await reload();
  const kept = await page.evaluate(async (ref) => {
    const a = await import("/common/annotations.js");
    await a.whenLoaded();
    const [kind, ...id] = ref.split(":");
    return a.of(kind, id.join(":"));
  }, caseRef);
  assert.equal(kept.verdict, "partly");
  assert.deepEqual(kept.passage, ranked[0]);
  assert.equal(kept.subject.case_id, caseID);
});

test("every annotation downloads as JSON (ragagent-annotations/1)", async () => {
  await showRuns("#runs");
  const before = Date.now();
  const doc = await download("#runs-annotations");
  assert.equal(doc.format, "ragagent-annotations/1");
  assert.ok(Math.abs(Date.parse(doc.exported_at) - before) < 60000);
  assert.deepEqual(doc.annotations.map((x) => `${x.kind}:${x.id}`), [runRef, caseRef], "oldest first; the deleted one is gone");
  const [a] = doc.annotations;
  assert.equal(a.kind, "run");
  assert.equal(`run:${a.id}`, runRef);
  assert.equal(a.author, "user");
  assert.equal(a.verdict, "wrong");
  assert.equal(a.note, NOTE);
  assert.deepEqual(a.passage, readPassage);
  assert.match(a.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "ISO 8601 UTC");
  assert.equal(a.subject.case_id, "overwrite");
  assert.equal(a.subject.mode, "agent");
  assert.ok(a.subject.question.length > 0);
  assert.match(await page.textContent("#runs-status"), /Downloaded 2 annotations \(/);
  assert.deepEqual(problems, []);
});
