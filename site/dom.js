// dom.js builds the page's elements, text only: every string becomes a text
// node or an attribute value, never HTML, so nothing from a recording, a
// passage or a model can run. It also formats numbers for reading. Nothing
// here touches the document until a function is called, so the formatting
// helpers can be imported and tested in node.

export const DASH = "–";

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

/** num formats a number to a fixed number of decimals (whole numbers as they are). */
export function num(x, digits) {
  if (x === null || x === undefined) return DASH;
  return digits === 0 ? String(x) : Number(x).toFixed(digits);
}

/** sig formats a score to significant digits, so a bm25 of -4.9e-6 is not shown as -0.0000. */
export function sig(x, digits) {
  return x === null || x === undefined ? DASH : Number(x).toPrecision(digits);
}

/** usd formats an amount of US dollars to six significant digits, which
 * shows list-price estimates (and their sums) as they are. */
export function usd(x) {
  if (x === null || x === undefined) return DASH;
  if (x !== 0 && Math.abs(x) < 1e-6) return `$${x.toExponential(2)}`;
  return `$${Number(x.toPrecision(6))}`;
}

/** mb formats a byte count in MiB with one decimal. */
export function mb(n) {
  return (n / 1048576).toFixed(1);
}

/** plural is "1 thing" or "n things". */
export function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
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
  for (const tr of rows) {
    tr.setAttribute("role", "row");
    [...tr.children].forEach((cell, i) => {
      cell.setAttribute("role", cell.tagName === "TH" ? "rowheader" : "cell");
      cell.dataset.label = heads[i] ?? "";
      // One box for the content, so a stacked cell is a two-column grid: label, content.
      const inner = h("div", { class: "cell" });
      inner.append(...cell.childNodes);
      cell.append(inner);
    });
  }
  return h("div", { class: "scroll", tabindex: 0, role: "region", "aria-labelledby": id },
    h("table", { class: `stack ${cls}`.trim(), role: "table" },
      h("caption", { id }, caption),
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
      h("tbody", { role: "rowgroup" }, rows)));
}

/** stamp is a timestamp usable in a file name. */
export function stamp(date = new Date()) {
  return date.toISOString().replace(/[:.]/g, "-");
}

/** download saves text as `${prefix}-<timestamp>.json` through a temporary link. */
export function download(prefix, text) {
  const a = h("a", { download: `${prefix}-${stamp()}.json` });
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
