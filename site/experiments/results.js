// experiments/results.js draws an experiment's result, the engine's
// `ragagent retrieval --json` object as it is (the first configuration the
// baseline): each configuration's metrics with their 95% intervals, the
// paired differences against the baseline with their intervals and
// p-values, and the per-question table whose rows open that question's top
// results under each configuration side by side (with the person's
// annotation of the question, when the view passes annotate). Every interval is inline
// SVG hidden from screen readers beside the same numbers as text. Nothing
// here is computed but what is drawn: the numbers are the engine's.

import { h, svg, clear, stackRow, badge } from "../common/dom.js";
import { DASH, plural, count } from "../common/format.js";
import { METRICS, verdict, tally } from "./setup.js";

/** fixed writes a metric or a difference for reading; its exact value goes in a title. */
export function fixed(x, digits = 3) {
  if (x === null || x === undefined) return DASH;
  return Number(x).toFixed(digits);
}

/** signed is a difference with its sign. */
function signed(x) {
  return `${x > 0 ? "+" : x < 0 ? "−" : "±"}${fixed(Math.abs(x))}`;
}

/** pValue writes a p-value: three decimals, or "< 0.001". */
export function pValue(p) {
  return p < 0.001 ? "< 0.001" : fixed(p);
}

/** interval is a point and its interval on [lo, hi] as inline SVG (aria-hidden: the text beside says it). */
function interval(value, ci, lo, hi, zero = null) {
  const W = 200;
  const x = (v) => Math.max(0, Math.min(W, ((v - lo) / (hi - lo)) * W));
  const out = svg("svg", { class: "ci", viewBox: `0 0 ${W} 16`, preserveAspectRatio: "none", "aria-hidden": "true", focusable: "false" },
    svg("rect", { class: "ci-track", x: 0, y: 7, width: W, height: 2 }));
  if (zero !== null) out.append(svg("line", { class: "ci-zero", x1: x(zero), x2: x(zero), y1: 0, y2: 16 }));
  out.append(svg("line", { class: "ci-range", x1: x(ci[0]), x2: x(ci[1]), y1: 8, y2: 8 }),
    svg("line", { class: "ci-cap", x1: x(ci[0]), x2: x(ci[0]), y1: 3, y2: 13 }),
    svg("line", { class: "ci-cap", x1: x(ci[1]), x2: x(ci[1]), y1: 3, y2: 13 }),
    svg("circle", { class: "ci-point", cx: x(value), cy: 8, r: 3.5 }));
  return out;
}

/** ciText is an interval as text. */
const ciText = (ci, f = fixed) => `[${f(ci[0])}, ${f(ci[1])}]`;

/** metricsBlock is each metric's values under each configuration: a figure per metric, one interval per row. */
export function metricsBlock(result) {
  const figs = METRICS.map((m) => h("figure", { class: "ci-figure", dataset: { metric: m } },
    h("figcaption", {}, `${m}, with its 95% interval (axis 0 to 1)`),
    h("ul", { class: "ci-rows" }, result.configs.map((c) => {
      const v = c.metrics[m];
      return h("li", { class: "ci-row", dataset: { config: c.name } },
        h("span", { class: "ci-name" }, c.name),
        interval(v.value, v.ci95, 0, 1),
        h("span", { class: "ci-text", title: `${v.value} [${v.ci95[0]}, ${v.ci95[1]}]` }, `${fixed(v.value)} ${ciText(v.ci95)}`));
    }))));
  return h("section", { class: "exp-metrics", "aria-labelledby": "exp-metrics-title" },
    h("h3", { id: "exp-metrics-title" }, "Metrics per configuration"),
    h("p", { class: "help" }, `${count(result.answerable)} answerable of ${plural(result.cases, "question")}, the top ${plural(result.k, "passage")} ranked. Each interval is the 95% interval from the engine's seeded resampling of the questions.`),
    h("div", { class: "ci-grid" }, figs));
}

/** comparisonsBlock is each configuration's paired difference from the baseline, metric by metric. */
export function comparisonsBlock(result) {
  const base = result.configs[0].name;
  if (!result.comparisons.length) {
    return h("section", { class: "exp-comparisons", "aria-labelledby": "exp-cmp-title" },
      h("h3", { id: "exp-cmp-title" }, "Paired differences"),
      h("p", { class: "help" }, "Only one configuration was run: there is nothing to compare it with."));
  }
  const span = Math.max(0.05, ...result.comparisons.flatMap((c) => [Math.abs(c.ci95[0]), Math.abs(c.ci95[1]), Math.abs(c.difference)]));
  const heads = ["Configuration", "Metric", "Difference (b − a)", "95% interval", "p-value", "Interval"];
  const rows = result.comparisons.map((c) => h("tr", { dataset: { b: c.b, metric: c.metric } },
    h("th", { scope: "row" }, c.b),
    h("td", {}, c.metric),
    h("td", { class: "num", title: String(c.difference) }, signed(c.difference)),
    h("td", { class: "num", title: `[${c.ci95[0]}, ${c.ci95[1]}]` }, ciText(c.ci95, signed)),
    h("td", { class: "num", title: String(c.p_value) }, pValue(c.p_value)),
    h("td", { class: "ci-cell" }, interval(c.difference, c.ci95, -span, span, 0))));
  return h("section", { class: "exp-comparisons", "aria-labelledby": "exp-cmp-title" },
    h("h3", { id: "exp-cmp-title" }, `Paired differences against ${base}`),
    h("p", { class: "help" }, `Each row is b minus ${base} on the same questions, with the 95% interval and the two-sided p-value of 10,000 paired resamples; the drawn axis runs from ${signed(-span)} to ${signed(span)}, the line marks zero.`),
    table(`Differences against the baseline ${base}`, heads, rows, "exp-cmp"));
}

