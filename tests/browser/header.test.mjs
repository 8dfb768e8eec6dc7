// The view first (issue 34, item 5): the page's header is one compact bar
// (the name, the corpus picker, the engine status and the view tabs), and a
// deep link or a tab shows the chosen view with its h2 at the top of the
// first screen, just below the bar, on a phone (360 and 390 px), at
// 1280x800 and on a wide screen (1920x1080). The introduction is the
// Replay view's opening and the corpus descriptions are in the Corpus
// view, word for word. Keyboard order (skip link, bar, tabs, main) and the
// landmarks (banner, the "Views" navigation, main) are kept; the page's
// layout shift while it boots on any view's link (engine status, the
// packs' list, a pack opening, the views filling) stays under 0.1; axe-core finds no violation in the bar and the
// views that took its texts, light, dark and at phone width.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { serveSite, launch, screenshot } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const VIEWS = ["replay", "trace", "run", "rerank", "recordings", "corpus", "experiments", "runs", "compare"];

// What each screen allows the bar (measured: see docs/page.md, "The bar").
const SCREENS = [
  { width: 360, height: 780, bar: 120 },
  { width: 390, height: 844, bar: 120 },
  { width: 1280, height: 800, bar: 96 },
  { width: 1920, height: 1080, bar: 64 },
];
// How far below the bar's bottom the h2's top may start (its own margin).
const GAP = 32;

// The introduction and the corpus descriptions, word for word as main had
// them in the header (the sizes line is written by corpus/picker.js).
const LEDE = "A retrieval agent whose next action is chosen by a language model: replay the recorded Gemini trials, read why the model searched again, and run your own questions. Everything runs in this page; nothing is sent anywhere unless you start a live run with your own key or run an experiment on your team's server.";
const NOTE = "The Corpus, Run and Experiments views search the corpus chosen here; Replay, Trace and Rerank replay recordings made on the seed and stay on it.";

let site, browser;

before(async () => {
  site = await serveSite();
  browser = await launch();
  // Every layout shift not caused by input, from the first paint on.
  await browser.context.addInitScript(() => {
    window.__shifts = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.hadRecentInput) continue;
        window.__shifts.push({ value: e.value, at: Math.round(e.startTime), sources: (e.sources || []).map((s) => s.node ? (s.node.id ? `#${s.node.id}` : `${s.node.nodeName}.${s.node.className || ""}`) : "?") });
      }
    }).observe({ type: "layout-shift", buffered: true });
  });
});

after(async () => {
  await browser?.close();
  site?.stop();
});

/** booted waits until the engine, the replay and the corpus are done. */
function booted(page) {
  return page.waitForFunction(() => (document.body.dataset.replay === "done" && ["ready", "failed"].includes(document.body.dataset.corpus)) || document.body.dataset.engine === "failed", null, { timeout: 180000 });
}

/** open loads the page afresh (a deep link typed or followed) at a screen's size. */
async function open(screen, hash) {
  const page = await browser.context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.setViewportSize({ width: screen.width, height: screen.height });
  await page.goto(`${site.url}/${hash}`);
  await booted(page);
  assert.equal(await page.evaluate(() => document.body.dataset.engine), "ready");
  return { page, problems };
}

/** placement is where the bar ends and where the shown view's h2 is. */
function placement(page) {
  return page.evaluate(() => {
    const bar = document.querySelector("header.top").getBoundingClientRect();
    const view = [...document.querySelectorAll(".view")].find((v) => !v.hidden);
    const h2 = view.querySelector("h2").getBoundingClientRect();
    return { view: view.id, barTop: bar.top, barBottom: bar.bottom, barHeight: bar.height, h2Top: h2.top, h2Bottom: h2.bottom, inner: innerHeight };
  });
}

function assertFirst(p, what, screen) {
  assert.ok(p.barHeight <= screen.bar, `${what}: the bar is ${Math.round(p.barHeight)} px tall (at most ${screen.bar})`);
  assert.ok(Math.abs(p.barTop) < 1, `${what}: the bar is at the top (${p.barTop})`);
  assert.ok(p.h2Top >= p.barBottom - 1, `${what}: the h2 (top ${Math.round(p.h2Top)}) is under the bar (bottom ${Math.round(p.barBottom)})`);
  assert.ok(p.h2Top - p.barBottom <= GAP, `${what}: the h2 starts ${Math.round(p.h2Top - p.barBottom)} px below the bar (at most ${GAP})`);
  assert.ok(p.h2Bottom <= p.inner, `${what}: the h2 ends at ${Math.round(p.h2Bottom)}, below the first screen (${p.inner})`);
}

const shown = (page, v) => page.waitForFunction((name) => !document.querySelector(`#view-${name}`).hidden, v);

