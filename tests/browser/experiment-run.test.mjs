// An experiment run end to end in Debian's Chromium, through the names
// DESIGN fixes: a question set uploaded through "Question set", "Run
// experiment", and "Download results (JSON)" enabled only once it ended,
// whose bytes equal `ragagent retrieval --corpus ... --cases ... --json`
// run by this test for the same input; the progress it shows and Cancel;
// a malformed set refused with the command line's one-line invalid_cases
// reason.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, openPage, goBinary } from "./harness.mjs";

const SET = path.join(root, "cmd", "ragagent", "testdata", "small-set.tsv");
let site, browser, page, problems, dir, ragagent;

/** cli runs ragagent with args and returns {stdout, stderr, status}. */
function cli(args) {
  try {
    return { stdout: execFileSync(ragagent, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] }), status: 0 };
  } catch (err) {
    return { stdout: err.stdout, stderr: String(err.stderr), status: err.status };
  }
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ragagent-exprun-"));
  ragagent = goBinary("./cmd/ragagent");
  site = await serveSite();
  browser = await launch({ downloads: dir });
  ({ page, problems } = await openPage(browser.context, `${site.url}/#experiments`));
  await page.selectOption("#corpus-choice", { label: "Python 3.11 documentation: library, language reference and tutorial" });
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && document.querySelector("#exp-corpus").textContent.startsWith("Python"), null, { timeout: 180000 });
});

after(async () => {
  await browser?.close();
  site?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the default selection is every offline built-in in --list order, seed first and the baseline", async () => {
  const checked = await page.$$eval('input[name="exp-config"]:checked', (is) => is.map((i) => i.value));
  const listed = JSON.parse(cli(["retrieval", "--list", "--json"]).stdout.toString());
  assert.deepEqual(checked, (listed.configs || listed).map((c) => c.name));
  assert.equal(checked[0], "seed");
  assert.equal(await page.inputValue("#exp-baseline"), "seed");
});

test("a question set uploaded, run and downloaded: the bytes of ragagent retrieval --json for the same input", async () => {
  const save = page.getByRole("button", { name: "Download results (JSON)", exact: true });
  assert.equal(await save.isDisabled(), true, "disabled before any experiment");
  await page.getByLabel("Question set", { exact: true }).setInputFiles(SET);
  await page.waitForFunction(() => /small-set\.tsv/.test(document.querySelector("#exp-cases-now").textContent));
  const statuses = [];
  await page.exposeFunction("__status", (t) => statuses.push(t));
  await page.evaluate(() => new MutationObserver(() => window.__status(document.querySelector("#exp-status").textContent))
    .observe(document.querySelector("#exp-status"), { childList: true, characterData: true, subtree: true }));
  // What the download button was while the experiment ran, seen in the page
  // as the run began: read after the click instead, a quick experiment
  // may already be done.
  await page.evaluate(() => {
    window.__saveWhileRunning = [];
    new MutationObserver(() => {
      if (document.body.dataset.experiment === "running") window.__saveWhileRunning.push(document.querySelector("#exp-download").disabled);
    }).observe(document.body, { attributes: true, attributeFilter: ["data-experiment"] });
  });
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => !document.querySelector("#exp-download").disabled || document.body.dataset.experiment === "failed", null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => document.body.dataset.experiment), "done", await page.textContent("#exp-message"));
  assert.deepEqual(await page.evaluate(() => window.__saveWhileRunning), [true], "disabled while it runs");
  assert.ok(statuses.some((s) => /^Ranking: \d+ of 24 \(/.test(s)), statuses.join(" | "));
  const [download] = await Promise.all([page.waitForEvent("download"), save.click()]);
  const got = readFileSync(await download.path());
  const want = cli(["retrieval", "--corpus", "python-3.11", "--cases", SET, "--json"]);
  assert.equal(want.status, 0, want.stderr);
  assert.equal(got.toString(), want.stdout.toString());
  assert.ok(got.equals(want.stdout), "byte for byte");
  // The drawn result is the downloaded one.
  const result = JSON.parse(got);
  assert.equal(await page.$$eval(".exp-q tbody tr[data-case]", (r) => r.length), result.answerable);
});

/** targets reads the small set's target URLs by case id. */
function targets() {
  const out = new Map();
  for (const line of readFileSync(SET, "utf8").split("\n")) {
    const [id, , urls] = line.split("\t");
    if (!id || id.startsWith("#") || id === "id" || !urls) continue;
    out.set(id, urls === "-" ? [] : urls.split(" "));
  }
  return out;
}

