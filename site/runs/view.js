// runs/view.js is the Runs view (#runs): the runs made in this page, kept
// in this browser (common/runs.js, the newest LIMIT), listed with their
// time, question, corpus, configuration and outcome, each shown in full,
// deleted, or downloaded as a recording (a live run's own exchanges) or as
// OTLP/JSON (any run, scripted ones too: the engine exports it), and one
// search across them and the recorded trials (the bundled comparison's and
// a loaded recording's) that looks in what happened: questions, answers,
// assessments, queries, candidates, passages read. Each row shows the
// person's annotation of it (common/annotations.js: the verdict as a badge
// and the note's first words), and the list filters by verdict. The
// filters are kept in the address
// (#runs?q=...&source=...&outcome=...&corpus=...&verdict=...). Two rows
// checked open the Compare view on them. Every annotation downloads as
// JSON ("Download annotations (JSON)"). "Add to question set…" makes a
// run's question a case of one of its pack's sets, its target among the
// passages it read (common/addtoset.js).

import { $, h, clear, option, download, outcomeBadge, table } from "../common/dom.js";
import { plural, refusal, stamp } from "../common/format.js";
import { call } from "../engine/client.js";
import { onRoute, replace, currentView } from "../common/nav.js";
import { state } from "../common/state.js";
import * as runs from "../common/runs.js";
import { searchText, matches, outcome } from "../common/trials.js";
import { trialView } from "../trace/trial.js";
import { passagesFor } from "../corpus/picker.js";
import { addButton } from "../common/addtoset.js";

/** readPassages are the passages a trial read, in the order read (each once). */
function readPassages(t) {
  const seen = new Set();
  return (t.result?.observations || []).filter((o) => o.tool === "read" && o.result?.source_id && !seen.has(o.result.source_id) && seen.add(o.result.source_id)).map((o) => o.result);
}
import * as annotations from "../common/annotations.js";
import { verdictBadge } from "../trace/annotate.js";

const FILTERS = ["q", "source", "outcome", "corpus", "verdict"];

/** annotationOf is a row's annotation: a kept run's by its key, a recorded
 * trial's by its source and id (as the Trace view keys it). */
function annotationOf(r) {
  return r.run ? annotations.of("run", r.run.key) : annotations.of("trial", `${r.source}:${r.t.id}`);
}

/** verdictOf is a row's verdict as the filter names it: correct, wrong,
 * partly, none (annotated without one) or unannotated. */
function verdictOf(r) {
  const a = annotationOf(r);
  return a ? a.verdict || "none" : "unannotated";
}

/** mount binds the view; openTrace shows a recorded trial in the Trace
 * view, openCompare(a, b) two trials in the Compare view (which draws
 * them and puts their link in the history). Returns {ready, refresh}. */
