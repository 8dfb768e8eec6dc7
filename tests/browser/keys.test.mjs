// The key in the page, in Debian's Chromium: every reply body, whatever its
// status, is redacted in key.js before the worker or the engine sees it,
// matching the key as sent (trimmed) in raw, JSON-escaped and URL-encoded
// forms; and no file the page offers for download holds the key (the last
// check, dom.download screened by key.js). Live calls go to cmd/fakegemini
// on loopback, scripted to echo the key back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { serveSite, launch, startFake, observe, screenshot, SHOTS } from "./harness.mjs";

const KEY = "AIzaSyPagerel-test_KEY0123456789abcdefg";
const escaped = [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const encoded = [...Buffer.from(KEY)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");

/** stop is a 200 reply whose model text (a stop decision) quotes the key, every character a \u escape in the body. */
function stopEchoing() {
  const decision = JSON.stringify({ action: "stop", assessment: `The request was sent with ${KEY}.`, query: "", source_id: "", answer: "", citations: [] });
  const text = JSON.stringify(decision).replace(KEY, escaped);
  return `{"candidates": [{"content": {"role": "model", "parts": [{"text": ${text}}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 40, "totalTokenCount": 940}}`;
}

let site, fake, echo200, echo403, scripts, browser, consoleLines;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  scripts = mkdtempSync(path.join(tmpdir(), "ragagent-fake-"));
  const script = (name, replies) => {
    const file = path.join(scripts, name);
    writeFileSync(file, JSON.stringify({ format: "ragagent-fake/1", replies }));
    return file;
  };
  fake = await startFake(["--quiet"]);
  echo200 = await startFake(["--quiet", "--script", script("echo200.json", [{ status: 200, body: stopEchoing() }])]);
  echo403 = await startFake(["--quiet", "--script", script("echo403.json", [
    { status: 403, body: JSON.stringify({ error: { code: 403, message: `Requests with key=${encoded} are blocked.`, status: "PERMISSION_DENIED" } }) },
  ])]);
  site = await serveSite([fake.url, echo200.url, echo403.url]);
  browser = await launch({ downloads: SHOTS });
  consoleLines = [];
});

after(async () => {
  await browser?.close();
  for (const p of [site, fake, echo200, echo403]) p?.stop();
  if (scripts) rmSync(scripts, { recursive: true, force: true });
});

/** livePage opens the Run view with the live endpoint on fakeURL. */
async function livePage(fakeURL) {
  const page = await browser.context.newPage();
  observe(page, consoleLines);
  const endpoint = `${fakeURL}/v1beta/models/gemini-3.8-flash:generateContent`;
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(endpoint)}#run`);
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 180000 });
  return page;
}

/** runLive sends one live run with the key typed as given and waits for its end. */
async function runLive(page, typed, question) {
  await page.selectOption("#run-preset", "overwrite");
  if (question) await page.fill("#run-question", question);
  await page.check('input[name="policy"][value="gemini"]');
  await page.fill("#run-key", typed);
  await page.click("#run-start");
  await page.waitForSelector("#run-plan:not([hidden])");
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Key refused|Refused|Stopped|Could not)/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
}

/** shown is everything the page shows or holds in its document, but the key field's value. */
const shown = (page) => page.evaluate(() => document.body.innerText + document.documentElement.outerHTML.replace(/value="[^"]*"/g, ""));

function assertNoKey(text, what) {
  for (const form of [KEY, escaped, encoded, KEY.toLowerCase() === KEY ? null : encoded.toLowerCase()]) {
    if (form) assert.ok(!text.includes(form), `${what} holds the key (${form.slice(0, 12)}…)`);
  }
}

test("a 2xx body echoing the key in \\u escapes, the key pasted with a trailing space, is redacted before the engine sees it", async () => {
  const page = await livePage(echo200.url);
  await runLive(page, `${KEY} `);
  assert.match(await page.textContent("#run-status"), /^Finished/);
  const text = await shown(page);
  assert.ok(text.includes("The request was sent with [redacted key]."), "the model's text reached the page redacted");
  assertNoKey(text, "the page");
  await page.click('a[data-view="recordings"]');
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#rec-download")]);
  const file = path.join(SHOTS, "keys-session.json");
  await download.saveAs(file);
  const saved = readFileSync(file, "utf8");
  assert.ok(saved.includes("[redacted key]"), "the recorded reply is the redacted one");
  assertNoKey(saved, "the recording");
  await page.close();
});

test("a 403 echoing the key URL-encoded is shown as a key problem, redacted", async () => {
  const page = await livePage(echo403.url);
  await runLive(page, KEY);
  assert.match(await page.textContent("#run-status"), /^Key refused: the API answered HTTP 403/);
  const text = await shown(page);
  assert.match(text, /Requests with key=\[redacted key\] are blocked/);
  assertNoKey(text, "the page");
  await page.close();
});

test("no file the page offers holds the key: a key typed into the question withholds the recording and the trace", async () => {
  const page = await livePage(fake.url);
  await runLive(page, KEY, `Is ${KEY} my key? How do I overwrite a file with pathlib?`);
  assert.match(await page.textContent("#run-status"), /^Finished/);
  let downloads = 0;
  page.on("download", () => { downloads++; });

  await page.click("#run-output button.export");
  await page.waitForFunction(() => /Could not export/.test(document.querySelector("#run-output .export + [role=status]")?.textContent || ""));
  assert.match(await page.textContent("#run-output .export + [role=status]"), /Could not export: the file holds your API key .* so it was not saved/);

  await page.click('a[data-view="recordings"]');
  await page.click("#rec-download");
  await page.waitForSelector("#rec-download-message:not([hidden])");
  assert.match(await page.textContent("#rec-download-message"), /^Could not download: the file holds your API key .* so it was not saved\.$/);
  await screenshot(page, "keys-withheld");
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(downloads, 0, "nothing was saved");
  await page.close();
});

test("the key never reached the console, and no errors did", () => {
  assert.ok(!consoleLines.some((l) => l.includes(KEY)));
  // Chromium logs the 403 itself (a network line, without the key).
  const network = /^error: Failed to load resource: the server responded with a status of 403 \(Forbidden\)$/;
  assert.deepEqual(consoleLines.filter((l) => /^(error|pageerror)/.test(l) && !network.test(l)), []);
});