/** table is a captioned table of rows in a keyboard-scrollable region (stacked on a phone). */
function table(caption, heads, rows, cls) {
  for (const tr of rows) if (!tr.classList.contains("exp-detail")) stackRow(tr, heads);
  return h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": caption },
    h("table", { class: `stack ${cls}`, role: "table" },
      h("caption", {}, caption),
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
      h("tbody", { role: "rowgroup" }, rows)));
}

const WORDS = { win: "win", loss: "loss", tie: "tie" };
const KINDS = { win: "pass", loss: "fail", tie: "none" };

/**
 * questionsBlock is the per-question table: each answerable question's
 * rank under each configuration and, for each configuration after the
 * baseline, its win, loss or tie. questions maps a case id to
 * {question, version} when the page knows it; open(caseID) resolves to
 * [{config, hits: [{source_id, rank, url, title}], error}] for the
 * question's side-by-side results; annotate(caseID, lists), when given, is
 * the question's annotation region, shown below them.
 */
export function questionsBlock(result, questions, open, annotate = null) {
  const configs = result.configs;
  const others = configs.slice(1);
  const heads = ["Question", ...configs.map((c) => `Rank: ${c.name}`), ...others.map((c) => `${c.name} vs ${configs[0].name}`)];
  const summary = others.map((c, i) => {
    const t = tally(result, i + 1);
    return h("li", {}, `${c.name} against ${configs[0].name}: ${t.win} wins, ${t.loss} losses, ${t.tie} ties`);
  });
  const rows = [];
  configs[0].cases.forEach((bc, j) => {
    const id = bc.id;
    const q = questions.get(id);
    const detailID = `exp-q-${j}`;
    const toggle = h("button", { type: "button", class: "link exp-open", "aria-expanded": "false", "aria-controls": detailID },
      id, h("span", { class: "sr-only" }, ": open its results under each configuration"));
    const tr = h("tr", { dataset: { case: id } },
      h("th", { scope: "row" }, toggle, q ? h("span", { class: "cell-detail" }, q.question) : null),
      configs.map((c) => {
        const r = c.cases[j]?.rank;
        return h("td", { class: "num", dataset: { config: c.name } }, r === null || r === undefined ? h("span", { title: `not in the top ${result.k}` }, DASH) : String(r));
      }),
      others.map((c) => {
        const v = verdict(c.cases[j]?.rank, bc.rank);
        return h("td", { dataset: { verdict: v, config: c.name } }, badge(WORDS[v], KINDS[v]));
      }));
    const cell = h("td", { colspan: heads.length, role: "cell" });
    const detail = h("tr", { id: detailID, class: "exp-detail", hidden: true, role: "row" }, cell);
    toggle.addEventListener("click", async () => {
      const opening = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(opening));
      detail.hidden = !opening;
      if (!opening || cell.dataset.loaded) return;
      cell.dataset.loaded = "1";
      clear(cell).append(h("p", { class: "help", role: "status" }, `Ranking ${id} under each configuration…`));
      try {
        const lists = await open(id);
        clear(cell).append(sideBySide(result, j, lists), annotate ? annotate(id, lists) : null);
      } catch (err) {
        delete cell.dataset.loaded;
        clear(cell).append(h("p", { class: "error", role: "alert" }, `Could not rank ${id}: ${err.message}`));
      }
    });
    rows.push(tr, detail);
  });
  return h("section", { class: "exp-questions", "aria-labelledby": "exp-q-title" },
    h("h3", { id: "exp-q-title" }, "Per question"),
    h("p", { class: "help" }, `The rank of the first passage that matches a target (${DASH}: none in the top ${result.k}). Open a question to see its top results under each configuration side by side.`),
    summary.length ? h("ul", { class: "exp-tally" }, summary) : null,
    table("Rank of the first matching passage per question", heads, rows, "exp-q"));
}

/** sideBySide is one question's top results under each configuration, its first matching passage marked. */
function sideBySide(result, j, lists) {
  return h("div", { class: "exp-side" }, lists.map((l, i) => {
    const rank = result.configs[i]?.cases[j]?.rank ?? null;
    const body = l.error
      ? h("p", { class: "error" }, l.error)
      : l.hits.length
        ? h("ol", { class: "exp-hits" }, l.hits.map((hit) => h("li", { class: hit.rank === rank ? "exp-match" : null, dataset: { source: hit.source_id, url: hit.url || "" } },
          h("code", {}, hit.source_id), hit.rank === rank ? [" ", badge("first match", "pass")] : null,
          hit.title ? h("span", { class: "cell-detail" }, hit.title) : null)))
        : h("p", { class: "help" }, "No passage matched the query.");
    return h("section", { class: "exp-col", "aria-label": `Top results under ${l.config}`, dataset: { config: l.config } },
      h("h4", {}, l.config), h("p", { class: "help" }, rank === null ? `No matching passage in the top ${result.k}.` : `First matching passage at rank ${rank}.`), body);
  }));
}