for (const screen of SCREENS) {
  test(`${screen.width}x${screen.height}: a deep link, a typed address and a tab each show the view's h2 just below the bar`, async () => {
    // A deep link opened afresh.
    const { page, problems } = await open(screen, "#runs");
    assertFirst(await placement(page), `#runs opened at ${screen.width} px`, screen);
    await screenshot(page, `header-runs-${screen.width}`, {});
    for (const view of VIEWS) {
      // From the bottom of the view before, a link followed (the address changes)...
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await page.evaluate((v) => { location.hash = `#${v}`; }, view);
      await shown(page, view);
      await page.waitForTimeout(50);
      assertFirst(await placement(page), `#${view} followed at ${screen.width} px`, screen);
      // ...and its tab clicked from the bottom of another view.
      const other = view === "replay" ? "runs" : "replay";
      await page.click(`a[data-view="${other}"]`);
      await shown(page, other);
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await page.click(`a[data-view="${view}"]`);
      await shown(page, view);
      await page.waitForTimeout(50);
      assertFirst(await placement(page), `the ${view} tab at ${screen.width} px`, screen);
      assert.equal(await page.evaluate(() => `${document.activeElement.closest(".view")?.id} ${document.activeElement.tagName}`), `view-${view} H2`, "focus moves to the view's h2");
      await screenshot(page, `header-${view}-${screen.width}`, {});
    }
    assert.deepEqual(problems, []);
    await page.close();
  });
}

test("deep links opened afresh on a phone: each view's h2 is on the first screen, just below the bar", async () => {
  const screen = SCREENS[1];
  for (const hash of ["#corpus", "#experiments", "#trace/serialize-and-save/1", "#compare"]) {
    const { page, problems } = await open(screen, hash);
    assertFirst(await placement(page), `${hash} opened at ${screen.width} px`, screen);
    assert.deepEqual(problems, []);
    await page.close();
  }
});

test("the bar holds the name, the corpus picker, the engine status and the tabs, nothing else; the texts it held are in their views", async () => {
  const { page, problems } = await open(SCREENS[2], "#replay");
  const bar = await page.evaluate((NOTE) => {
    const top = document.querySelector("header.top");
    return {
      h1: top.querySelector("h1")?.textContent,
      select: top.querySelector("#corpus-choice") ? document.querySelector("label[for='corpus-choice']").textContent : null,
      options: [...document.querySelectorAll("#corpus-choice option")].map((o) => o.textContent),
      engine: Boolean(top.querySelector("#engine[role='status']")),
      tabs: [...top.querySelectorAll("nav[aria-label='Views'] a")].map((a) => a.dataset.view),
      paragraphs: [...top.querySelectorAll("p")].filter((p) => !p.closest("[role='status']")).length,
      lede: Boolean(top.querySelector(".lede")),
      sizes: Boolean(top.querySelector("#corpus-sizes")),
      note: top.textContent.includes(NOTE),
      h2First: document.querySelector("header.top").nextElementSibling?.id,
    };
  }, NOTE);
  const packs = (await (await fetch(`${site.url}/packs/index.json`)).json()).packs.map((m) => m.title);
  assert.equal(bar.h1, "RAG Agent Lab");
  assert.equal(bar.select, "Corpus");
  assert.deepEqual(bar.options.slice(1, -1), packs, "each pack's title is its option's text");
  assert.equal(bar.engine, true, "the engine status is in the bar");
  assert.deepEqual(bar.tabs, VIEWS, "the Views tabs are in the bar");
  assert.equal(bar.paragraphs, 0, "no paragraph of prose in the bar");
  assert.equal(bar.lede || bar.sizes || bar.note, false, "the introduction and the corpus descriptions left the bar");
  assert.equal(bar.h2First, "main", "main follows the bar");
  // The introduction opens the Replay view, right below its h2.
  const replay = await page.evaluate(() => {
    const h2 = document.querySelector("#view-replay h2");
    return { next: h2.nextElementSibling.textContent.trim(), links: [...h2.nextElementSibling.querySelectorAll("a")].length };
  });
  assert.equal(replay.next, LEDE);
  // The corpus descriptions are in the Corpus view, above its search.
  const corpus = await page.evaluate((NOTE) => {
    const view = document.querySelector("#view-corpus");
    const form = view.querySelector("#search-form");
    const before = (sel) => { const el = view.querySelector(sel); return Boolean(el) && Boolean(el.compareDocumentPosition(form) & Node.DOCUMENT_POSITION_FOLLOWING); };
    return { sizes: view.querySelector("#corpus-sizes")?.textContent, note: view.textContent.includes(NOTE), credit: Boolean(view.querySelector("#corpus-credit")), above: before("#corpus-sizes") && before("#corpus-credit") };
  }, NOTE);
  assert.match(corpus.sizes, /^Python 3\.11 documentation: library, language reference and tutorial: 12,352 passages, [\d.]+ MB to download once; .*Your documents: none yet \(add them in the Corpus view\)\.$/, corpus.sizes);
  assert.equal(corpus.note, true, "the note on which views follow the picker");
  assert.equal(corpus.credit, true, "a pack's licence and attribution");
  assert.equal(corpus.above, true, "above the search");
  // A pack's credit appears in the Corpus view when it is chosen.
  await page.selectOption("#corpus-choice", "sqlite-3.40");
  await page.waitForFunction(() => document.body.dataset.corpus === "ready" && /sqlite/i.test(document.querySelector("#corpus-status").textContent), null, { timeout: 120000 });
  assert.equal(await page.evaluate(() => document.querySelector("#corpus-credit").closest("#view-corpus") !== null && !document.querySelector("#corpus-credit").hidden), true);
  // The bar's corpus line, cut to one line on a phone, keeps its whole text in its title.
  const line = await page.$eval("#corpus-status", (p) => [p.textContent, p.title]);
  assert.equal(line[1], line[0]);
  assert.deepEqual(problems, []);
  await page.close();
});

