// views/corpus.js is the Corpus view: the pinned passages with their
// receipts, and the agent's own FTS5 search with its match expression and
// bm25 scores.

import { $, h, clear, option, numCell, score } from "../dom.js";
import { call } from "../engine.js";

function passageRow(p) {
  return h("tr", {},
    h("th", { scope: "row" }, h("code", {}, p.source_id)),
    h("td", {}, p.version),
    h("td", { class: "num" }, p.bytes),
    h("td", {}, h("p", {}, p.text), h("p", { class: "passage-meta" }, h("a", { href: p.url, rel: "noopener noreferrer", target: "_blank" }, p.url)),
      h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256))));
}

async function search(event) {
  event.preventDefault();
  const out = clear($("#search-result"));
  try {
    const res = await call("search", [{ query: $("#search-query").value, version: $("#search-version").value, k: Number($("#search-k").value) }]);
    out.append(h("p", {}, "FTS5 query: ", h("code", {}, res.terms), ` · ${res.version ? `version ${res.version}` : "all versions"} · ${res.elapsed_ms.toFixed(2)} ms in the engine`));
    if (!res.hits.length) {
      out.append(h("p", {}, "No passage matches."));
      return;
    }
    out.append(h("div", { class: "scroll" }, h("table", { class: "hits" },
      h("caption", {}, "Ranked candidates"),
      h("thead", {}, h("tr", {}, ["Rank", "Source", "Version", "bm25 score", "Bytes"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, res.hits.map((x) => h("tr", {},
        h("td", { class: "num" }, x.rank), h("th", { scope: "row" }, h("code", {}, x.source_id)), h("td", {}, x.version),
        numCell(x.score, null, score), h("td", { class: "num" }, x.bytes)))))));
  } catch (err) {
    out.append(h("p", { class: "error" }, err.code ? `${err.code}: ${err.detail || err.message}` : err.message));
  }
}

/** mount binds the search form. Returns {ready}. */
export function mount() {
  $("#search-form").addEventListener("submit", search);
  return {
    /** ready lists the passages and the versions, and allows searching. */
    ready(info) {
      clear($("#passages tbody")).append(...info.passages.map(passageRow));
      $("#search-version").append(...info.versions.map((v) => option(v, v)));
      $("#search-run").disabled = false;
    },
  };
}
