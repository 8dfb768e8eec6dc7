// compare/view.js is the Compare view (#compare/<a>/<b>): any two trials
// side by side, step by step: a recorded trial (the bundled comparison's,
// or a loaded recording's) or a run kept in this browser (common/runs.js),
// so repeat 1 faces repeat 2, the fixed path the agent path, a recorded
// trial your own run. Steps are aligned by the model call they came from
// (common/trials.js), and each fact that differs (decision, query,
// candidates, passage read, admission, then the ending: how it ended, the
// answer, its citations, the outcome) is marked, in words as well as
// colour. The pair is the link: #compare/bundled:<trial>/run:<key>.

import { $, h, clear, option, badge, table } from "../common/dom.js";
import { plural } from "../common/format.js";
import { go, replace, onRoute, currentView } from "../common/nav.js";
import { state } from "../common/state.js";
import * as runs from "../common/runs.js";
import { align, FIELDS, factText, endingFacts, outcome } from "../common/trials.js";

/** label is a trial's name in the selectors. */
function label(t) {
  return t.case_id ? `${t.case_id} / ${t.repeat}, ${t.mode} path` : `${t.id}, ${t.mode} path`;
}

/** runLabel is a kept run's name: when, the question, the path and policy. */
export function runLabel(run) {
  const when = new Date(run.time).toLocaleString();
  const q = run.question.length > 60 ? `${run.question.slice(0, 59)}…` : run.question;
  return `${when}: ${q} (${run.mode}, ${run.policy})`;
}

