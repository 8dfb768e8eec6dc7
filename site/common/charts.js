// charts.js draws the page's small charts as inline SVG, text only (dom.js
// builders): a run's waterfall, the outcomes per path as stacked bars, and
// a slopegraph of the same candidates in several orders. Each chart is an
// image with a text alternative; the numbers it draws are also shown as
// text beside it.

import { h, svg, bar } from "./dom.js";
import { seconds, plural } from "./format.js";

/**
 * waterfall draws when each step ran: one row per step, its bar from its
 * start to its end on the run's time axis, the model call's own latency
 * darker inside it. timing is the report's ({source, total_ms, steps}).
 */
export function waterfall(steps, timing) {
  const total = Math.max(timing.total_ms, ...timing.steps.map((s) => s.end_ms), 1);
  const source = timing.source === "measured" ? "measured on the engine's clock" : "from the recording's sent times";
  const rows = steps.map((step, i) => {
    const t = timing.steps[i];
    const x = (1000 * t.start_ms) / total;
    const w = Math.max((1000 * (t.end_ms - t.start_ms)) / total, 2);
    const label = step.call ? `Call ${step.call} ${step.action || "reply"}` : `Retrieval ${step.action}`;
    const took = seconds(t.end_ms - t.start_ms);
    const model = t.model_ms === null || t.model_ms === undefined ? "" : `, model ${seconds(t.model_ms)}`;
    const chart = svg("svg", { class: "wf-bar", viewBox: "0 0 1000 12", preserveAspectRatio: "none", "aria-hidden": "true", focusable: "false" },
      svg("rect", { class: "wf-track", x: 0, y: 0, width: 1000, height: 12 }),
      svg("rect", { class: "wf-step", x, y: 1, width: w, height: 10 }));
    if (t.model_ms) chart.append(svg("rect", { class: "wf-model", x, y: 3, width: Math.max((1000 * t.model_ms) / total, 1), height: 6 }));
    return h("li", { class: "wf-row" }, h("span", { class: "wf-label" }, label), chart,
      h("span", { class: "wf-time" }, `${took}${model}`, h("span", { class: "sr-only" }, ` from ${seconds(t.start_ms)}`)));
  });
  return h("figure", { class: "waterfall" },
    h("figcaption", {}, `Waterfall: ${plural(steps.length, "step")} in ${seconds(timing.total_ms)}, ${source}`,
      timing.steps.some((s) => s.model_ms) ? " (the darker part of a bar is the model call)" : ""),
    h("ol", { class: "wf" }, rows));
}

/** outcomeBars draws pass, fail and incomplete per path as stacked bars, the counts beside them. */
export function outcomeBars(summary) {
  const rows = ["fixed", "agent"].map((path) => {
    const s = summary[path];
    const n = s.pass + s.fail + s.incomplete;
    const text = `${path}: ${s.pass} pass, ${s.fail} fail, ${s.incomplete} incomplete of ${n}`;
    return h("li", { class: "sb-row", dataset: { path } },
      h("span", { class: "sb-label" }, path),
      bar([
        { value: s.pass, cls: "seg-pass", label: `${s.pass} pass` },
        { value: s.fail, cls: "seg-fail", label: `${s.fail} fail` },
        { value: s.incomplete, cls: "seg-incomplete", label: `${s.incomplete} incomplete` },
      ], text),
      h("span", { class: "sb-counts" }, `${s.pass} pass · ${s.fail} fail · ${s.incomplete} incomplete`));
  });
  return h("figure", { class: "stacked" },
    h("figcaption", { class: "sr-only" }, "Outcomes per path as stacked bars"),
    h("ol", { class: "sb" }, rows),
    h("p", { class: "legend", "aria-hidden": "true" },
      h("span", { class: "key seg-pass" }), " pass ", h("span", { class: "key seg-fail" }), " fail ", h("span", { class: "key seg-incomplete" }), " incomplete"));
}

/**
 * slopegraph draws the same items in several orders, one column per order
 * (columns: [{title, ids}]), with a line from each item's place in one
 * column to its place in the next; a line that moves is drawn stronger.
 * It scrolls sideways in its own box on a narrow screen.
 */
