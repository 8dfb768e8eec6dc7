// views/trace.js is the Trace view: the fixed and agent paths of one case
// and repeat side by side, from the bundled comparison or a loaded
// recording, chosen with the case, repeat and source selectors.

import { $, h, clear, option } from "../dom.js";
import { go } from "../nav.js";
import { state } from "../state.js";
import { trialView } from "../trace.js";

function report(source) {
  return source === "loaded" ? state.loaded : state.bundled;
}

/** mount binds the selectors. Returns {open, enableLoaded}. */
export function mount() {
  const sourceSel = $("#trace-source");
  const caseSel = $("#trace-case");
  const repeatSel = $("#trace-repeat");

  function fillSelectors(source, caseID, repeat) {
    const rep = report(source);
    const cases = [...new Set(rep.trials.map((t) => t.case_id))];
    caseSel.replaceChildren(...cases.map((c) => option(c, c || "(no case)", c === caseID)));
    const repeats = [...new Set(rep.trials.filter((t) => t.case_id === caseID).map((t) => t.repeat))];
    repeatSel.replaceChildren(...repeats.map((r) => option(String(r), String(r), r === repeat)));
    sourceSel.value = source;
  }

  /** open shows fixed and agent side by side for a case and repeat of a
   * source ("bundled" or "loaded"); navigate switches to the view and
   * focuses the trial focusID (or the first). */
  function open(source, caseID, repeat, focusID, navigate = true) {
    const rep = report(source);
    if (!rep) return;
    state.traceShown = true;
    fillSelectors(source, caseID, repeat);
    const pair = clear($("#trace-pair"));
    const trials = rep.trials.filter((t) => t.case_id === caseID && t.repeat === repeat);
    trials.sort((a, b) => (a.mode === "fixed" ? -1 : 1) - (b.mode === "fixed" ? -1 : 1));
    for (const t of trials) pair.append(trialView(t, state.passages));
    if (!trials.length) pair.append(h("p", {}, "No trial matches."));
    if (navigate) {
      go("trace");
      const target = focusID ? document.getElementById(`trial-${focusID}`) : pair.firstElementChild;
      target?.focus();
    }
  }

  /** enableLoaded offers the loaded recording as a source. */
  function enableLoaded() {
    sourceSel.querySelector('option[value="loaded"]').disabled = false;
  }

  sourceSel.addEventListener("change", () => {
    const rep = report(sourceSel.value);
    if (rep && rep.trials.length) open(sourceSel.value, rep.trials[0].case_id, rep.trials[0].repeat, null, false);
  });
  caseSel.addEventListener("change", () => {
    const first = report(sourceSel.value).trials.find((t) => t.case_id === caseSel.value);
    open(sourceSel.value, first.case_id, first.repeat, null, false);
  });
  repeatSel.addEventListener("change", () => {
    open(sourceSel.value, caseSel.value, Number(repeatSel.value), null, false);
  });
  return { open, enableLoaded };
}
