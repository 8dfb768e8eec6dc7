// startup.js shows the engine's start-up as it is, in the page header and
// in every view's waiting line: the bytes downloaded, compiling the engine,
// starting Go, the engine's first use (where V8 compiles most of its code,
// then the passages are indexed), ready, or failed with the bar stopped. It
// records the stages on the page's clock, and once the page is idle (and
// unless the person saves data) announces and runs the warm-up that primes
// the browser's compiled-code cache for the next visit.

import { $ } from "../shared/dom.js";
import { mb } from "../shared/format.js";
import { call } from "./client.js";
import { state } from "../shared/state.js";

const WARM_KEY = "ragagent.warmed";

/** waiting puts the same words in every view's waiting line. */
function waiting(text) {
  for (const el of document.querySelectorAll(".waiting")) el.textContent = text;
}

/** showProgress renders one start-up stage from the worker. */
export function showProgress(p) {
  const bar = $("#engine-progress");
  const label = $("#engine-label");
  state.timings[p.stage] ??= Math.round(p.at - performance.timeOrigin); // since navigation
  document.body.dataset.engine = p.stage;
  let text = "";
  switch (p.stage) {
    case "download":
      if (p.total) {
        bar.max = p.total;
        bar.value = p.loaded;
        text = `Downloading the engine: ${mb(p.loaded)} of ${mb(p.total)} MB`;
      } else {
        bar.removeAttribute("value");
        text = p.loaded ? `Downloading the engine: ${mb(p.loaded)} MB` : "Downloading the engine…";
      }
      break;
    case "compile":
      bar.removeAttribute("value");
      text = `Downloaded ${mb(p.loaded)} MB; compiling the engine (WebAssembly)…`;
      break;
    case "start":
      bar.removeAttribute("value");
      text = "Starting the engine (Go)…";
      break;
    case "index":
      // V8 compiles each function on its first call: this stage is mostly
      // compiling SQLite's code, then indexing the four passages.
      text = "Compiling the engine's database code on its first use, then indexing the passages (SQLite FTS5)…";
      break;
    case "ready":
      performance.mark("engine-ready");
      state.engineTag = p.etag || "";
      bar.max = 1;
      bar.value = 1;
      label.textContent = `Engine ready in ${(performance.measure("ready", "shell-start", "engine-ready").duration / 1000).toFixed(2)} s.`;
      $("#engine").classList.add("done");
      waiting("");
      return;
    case "failed":
      stopBar(bar);
      label.textContent = `The engine could not start: ${p.message}`;
      $("#engine").classList.add("failed");
      waiting(`The engine could not start (${p.message}); see the message at the top of the page.`);
      return;
    default:
      return;
  }
  label.textContent = text;
  waiting(`Waiting for the engine: ${text[0].toLowerCase()}${text.slice(1)}`);
}

/** stopBar freezes the progress bar where it was (no more animation). */
function stopBar(bar) {
  bar.max = bar.max || 1;
  bar.value = bar.getAttribute("value") === null ? 0 : bar.value;
  bar.setAttribute("aria-valuetext", "stopped");
}

/** showStartFailure reports a failure after the engine started (setting
 * up the views, the first replay), unless the engine's own failure is shown. */
export function showStartFailure(err) {
  if (document.body.dataset.engine === "failed") return;
  stopBar($("#engine-progress"));
  $("#engine-label").textContent = `The page could not start: ${err.message}`;
  $("#engine").classList.add("failed");
  document.body.dataset.engine = "failed";
  waiting(`The page could not start: ${err.message}`);
}

/** whenIdle runs fn once the page has been idle for a moment (after the
 * first paint and replay, with nothing else asking for the main thread). */
export function whenIdle(fn) {
  const later = () => (typeof requestIdleCallback === "function" ? requestIdleCallback(() => fn(), { timeout: 10000 }) : setTimeout(fn, 1000));
  setTimeout(later, 1500);
}

/** primeCodeCache has the worker repeat the start-up work in the
 * background, once per engine build, so the next visit starts from the
 * browser's cache of optimised code (see warmUp in worker.js). It is
 * announced while it runs and skipped under Save-Data. */
export async function primeCodeCache() {
  const note = $("#warm-status");
  let warmed = null;
  try {
    warmed = localStorage.getItem(WARM_KEY);
  } catch {
    warmed = state.engineTag; // storage blocked: it could not be remembered, so it would cost every visit; skip
  }
  if (navigator.connection?.saveData) {
    document.body.dataset.warm = "skipped";
    note.textContent = "Save-Data is on: the background warm-up that speeds up the next visit is skipped.";
    note.hidden = false;
    return;
  }
  if (!state.engineTag || warmed === state.engineTag) {
    document.body.dataset.warm = "skipped";
    return;
  }
  document.body.dataset.warm = "running";
  note.textContent = "Warming up for your next visit: the engine repeats its start-up in the background (about 10 s of the worker's time, once per engine build); the page stays usable.";
  note.hidden = false;
  try {
    state.timings.warm = await call("warmUp");
    try { localStorage.setItem(WARM_KEY, state.engineTag); } catch { /* as above */ }
    document.body.dataset.warm = "done";
    note.textContent = `Warm-up done in ${(state.timings.warm.elapsed_ms / 1000).toFixed(1)} s: the next visit starts faster.`;
  } catch {
    document.body.dataset.warm = "failed";
    note.textContent = "The background warm-up stopped; the next visit will start as this one did.";
  }
}
