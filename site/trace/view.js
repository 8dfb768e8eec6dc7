// trace/view.js is the Trace view: the fixed and agent paths of one case
// and repeat side by side, from the bundled comparison or a loaded
// recording, chosen with the case, repeat and source selectors. Each
// choice is a link (#trace/<case>/<repeat>, #trace/loaded/<case>/<repeat>)
// that reloads to the same trace and that back and forward follow; a run
// kept in this browser (common/runs.js: one made in the Run view, or an
// agent experiment's trial) is #trace/run/<key>. A
// trial's request and reply bodies are fetched from the engine when first
// opened, and its trace downloads as OTLP/JSON (with the person's
// annotation of it, which the trace's annotation region edits).

import { $, h, clear, option, download } from "../common/dom.js";
import { call } from "../engine/client.js";
import { go, onRoute } from "../common/nav.js";
import { state } from "../common/state.js";
import { trialView } from "./trial.js";
import * as runs from "../common/runs.js";
import { passagesFor } from "../corpus/picker.js";
import * as annotations from "../common/annotations.js";

function report(source) {
  return source === "loaded" ? state.loaded : state.bundled;
}

/** segments is a trace's link: #trace/<case>/<repeat>, loaded ones prefixed. */
function segments(source, caseID, repeat) {
  return source === "loaded" ? ["loaded", caseID, repeat] : [caseID, repeat];
}

/** trialOptions is what trialView needs to show a replayed trial of source. */
export function replayedOptions(source, rep, t) {
  let exchanges = null;
  return {
    passages: state.passages,
    constants: state.info?.constants,
    model: rep.model,
    config: rep.config,
    source,
    exchanges: () => (exchanges ??= call("exchanges", [{ source, trial: t.id }])),
    // The person's annotation of the trial is an event on its run span.
    exportTrace: async () => download("", await call("exportOTLP", [{ source, trial: t.id, annotations: annotations.forExport(annotations.of("trial", `${source}:${t.id}`)) }]), `ragagent-trace-${t.id}.otlp.json`),
    annotate: { kind: "trial", id: `${source}:${t.id}` },
  };
}

