// The trace viewer in Chromium: the published table before the engine is
// ready, then verified; each check's reason; a model call's request and
// reply; the limits as meters, seconds included; links that reload to the
// same trace and that back and forward follow; the OTLP download; a live
// run without a key (nothing sent or recorded) and with a refused key.
// Screenshots go to tests/browser/screenshots/ (not committed) under make screenshots.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root, serveSite, launch, startFake, observe, screenshot, SHOTS } from "./harness.mjs";

const RECORDING = JSON.parse(readFileSync(path.join(root, "recordings", "agent-comparison.json"), "utf8"));
const PUBLISHED = JSON.parse(readFileSync(path.join(root, "site", "published.json"), "utf8"));
const KEY = "test-key-trace-5e1b";

let site, fake, refusing, scripts, browser, page, consoleLines, requests, release;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fake = await startFake();
  scripts = mkdtempSync(path.join(tmpdir(), "ragagent-fake-"));
  const script = path.join(scripts, "forbidden.json");
  writeFileSync(script, JSON.stringify({ format: "ragagent-fake/1", replies: [
    { status: 403, body: JSON.stringify({ error: { code: 403, message: "Method doesn't allow unregistered callers.", status: "PERMISSION_DENIED" } }) },
  ] }));
  refusing = await startFake(["--script", script, "--quiet"]);
  site = await serveSite([fake.url, refusing.url]);
  browser = await launch({ downloads: SHOTS });
  // Hold the engine's download until the published table has been checked.
  const gate = new Promise((resolve) => { release = resolve; });
  await browser.context.route("**/main.wasm", async (route) => { await gate; await route.continue(); });
  page = await browser.context.newPage();
  ({ consoleLines, requests } = observe(page));
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#replay`);
});

after(async () => {
  release?.();
  await browser?.close();
  site?.stop();
  fake?.stop();
  refusing?.stop();
  if (scripts) rmSync(scripts, { recursive: true, force: true });
});

const ready = (p) => p.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 180000 });