/** mount binds the view. Returns {ready, refresh}. */
export function mount() {
  const selA = $("#cmp-a");
  const selB = $("#cmp-b");
  const status = $("#cmp-status");
  const out = $("#cmp-result");
  let wanted = null; // a link's pair, until the trials it names are known
  let started = false;

  /** trials is every trial the selectors offer, by reference. */
  function trials() {
    const m = new Map();
    for (const t of state.bundled?.trials || []) m.set(`bundled:${t.id}`, { t, name: `Recorded: ${label(t)}` });
    for (const t of state.loaded?.trials || []) m.set(`loaded:${t.id}`, { t, name: `Loaded: ${label(t)}` });
    for (const r of state.runs.kept) m.set(`run:${r.key}`, { t: r.report, name: `Your run ${runLabel(r)}`, run: r });
    return m;
  }

  function fill(sel, want) {
    const groups = [["Recorded comparison", "bundled:"], ["Loaded recording", "loaded:"], ["Your runs", "run:"]];
    const all = trials();
    clear(sel);
    for (const [name, prefix] of groups) {
      const items = [...all].filter(([ref]) => ref.startsWith(prefix));
      if (items.length) sel.append(h("optgroup", { label: name }, items.map(([ref, x]) => option(ref, x.name, ref === want))));
    }
    if (want && all.has(want)) sel.value = want;
  }

  async function refresh() {
    await runs.load();
    const a = selA.value || wanted?.a;
    const b = selB.value || wanted?.b;
    fill(selA, a);
    fill(selB, b);
    if (wanted) {
      const all = trials();
      if (all.has(wanted.a) && all.has(wanted.b)) {
        const w = wanted;
        wanted = null;
        show(w.a, w.b);
      } else if (started) {
        const missing = [wanted.a, wanted.b].filter((r) => !all.has(r));
        status.textContent = `This link names ${missing.join(" and ")}, which this page does not hold${missing.some((r) => r.startsWith("loaded:")) ? " (load the recording again in the Recordings view)" : ""}${missing.some((r) => r.startsWith("run:")) ? " (a run is kept only in the browser that made it)" : ""}.`;
      }
    }
  }

  /** partner is the trial that pairs with a recorded one: the other path, or the next repeat. */
  function partner(ref, kind) {
    const all = trials();
    const x = all.get(ref);
    if (!x || x.run) return null;
    const prefix = ref.slice(0, ref.indexOf(":") + 1);
    const t = x.t;
    for (const [r, y] of all) {
      if (!r.startsWith(prefix) || r === ref) continue;
      const u = y.t;
      if (kind === "path" && u.case_id === t.case_id && u.repeat === t.repeat && u.mode !== t.mode) return r;
      if (kind === "repeat" && u.case_id === t.case_id && u.mode === t.mode && u.repeat !== t.repeat) return r;
    }
    return null;
  }

  function diffCell(same) {
    return h("td", { dataset: { same: String(same) } }, same ? badge("same", "none") : badge("differs", "fail"));
  }

  /** show draws the pair's comparison and keeps it in the address. */
  function show(a, b, navigate = false) {
    const all = trials();
    const x = all.get(a);
    const y = all.get(b);
    if (!x || !y) return;
    selA.value = a;
    selB.value = b;
    if (navigate) go("compare", [a, b]);
    else if (currentView() === "compare") replace("compare", [a, b]);
    const rows = [];
    let differs = 0;
    for (const row of align(x.t, y.t)) {
      const where = row.call ? `Call ${row.call}` : "Fixed retrieval";
      for (const [k, name] of FIELDS) {
        const va = row.a ? row.a[k] : null;
        const vb = row.b ? row.b[k] : null;
        if ((va === null || va === "") && (vb === null || vb === "")) continue;
        const same = factText(va) === factText(vb) && Boolean(row.a) === Boolean(row.b);
        if (!same) differs++;
        rows.push(h("tr", { class: same ? null : "cmp-differs", dataset: { step: row.key, field: k } },
          h("th", { scope: "row" }, where), h("td", {}, name),
          h("td", {}, row.a ? factText(va) || "—" : "(no such step)"), h("td", {}, row.b ? factText(vb) || "—" : "(no such step)"), diffCell(same)));
      }
    }
    const ea = endingFacts(x.t);
    const eb = endingFacts(y.t);
    for (const [k, name] of [["ending", "Ending"], ["answer", "Answer"], ["citations", "Citations"], ["outcome", "Outcome"]]) {
      const same = factText(ea[k]) === factText(eb[k]);
      if (!same) differs++;
      rows.push(h("tr", { class: same ? null : "cmp-differs", dataset: { step: "end", field: k } },
        h("th", { scope: "row" }, "End"), h("td", {}, name), h("td", {}, factText(ea[k]) || "—"), h("td", {}, factText(eb[k]) || "—"), diffCell(same)));
    }
    const steps = (t) => t.result?.steps?.length ?? 0;
    clear(out).append(
      h("dl", { class: "plan-list cmp-pair" },
        h("dt", {}, "A"), h("dd", {}, x.name, " · ", `${plural(steps(x.t), "step")}, outcome ${outcome(x.t)}`),
        h("dt", {}, "B"), h("dd", {}, y.name, " · ", `${plural(steps(y.t), "step")}, outcome ${outcome(y.t)}`)),
      h("p", { class: "help" }, x.t.result && y.t.result && x.t.result.question !== y.t.result.question
        ? "The two trials asked different questions." : `Question: ${x.t.result?.question || y.t.result?.question || "—"}`),
      table("A and B step by step, aligned by model call", ["Step", "Fact", "A", "B", "Difference"], rows, "cmp-table"));
    status.textContent = differs ? `${differs} ${differs === 1 ? "fact differs" : "facts differ"} between A and B.` : "A and B are the same, fact for fact.";
    document.body.dataset.compare = "shown";
  }

  function chosen(navigate) {
    if (selA.value && selB.value) show(selA.value, selB.value, navigate);
  }

  selA.addEventListener("change", () => chosen(true));
  selB.addEventListener("change", () => chosen(true));
  $("#cmp-swap").addEventListener("click", () => show(selB.value, selA.value, true));
  for (const [id, kind] of [["#cmp-other-path", "path"], ["#cmp-other-repeat", "repeat"]]) {
    $(id).addEventListener("click", () => {
      const p = partner(selA.value, kind);
      if (p) show(selA.value, p, true);
      else status.textContent = kind === "path" ? "A has no other path in its recording (a run of your own has one path)." : "A has no other repeat in its recording.";
    });
  }

  onRoute("compare", (segs) => {
    if (segs.length < 2) return;
    wanted = { a: segs[0], b: segs[1] };
    if (started) refresh();
  });
  runs.onChange(() => { if (started) refresh(); });

  return {
    /** ready fills the selectors once the bundled replay is in (and follows a link that waited). */
    async ready() {
      started = true;
      const pair = wanted;
      await refresh();
      if (!pair && !selA.dataset.shown) {
        selA.dataset.shown = "1";
        const a = "bundled:serialize-and-save-fixed-1";
        const b = "bundled:serialize-and-save-agent-1";
        if (trials().has(a) && trials().has(b)) {
          selA.value = a;
          selB.value = b;
          show(a, b);
        }
      }
    },
    refresh,
    /** open compares two trials by reference and shows the view. */
    async open(a, b) {
      await refresh();
      show(a, b, true);
    },
  };
}