/** mount binds the selectors and the view's links. Returns {open, enableLoaded, ready}. */
export function mount() {
  const sourceSel = $("#trace-source");
  const caseSel = $("#trace-case");
  const repeatSel = $("#trace-repeat");
  const pair = $("#trace-pair");
  let pending = null; // a link followed before the replay it names was ready

  function fillSelectors(source, caseID, repeat) {
    const rep = report(source);
    const cases = [...new Set(rep.trials.map((t) => t.case_id))];
    caseSel.replaceChildren(...cases.map((c) => option(c, c || "(no case)", c === caseID)));
    const repeats = [...new Set(rep.trials.filter((t) => t.case_id === caseID).map((t) => t.repeat))];
    repeatSel.replaceChildren(...repeats.map((r) => option(String(r), String(r), r === repeat)));
    sourceSel.value = source;
  }

  function show(source, caseID, repeat) {
    const rep = report(source);
    state.traceShown = true;
    state.traceAt = { source, caseID, repeat };
    fillSelectors(source, caseID, repeat);
    clear(pair);
    const trials = rep.trials.filter((t) => t.case_id === caseID && t.repeat === repeat);
    trials.sort((a, b) => (a.mode === "fixed" ? -1 : 1) - (b.mode === "fixed" ? -1 : 1));
    for (const t of trials) pair.append(trialView(t, replayedOptions(source, rep, t)));
    if (!trials.length) pair.append(h("p", { role: "status" }, `No trial of case ${caseID || "(none)"}, repeat ${repeat} in this recording.`));
  }

  /** open shows fixed and agent side by side for a case and repeat of a
   * source ("bundled" or "loaded"); navigate switches to the view (a new
   * history entry) and focuses the trial focusID (or the first). */
  function open(source, caseID, repeat, focusID, navigate = true) {
    if (!report(source)) return;
    show(source, caseID, repeat);
    if (navigate) {
      go("trace", segments(source, caseID, repeat));
      // Scrolled to its start (below the sticky tab bar: the root's scroll
      // padding), then focused where it is: focus alone may scroll a tall
      // trial past its heading.
      const target = focusID ? document.getElementById(`trial-${focusID}`) : pair.firstElementChild;
      target?.scrollIntoView({ block: "start" });
      target?.focus({ preventScroll: true });
    }
  }

  /** showKept shows a run kept in this browser by its key (#trace/run/<key>). */
  async function showKept(key) {
    state.traceShown = true;
    clear(pair).append(h("p", { role: "status" }, "Reading the run kept in this browser…"));
    let run = null;
    try {
      run = await runs.get(key);
    } catch { /* IndexedDB refused: said below */ }
    if (!run) {
      clear(pair).append(h("p", { role: "status" }, `This link names run ${key}, which this browser does not keep (a run is kept only in the browser that made it, the newest ${runs.LIMIT}).`));
      return;
    }
    const t = run.report;
    clear(pair).append(trialView(t, {
      passages: passagesFor(t),
      constants: state.info?.constants,
      // A scripted run sent nothing: the engine makes it again to export it;
      // a live one is replayed from its own recording, as the Runs view does.
      exportTrace: run.spec ? async () => download("", await call("exportRunOTLP", [{ corpus: run.corpus.id, recording: run.recording, run: run.spec, recorded_at: run.time, trial: { id: t.id, repeat: t.repeat },
        annotations: annotations.forExport(annotations.of("run", key)) }]), `ragagent-trace-${t.id}.otlp.json`) : null,
      annotate: { kind: "run", id: String(key) },
    }));
    document.body.dataset.traceKept = String(key);
  }

  /** route follows a link: #trace/<case>/<repeat>, #trace/loaded/<case>/<repeat> or #trace/run/<key>. */
  function route(segs) {
    if (!segs.length) return; // the tab: keep what is shown
    if (segs[0] === "run") {
      showKept(segs[1]);
      return;
    }
    const source = segs[0] === "loaded" ? "loaded" : "bundled";
    const [caseID, repeat] = source === "loaded" ? segs.slice(1) : segs;
    const want = { source, caseID, repeat: Number(repeat) || 1 };
    if (!report(source)) {
      pending = want;
      clear(pair).append(h("p", { class: "waiting-trace", role: "status" }, source === "loaded"
        ? "This link names a trial of a loaded recording: load the recording again in the Recordings view."
        : `Waiting for the engine to replay the recording, then showing ${want.caseID} / ${want.repeat}…`));
      return;
    }
    show(want.source, want.caseID, want.repeat);
  }
  onRoute("trace", route);

  /** enableLoaded offers the loaded recording as a source (and follows a link that waited for it). */
  function enableLoaded() {
    sourceSel.querySelector('option[value="loaded"]').disabled = false;
    if (pending?.source === "loaded") {
      show(pending.source, pending.caseID, pending.repeat);
      pending = null;
    }
  }

  /** ready shows the trial a link asked for, or a first one, once the bundled replay is done. */
  function ready() {
    if (pending?.source === "bundled") {
      show(pending.source, pending.caseID, pending.repeat);
      pending = null;
    } else if (!state.traceShown) {
      show("bundled", "serialize-and-save", 1);
    }
  }

  const choose = (source, caseID, repeat) => {
    show(source, caseID, repeat);
    go("trace", segments(source, caseID, repeat));
  };
  sourceSel.addEventListener("change", () => {
    const rep = report(sourceSel.value);
    if (rep && rep.trials.length) choose(sourceSel.value, rep.trials[0].case_id, rep.trials[0].repeat);
  });
  caseSel.addEventListener("change", () => {
    const first = report(sourceSel.value).trials.find((t) => t.case_id === caseSel.value);
    choose(sourceSel.value, first.case_id, first.repeat);
  });
  repeatSel.addEventListener("change", () => choose(sourceSel.value, caseSel.value, Number(repeatSel.value)));
  return { open, enableLoaded, ready };
}
