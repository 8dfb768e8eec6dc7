// startup.js shows the engine's start-up as it is, in the bar's engine line and
// in every view's waiting line: the bytes downloaded, compiling the engine,
// starting Go, the engine's first use (where V8 compiles most of its code,
// then the passages are indexed), ready, or failed with the bar stopped. It
// records the stages on the page's clock, and once the page is idle (and
// unless the person saves data) announces and runs the warm-up that primes
// the browser's compiled-code cache for the next visit.

import { $ } from "../common/dom.js";
import { mb } from "../common/format.js";
import { call, events } from "./client.js";
import { state } from "../common/state.js";

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
      // Short enough for one line beside the Replay button at 1280 px.
      text = "Compiling the database code on its first use, then indexing the passages…";
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
 * browser's cache of optimised code (see warmUp in worker.js). The worker
 * pauses it whenever the page asks it for something else; its notice
 * (one short line, its place kept from the start so nothing moves) says
 * how far it is and whether it is paused, never a guessed length, and
 * what it took at the end. It is skipped under Save-Data. */
export async function primeCodeCache() {
  const note = $("#warm-status");
  const say = (text, stage) => {
    note.textContent = text;
    if (stage) document.body.dataset.warm = stage;
  };
  let warmed = null;
  try {
    warmed = localStorage.getItem(WARM_KEY);
  } catch {
    warmed = state.engineTag; // storage blocked: it could not be remembered, so it would cost every visit; skip
  }
  if (navigator.connection?.saveData) {
    say("Save-Data is on: warm-up skipped.", "skipped");
    return;
  }
  if (!state.engineTag || warmed === state.engineTag) {
    document.body.dataset.warm = "skipped";
    return;
  }
  say("Warming up for your next visit: 0%", "running");
  const onEvent = (e) => {
    if (e.event !== "warm") return;
    const pct = Math.floor((100 * e.done) / e.total);
    if (e.stage === "paused") say(`Warm-up paused (page busy): ${pct}%`, "paused");
    else say(`Warming up for your next visit: ${pct}%`, "running");
  };
  try {
    state.timings.warm = await call("warmUp", [events("warm")], onEvent);
    try { localStorage.setItem(WARM_KEY, state.engineTag); } catch { /* as above */ }
    say(`Warm-up done: ${(state.timings.warm.elapsed_ms / 1000).toFixed(1)} s of engine time.`, "done");
  } catch {
    say("Warm-up stopped; no harm done.", "failed");
  }
}
