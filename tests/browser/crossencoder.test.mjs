// The cross-encoder in Debian's Chromium, with the tests' tiny model served
// from loopback as the hub serves files (scripts/modelhost.mjs; the page
// takes a model host only on loopback, and cmd/serve adds it to
// connect-src): the block names the model before anything is fetched; its
// worker fetches without credentials, checks every file, scores with
// transformers.js on ONNX Runtime Web under the page's CSP and gives
// PyTorch's logits within 1e-4; the engine accepts them and the recording
// the page offers replays through `ragagent rerank`; a second scoring reads
// the browser's cache; malformed scores are refused by the contract; a
// changed model file is refused with a clear message and nothing is loaded
// or scored. Screenshots go to tests/browser/screenshots/ under make screenshots.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { root, serveSite, launch, observe, goBinary, screenshot, SHOTS } from "./harness.mjs";
import { startModelHost, TINY } from "../../scripts/modelhost.mjs";

const EXPECTED = JSON.parse(readFileSync(path.join(TINY, "expected.json"), "utf8"));
const TOLERANCE = 1e-4;

let host, bad, site, browser, page, consoleLines, requests;

const open = async (url) => {
  const p = await browser.context.newPage();
  const seen = observe(p, [], []);
  await p.goto(`${site.url}/?modelHost=${encodeURIComponent(url)}#rerank`);
  await p.waitForFunction(() => !document.querySelector("#xenc-start").disabled || /not available/.test(document.querySelector("#xenc-status").textContent), null, { timeout: 180000 });
  return { p, ...seen };
};

const scoreIn = async (p) => {
  await p.click("#xenc-start");
  await p.waitForFunction(() => ["done", "refused"].includes(document.body.dataset.xenc), null, { timeout: 180000 });
  return p.evaluate(() => document.body.dataset.xenc);
};

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  host = await startModelHost();
  bad = await startModelHost({ tamper: new Set(["onnx/model.onnx"]) });
  site = await serveSite([host.url, bad.url]);
  browser = await launch({ downloads: SHOTS });
  ({ p: page, consoleLines, requests } = await open(host.url));
});

after(async () => {
  await browser?.close();
  site?.stop();
  await host?.stop();
  await bad?.stop();
});

