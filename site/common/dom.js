// dom.js builds the page's elements, text only: every string becomes a text
// node or an attribute value, never HTML, so nothing from a recording, a
// passage or a model can run. Numbers are written for reading by format.js.
// Nothing here touches the document until a function is called.

import { count, num, stamp } from "./format.js";
import { state } from "./state.js";

/** h builds an element; string and number children become text nodes. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "href") {
      if (safeURL(v)) el.setAttribute("href", v);
    } else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

/** append adds children to el, strings and numbers as text nodes. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** safeURL allows only https links (and in-page anchors) from data. */
export function safeURL(u) {
  return typeof u === "string" && (u.startsWith("https://") || u.startsWith("#"));
}

/** external is a link that opens in a new tab, giving the page it opens
 * neither this page (no opener) nor its address (no referrer); only an
 * https href is kept (h). */
export function external(href, ...children) {
  return h("a", { href, rel: "noopener noreferrer", target: "_blank" }, ...children);
}

/** ownTarget is a URL of your documents (the engine's
 * constants.documents.base_url, a host that resolves nowhere, then the
 * file) as the page shows it and a question set may name it: the file's
 * path and anchor ("notes/kettle.md#kettle"); null for any other URL. */
export function ownTarget(url) {
  const base = state.info?.constants.documents?.base_url;
  return base && typeof url === "string" && url.startsWith(base) ? url.slice(base.length) : null;
}

/** ownText is an engine text that names targets (a check's reason) with
 * each URL of your documents written as ownTarget writes it. */
export function ownText(text) {
  const base = state.info?.constants.documents?.base_url;
  return base && typeof text === "string" ? text.split(base).join("") : text;
}

/** passageLink is a passage's address: an https page as a link, a file of
 * your documents as its path and anchor (ownTarget), never a link to a
 * host that resolves nowhere. */
export function passageLink(url) {
  const own = ownTarget(url);
  if (own !== null) return h("span", { class: "own-target" }, "your file ", h("code", {}, own));
  return external(url, url);
}

/** breakable is a reason code (citation_contract_passed) as text with a
 * line-break opportunity after each underscore, so a narrow column wraps
 * it instead of clipping it. */
export function breakable(text) {
  return String(text).split(/(?<=_)/).flatMap((part, i) => (i ? [h("wbr"), part] : [part]));
}

/** $ is the first element matching a selector. */
export const $ = (sel) => document.querySelector(sel);

/** clear empties an element and returns it. */
export function clear(el) {
  el.replaceChildren();
  return el;
}

/** option is a select's option. */
export function option(value, label, selected = false) {
  const o = h("option", { value }, label);
  o.selected = selected;
  return o;
}

/** badge is a coloured status word; kind picks the colour (b-pass, b-fail, ...). */
export function badge(text, kind = text) {
  return h("span", { class: `badge b-${kind}` }, text);
}

const SVG = "http://www.w3.org/2000/svg";

/** svg builds an SVG element (attributes as given; children appended, strings as text). */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/** bar is a horizontal bar of segments [{value, cls, label}] as inline SVG,
 * its parts proportional to total (default: their sum); label names it for
 * screen readers. */
export function bar(segments, label, total = segments.reduce((a, s) => a + s.value, 0)) {
  const out = svg("svg", { class: "bar", viewBox: "0 0 100 10", preserveAspectRatio: "none", role: "img", "aria-label": label, focusable: "false" },
    svg("title", {}, label), svg("rect", { class: "bar-bg", x: 0, y: 0, width: 100, height: 10 }));
  let x = 0;
  for (const s of segments) {
    const w = total > 0 ? (100 * s.value) / total : 0;
    if (w > 0) out.append(svg("rect", { class: s.cls, x, y: 0, width: w, height: 10 }, svg("title", {}, s.label)));
    x += w;
  }
  return out;
}

/** meter is a counter against its limit: the name, "used / limit", and a bar (red once the limit is reached). */
export function meter(name, used, limit, text = `${count(used)} / ${count(limit)}`) {
  const full = limit > 0 && used >= limit;
  return h("div", { class: `meter${full ? " full" : ""}`, dataset: { meter: name } },
    h("span", { class: "meter-name" }, name),
    bar([{ value: Math.min(used, limit), cls: "used", label: `${name} ${text}` }], `${name}: ${text}`, limit),
    h("span", { class: "meter-value" }, text));
}

/** copyButton copies text to the clipboard and says so. */
export function copyButton(text, label = "Copy") {
  const b = h("button", { type: "button", class: "small" }, label);
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = "Copied";
    } catch {
      b.textContent = "Copy failed: select the text instead";
    }
    setTimeout(() => { b.textContent = label; }, 2000);
  });
  return b;
}

/** OUTCOMES is the one status vocabulary of graded trials: the word shown, in the same colour in every table and trace. */
export const OUTCOMES = {
  pass: "pass",
  fail: "fail",
  incomplete: "incomplete",
};

/** outcomeBadge is a graded outcome's badge (pass, fail, incomplete), or a run refused before it started, or ungraded. */
export function outcomeBadge(outcome) {
  if (OUTCOMES[outcome]) return badge(OUTCOMES[outcome]);
  if (outcome === "refused") return badge("refused", "fail");
  if (outcome === "key") return badge("key refused", "fail");
  return badge("not graded", "none");
}

/** numCell is a right-aligned number with its exact value as the title. */
export function numCell(x, digits, format = num) {
  return h("td", { class: "num", title: x === null || x === undefined ? null : String(x) }, format(x, digits));
}

let tableIds = 0;

/**
 * table builds a captioned table in a keyboard-scrollable region. On a
 * narrow screen its rows stack (style.css, table.stack), each cell labelled
 * with its column's head; explicit roles keep it a table for screen readers
 * once its display is no longer a table's.
 */
export function table(caption, heads, rows, cls = "") {
  const id = `rt-${++tableIds}`;
  for (const tr of rows) stackRow(tr, heads);
  return h("div", { class: "scroll", tabindex: 0, role: "region", "aria-labelledby": id },
    h("table", { class: `stack ${cls}`.trim(), role: "table" },
      h("caption", { id }, caption),
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
      h("tbody", { role: "rowgroup" }, rows)));
}

/** stackRow readies a row of a table.stack for a narrow screen: each cell
 * labelled with its column's head, its content in one box, and explicit
 * roles so it stays a table for screen readers once it is displayed as
 * blocks. */
export function stackRow(tr, heads) {
  tr.setAttribute("role", "row");
  [...tr.children].forEach((cell, i) => {
    cell.setAttribute("role", cell.tagName === "TH" ? "rowheader" : "cell");
    cell.dataset.label = heads[i] ?? "";
    // One box for the content, so a stacked cell is a two-column grid: label, content.
    const inner = h("div", { class: "cell" });
    inner.append(...cell.childNodes);
    cell.append(inner);
  });
  return tr;
}

let screen = () => null;

/** screenDownloads sets the last check every download passes: check(text)
 * returns why the file may not be saved, or null. The page sets key.js's
 * screen, so no file it offers holds the key; dom.js never sees the key. */
export function screenDownloads(check) {
  screen = check;
}

/** download saves text as `${prefix}-<timestamp>.json` (or the name given)
 * through a temporary link, once the screen allows it; else it throws why,
 * saving nothing. Every file the page offers is saved here. */
export function download(prefix, text, name = `${prefix}-${stamp()}.json`) {
  const withheld = screen(text);
  if (withheld) throw new Error(withheld);
  const a = h("a", { download: name });
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
