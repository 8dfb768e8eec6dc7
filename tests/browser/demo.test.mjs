// The README's way to try a live run without a key, followed in Chromium:
// `make demo` runs `serve --demo`, which serves the page and the loopback
// fake Gemini API (already allowed by the page's CSP) and prints the
// address to open; there, choose Gemini, type any key of 16 characters or
// more, show the plan, send.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { readFileSync } from "node:fs";
import { root, goBinary, launch } from "./harness.mjs";

let serve, browser;

/** demo starts `serve --demo` and resolves with the address it says to open. */
function demo() {
  return new Promise((resolve, reject) => {
    const child = spawn(goBinary("./cmd/serve"), ["--addr", "127.0.0.1:0", "--dir", path.join(root, "site"), "--demo"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const timer = setTimeout(() => { child.kill(); reject(new Error(`serve --demo printed no address: ${out}`)); }, 20000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/^demo: open (\S+) /m);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], out });
      }
    });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`serve --demo exited ${code}: ${out}`)); });
  });
}

before(async () => {
  serve = await demo();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  serve?.child.kill("SIGTERM");
});

test("make demo runs serve --demo, as the README says", () => {
  const makefile = readFileSync(path.join(root, "Makefile"), "utf8");
  assert.match(makefile, /^demo: wasm\b[^\n]*\n\t\$\(GO\) run \.\/cmd\/serve --addr \$\(ADDR\) --dir site --demo$/m);
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  assert.match(readme, /make demo/);
});

test("a live run against the demo's fake, with any placeholder key of 16 characters", async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(serve.url);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 180000 });
  assert.equal(await page.evaluate(() => location.hash), "#run");
  await page.selectOption("#run-preset", "overwrite");
  await page.check('input[name="policy"][value="gemini"]');
  await page.fill("#run-key", "demo-placeholder-key");
  await page.click("#run-start");
  await page.waitForSelector("#run-plan:not([hidden])");
  const fakeOrigin = new URL(new URL(serve.url).searchParams.get("endpoint")).origin;
  assert.ok((await page.textContent("#run-plan")).includes(fakeOrigin), "the plan sends to the demo's fake");
  await page.click("#run-start");
  await page.waitForFunction(() => /^(Finished|Key refused|Refused|Could not)/.test(document.querySelector("#run-status").textContent), null, { timeout: 60000 });
  assert.match(await page.textContent("#run-status"), /^Finished: answered, citation_contract_passed\./);
  assert.match(await page.textContent("#run-output [data-check='outcome']"), /Answer fixture: pass/);
  assert.deepEqual(errors, [], "no CSP refusal or other error in the console");
});