/** matches is a target's rule: with a #fragment that URL only, without one every passage of its page. */
const matches = (target, url) => (target.includes("#") ? url === target : url.split("#")[0] === target);

test("each question opens every configuration's top results side by side, ranked as the experiment ranked them", async () => {
  // The experiment just run (the small set, every built-in), as the view holds it.
  const result = await page.evaluate(async () => (await import("/common/state.js")).state.experiments.result);
  const want = targets();
  for (const [j, c] of result.configs[0].cases.entries()) {
    const row = `.exp-q tbody tr[data-case="${c.id}"]`;
    await page.click(`${row} .exp-open`);
    await page.waitForSelector(`#exp-q-${j} .exp-side`);
    const cols = await page.$$eval(`#exp-q-${j} .exp-col`, (cs) => cs.map((col) => ({
      config: col.dataset.config,
      error: col.querySelector(".error")?.textContent || "",
      hits: [...col.querySelectorAll(".exp-hits li")].map((li) => ({ url: li.dataset.url, first: li.classList.contains("exp-match") })),
    })));
    assert.deepEqual(cols.map((x) => x.config), result.configs.map((x) => x.name));
    cols.forEach((col, i) => {
      assert.equal(col.error, "", `${c.id} under ${col.config}`);
      const rank = result.configs[i].cases[j].rank;
      const first = col.hits.findIndex((hit) => want.get(c.id).some((t) => matches(t, hit.url)));
      assert.equal(first === -1 ? null : first + 1, rank, `${c.id} under ${col.config}: the first matching hit is at the experiment's rank`);
      assert.equal(col.hits.findIndex((hit) => hit.first), first, "and it is the one marked");
    });
    await page.click(`${row} .exp-open`);
  }
});

test("the chosen baseline is the download's a", async () => {
  await page.selectOption("#exp-baseline", "fields");
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  await page.waitForFunction(() => document.body.dataset.experiment !== "running" && !document.querySelector("#exp-download").disabled, null, { timeout: 180000 });
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#exp-download")]);
  const got = readFileSync(await download.path());
  const want = cli(["retrieval", "--corpus", "python-3.11", "--cases", SET, "--config", "fields", "--config", "seed", "--config", "stemmed", "--config", "proximity", "--config", "rm3", "--config", "general", "--json"]);
  assert.ok(got.equals(want.stdout), "the baseline first, then the others in list order");
  assert.ok(JSON.parse(got).comparisons.every((c) => c.a === "fields"));
  await page.selectOption("#exp-baseline", "seed");
});

test("Cancel stops an experiment under way: nothing to download", async () => {
  await page.click("#exp-cases-authored");
  await page.getByRole("button", { name: "Run experiment", exact: true }).click();
  // Cancel is pressed in the page at the first progress line: a click sent
  // from here afterwards could come after the last question was ranked (a
  // whole experiment on the authored cases takes about a second), when
  // Cancel is disabled again.
  await page.waitForFunction(() => {
    const m = /^Ranking: (\d+) of (\d+)/.exec(document.querySelector("#exp-status").textContent);
    const cancel = document.querySelector("#exp-cancel");
    if (!m || cancel.disabled || Number(m[1]) >= Number(m[2])) return false;
    cancel.click();
    return true;
  }, null, { timeout: 60000, polling: "raf" });
  await page.waitForFunction(() => document.body.dataset.experiment !== "running", null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => document.body.dataset.experiment), "cancelled");
  assert.match(await page.textContent("#exp-status"), /^Cancelled/);
  assert.equal(await page.isDisabled("#exp-download"), true);
  assert.equal(await page.isEnabled("#exp-run"), true);
});

test("a malformed question set is refused with the engine's one-line invalid_cases reason", async () => {
  const bad = path.join(dir, "bad.tsv");
  writeFileSync(bad, "a\tWhat is it?\n");
  await page.getByLabel("Question set", { exact: true }).setInputFiles(bad);
  await page.waitForSelector("#exp-message:not([hidden])");
  const line = cli(["retrieval", "--corpus", "python-3.11", "--cases", bad, "--json"]);
  assert.equal(line.status, 1);
  const reasonLine = line.stderr.trim().replace(`ragagent retrieval: ${bad}: `, "");
  assert.equal(await page.textContent("#exp-message"), `bad.tsv: ${reasonLine}`);
  assert.match(await page.textContent("#exp-cases-now"), /authored/);
  assert.deepEqual(problems, []);
});