test("the block names the model, revision, licence and download size before anything is fetched", async () => {
  assert.match(await page.textContent("#xenc-model-id"), /ragagent-test\/tiny-cross-encoder \(a loopback test host's model\)/);
  assert.equal(await page.textContent("#xenc-revision"), "fixture-1");
  assert.equal(await page.textContent("#xenc-license"), "CC0-1.0");
  assert.equal(await page.textContent("#xenc-size"), "0.2 MB in 4 files");
  const rows = await page.$$eval("table.xenc-files tbody tr", (trs) => trs.map((tr) => tr.dataset.path));
  assert.deepEqual(rows, ["config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx"]);
  assert.match(await page.textContent("#xenc-pairs-count"), /44 \(question, passage\) pairs in 16 calls/);
  assert.deepEqual(host.requests, ["/ragagent-model.json"], "only the test host's manifest: no model file before the button");
  assert.ok(!requests.some((r) => r.url.includes("vendor/")), "the runtime is not loaded before the button either");
  await screenshot(page.locator("#xenc"), "crossencoder-before", {});
});

test("on the published model the block names its pins and about 92 MB, and fetches nothing from the hub before the button", async () => {
  const p = await browser.context.newPage();
  const seen = observe(p, [], []);
  await p.goto(`${site.url}/#rerank`);
  await p.waitForFunction(() => !document.querySelector("#xenc-start").disabled || /not available/.test(document.querySelector("#xenc-status").textContent), null, { timeout: 180000 });
  assert.equal(await p.textContent("#xenc-model-id"), "cross-encoder/ms-marco-MiniLM-L6-v2");
  assert.equal(await p.textContent("#xenc-revision"), "233902d25c440f23af6f7d6e94d2946bac0bee0a");
  assert.equal(await p.textContent("#xenc-license"), "Apache-2.0");
  assert.equal(await p.textContent("#xenc-size"), "about 91.6 MB in 4 files");
  const rows = await p.$$eval("table.xenc-files tbody tr", (trs) => trs.map((tr) => tr.textContent.replace(/\s+/g, " ").trim()));
  assert.match(rows[0], /config\.json.*about 1 kB.*pinned sha256 380e02c93f43…/);
  assert.match(rows[1], /tokenizer\.json.*about 0\.7 MB.*pinned sha256 d241a60d5e8f…/);
  assert.match(rows[3], /onnx\/model\.onnx.*about 90\.9 MB.*no pin sha256 recorded as downloaded/);
  await p.check('input[name="xenc-weights"][value="quint8"]');
  await p.waitForFunction(() => /about 23\.7 MB in 4 files/.test(document.querySelector("#xenc-size").textContent));
  assert.ok(!seen.requests.some((r) => !r.url.startsWith(site.url)), "nothing but the site before the button");
  await screenshot(p.locator("#xenc"), "crossencoder-published", {});
  await p.close();
});

test("scoring in the page gives PyTorch's logits within 1e-4, fetched without credentials, under the page's CSP", async () => {
  assert.equal(await scoreIn(page), "done", await page.textContent("#xenc-message"));
  const cells = await page.$$eval("table.xenc-pairs tbody tr", (trs) => trs.map((tr) => ({ call: tr.dataset.call, fresh: Number(tr.querySelector("td.fresh").title) })));
  const want = EXPECTED.calls.flatMap((c) => c.logits.map((l) => ({ call: c.id, l })));
  assert.equal(cells.length, 44);
  let worst = 0;
  cells.forEach((c, i) => {
    assert.equal(c.call, want[i].call);
    worst = Math.max(worst, Math.abs(c.fresh - want[i].l));
    assert.ok(Math.abs(c.fresh - want[i].l) <= TOLERANCE, `${c.call}: ${c.fresh} vs PyTorch ${want[i].l}`);
  });
  console.log(`# largest |logit - PyTorch's| in Chromium: ${worst.toExponential(2)}`);
  assert.match(await page.textContent("#xenc-status"), /Scored 44 pairs in 16 calls in this browser; the engine accepted every score/);
  assert.match(await page.textContent("#xenc-precision"), /This is not the published model \(ragagent-test\/tiny-cross-encoder\): the differences measure another model/);
  assert.match(await page.textContent("#xenc-output"), /transformers\.js 4\.3\.2 on onnxruntime-web [\w.-]+ \(wasm, 1 thread\), weights onnx\/model\.onnx/);

  const model = requests.filter((r) => r.url.startsWith(host.url));
  assert.ok(model.some((r) => r.url.endsWith("/resolve/fixture-1/onnx/model.onnx")), "the resolve URL");
  assert.ok(model.some((r) => r.url.endsWith("/cdn/onnx/model.onnx")), "and its redirect, as the hub's CDN");
  for (const r of model) {
    assert.ok(!r.headers.cookie && !r.headers.authorization && !r.headers.referer, `${r.url}: ${JSON.stringify(r.headers)}`);
  }
  assert.ok(requests.some((r) => r.url === `${site.url}/vendor/transformers.min.js`), "transformers.js from the site");
  assert.ok(requests.some((r) => r.url === `${site.url}/vendor/ort-wasm-simd-threaded.wasm`), "ONNX Runtime Web's WebAssembly from the site");
  assert.ok(!requests.some((r) => !r.url.startsWith(site.url) && !r.url.startsWith(host.url) && !r.url.startsWith("data:") && !r.url.startsWith("blob:")), "no other host");
  assert.deepEqual(consoleLines.filter((l) => /Content Security Policy|Refused to/.test(l)), [], "nothing the CSP refused");
  await screenshot(page.locator("#xenc"), "crossencoder-scored", {});
});

test("the recording the page offers replays through ragagent rerank", async () => {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#xenc-download")]);
  const file = path.join(SHOTS, "crossencoder-recording.json");
  await dl.saveAs(file);
  const rec = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(rec.model, "ragagent-test/tiny-cross-encoder");
  assert.match(rec.config.environment.onnxruntime, /^onnxruntime-web /);
  assert.deepEqual(Object.keys(rec.config.model), ["model", "revision", "license", "files"]);
  const out = JSON.parse(execFileSync(goBinary("./cmd/ragagent"), ["rerank", "--cross-encoder", file, "--json"], { cwd: root, encoding: "utf8" }));
  const shown = await page.$$eval("table.xenc-pairs td.fresh", (tds) => tds.map((td) => Number(td.title)));
  const replayed = [...out.cross_encoder.original_candidate_comparison, ...out.cross_encoder.expanded_cases].flatMap((c) => c.scores_in_candidate_order);
  assert.deepEqual(replayed, shown, "the same logits, bit for bit");
  assert.equal(out.cross_encoder.execution_mode, "recorded-local-cross-encoder-inference");
});

test("a second scoring reads the files from the browser's cache", async () => {
  const before = host.requests.length;
  const reloaded = await open(host.url);
  assert.match(await reloaded.p.textContent("#xenc-size"), /nothing: every file is in this browser's cache/);
  assert.equal(await scoreIn(reloaded.p), "done");
  assert.equal(host.requests.length, before + 1, "only the manifest again");
  assert.match(await reloaded.p.textContent("#xenc-output"), /Files read from this browser's cache/);
  await reloaded.p.close();
});

test("malformed scores are refused by the acceptance contract in the page's engine", async () => {
  const payload = {
    format: "ragagent-cross-encoder-scores/1",
    model: { model: "x/y", revision: "r", license: "MIT", files: { "onnx/model.onnx": "0".repeat(64) } },
    environment: { runtime: "test" },
    calls: EXPECTED.calls.map((c) => ({ id: c.id, scores: c.logits, inference_seconds: 0.001 })),
  };
  const refusal = (edit) => page.evaluate(async ([p, e]) => {
    const bad = structuredClone(p);
    if (e === "nan") bad.calls[0].scores[1] = NaN;
    if (e === "count") bad.calls[3].scores.pop();
    try {
      await window.ragagentPage.call("acceptCrossEncoder", [bad]);
      return null;
    } catch (err) {
      return { code: err.code, message: err.message };
    }
  }, [payload, edit]);
  const nan = await refusal("nan");
  assert.equal(nan.code, "invalid_cross_encoder_scores");
  assert.match(nan.message, /original case utf8-write: invalid_cross_encoder_scores: score 2 is null, not a finite number/);
  const count = await refusal("count");
  assert.equal(count.code, "invalid_cross_encoder_scores");
  assert.match(count.message, /original case backup-schedule: .*2 scores for 3 candidates/);
  assert.equal(await refusal("none"), null, "the same payload unchanged is accepted");
});

test("a changed model file is refused with a clear message, and nothing is loaded or scored", async () => {
  const { p, requests: seen } = await open(bad.url);
  assert.equal(await scoreIn(p), "refused");
  const pin = JSON.parse(readFileSync(path.join(TINY, "ragagent-model.json"), "utf8")).weights[0].sha256;
  const message = await p.textContent("#xenc-message");
  assert.match(message, new RegExp(`^Refused: onnx/model\\.onnx was refused: its sha256 is [0-9a-f]{64}, the manifest pins ${pin}\\. Nothing was loaded or scored\\.$`));
  assert.equal(await p.getAttribute("#xenc-message", "role"), "alert");
  assert.equal(await p.textContent("#xenc-status"), "Nothing was scored.");
  assert.equal(await p.$$eval("#xenc-output > *", (els) => els.length), 0, "no scores, no comparison, no recording");
  assert.ok(!seen.some((r) => r.url.includes("vendor/transformers")), "transformers.js was never loaded");
  await screenshot(p.locator("#xenc"), "crossencoder-refused", {});
  await p.close();
});
