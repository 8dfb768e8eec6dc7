// replay/view.js is the Replay view. It shows the published outcomes of
// the 16 trials at once (site/published.json, labelled as the published
// record), then replays the bundled comparison in the engine and marks each
// row verified when this browser's replay gives the same row. Filters by
// case, path, outcome, stop reason and text, kept in the address
// (#replay?case=...&path=...&outcome=...&reason=...&q=..., replaced as
// they change, so a link, a reload and back and forward restore them); the
// outcomes per path as a table and as stacked bars. Each row links to its
// trace.

import { $, h, clear, option, badge, outcomeBadge, stackRow, breakable } from "../common/dom.js";
import { DASH, plural, count } from "../common/format.js";
import { call, events } from "../engine/client.js";
import { link, onRoute, replace, currentView } from "../common/nav.js";
import { state } from "../common/state.js";
import { trialRow, renderSummary, reasonOf, outcomeOf } from "../trace/trial.js";

/** HEADS are the trials table's column heads (a stacked row's labels). */
/** FILTERS are the filters' names in the address, and their fields. */
const FILTERS = [["case", "#filter-case"], ["path", "#filter-path"], ["outcome", "#filter-outcome"], ["reason", "#filter-reason"], ["q", "#filter-text"]];

const HEADS = ["Case / repeat", "Path", "Expected sources read", "Answer fixture", "Stop reason", "Model calls", "Trace", "Published record"];

/** rowOf is what the table shows of a trial, to compare with the published row. */
function rowOf(t) {
  const read = t.checks ? t.checks.retrieval_targets_read : undefined;
  return { read: read ?? null, outcome: outcomeOf(t), reason: reasonOf(t), calls: t.result ? t.result.usage.model_calls : null };
}

/** publishedRow is a published trial's row, before the engine has replayed it. */
function publishedRow(p) {
  return h("tr", { dataset: { id: p.id, case: p.case_id, mode: p.mode, outcome: p.outcome, reason: p.reason, search: `${p.id} ${p.case_id} ${p.mode} ${p.reason}`.toLowerCase() } },
    h("th", { scope: "row" }, `${p.case_id} / ${p.repeat}`),
    h("td", {}, p.mode),
    h("td", {}, p.retrieval_targets_read === null ? "No target" : String(p.retrieval_targets_read)),
    h("td", {}, outcomeBadge(p.outcome)),
    h("td", {}, h("code", {}, breakable(p.reason))),
    h("td", { class: "num" }, p.model_calls),
    h("td", {}, h("span", { "aria-hidden": "true" }, DASH), h("span", { class: "sr-only" }, "Trace after the replay")),
    h("td", { class: "verified" }, badge("published", "none")));
}

/** mount binds the view's controls; openTrace(source, caseID, repeat,
 * focusID, navigate) shows a trial in the Trace view. Returns {replay, showPublished}. */
