// The corpus picker end to end in Debian's Chromium, one page throughout:
// the Python pack chosen (downloaded with its bytes counted, its sha256
// checked, kept in Cache Storage, its licence shown), searched with marked
// snippets, a passage opened with its docs link, a scripted question and a
// Gemini one (cmd/fakegemini on loopback) run over it; then two Markdown
// files dropped, found in a search after a
// reload, unreadable picked files named one by one with nothing kept lost,
// and the documents removed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { serveSite, launch, observe, startFake, screenshot, SHOTS } from "./harness.mjs";

let site, fake, browser, page, consoleLines, requests;

const settled = () => page.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.corpus), null, { timeout: 180000 });

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fake = await startFake();
  site = await serveSite([fake.url]);
  browser = await launch();
  page = await browser.context.newPage();
  ({ consoleLines, requests } = observe(page));
  const endpoint = `${fake.url}/v1beta/models/gemini-3.8-flash:generateContent`;
  await page.goto(`${site.url}/?endpoint=${encodeURIComponent(endpoint)}#corpus`);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 180000 });
  await settled();
});

after(async () => {
  await browser?.close();
  site?.stop();
  fake?.stop();
});

const shot = (name) => screenshot(page, name);

test("the seed is the corpus until another is chosen", async () => {
  assert.equal(await page.inputValue("#corpus-choice"), "seed");
  assert.equal(await page.isVisible("#passages"), true, "the seed's passages are listed");
  const options = await page.$$eval("#corpus-choice option", (os) => os.map((o) => [o.value, o.disabled]));
  assert.deepEqual(options.map((o) => o[0]), ["seed", "python-3.11", "sqlite-3.40", "documents"]);
  assert.equal(options[3][1], true, "no documents yet");
});

test("picking the Python pack downloads it once, checks it and keeps it", async () => {
  const requests = [];
  page.on("request", (r) => requests.push(new URL(r.url()).pathname));
  await page.selectOption("#corpus-choice", "python-3.11");
  await settled();
  assert.equal(await page.evaluate(() => document.body.dataset.corpus), "ready", await page.textContent("#corpus-status"));
  assert.match(await page.textContent("#corpus-status"), /12,352 passages, ready in \d+ ms, downloaded and kept for the next visit/);
  assert.ok(requests.includes("/packs/python-3.11/passages.sqlite.gz"), "fetched when chosen");
  const credit = await page.textContent("#corpus-credit");
  assert.match(credit, /Copyright © 2001-2023 Python Software Foundation/);
  assert.match(credit, /PSF License Agreement/);
  const cached = await page.evaluate(async () => (await (await caches.open("ragagent-packs-1")).keys()).map((r) => new URL(r.url).pathname));
  assert.deepEqual(cached, ["/packs/python-3.11/passages.sqlite.gz"]);
  assert.equal(await page.isHidden("#passages-block"), true, "a pack's 12,352 passages are not listed");
});

test("the Corpus view searches the Python pack with marked snippets and opens a passage", async () => {
  await page.fill("#search-query", "write text to a file");
  await page.click("#search-run");
  await page.waitForSelector("#search-result table");
  const first = await page.textContent("#search-result tbody tr:first-child th");
  assert.equal(first.trim(), "library.pathlib.pathlib.path.write_text");
  assert.match(await page.textContent("#search-result > p"), /^Ranked by stemmed-en-t0.5-a0-prox \(the pack's retrieval configuration\)/, "the pack's default configuration is named");
  assert.equal((await page.$$eval("#search-result thead th", (ths) => ths.map((th) => th.textContent)))[3], "Score");
  const marks = await page.$$eval("#search-result tbody tr:first-child mark", (ms) => ms.map((m) => m.textContent));
  assert.ok(marks.includes("write") && marks.includes("text"), marks.join(","));
  assert.equal(await page.$$eval("#search-result", (els) => els[0].textContent.includes("⟦")), false, "the marks became <mark>");
  assert.equal((await page.textContent("#search-result tbody tr:first-child .hit-url")).trim(),
    "https://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text", "a hit shows the URL a target names");
  await page.fill("#search-query", "re.IGNORECASE case-insensitive matching");
  await page.click("#search-run");
  await page.waitForFunction(() => document.querySelector("#search-result tbody tr:first-child th")?.textContent.trim() === "library.re.re.i");
  assert.match(await page.textContent("#search-result tbody tr:first-child .hit-url"), /re\.html#re\.I · also #re\.IGNORECASE$/, "and the other anchors its passage answers to");
  await page.fill("#search-query", "write text to a file");
  await page.click("#search-run");
  await page.waitForFunction(() => document.querySelector("#search-result tbody tr:first-child th")?.textContent.trim() === "library.pathlib.pathlib.path.write_text");
  await page.click("#search-result tbody tr:first-child button");
  await page.waitForSelector("#passage-title");
  assert.equal(await page.getAttribute("#passage-view a", "href"), "https://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text");
  assert.match(await page.textContent("#passage-view"), /An existing file of the same name is overwritten/);
  await shot("corpus-python");
});

test("a scripted question runs over the Python pack", async () => {
  await page.click('a[data-view="run"]');
  assert.match(await page.textContent("#run-corpus"), /Python 3\.11 documentation/);
  assert.equal(await page.inputValue("#run-version"), "3.11");
  await page.selectOption("#run-preset", "tomllib");
  await page.check('input[name="policy"][value="scripted"]');
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Refused|Could not)/.test(document.querySelector("#run-status").textContent), null, { timeout: 120000 });
  assert.match(await page.textContent("#run-status"), /Finished: answered, citation_contract_passed/);
  const cited = await page.$$eval("#run-output .passage a", (as) => as.map((a) => a.href));
  assert.ok(cited.some((u) => u.startsWith("https://docs.python.org/3.11/library/tomllib.html")), cited.join(" "));
  await shot("run-python");
});

test("a Gemini run goes over the Python pack, its plan naming the pack", async () => {
  await page.check('input[name="policy"][value="gemini"]');
  await page.fill("#run-key", "test-key-corpus-0123");
  await page.click("#run-start");
  await page.waitForSelector("#run-plan:not([hidden])");
  assert.match(await page.textContent("#run-plan"), /python-3\.11 \(3 candidates per search\)/);
  const before = requests.length;
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Refused|Could not)/.test(document.querySelector("#run-status").textContent), null, { timeout: 120000 });
  assert.match(await page.textContent("#run-status"), /^Finished/);
  const bodies = requests.slice(before).filter((r) => r.url.startsWith(fake.url) && r.body).map((r) => r.body);
  assert.ok(bodies.length >= 2, "the model was called through the page");
  assert.ok(bodies.some((b) => b.includes("library.tomllib")), "the model saw the Python pack's candidates");
  await page.check('input[name="policy"][value="scripted"]');
});