test("the published table is shown before the engine is ready, then each row is marked verified", async () => {
  await page.waitForFunction(() => document.body.dataset.published === "shown", null, { timeout: 30000 });
  setTimeout(release, 20000); // whatever happens below, the engine is let through
  assert.notEqual(await page.evaluate(() => document.body.dataset.engine), "ready", "the engine is still held back");
  const rows = await page.$$eval("#trials tbody tr", (trs) => trs.map((tr) => [tr.dataset.id, tr.querySelector(".verified").textContent.trim()]));
  assert.deepEqual(rows, PUBLISHED.trials.map((t) => [t.id, "published"]));
  assert.match(await page.textContent("#trials-caption"), /the published record .*not yet replayed in this browser/);
  // The download's first progress may come after the table (a loaded
  // machine): the line is waited for, not read once.
  await page.waitForFunction(() => /^Waiting for the engine: downloading/.test(document.querySelector("#view-replay .waiting").textContent), null, { timeout: 15000 });
  for (const view of ["trace", "run", "rerank", "recordings", "corpus"]) {
    assert.match(await page.textContent(`#view-${view} .waiting`), /^Waiting for the engine/, `${view} says what it waits for`);
  }
  assert.deepEqual(await page.$$eval("#summary tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent).join(" "))), ["fixed 4 2 2", "agent 4 3 1"]);
  await screenshot(page, "replay-published");
  release();
  await ready(page);
  assert.equal(await page.$$eval("#trials tbody tr[data-verified=yes]", (trs) => trs.length), 16);
  assert.match(await page.textContent("#trials-caption"), /16 of 16 published rows verified by this browser's replay/);
  assert.equal(await page.isVisible("#view-replay .waiting"), false, "the waiting line goes once the engine is ready");
  assert.equal(await page.$$eval("#summary-chart svg.bar", (b) => b.length), 2, "the outcomes per path as stacked bars");
});

test("the replay filters by stop reason and by text", async () => {
  await page.selectOption("#filter-reason", "duplicate_query");
  assert.deepEqual(await page.$$eval("#trials tbody tr:not([hidden])", (trs) => trs.map((tr) => tr.dataset.id)), ["newline-version-agent-1"]);
  await page.selectOption("#filter-reason", "");
  await page.fill("#filter-text", "unsupported agent");
  assert.deepEqual(await page.$$eval("#trials tbody tr:not([hidden])", (trs) => trs.map((tr) => tr.dataset.id)), ["unsupported-agent-1", "unsupported-agent-2"]);
  await page.fill("#filter-text", "");
});

test("each fixture check carries its reason, in the table's status vocabulary", async () => {
  await page.click('#trials tbody tr[data-id="unsupported-agent-1"] a');
  const agent = "#trial-unsupported-agent-1";
  await page.waitForSelector(`#view-trace:not([hidden]) ${agent}`);
  const check = (t, name) => page.textContent(`${t} [data-check="${name}"]`);
  assert.match(await check(agent, "answer"), /Answer check: not met abstention_expected An explicit stop was expected \(the corpus cannot answer this case\), but the run answered\./);
  assert.match(await check(agent, "retrieval"), /Expected sources read: No target no_targets The case has no target source/);
  assert.match(await check(agent, "outcome"), /Answer fixture: fail answer_check_not_met Fail: the run answered \(citation_contract_passed\), but the answer check was not met\./);

  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#trace/newline-version/1`);
  await ready(page);
  const fixed = "#trial-newline-version-fixed-1";
  await page.waitForSelector(fixed);
  assert.match(await check(fixed, "answer"), /not_answered No answer to check: the run ended incomplete \(model_stopped\); the case needs an answer citing path-read-3-13\./);
  assert.match(await check(fixed, "retrieval"), /targets_read Read every target source: path-read-3-13\./);
  // The same word and colour as the table's row.
  const traceBadge = await page.$eval(`${fixed} [data-check="outcome"] .badge`, (b) => [b.textContent, b.className]);
  await page.click('a[data-view="replay"]');
  const rowBadge = await page.$eval('#trials tbody tr[data-id="newline-version-fixed-1"] .badge', (b) => [b.textContent, b.className]);
  assert.deepEqual(traceBadge, ["incomplete", "badge b-incomplete"]);
  assert.deepEqual(rowBadge, traceBadge);
});

test("a model call's exact request and recorded reply, the five meters, tokens, cost and the waterfall note", async () => {
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#trace/serialize-and-save/1`);
  await ready(page);
  const agent = "#trial-serialize-and-save-agent-1";
  await page.waitForSelector(agent);
  const recorded = RECORDING.trials.find((t) => t.id === "serialize-and-save-agent-1");
  await page.click(`${agent} .exchange[data-call="2"] summary`);
  await page.waitForSelector(`${agent} .exchange[data-call="2"] .request pre`);
  const [request, reply] = await page.$$eval(`${agent} .exchange[data-call="2"] :is(.request, .reply) pre`, (ps) => ps.map((p) => p.textContent));
  assert.deepEqual(JSON.parse(request), recorded.exchanges[1].request, "the request as recorded");
  assert.deepEqual(JSON.parse(reply), recorded.exchanges[1].response, "the reply as recorded");
  const summary = await page.textContent(`${agent} .exchange[data-call="2"] .request summary`);
  const exact = JSON.stringify(recorded.exchanges[1].request); // compact, as a check of the byte count's order of magnitude
  assert.match(summary, /Request body, as sent \(\d{1,3}(,\d{3})* bytes\)/);
  assert.ok(Math.abs(Number(summary.match(/([\d,]+) bytes/)[1].replaceAll(",", "")) - exact.length) < exact.length * 0.1);
  assert.equal(await page.isVisible(`${agent} .exchange[data-call="2"] .request button`), true, "a copy button");

  const meters = await page.$$eval(`${agent} .meter`, (ms) => ms.map((m) => [m.dataset.meter, m.querySelector(".meter-value").textContent, m.querySelector("svg").getAttribute("aria-label")]));
  assert.deepEqual(meters.map((m) => m[0]), ["model calls", "searches", "reads", "source bytes", "seconds"]);
  assert.deepEqual(meters[0].slice(1), ["6 / 9", "model calls: 6 / 9"]);
  assert.match(meters[3][1], /^\d{1,3}(,\d{3})* \/ 4,096$/, "source bytes written as the tokens are (no 4096 beside 5,660)");
  assert.deepEqual(meters[4].slice(1), [`${recorded.elapsed_seconds.toFixed(2)} / 180`, `seconds: ${recorded.elapsed_seconds.toFixed(2)} / 180`]);
  const head = await page.textContent(`${agent} .trace-head`);
  assert.match(head, /Model\s*gemini-3\.8-flash/);
  assert.match(head, /Generation config\s*maxOutputTokens 1024, temperature 0, thinkingConfig \{"thinkingLevel":"LOW"\}, responseMimeType application\/json/);
  assert.match(head, /Tokens\s*5,660 tokens \(5,041 prompt, 619 output\)/);
  assert.match(head, /Estimated cost\s*\$0\.0043775 at \$0\.5\/M input, \$3\/M output \(an estimate from list prices\)/);
  assert.match(head, /No per-step times: this recording keeps only the trial's elapsed time/);
  assert.match(await page.textContent(`${agent} .prices`), /gemini-3\.8-flash \(this trace\)/);
  assert.match(await page.textContent(`${agent} .steps > li:first-child summary`), /Call 1\s*search.*admitted.*\d+ tokens · \$0\.\d+ est\./);
  await screenshot(page, "trace-exchange");
});

test("a link to a trace reloads to the same trace, and back and forward follow the choices", async () => {
  await page.goto(`${site.url}/#trace/newline-version/2`);
  await ready(page);
  await page.waitForSelector("#trial-newline-version-agent-2");
  await page.reload();
  await ready(page);
  await page.waitForSelector("#trial-newline-version-agent-2");
  assert.deepEqual(await page.$$eval("#trace-pair .trial h3", (hs) => hs.map((h) => h.textContent)),
    ["newline-version / 2, fixed path", "newline-version / 2, agent path"]);
  assert.equal(await page.inputValue("#trace-case"), "newline-version");
  assert.equal(await page.inputValue("#trace-repeat"), "2");
  await page.selectOption("#trace-case", "overwrite");
  await page.waitForSelector("#trial-overwrite-agent-1");
  assert.equal(await page.evaluate(() => location.hash), "#trace/overwrite/1");
  await page.goBack();
  await page.waitForSelector("#trial-newline-version-agent-2");
  await page.goForward();
  await page.waitForSelector("#trial-overwrite-agent-1");
  await page.click('a[data-view="replay"]');
  await page.goBack();
  await page.waitForSelector("#view-trace:not([hidden]) #trial-overwrite-agent-1");
});

test("a trace downloads as OTLP/JSON with OpenInference spans", async () => {
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#trial-overwrite-agent-1 button.export")]);
  const file = path.join(SHOTS, "overwrite-agent-1.otlp.json");
  await download.saveAs(file);
  assert.equal(download.suggestedFilename(), "ragagent-trace-overwrite-agent-1.otlp.json");
  const spans = JSON.parse(readFileSync(file, "utf8")).resourceSpans[0].scopeSpans[0].spans;
  const kind = (s) => s.attributes.find((a) => a.key === "openinference.span.kind").value.stringValue;
  assert.deepEqual(spans.map(kind), ["AGENT", "LLM", "RETRIEVER", "LLM", "TOOL", "LLM"]);
  assert.ok(spans.every((s) => /^[0-9a-f]{32}$/.test(s.traceId) && /^[0-9a-f]{16}$/.test(s.spanId)));
});

test("a run's question and settings are a link", async () => {
  const q = new URLSearchParams({ question: RECORDING.trials[0].question, version: "3.12", mode: "fixed", policy: "scripted", limits: "model_calls:5,searches:2" });
  await page.goto(`${site.url}/#run?${q}`);
  await ready(page);
  assert.equal(await page.inputValue("#run-question"), RECORDING.trials[0].question);
  assert.equal(await page.inputValue("#run-preset"), "overwrite");
  assert.equal(await page.isChecked('input[name="mode"][value="fixed"]'), true);
  assert.equal(await page.inputValue("#limit-model_calls"), "5");
  assert.equal(await page.inputValue("#limit-searches"), "2");
  await page.fill("#limit-reads", "3");
  assert.match(decodeURIComponent(await page.evaluate(() => location.hash)), /reads:3/, "a change is kept in the address");
  await page.click("#run-start");
  await page.waitForFunction(() => /^Finished/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  assert.match(await page.textContent("#run-output .trace-head"), /Decided by\s*the scripted policy/);
  assert.equal(await page.$$eval("#run-output .waterfall .wf-row", (r) => r.length) > 0, true, "a run made here is timed: a waterfall");
  assert.match(await page.textContent("#run-output .waterfall figcaption"), /measured on the engine's clock/);
});

test("without a key the Send button is disabled, the reason is beside it, and nothing is recorded", async () => {
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(fake.url)}#run`);
  await ready(page);
  await page.selectOption("#run-preset", "overwrite");
  await page.check('input[name="policy"][value="gemini"]');
  assert.equal(await page.isDisabled("#run-start"), true);
  assert.match(await page.textContent("#run-why"), /No key: paste a Gemini API key above/);
  assert.equal(await page.getAttribute("#key-help a", "href"), "https://aistudio.google.com/apikey");
  // The engine refuses too, if asked directly: nothing sent, nothing recorded.
  const before = requests.length;
  const refused = await page.evaluate(async () => {
    const spec = { question: "q?", version: "3.12", mode: "agent", limits: null, policy: "gemini", hasKey: false };
    const report = await window.ragagentPage.call("run", [spec, { post: window.ragagentPage.FETCH }]);
    return { error: report.error, recorded: (await window.ragagentPage.call("recording")).trials };
  });
  assert.deepEqual(refused, { error: "missing_api_key", recorded: 0 });
  assert.equal(requests.slice(before).filter((r) => r.url.startsWith(fake.url)).length, 0);
  await page.fill("#run-key", KEY);
  assert.equal(await page.isEnabled("#run-start"), true);
  assert.equal(await page.textContent("#run-why"), "");
  await page.click("#key-forget");
  assert.equal(await page.inputValue("#run-key"), "");
  assert.equal(await page.isDisabled("#run-start"), true, "a forgotten key disables Send again");
  assert.match(await page.textContent("#key-status"), /forgotten/);
  await screenshot(page, "run-no-key");
});

test("a key the API refuses (HTTP 403) is shown as a key problem, not a fixture failure", async () => {
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(refusing.url)}#run`);
  await ready(page);
  await page.selectOption("#run-preset", "overwrite");
  await page.check('input[name="policy"][value="gemini"]');
  await page.fill("#run-key", KEY);
  await page.click("#run-start");
  await page.waitForSelector("#run-plan:not([hidden])");
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Key refused|Refused)/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  assert.match(await page.textContent("#run-status"), /^Key refused: the API answered HTTP 403; this is a key problem, not a fixture result\./);
  assert.match(await page.textContent("#run-output .key-problem"), /The API refused the key \(HTTP 403\)\..*unregistered callers/);
  assert.equal(await page.$$eval("#run-output .checks", (c) => c.length), 0, "no fixture checks");
  await page.click("#run-output .exchange summary");
  await page.waitForFunction(() => /HTTP 403/.test(document.querySelector("#run-output .exchange .reply")?.textContent || ""));
  await screenshot(page, "run-key-refused");
  assert.ok(!consoleLines.some((l) => l.includes(KEY)), "the key never reached the console");
});

test("no errors reached the console", () => {
  // The browser itself logs the refused key's 403 response; nothing else.
  assert.deepEqual(consoleLines.filter((l) => /^(error|pageerror)/.test(l) && !/Failed to load resource: the server responded with a status of 403/.test(l)), []);
});
