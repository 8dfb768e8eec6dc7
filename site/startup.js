// startup.js shows the engine's start-up in the page header (download,
// compile, start, index, ready or failed), records its stages on the
// page's clock, and once the page is in use primes the browser's
// compiled-code cache for the next visit.

import { $, mb } from "./dom.js";
import { call } from "./engine.js";
import { state } from "./state.js";

const WARM_KEY = "ragagent.warmed";

/** showProgress renders one start-up stage from the worker. */
export function showProgress(p) {
  const bar = $("#engine-progress");
  const label = $("#engine-label");
  state.timings[p.stage] ??= Math.round(p.at - performance.timeOrigin); // since navigation
  document.body.dataset.engine = p.stage;
  switch (p.stage) {
    case "download":
      if (p.total) {
        bar.max = p.total;
        bar.value = p.loaded;
        label.textContent = `Downloading the engine: ${mb(p.loaded)} of ${mb(p.total)} MB`;
      } else {
        bar.removeAttribute("value");
        label.textContent = p.loaded ? `Downloading the engine: ${mb(p.loaded)} MB` : "Downloading the engine…";
      }
      break;
    case "compile":
      bar.removeAttribute("value");
      label.textContent = `Downloaded ${mb(p.loaded)} MB; compiling the engine…`;
      break;
    case "start":
      bar.removeAttribute("value");
      label.textContent = "Starting the engine…";
      break;
    case "index":
      label.textContent = "Indexing the passages in SQLite FTS5…";
      break;
    case "ready":
      performance.mark("engine-ready");
      state.engineTag = p.etag || "";
      bar.max = 1;
      bar.value = 1;
      label.textContent = `Engine ready in ${(performance.measure("ready", "shell-start", "engine-ready").duration / 1000).toFixed(2)} s.`;
      $("#engine").classList.add("done");
      break;
    case "failed":
      label.textContent = `The engine could not start: ${p.message}`;
      $("#engine").classList.add("failed");
      break;
  }
}

/** showStartFailure reports a failure after the engine started (setting
 * up the views, the first replay), unless the engine's own failure is shown. */
export function showStartFailure(err) {
  if (document.body.dataset.engine === "failed") return;
  $("#engine-label").textContent = `The page could not start: ${err.message}`;
  $("#engine").classList.add("failed");
  document.body.dataset.engine = "failed";
}

/** primeCodeCache has the worker repeat the start-up work in the background,
 * once per engine build, so the next visit starts from the browser's cache
 * of optimised code (see warmUp in worker.js). */
export async function primeCodeCache() {
  let warmed = null;
  try {
    warmed = localStorage.getItem(WARM_KEY);
  } catch {
    warmed = state.engineTag; // storage blocked: it could not be remembered, so it would cost every visit; skip
  }
  if (!state.engineTag || warmed === state.engineTag || navigator.connection?.saveData) {
    document.body.dataset.warm = "skipped";
    return;
  }
  document.body.dataset.warm = "running";
  try {
    state.timings.warm = await call("warm");
    try { localStorage.setItem(WARM_KEY, state.engineTag); } catch { /* as above */ }
    document.body.dataset.warm = "done";
  } catch {
    document.body.dataset.warm = "failed";
  }
}
