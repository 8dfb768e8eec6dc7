// views/replay.js is the Replay view: the bundled comparison replayed in
// the engine, its trials table with filters by case, path and outcome, and
// the outcomes per path. Each row links to its trace.

import { $, clear, option } from "../dom.js";
import { call } from "../engine.js";
import { state } from "../state.js";
import { trialRow, renderSummary } from "../trace.js";

/** mount binds the view's controls; openTrace(source, caseID, repeat,
 * focusID, navigate) shows a trial in the Trace view. Returns {replay}. */
export function mount({ openTrace }) {
  const status = $("#replay-status");
  const again = $("#replay-run");
  const filters = ["#filter-case", "#filter-path", "#filter-outcome"].map((id) => $(id));

  function applyFilters() {
    const [c, p, o] = filters.map((f) => f.value);
    const rows = $("#trials tbody").rows;
    let shown = 0;
    for (const tr of rows) {
      const ok = (!c || tr.dataset.case === c) && (!p || tr.dataset.mode === p) && (!o || tr.dataset.outcome === o);
      tr.hidden = !ok;
      if (ok) shown++;
    }
    $("#trials-caption").textContent = `Trials (${shown} of ${rows.length} shown)`;
  }

  /** replay replays the bundled recording and shows its trials and summary. */
  async function replay() {
    again.disabled = true;
    status.textContent = "Replaying…";
    const t0 = performance.now();
    try {
      const rep = await call("replay", [{}], (e) => { status.textContent = `Replaying trial ${e.done} of ${e.total}…`; });
      const ms = performance.now() - t0;
      performance.mark("replay-done");
      state.timings.replayMs = ms;
      state.timings.replayEngineMs = rep.elapsed_ms;
      state.bundled = rep;
      const tbody = clear($("#trials tbody"));
      for (const t of rep.trials) tbody.append(trialRow(t, (x) => openTrace("bundled", x.case_id, x.repeat, x.id)));
      renderSummary($("#summary tbody"), rep.summary);
      const cases = [...new Set(rep.trials.map((t) => t.case_id))];
      const sel = filters[0];
      const keep = sel.value;
      sel.replaceChildren(option("", "All cases"), ...cases.map((c) => option(c, c, c === keep)));
      applyFilters();
      status.textContent = `${rep.trials.length} trials replayed in ${Math.round(ms)} ms (engine ${Math.round(rep.elapsed_ms)} ms): ${rep.exchanges_used} of ${rep.exchanges} recorded exchanges used, no API calls.`;
      document.body.dataset.replay = "done";
      if (!state.traceShown) openTrace("bundled", "serialize-and-save", 1, null, false);
    } catch (err) {
      status.textContent = `Replay failed: ${err.message}`;
    } finally {
      again.disabled = false;
    }
  }

  for (const f of filters) f.addEventListener("change", applyFilters);
  again.addEventListener("click", replay);
  return { replay };
}
