// harness.mjs starts what the browser tests and the page benchmark need, all
// on loopback: the Go static server over site/ and Debian's Chromium
// (driven by playwright-core; no browser is downloaded).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

export const LAUNCH_FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

let built;

/**
 * goBinary builds a Go command once per process into a temp dir, or, when
 * RAGAGENT_BIN names a folder (make test-browser builds bin/ once for every
 * test file), returns the command built there.
 */
export function goBinary(pkg) {
  const prebuilt = process.env.RAGAGENT_BIN;
  if (prebuilt) {
    const bin = path.join(prebuilt, path.basename(pkg));
    if (!existsSync(bin)) throw new Error(`RAGAGENT_BIN=${prebuilt} holds no ${path.basename(pkg)}: make build, or unset it to build here`);
    return bin;
  }
  if (!built) {
    built = mkdtempSync(path.join(tmpdir(), "ragagent-bin-"));
    process.on("exit", () => rmSync(built, { recursive: true, force: true }));
  }
  const out = path.join(built, path.basename(pkg));
  if (!existsSync(out)) execFileSync("go", ["build", "-o", out, pkg], { cwd: root, stdio: "inherit" });
  return out;
}

/** startProcess runs a command and resolves with the first http://127.0.0.1 URL it prints. */
export function startProcess(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => { child.kill(); reject(new Error(`${bin} did not start: ${err}`)); }, 20000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[0], child, stop: () => child.kill("SIGTERM") });
      }
    });
    child.stderr.on("data", (d) => { err += d; });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`${bin} exited ${code}: ${err}`)); });
  });
}

/** serveSite serves site/ on a free loopback port; extra loopback origins join connect-src. */
export function serveSite(connect = []) {
  const args = ["--addr", "127.0.0.1:0", "--dir", path.join(root, "site")];
  for (const c of connect) args.push("--connect", c);
  return startProcess(goBinary("./cmd/serve"), args);
}

/** launch starts Chromium with a fresh profile; close() removes it.
 * Its pages report Save-Data (navigator.connection.saveData), so the
 * page skips its background warm-up (7 s of both cores per fresh profile
 * and origin, in every test's shadow) unless warmUp is set: the warm-up's
 * own tests set it.
 *
 * optimizing says whether V8 may tier the page's WebAssembly up to its
 * optimising compiler, as in a user's browser. By default it may only when
 * warmUp is set (the warm-up exists to make optimised code that the
 * browser caches, and its tests check that); otherwise the engine runs on
 * V8's baseline compiler alone (--liftoff-only), which runs the same
 * module: a test opens a page for seconds, while the optimising tier
 * compiles main.wasm in the background (three page opens in one profile:
 * 19.1 -> 12.9 s; the whole suite stayed near 400 s, its CPU going to
 * the pages' own work). The benchmarks pass optimizing: true. */
export async function launch({ downloads, warmUp = false, optimizing = warmUp } = {}) {
  const profile = mkdtempSync(path.join(tmpdir(), "ragagent-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: optimizing ? LAUNCH_FLAGS : [...LAUNCH_FLAGS, "--js-flags=--liftoff-only"],
    acceptDownloads: true,
    downloadsPath: downloads,
    viewport: { width: 1280, height: 900 },
  });
  if (!warmUp) {
    await context.addInitScript(() => {
      if (navigator.connection) Object.defineProperty(navigator.connection, "saveData", { get: () => true });
    });
  }
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** openPage navigates and waits for the engine and the bundled replay. */
export async function openPage(context, url) {
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.replay === "done" || document.body.dataset.engine === "failed", null, { timeout: 120000 });
  return { page, problems };
}

/** SHOTS is where the screenshots go (not committed); downloads land there too. */
export const SHOTS = path.join(root, "tests", "browser", "screenshots");

/**
 * screenshot saves a picture of a page or a locator under SHOTS, for
 * people reviewing the page (make screenshots), when RAGAGENT_SCREENSHOTS
 * is set. Nothing asserts on them, and in make test their 0.25 to 1.2 s
 * each (about 35 of them, mostly full-page) were time spent on nothing.
 */
export async function screenshot(target, name, options = { fullPage: true }) {
  if (!process.env.RAGAGENT_SCREENSHOTS) return;
  await target.screenshot({ path: path.join(SHOTS, `${name}.png`), ...options });
}

/** startFake starts cmd/fakegemini on loopback; its request log (never a header's value) collects in fake.log(). */
export async function startFake(args = []) {
  const fake = await startProcess(goBinary("./cmd/fakegemini"), ["--addr", "127.0.0.1:0", ...args]);
  let log = "";
  fake.child.stderr.on("data", (d) => { log += d; });
  fake.log = () => log;
  return fake;
}

/** observe collects a page's console lines, page errors and requests (url, method, headers, body). */
export function observe(page, consoleLines = [], requests = []) {
  page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => consoleLines.push(`pageerror: ${e}`));
  page.on("request", (r) => requests.push({ url: r.url(), method: r.method(), headers: r.headers(), body: r.postData() || "" }));
  return { consoleLines, requests };
}

/** ledgerText reads the spending ledger's text as the page's worker keeps it (IndexedDB), or null. */
export function ledgerText(page) {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open("ragagent-ledger", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("ledger");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction("ledger").objectStore("ledger").get("ledger");
      get.onsuccess = () => { open.result.close(); resolve(get.result ?? null); };
      get.onerror = () => reject(get.error);
    };
  }));
}

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axeClean asserts that axe-core finds no violation in page's element at
 * selector, in the light and the dark scheme (what names it in a failure). */
export async function axeClean(page, selector, what) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(AXE);
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    const found = await page.evaluate(async (sel) => {
      const res = await window.axe.run(document.querySelector(sel), { resultTypes: ["violations"] });
      return res.violations.map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
    }, selector);
    assert.deepEqual(found, [], `${what}, ${scheme}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}