export function mount({ openTrace, openCompare }) {
  const form = $("#runs-filters");
  const status = $("#runs-status");
  const list = $("#runs-list");
  const detail = $("#runs-detail");
  const compare = $("#runs-compare");
  let started = false;
  const texts = new WeakMap(); // a report's search text, made once

  const textOf = (t) => {
    if (!texts.has(t)) texts.set(t, searchText(t));
    return texts.get(t);
  };

  function filters() {
    return Object.fromEntries(FILTERS.map((f) => [f, $(`#runs-${f}`).value]));
  }

  function remember() {
    if (currentView() !== "runs") return;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters())) if (v) q.set(k, v);
    replace("runs", [], q);
  }

  /** rows is every run and recorded trial, as {ref, source, time, question, corpus, config, outcome, t, run}. */
  function rows() {
    const out = state.runs.kept.map((r) => ({ ref: `run:${r.key}`, source: "runs", time: r.time, question: r.question, corpus: r.corpus, config: r.config, policy: r.policy, mode: r.mode, t: r.report, run: r }));
    const recorded = (src, rep) => (rep?.trials || []).map((t) => ({ ref: `${src}:${t.id}`, source: src, time: null, question: t.result?.question || "", corpus: t.corpus || { id: "seed", title: "" }, config: t.retrieval?.name || "seed", policy: "recorded", mode: t.mode, t }));
    return [...out, ...recorded("bundled", state.bundled), ...recorded("loaded", state.loaded)];
  }

  function fillCorpora(all) {
    const sel = $("#runs-corpus");
    const want = sel.value || sel.dataset.want || "";
    const ids = [...new Map(all.map((r) => [r.corpus.id, r.corpus.title || r.corpus.id])).entries()];
    clear(sel).append(option("", "Every corpus"), ...ids.map(([id, title]) => option(id, title, id === want)));
    if (ids.some(([id]) => id === want)) sel.value = want;
  }

  function sourceText(r) {
    return r.source === "runs" ? "your run" : r.source === "bundled" ? "recorded comparison" : "loaded recording";
  }

  function render() {
    const all = rows();
    fillCorpora(all);
    const f = filters();
    const shown = all.filter((r) => (!f.source || r.source === f.source) && (!f.outcome || outcome(r.t) === f.outcome)
      && (!f.corpus || r.corpus.id === f.corpus) && (!f.verdict || verdictOf(r) === f.verdict) && matches(textOf(r.t), f.q));
    const heads = ["Compare", "Time", "Question", "Corpus", "Configuration", "Outcome", "Annotation", "Actions"];
    const trs = shown.map((r, i) => {
      const id = `runs-pick-${i}`;
      const name = r.run ? `your run of ${r.time}` : `${r.t.id} (${sourceText(r)})`;
      const actions = [h("button", { type: "button", class: "small", onclick: () => showRun(r) }, "Show", h("span", { class: "sr-only" }, ` ${name}`))];
      actions.push(" ", h("button", { type: "button", class: "small", onclick: () => exportOTLP(r) }, "OTLP", h("span", { class: "sr-only" }, ` of ${name}`)));
      // The run's question as a case: its targets among the passages it read.
      if (r.question) actions.push(" ", addButton(`from ${name}`, () => ({ pack: r.corpus.id, title: r.corpus.title || r.corpus.id, question: r.question, version: r.t.result?.version || "", passages: readPassages(r.t) })));
      if (r.run) {
        actions.push(" ", h("button", { type: "button", class: "small", disabled: !r.run.recording, title: r.run.recording ? null : "a scripted run sends nothing, so it has no recording",
          onclick: () => saveRecording(r) }, "Recording", h("span", { class: "sr-only" }, ` of ${name}`)));
        actions.push(" ", h("button", { type: "button", class: "small stop", onclick: () => removeRun(r) }, "Delete", h("span", { class: "sr-only" }, ` ${name}`)));
      }
      const a = annotationOf(r);
      return h("tr", { dataset: { ref: r.ref, source: r.source, outcome: outcome(r.t), verdict: verdictOf(r) } },
        h("td", {}, h("input", { type: "checkbox", id, class: "runs-pick", value: r.ref, "aria-label": `Compare ${name}` })),
        h("th", { scope: "row" }, r.time ? new Date(r.time).toLocaleString() : sourceText(r)),
        h("td", {}, r.question || "—", h("span", { class: "cell-detail" }, `${r.mode} path · ${r.policy}`)),
        h("td", {}, r.corpus.title || r.corpus.id),
        h("td", {}, h("code", {}, r.config)),
        h("td", {}, outcomeBadge(outcome(r.t))),
        h("td", { class: "runs-annotation" }, a ? [verdictBadge(a.verdict) || h("span", { class: "help" }, "no verdict"),
          a.note ? h("span", { class: "cell-detail" }, annotations.firstWords(a.note)) : null] : h("span", { class: "help" }, "none")),
        h("td", { class: "runs-actions" }, actions));
    });
    const mine = shown.filter((r) => r.source === "runs").length;
    const note = state.runs.error ? `This browser keeps no runs here (${state.runs.error}). ` : "";
    status.textContent = `${note}${plural(shown.length, "trial")} shown (${mine} of your ${plural(state.runs.kept.length, "kept run")}, ${shown.length - mine} recorded).`;
    clear(list).append(shown.length ? table("Your runs and the recorded trials", heads, trs, "runs-table") : h("p", { class: "help" }, "Nothing matches these filters."));
    gateCompare();
    document.body.dataset.runs = "listed";
  }

  function picked() {
    return [...list.querySelectorAll(".runs-pick:checked")].map((i) => i.value);
  }

  function gateCompare() {
    const n = picked().length;
    compare.disabled = n !== 2;
    $("#runs-compare-why").textContent = n === 2 ? "" : `Check two rows to compare them (${n} checked).`;
  }

  function showRun(r) {
    const o = {
      passages: passagesFor(r.t),
      constants: state.info?.constants,
      source: r.run ? null : r.source,
      headingLevel: "h4",
      exportTrace: () => exportOTLP(r),
      annotate: { kind: "run", id: String(r.run?.key) },
    };
    if (!r.run) {
      openTrace(r.source, r.t.case_id, r.t.repeat, r.t.id);
      return;
    }
    clear(detail).append(h("h3", { id: "runs-detail-title", tabindex: -1 }, `Your run of ${new Date(r.time).toLocaleString()}`),
      h("p", { class: "help" }, `${r.corpus.title || r.corpus.id} · configuration ${r.config} · ${r.policy} policy`),
      trialView(r.t, o));
    $("#runs-detail-title").focus();
  }

  async function exportOTLP(r) {
    status.textContent = "Exporting…";
    try {
      // The person's annotation of the row is an event on its run span.
      const notes = annotations.forExport(annotationOf(r));
      const text = r.run
        ? await call("exportRunOTLP", [{ corpus: r.corpus.id, recording: r.run.recording, run: r.run.spec, recorded_at: r.time, trial: { id: r.t.id, repeat: r.t.repeat }, annotations: notes }])
        : await call("exportOTLP", [{ source: r.source, trial: r.t.id, annotations: notes }]);
      download("", text, `ragagent-trace-${r.t.id}.otlp.json`);
      status.textContent = "Downloaded: OpenTelemetry spans with OpenInference attributes.";
    } catch (err) {
      status.textContent = `Could not export: ${refusal(err)}`;
    }
  }

  function saveRecording(r) {
    try {
      download("", r.run.recording, `ragagent-recording-${r.t.id}.json`);
      status.textContent = "Downloaded the run's recording: replay it here or with ragagent replay --recording FILE.";
    } catch (err) {
      status.textContent = `Not downloaded: ${err.message}`;
    }
  }

  async function removeRun(r) {
    try {
      await runs.remove(r.run.key);
      status.textContent = `Deleted your run of ${new Date(r.time).toLocaleString()}.`;
    } catch (err) {
      status.textContent = `Not deleted: ${err.message}`;
    }
  }

  async function refresh() {
    await Promise.all([runs.load(), annotations.whenLoaded()]);
    if (started) render();
  }

  /** saveAnnotations downloads every annotation this browser keeps. */
  function saveAnnotations() {
    const n = state.annotations.byRef.size;
    try {
      download("", annotations.exportText(), `ragagent-annotations-${stamp()}.json`);
      status.textContent = `Downloaded ${plural(n, "annotation")} (${annotations.FORMAT}).`;
    } catch (err) {
      status.textContent = `Not downloaded: ${err.message}`;
    }
  }

  form.addEventListener("submit", (e) => e.preventDefault());
  form.addEventListener("input", () => { if (started) { render(); remember(); } });
  form.addEventListener("change", () => { if (started) { render(); remember(); } });
  list.addEventListener("change", (e) => { if (e.target.classList.contains("runs-pick")) gateCompare(); });
  compare.addEventListener("click", () => {
    const [a, b] = picked();
    // The Compare view draws the pair and pushes its link: a go() alone
    // changed the address and left the pair shown before on screen.
    if (a && b) openCompare(a, b);
  });
  onRoute("runs", (segs, query) => {
    for (const f of FILTERS) {
      const el = $(`#runs-${f}`);
      const v = query.get(f) || "";
      if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === v)) el.dataset.want = v;
      el.value = v;
    }
    if (started) render();
  });
  runs.onChange(refresh);
  annotations.onChange(() => { if (started) render(); });
  $("#runs-annotations").addEventListener("click", saveAnnotations);
  $("#runs-limit").textContent = String(runs.LIMIT);
  // The search box is bounded as the Run view's question is (the engine's constant).
  const bound = () => { if (state.info) $("#runs-q").maxLength = state.info.constants.max_question_chars; };

  return {
    /** ready lists once the recorded trials are replayed. */
    async ready() {
      started = true;
      bound();
      await refresh();
    },
    refresh,
  };
}