export function mount({ openTrace }) {
  const status = $("#replay-status");
  const again = $("#replay-run");
  const caption = $("#trials-caption");
  const [byCase, byPath, byOutcome, byReason, byText] = ["#filter-case", "#filter-path", "#filter-outcome", "#filter-reason", "#filter-text"].map((id) => $(id));
  let label = "";

  function applyFilters() {
    const [c, p, o, r] = [byCase, byPath, byOutcome, byReason].map((f) => f.value || f.dataset.want || "");
    const words = byText.value.toLowerCase().split(/\s+/).filter(Boolean);
    const rows = $("#trials tbody").rows;
    let shown = 0;
    for (const tr of rows) {
      const d = tr.dataset;
      const ok = (!c || d.case === c) && (!p || d.mode === p) && (!o || d.outcome === o) && (!r || d.reason === r) &&
        words.every((w) => d.search.includes(w));
      tr.hidden = !ok;
      if (ok) shown++;
    }
    caption.textContent = `Trials (${shown} of ${rows.length} shown)${label}`;
  }

  /** fillChoices offers the cases and stop reasons the rows have (keeping
   * a link's choice that came before its option). */
  function fillChoices(rows) {
    for (const [sel, key, all] of [[byCase, "case", "All cases"], [byReason, "reason", "All stop reasons"]]) {
      const keep = sel.value || sel.dataset.want || "";
      const values = [...new Set(rows.map((r) => r[key]))];
      sel.replaceChildren(option("", all), ...values.map((v) => option(v, v, v === keep)));
      if (values.includes(keep)) {
        sel.value = keep;
        delete sel.dataset.want;
      }
    }
  }

  /** remember keeps the filters in the address (no new history entry). */
  function remember() {
    if (currentView() !== "replay") return;
    const q = new URLSearchParams();
    for (const [name, id] of FILTERS) {
      const el = $(id);
      const v = el.value || el.dataset.want || "";
      if (v) q.set(name, v);
    }
    replace("replay", [], q);
  }

  /** follow sets the filters a link names (a select's value before its option exists waits in data-want). */
  function follow(query) {
    for (const [name, id] of FILTERS) {
      const el = $(id);
      const v = query.get(name) || "";
      delete el.dataset.want;
      if (el.tagName === "SELECT" && v && ![...el.options].some((o) => o.value === v)) el.dataset.want = v;
      el.value = v;
    }
    applyFilters();
  }

  /** showPublished shows the published record's rows while the engine starts. */
  function showPublished(pub) {
    state.published = pub;
    if (state.bundled) return;
    const tbody = clear($("#trials tbody"));
    for (const p of pub.trials) tbody.append(stackRow(publishedRow(p), HEADS));
    renderSummary($("#summary tbody"), pub.summary, $("#summary-chart"));
    fillChoices(pub.trials.map((p) => ({ case: p.case_id, reason: p.reason })));
    label = " — the published record (recorded with Gemini), not yet replayed in this browser";
    document.body.dataset.published = "shown";
    applyFilters();
  }

  /** verify marks a replayed row against the published one. */
  function verify(tr, t) {
    const p = state.published?.trials.find((x) => x.id === t.id);
    const cell = h("td", { class: "verified" });
    if (!p) cell.append(DASH);
    else {
      const want = { read: p.retrieval_targets_read, outcome: p.outcome, reason: p.reason, calls: p.model_calls };
      const got = rowOf(t);
      const same = Object.keys(want).every((k) => want[k] === got[k]);
      cell.append(same ? badge("verified", "pass") : badge("differs", "fail"));
      cell.title = same ? "This browser's replay gives the published row." : `Published: ${JSON.stringify(want)}`;
      tr.dataset.verified = same ? "yes" : "no";
    }
    tr.append(cell);
  }

  /** replay replays the bundled recording and shows its trials and summary. */
  async function replay() {
    again.disabled = true;
    status.textContent = "Replaying…";
    const t0 = performance.now();
    try {
      const rep = await call("replay", [{ scores: true }, events("trial", "done", "total", "trial")], (e) => { status.textContent = `Replaying trial ${e.done} of ${e.total}…`; });
      const ms = performance.now() - t0;
      performance.mark("replay-done");
      state.timings.replayMs = ms;
      state.timings.replayEngineMs = rep.elapsed_ms;
      state.bundled = rep;
      const tbody = clear($("#trials tbody"));
      for (const t of rep.trials) {
        const tr = trialRow(t, (x) => openTrace("bundled", x.case_id, x.repeat, x.id), link("trace", [t.case_id, t.repeat]));
        verify(tr, t);
        tbody.append(stackRow(tr, HEADS));
      }
      renderSummary($("#summary tbody"), rep.summary, $("#summary-chart"));
      fillChoices(rep.trials.map((t) => ({ case: t.case_id, reason: reasonOf(t) })));
      const verified = rep.trials.filter((t) => tbody.querySelector(`tr[data-id="${CSS.escape(t.id)}"]`)?.dataset.verified === "yes").length;
      label = state.published ? ` — ${verified} of ${state.published.trials.length} published rows verified by this browser's replay` : "";
      applyFilters();
      status.textContent = `${plural(rep.trials.length, "trial")} replayed in ${Math.round(ms)} ms (engine ${Math.round(rep.elapsed_ms)} ms): ${count(rep.exchanges_used)} of ${plural(rep.exchanges, "recorded exchange")} used, no API calls.`;
      document.body.dataset.replay = "done";
    } catch (err) {
      status.textContent = `Replay failed: ${err.message}`;
    } finally {
      again.disabled = false;
    }
  }

  const changed = (e) => {
    delete e.target.dataset.want;
    applyFilters();
    remember();
  };
  for (const f of [byCase, byPath, byOutcome, byReason]) f.addEventListener("change", changed);
  byText.addEventListener("input", changed);
  onRoute("replay", (segs, query) => follow(query));
  again.addEventListener("click", replay);
  return { replay, showPublished };
}
