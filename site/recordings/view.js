// recordings/view.js is the Recordings view: this session's recording of
// live runs (count and download), and a recording file loaded by picker or
// drop (files.js: at most the engine's input cap, read whole or refused),
// replayed in the engine, with a clear message when it is refused,
// malformed or a request differs from it; a refused file leaves the
// recording loaded before in place.

import { $, h, clear, download } from "../common/dom.js";
import { plural, count } from "../common/format.js";
import { call, ready } from "../engine/client.js";
import { FileRefused, readText, dropped } from "../common/files.js";
import { link } from "../common/nav.js";
import { state } from "../common/state.js";
import { trialRow, renderSummary } from "../trace/trial.js";

/** mount binds the view; openTrace shows a trial in the Trace view,
 * enableLoaded offers the loaded recording there. Returns {setCount}. */
export function mount({ openTrace, enableLoaded }) {
  const msg = $("#rec-message");

  /** setCount shows how many live runs this session's recording holds. */
  function setCount(trials) {
    state.recordedRuns = trials;
    $("#rec-count").textContent = trials ? `${plural(trials, "recorded live run")} in this session.` : "No live runs yet.";
    $("#rec-download").disabled = trials === 0;
  }

  function showMessage(first, second, items) {
    clear(msg);
    msg.classList.add("error");
    msg.append(h("p", {}, first));
    if (second) msg.append(h("p", {}, second));
    if (items) msg.append(h("ul", {}, items.map((i) => h("li", {}, i))));
    msg.hidden = false;
  }

  /** kept says what a refused file left in place. */
  const kept = () => (state.loaded ? "The recording loaded before is kept." : null);

  async function load(file) {
    msg.hidden = true;
    let text;
    try {
      if (file instanceof FileRefused) throw file;
      text = await readText(file, (await ready).constants.max_input_bytes);
    } catch (err) {
      return showMessage(`${err.message}.`, kept());
    }
    try {
      const rep = await call("replay", [{ recording: text, scores: true }]);
      const out = clear($("#rec-result"));
      state.loaded = rep;
      enableLoaded();
      const mismatches = rep.trials.filter((t) => t.result && t.result.reason === "replay_request_mismatch");
      const refused = rep.trials.filter((t) => !t.result);
      const note = `${file.name}: ${plural(rep.trials.length, "trial")} replayed, ${count(rep.exchanges_used)} of ${plural(rep.exchanges, "recorded exchange")} used.`;
      if (mismatches.length) {
        showMessage(note, `${plural(mismatches.length, "trial")} stopped on a request that differs from the recording:`,
          mismatches.map((t) => `${t.id}: ${t.result.detail}`));
      } else if (refused.length) {
        showMessage(note, "Some trials were refused before they started:", refused.map((t) => `${t.id}: ${t.error} ${t.error_detail || ""}`));
      } else {
        showMessage(note);
        msg.classList.remove("error");
      }
      const trials = h("table", { class: "trials" },
        h("caption", {}, `Trials of ${file.name}`),
        h("thead", {}, h("tr", {}, ["Case / repeat", "Path", "Expected sources read", "Answer fixture", "Stop reason", "Model calls"].map((c) => h("th", { scope: "col" }, c)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Trace")))),
        h("tbody", {}, rep.trials.map((t) => trialRow(t, (x) => openTrace("loaded", x.case_id, x.repeat, x.id), link("trace", ["loaded", t.case_id, t.repeat])))));
      out.append(h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": `Trials of ${file.name}` }, trials));
      const sum = h("tbody");
      renderSummary(sum, rep.summary);
      out.append(h("div", { class: "scroll" }, h("table", { class: "summary" }, h("caption", {}, "Outcomes per path (graded trials)"),
        h("thead", {}, h("tr", {}, ["Path", "Pass", "Fail", "Incomplete"].map((c) => h("th", { scope: "col" }, c)))), sum)));
    } catch (err) {
      const kind = err.name === "RecordingError" ? "This file is not a usable recording" : "The recording could not be replayed";
      showMessage(`${kind}: ${err.message}`, kept());
    }
  }

  const saved = $("#rec-download-message");
  $("#rec-download").addEventListener("click", async () => {
    saved.hidden = true;
    try {
      download("ragagent-session", (await call("recording")).text);
    } catch (err) {
      saved.textContent = `Could not download: ${err.message}.`;
      saved.hidden = false;
    }
  });
  $("#rec-file").addEventListener("change", () => {
    const f = $("#rec-file").files[0];
    if (f) load(f);
  });
  const drop = $("#rec-drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    load(dropped(e.dataTransfer));
  });
  return { setCount };
}
