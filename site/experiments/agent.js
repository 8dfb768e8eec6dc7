// experiments/agent.js draws an agent experiment: what `ragagent eval
// --json` prints for a question set (the engine's eval, the scripted
// policy on both paths, offline): each path's rates with their 95%
// intervals, and the agent path against the fixed one on the same cases
// (difference, paired interval, p-value, and the exact McNemar p-value of
// the pairs that differ), then each question's row on both paths (the
// outcome, whether a target was read, the stop reason, and a link to the
// trial's trace when it is kept in Runs). Every number is the engine's;
// the intervals are inline SVG hidden from screen readers beside the same
// numbers as text.

import { h, svg, stackRow, outcomeBadge } from "../common/dom.js";
import { DASH, plural, count } from "../common/format.js";
import { fixed, pValue } from "./results.js";

/** bar is a share and its interval on [lo, hi] as inline SVG (aria-hidden). */
function bar(value, ci, lo, hi, zero = null) {
  const W = 120;
  const x = (v) => Math.max(0, Math.min(W, ((v - lo) / (hi - lo)) * W));
  const out = svg("svg", { class: "ci", viewBox: `0 0 ${W} 16`, preserveAspectRatio: "none", "aria-hidden": "true", focusable: "false" },
    svg("rect", { class: "ci-track", x: 0, y: 7, width: W, height: 2 }));
  if (zero !== null) out.append(svg("line", { class: "ci-zero", x1: x(zero), x2: x(zero), y1: 0, y2: 16 }));
  if (value === null || !ci) return out;
  out.append(svg("line", { class: "ci-range", x1: x(ci[0]), x2: x(ci[1]), y1: 8, y2: 8 }),
    svg("line", { class: "ci-cap", x1: x(ci[0]), x2: x(ci[0]), y1: 3, y2: 13 }),
    svg("line", { class: "ci-cap", x1: x(ci[1]), x2: x(ci[1]), y1: 3, y2: 13 }),
    svg("circle", { class: "ci-point", cx: x(value), cy: 8, r: 3.5 }));
  return out;
}

const signed = (x) => (x === null || x === undefined ? DASH : `${x > 0 ? "+" : x < 0 ? "−" : "±"}${fixed(Math.abs(x))}`);

function grid(caption, heads, rows, cls) {
  for (const tr of rows) stackRow(tr, heads);
  return h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": caption },
    h("table", { class: `stack ${cls}`, role: "table" },
      h("caption", {}, caption),
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
      h("tbody", { role: "rowgroup" }, rows)));
}

/** rateCell is count/of, the share and its interval, as text and drawn. */
function rateCell(r) {
  if (!r) return h("td", {}, DASH);
  const text = r.value === null ? `0/0 (applies to no trial)` : `${r.count}/${r.of} ${fixed(r.value)} [${fixed(r.ci95[0])}, ${fixed(r.ci95[1])}]`;
  return h("td", { class: "agent-rate", title: r.value === null ? null : `${r.value} [${r.ci95[0]}, ${r.ci95[1]}]` }, bar(r.value, r.ci95, 0, 1), " ", h("span", { class: "ci-text" }, text));
}

/** questionRows is each question of an eval result on both paths; traceOf(i)
 * is the link to the trace of result.cases[i] (or null when it is not kept). */
function questionRows(result, traceOf) {
  const modes = [...new Set(result.cases.map((c) => c.mode))];
  const byID = new Map();
  result.cases.forEach((c, i) => {
    if (!byID.has(c.id)) byID.set(c.id, { question: c.question, at: {} });
    byID.get(c.id).at[c.mode] ??= i;
  });
  const cell = (i) => {
    if (i === undefined) return h("td", {}, DASH);
    const c = result.cases[i];
    const read = c.target_read === null || c.target_read === undefined ? "no target" : c.target_read ? "target read" : "target not read";
    const href = traceOf ? traceOf(i) : null;
    return h("td", { dataset: { mode: c.mode, outcome: c.outcome || "none" } }, outcomeBadge(c.outcome || "none"), " ", `${read} · `, h("code", {}, c.reason || DASH),
      href ? [" · ", h("a", { href }, "trace", h("span", { class: "sr-only" }, ` of ${c.id} on the ${c.mode} path`))] : null);
  };
  const rows = [...byID].map(([id, q]) => h("tr", { dataset: { case: id } },
    h("th", { scope: "row" }, h("code", {}, id), h("span", { class: "cell-detail" }, q.question)),
    modes.map((m) => cell(q.at[m]))));
  return grid("Each question on both paths", ["Question", ...modes.map((m) => `${m} path`)], rows, "agent-questions");
}

/** agentBlock is an eval result's experiment: rates per path, then agent
 * against fixed, then each question (traceOf: see questionRows). */
export function agentBlock(result, traceOf = null) {
  const ex = result.experiment;
  const paths = ex.paths;
  const names = paths[0]?.rates.map((r) => r.name) || [];
  const rateRows = names.map((name) => h("tr", { dataset: { rate: name } },
    h("th", { scope: "row" }, name),
    paths.map((p) => rateCell(p.rates.find((r) => r.name === name)))));
  const cost = (p) => (p.estimated_usd === null ? "not priced" : `$${p.estimated_usd.toFixed(4)}`);
  rateRows.push(h("tr", { dataset: { rate: "tokens" } }, h("th", { scope: "row" }, "tokens, estimated cost"),
    paths.map((p) => h("td", {}, `${plural(p.tokens.total, "token")} (the scripted rules call no model), ${cost(p)}`))));
  const cmpHeads = ["Rate", "Pairs", "Difference (agent − fixed)", "95% interval", "p-value", "Fixed only", "Agent only", "McNemar p", "Interval"];
  const cmpRows = ex.comparisons.map((c) => h("tr", { dataset: { rate: c.rate } },
    h("th", { scope: "row" }, c.rate),
    h("td", { class: "num" }, String(c.pairs)),
    h("td", { class: "num", title: c.difference === null ? null : String(c.difference) }, signed(c.difference)),
    h("td", { class: "num" }, c.ci95 ? `[${signed(c.ci95[0])}, ${signed(c.ci95[1])}]` : DASH),
    h("td", { class: "num", title: c.p_value === null ? null : String(c.p_value) }, c.p_value === null ? DASH : pValue(c.p_value)),
    h("td", { class: "num" }, String(c.a_only)),
    h("td", { class: "num" }, String(c.b_only)),
    h("td", { class: "num", title: String(c.mcnemar_p) }, pValue(c.mcnemar_p)),
    h("td", { class: "ci-cell" }, bar(c.difference, c.ci95, -1, 1, 0))));
  const s = result.summary;
  return h("div", { class: "agent-result" },
    h("p", { class: "help" }, `${count(s.answerable_cases)} answerable and ${count(s.unanswerable_cases)} unanswerable ${s.answerable_cases + s.unanswerable_cases === 1 ? "case" : "cases"}, ${plural(s.trials, "trial")} (policy ${result.policy}, ${plural(result.search_k, "candidate")} per agent search). Each interval is the 95% interval of ${count(ex.resamples)} seeded resamples of the path's trials; the axes run from 0 to 1, and for the differences from −1 to +1 with zero marked.`),
    grid("Rates per path, with their 95% intervals", ["Rate", ...paths.map((p) => `${p.path} (${plural(p.trials, "trial")})`)], rateRows, "agent-rates"),
    grid("Agent against fixed, trials paired by case and repeat", cmpHeads, cmpRows, "agent-cmp"),
    questionRows(result, traceOf));
}