const NOTES = {
  "kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.\n",
  "garden.md": "# Garden\n\nWater the tomatoes at dawn, never at noon.\n",
};

test("two dropped Markdown files are indexed, kept, and found after a reload", async () => {
  await page.click('a[data-view="corpus"]');
  const dt = await page.evaluateHandle((notes) => {
    const d = new DataTransfer();
    for (const [name, text] of Object.entries(notes)) d.items.add(new File([text], name, { type: "text/markdown" }));
    return d;
  }, NOTES);
  await page.dispatchEvent("#docs-drop", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.docs), null, { timeout: 120000 });
  assert.match(await page.textContent("#docs-status"), /Indexed 2 passages from 2 files\. Kept in this browser only\./);
  await settled();
  assert.equal(await page.inputValue("#corpus-choice"), "documents");

  await page.reload();
  await page.waitForFunction(() => document.body.dataset.replay === "done", null, { timeout: 180000 });
  await settled();
  assert.equal(await page.inputValue("#corpus-choice"), "documents", "the choice and the documents survive the reload");
  await page.fill("#search-query", "how to descale a kettle");
  await page.click("#search-run");
  await page.waitForSelector("#search-result table");
  assert.equal((await page.textContent("#search-result tbody tr:first-child th")).trim(), "kettle.kettle");
  await page.click("#search-result tbody tr:first-child button");
  await page.waitForSelector("#passage-title");
  assert.match(await page.textContent("#passage-view"), /your file kettle\.md#kettle/);
  assert.equal(await page.$("#passage-view a"), null, "a document of your own has no web link");
  await shot("corpus-documents");
});

test("unreadable picked files are named one by one and nothing kept is lost", async () => {
  await page.setInputFiles("#docs-files", [
    { name: "photo.png", mimeType: "image/png", buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1]) },
    { name: "old.txt", mimeType: "text/plain", buffer: Buffer.from([0x63, 0x61, 0x66, 0xe9]) },
  ]);
  await page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.docs) && document.querySelectorAll("#docs-messages li").length, null, { timeout: 120000 });
  const messages = await page.$$eval("#docs-messages li", (ls) => ls.map((l) => l.textContent));
  assert.deepEqual(messages.sort(), [
    "old.txt: left out, not UTF-8 text.",
    "photo.png: left out, not HTML, Markdown, reStructuredText, plain text or JSON Lines passages (by its extension).",
  ]);
  const kept = await page.$$eval("#docs-kept li code", (cs) => cs.map((c) => c.textContent).sort());
  assert.deepEqual(kept, ["garden.md", "kettle.md"]);
  await page.fill("#search-query", "tomatoes");
  await page.click("#search-run");
  await page.waitForSelector("#search-result table");
  assert.equal((await page.textContent("#search-result tbody tr:first-child th")).trim(), "garden.garden");
});

test("Remove forgets the documents and returns to the seed", async () => {
  await page.click("#docs-remove");
  await page.waitForFunction(() => /removed/.test(document.querySelector("#docs-status").textContent));
  await settled();
  assert.equal(await page.inputValue("#corpus-choice"), "seed");
  assert.equal(await page.$eval('#corpus-choice option[value="documents"]', (o) => o.disabled), true);
  const stored = await page.evaluate(() => new Promise((resolve) => {
    const req = indexedDB.open("ragagent-documents");
    req.onsuccess = () => {
      const tx = req.result.transaction("pack", "readonly");
      const get = tx.objectStore("pack").get("documents");
      get.onsuccess = () => resolve(get.result ?? null);
    };
  }));
  assert.equal(stored, null);
  assert.deepEqual(consoleLines.filter((l) => l.startsWith("pageerror") || l.startsWith("error")), []);
});
