// nav.js switches between the views and keeps the address in step with
// what is shown, so every state worth sharing has a link and back and
// forward work: #replay, #trace/<case>/<repeat> (or #trace/loaded/...),
// #run?question=...&version=...&mode=...&policy=...&limits=..., #rerank/<case>,
// #recordings, #corpus, #experiments?corpus=...&cases=...&configs=...&baseline=...&spec=...,
// #runs?q=...&source=...&outcome=...&corpus=...&verdict=..., #compare/<a>/<b> (a trial
// each: bundled:<id>, loaded:<id> or run:<key>)
// It shows the view a link names (aria-current on its
// tab, focus on its heading when the person navigated) and hands the rest
// of the link to the view's route handler.

import { $ } from "./dom.js";

const VIEWS = ["replay", "trace", "run", "rerank", "recordings", "corpus", "experiments", "runs", "compare"];

const listeners = [];
const routes = new Map();
let routed = null;

/** onView calls fn(name) each time a view is shown. */
export function onView(fn) {
  listeners.push(fn);
}

/** onRoute calls fn(segments, query) when a link into view is followed (or
 * the page opens on one, or history returns to one). */
export function onRoute(view, fn) {
  routes.set(view, fn);
}

/** parse reads a hash: its view, its path segments and its query. */
export function parse(hash) {
  const [path, q = ""] = hash.replace(/^#/, "").split("?");
  const [name, ...segments] = path.split("/").map((s) => {
    try { return decodeURIComponent(s); } catch { return s; }
  });
  return { name, segments, query: new URLSearchParams(q) };
}

/** link is the hash of a view with segments and an optional query. */
export function link(name, segments = [], query = null) {
  const path = [name, ...segments.map((s) => encodeURIComponent(String(s)))].join("/");
  const q = query && [...query].length ? `?${query}` : "";
  return `#${path}${q}`;
}

/** showTab scrolls the tab row sideways (on a phone it scrolls) so the
 * shown view's tab is in sight, without moving the page. */
function showTab(a) {
  const row = a.closest(".tabbar");
  if (!row || row.scrollWidth <= row.clientWidth) return;
  const [r, t] = [row.getBoundingClientRect(), a.getBoundingClientRect()];
  if (t.left < r.left) row.scrollLeft += t.left - r.left - 8;
  else if (t.right > r.right) row.scrollLeft += t.right - r.right + 8;
}

/** showView shows one view (an unknown name shows Replay); focus (the
 * person followed a link or a tab) moves focus to its heading and puts
 * the view at the top, its h2 just below the bar, wherever the view
 * before was scrolled to. A route handler may then scroll to a part of
 * the view its link names. */
function showView(name, focus = false) {
  if (!VIEWS.includes(name)) name = "replay";
  for (const v of VIEWS) {
    $(`#view-${v}`).hidden = v !== name;
    const a = document.querySelector(`a[data-view="${v}"]`);
    if (v === name) {
      a.setAttribute("aria-current", "page");
      showTab(a);
    } else a.removeAttribute("aria-current");
  }
  if (focus) {
    window.scrollTo(0, 0);
    $(`#view-${name} h2`).focus?.({ preventScroll: true });
  }
  for (const fn of listeners) fn(name);
}

/** currentView is the view shown. */
export function currentView() {
  return VIEWS.find((v) => !$(`#view-${v}`).hidden) || "replay";
}

/** go shows a view and puts its link in the history (a new entry, so back returns here). */
export function go(name, segments = [], query = null) {
  const to = link(name, segments, query);
  if (location.hash !== to) history.pushState(null, "", to);
  routed = location.hash;
  showView(name);
}

/** replace keeps the address in step with the view's state without a new history entry. */
export function replace(name, segments = [], query = null) {
  const to = link(name, segments, query);
  if (location.hash !== to) history.replaceState(null, "", to);
  routed = location.hash;
}

/** route shows the view the address names and hands it the rest. */
function route(focus) {
  if (routed === location.hash) return;
  routed = location.hash;
  const { name, segments, query } = parse(location.hash);
  showView(name, focus);
  routes.get(name)?.(segments, query);
}

/** start makes the headings focusable and follows the address, now and
 * whenever it changes (a link, back, forward). */
export function start() {
  for (const h2 of document.querySelectorAll(".view h2")) h2.tabIndex = -1;
  // Each tab's link is written whole, the page's address with the view's
  // fragment (following it stays in the page): written "#runs", axe-core
  // takes the tabs, which come before the page's first other link, for
  // skip links, and on a phone a tab scrolled out of the tab row for a
  // hidden skip link whose target is missing. An element with the
  // fragment's id would not do: following the link would move focus to it
  // (or, unfocusable, off the view's h2).
  const here = location.href.split("#")[0];
  for (const a of document.querySelectorAll(".tabs a[data-view]")) a.href = `${here}#${a.dataset.view}`;
  // The sticky bar's height, for the root's scroll padding (style.css):
  // it wraps to more rows on narrower screens.
  const bar = document.querySelector("header.top");
  const measure = () => document.documentElement.style.setProperty("--bar-h", `${Math.ceil(bar.getBoundingClientRect().height)}px`);
  measure();
  if (typeof ResizeObserver === "function") new ResizeObserver(measure).observe(bar);
  window.addEventListener("hashchange", () => route(true));
  window.addEventListener("popstate", () => route(true));
  route(false);
}