test("keyboard order: skip link, the corpus picker, the nine tabs, then main; landmarks banner, navigation, main in that order", async () => {
  const { page, problems } = await open(SCREENS[1], "#replay");
  // The skip link is the page's first element; the order from it on.
  assert.equal(await page.evaluate(() => document.body.firstElementChild.className), "skip");
  await page.focus("a.skip");
  const order = ["skip"];
  for (let i = 0; i < 11; i++) {
    await page.keyboard.press("Tab");
    order.push(await page.evaluate(() => {
      const a = document.activeElement;
      if (a.closest("main")) return "main";
      return a.dataset.view ? `tab:${a.dataset.view}` : a.id || a.className;
    }));
  }
  assert.deepEqual(order, ["skip", "corpus-choice", ...VIEWS.map((v) => `tab:${v}`), "main"]);
  const landmarks = await page.evaluate(() => {
    const banner = document.querySelector("body > header");
    const nav = document.querySelector("nav[aria-label='Views']");
    const main = document.querySelector("main");
    const follows = (a, b) => Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
    return { banner: Boolean(banner), navAfterBanner: follows(banner.querySelector("h1"), nav), mainAfterNav: follows(nav, main), navOutsideMain: !main.contains(nav) };
  });
  assert.deepEqual(landmarks, { banner: true, navAfterBanner: true, mainAfterNav: true, navOutsideMain: true });
  await page.getByRole("banner").waitFor();
  assert.equal(await page.getByRole("navigation", { name: "Views" }).count(), 1);
  assert.equal(await page.getByRole("main").count(), 1);
  // The skip link goes to main.
  await page.focus("a.skip");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), "main");
  assert.deepEqual(problems, []);
  await page.close();
});

// Every view's deep link on a phone, the Replay view (the default) and the
// two views that fill the most at 1280 px, and a pack opening as it boots.
const BOOTS = [
  ...VIEWS.map((v) => [SCREENS[1], `#${v}`, null]),
  [SCREENS[1], "#replay", "python-3.11"],
  [SCREENS[2], "#replay", null], [SCREENS[2], "#rerank", null], [SCREENS[2], "#experiments", null],
];
for (const [screen, hash, corpus] of BOOTS) {
  test(`layout shift while the page boots on ${hash} stays under 0.1 (${screen.width}x${screen.height}${corpus ? `, ${corpus} remembered` : ""})`, async () => {
    if (corpus) {
      const first = await browser.context.newPage();
      await first.goto(`${site.url}/#replay`);
      await first.evaluate((c) => localStorage.setItem("ragagent.corpus", c), corpus);
      await first.close();
    }
    const { page, problems } = await open(screen, hash);
    if (hash === "#rerank") await page.waitForFunction(() => document.body.dataset.rerank === "done", null, { timeout: 120000 });
    await page.waitForTimeout(500);
    const shifts = await page.evaluate(() => window.__shifts);
    const total = shifts.reduce((s, e) => s + e.value, 0);
    assert.ok(total < 0.1, `layout shift ${total.toFixed(3)}: ${JSON.stringify(shifts)}`);
    if (corpus) assert.equal(await page.inputValue("#corpus-choice"), corpus);
    assert.deepEqual(problems, []);
    await page.evaluate(() => localStorage.removeItem("ragagent.corpus"));
    await page.close();
  });
}

test("axe-core finds no violation in the bar, the Replay view and the Corpus view: light, dark, and at phone width", async () => {
  const { page, problems } = await open(SCREENS[2], "#replay");
  await page.evaluate(AXE);
  for (const [scheme, width] of [["light", 1280], ["dark", 1280], ["light", 360], ["dark", 360]]) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width, height: 800 });
    for (const view of ["replay", "corpus"]) {
      await page.click(`a[data-view="${view}"]`);
      await shown(page, view);
      const found = await page.evaluate(async (v) => {
        const res = await window.axe.run({ include: [["header.top"], [`#view-${v}`]] }, { resultTypes: ["violations"] });
        return res.violations.map((x) => `${x.impact} ${x.id}: ${x.help} — ${x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
      }, view);
      assert.deepEqual(found, [], `${view}, ${scheme}, ${width} px`);
    }
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${scheme} ${width} px: the page is ${scroll} px wide`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});