export function slopegraph(columns, label) {
  const colW = 210, rowH = 26, top = 34, pad = 8;
  const rows = Math.max(...columns.map((c) => c.ids.length), 1);
  const width = colW * columns.length - 40;
  const height = top + rows * rowH;
  const out = svg("svg", { class: "slope", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, focusable: "false" },
    svg("title", {}, label));
  const x = (c) => c * colW;
  const y = (r) => top + r * rowH + rowH / 2;
  columns.forEach((col, c) => {
    out.append(svg("text", { class: "slope-head", x: x(c) + pad, y: 16 }, col.title));
    if (c + 1 < columns.length) {
      const next = columns[c + 1];
      col.ids.forEach((id, r) => {
        const r2 = next.ids.indexOf(id);
        if (r2 < 0) return;
        out.append(svg("line", { class: r2 === r ? "slope-line" : "slope-line moved", x1: x(c) + colW - 60, y1: y(r), x2: x(c + 1) + pad - 4, y2: y(r2) }));
      });
    }
    col.ids.forEach((id, r) => out.append(svg("text", { class: "slope-id", x: x(c) + pad, y: y(r) + 4 }, `${r + 1}. ${id}`)));
    if (!col.ids.length) out.append(svg("text", { class: "slope-none", x: x(c) + pad, y: y(0) + 4 }, col.empty || "none"));
  });
  return h("figure", { class: "slopegraph" }, h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": label }, out),
    h("figcaption", { class: "help" }, "Each line joins a candidate's place in one order to its place in the next; a slanted line is a candidate that moved."));
}

let scatterIds = 0;

/**
 * rankScatter draws each question's rank under one configuration (x)
 * against its rank under another (y) on a grid of ranks 1 to k, "not
 * found" its own last column and row; a cell's circle grows with how many
 * questions fall in it, the count written beside it, and the diagonal
 * marks "the same rank". points: [{a, b}] (a rank or null). It is an image
 * with a title and a description (aria-labelledby); the per-question table
 * beside it is its text alternative.
 */
export function rankScatter(points, k, nameA, nameB) {
  const id = `rs-${++scatterIds}`;
  const cell = 26, left = 54, top = 12, bottom = 44;
  const n = k + 1; // ranks 1..k, then "not found"
  const size = n * cell;
  const width = left + size + 8, height = top + size + bottom;
  const at = (r) => (r === null || r === undefined ? n - 1 : r - 1);
  const counts = new Map();
  for (const p of points) {
    const key = `${at(p.a)},${at(p.b)}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const better = points.filter((p) => at(p.b) < at(p.a)).length;
  const worse = points.filter((p) => at(p.b) > at(p.a)).length;
  const title = `Rank of each question under ${nameA} (across) against ${nameB} (down)`;
  const desc = `${plural(points.length, "question")}: ${better} ranked better under ${nameB}, ${worse} worse, ${points.length - better - worse} the same. Ranks 1 to ${k}, then "not found"; a larger circle is more questions. The table below lists every question.`;
  const out = svg("svg", { class: "rank-scatter", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${id}-t ${id}-d`, focusable: "false" },
    svg("title", { id: `${id}-t` }, title), svg("desc", { id: `${id}-d` }, desc));
  const cx = (i) => left + i * cell + cell / 2;
  const cy = (j) => top + j * cell + cell / 2;
  out.append(svg("rect", { class: "rs-frame", x: left, y: top, width: size, height: size }),
    svg("rect", { class: "rs-none", x: left + (n - 1) * cell, y: top, width: cell, height: size }),
    svg("rect", { class: "rs-none", x: left, y: top + (n - 1) * cell, width: size, height: cell }),
    svg("line", { class: "rs-diagonal", x1: left, y1: top, x2: left + size, y2: top + size }));
  for (let i = 0; i < n; i++) {
    const label = i === n - 1 ? "none" : String(i + 1);
    out.append(svg("text", { class: "rs-tick", x: cx(i), y: top + size + 14, "text-anchor": "middle" }, label),
      svg("text", { class: "rs-tick", x: left - 6, y: cy(i) + 4, "text-anchor": "end" }, label));
  }
  out.append(svg("text", { class: "rs-axis", x: left + size / 2, y: top + size + 34, "text-anchor": "middle" }, `rank under ${nameA} (A)`),
    svg("text", { class: "rs-axis", x: 12, y: top + size / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${top + size / 2})` }, `rank under ${nameB} (B)`));
  const most = Math.max(1, ...counts.values());
  for (const [key, c] of counts) {
    const [i, j] = key.split(",").map(Number);
    const r = 3 + (cell / 2 - 4) * Math.sqrt(c / most);
    const kind = j < i ? "rs-better" : j > i ? "rs-worse" : "rs-same";
    out.append(svg("circle", { class: `rs-point ${kind}`, cx: cx(i), cy: cy(j), r }),
      svg("text", { class: "rs-count", x: cx(i), y: cy(j) + 4, "text-anchor": "middle" }, String(c)));
  }
  return h("figure", { class: "rank-scatter-figure" },
    h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": title }, out),
    h("figcaption", { class: "help" }, `Across: the rank under ${nameA} (experiment A); down: under ${nameB} (experiment B); a point above the diagonal ranked better under B. ${desc}`));
}
