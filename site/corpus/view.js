// corpus/view.js is the Corpus view: the chosen corpus (picker.js) searched
// with the agent's own FTS5 query, each hit with its bm25 score and FTS5
// snippet (the engine marks matched terms ⟦like this⟧; they are shown as
// <mark> elements built from text nodes), a hit opened in full with its
// docs link, each hit offered to a question set ("Add to question set…",
// common/addtoset.js: the query as the question, the hit as its target),
// and the seed's pinned passages with their receipts.

import { $, h, clear, option, numCell, passageLink, ownTarget } from "../common/dom.js";
import { score, plural } from "../common/format.js";
import { call } from "../engine/client.js";
import { state } from "../common/state.js";
import { SEED, onCorpus } from "./picker.js";
import { addButton } from "../common/addtoset.js";

const OPEN = "\u27e6";
const CLOSE = "\u27e7";

function passageRow(p) {
  return h("tr", {},
    h("th", { scope: "row" }, h("code", {}, p.source_id)),
    h("td", {}, p.version),
    h("td", { class: "num" }, p.bytes),
    h("td", {}, h("p", {}, p.text), h("p", { class: "passage-meta" }, passageLink(p.url)),
      h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256))));
}

/** snippet renders an engine snippet: text between ⟦ and ⟧ as <mark>, the rest as text. */
export function snippet(text) {
  const el = h("span", { class: "snippet" });
  let rest = text || "";
  for (;;) {
    const open = rest.indexOf(OPEN);
    const close = open < 0 ? -1 : rest.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) break;
    el.append(document.createTextNode(rest.slice(0, open)), h("mark", {}, rest.slice(open + OPEN.length, close)));
    rest = rest.slice(close + CLOSE.length);
  }
  el.append(document.createTextNode(rest));
  return el;
}


async function openPassage(sourceID) {
  const box = clear($("#passage-view"));
  box.hidden = false;
  box.append(h("p", {}, `Reading ${sourceID}…`));
  try {
    const p = await call("passage", [{ corpus: state.corpus.id, source_id: sourceID }]);
    clear(box).append(
      h("h3", { id: "passage-title", tabindex: "-1" }, p.title || p.source_id),
      h("p", { class: "passage-meta" }, h("code", {}, p.source_id), ` · version ${p.version} · ${plural(p.bytes, "byte")} · `, passageLink(p.url)),
      h("p", { class: "passage-text" }, p.text),
      h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256), " (checked against the text)"));
    $("#passage-title").focus();
  } catch (err) {
    clear(box).append(h("p", { class: "error" }, `Could not read ${sourceID}: ${err.message}`));
  }
}

/** targets is what a question set's target may name for a hit: its URL
 * and, when the passage answers to other anchors too, those (a target
 * naming any of them matches it). Nothing for the seed's passages, which
 * have no URL of their own. */
function targets(x) {
  if (!x.url) return null;
  const also = (x.aliases || []).map((a) => a.slice(a.indexOf("#")));
  // A file of your own: the path and anchor a question set names it by.
  const own = ownTarget(x.url);
  return h("div", { class: "help hit-url" }, own !== null ? ["target ", h("code", {}, own)] : h("code", {}, x.url),
    also.length ? ` · also ${also.join(", ")}` : null);
}

async function search(event) {
  event.preventDefault();
  const out = clear($("#search-result"));
  const corpus = state.corpus.id;
  try {
    const query = $("#search-query").value;
    const res = await call("search", [{ corpus, query, version: $("#search-version").value, k: Number($("#search-k").value) }]);
    // Under seed the hits are the FTS5 expression's, scored by bm25; another
    // configuration (the pack's default, res.retrieval) ranks by its own score.
    const how = res.retrieval
      ? ["Ranked by ", h("code", {}, res.retrieval), " (the pack's retrieval configuration); snippets mark the query's literal terms"]
      : ["FTS5 query: ", h("code", {}, res.terms)];
    out.append(h("p", {}, ...how, ` · ${res.version ? `version ${res.version}` : "all versions"} · ${res.elapsed_ms.toFixed(2)} ms in the engine`));
    if (!res.hits.length) {
      out.append(h("p", {}, "No passage matches."));
      return;
    }
    out.append(h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Ranked candidates" }, h("table", { class: "hits" },
      h("caption", {}, `Ranked candidates in ${state.corpus.info?.manifest.title || corpus}`),
      h("thead", {}, h("tr", {}, ["Rank", "Source", "Version", res.retrieval ? "Score" : "bm25 score", "Bytes", "Snippet"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, res.hits.map((x) => h("tr", {},
        h("td", { class: "num" }, x.rank),
        h("th", { scope: "row" }, h("button", { type: "button", class: "link", onclick: () => openPassage(x.source_id), "aria-label": `Open ${x.source_id}` }, h("code", {}, x.source_id))),
        h("td", {}, x.version),
        numCell(x.score, null, score), h("td", { class: "num" }, x.bytes),
        h("td", { class: "snippet-cell" }, x.title ? h("div", { class: "help" }, x.title) : null, snippet(x.snippet), targets(x),
          // The query and this passage, as a case of one of the pack's question sets.
          h("div", { class: "hit-add" }, addButton(x.source_id, () => ({ pack: corpus, title: state.corpus.info?.manifest.title || corpus, question: query, version: x.version, passages: [x] }))))))))));
  } catch (err) {
    out.append(h("p", { class: "error" }, err.code ? `${err.code}: ${err.detail || err.message}` : err.message));
  }
}

/** follow shows the chosen corpus: its versions, what it holds, and the
 * passages table for the seed alone (a pack's are too many to list). */
function follow(c) {
  const m = c.info.manifest;
  const versions = clear($("#search-version"));
  versions.append(option("", "all"), ...m.versions.map((v) => option(v, v, v === m.default_version)));
  $("#search-k").value = String(c.info.search_k);
  clear($("#search-result"));
  $("#passage-view").hidden = true;
  clear($("#corpus-summary")).append(h("strong", {}, m.title), `: ${plural(m.passages, "passage")} from ${plural(c.info.pages, "page")}, ` +
    `${c.info.text_bytes.toLocaleString("en")} bytes of text (a passage ${c.info.passage_bytes.min} to ${c.info.passage_bytes.max} bytes, median ${c.info.passage_bytes.median}); ` +
    `the agent takes ${c.info.search_k} candidates per search.`);
  $("#passages-block").hidden = c.id !== SEED;
  $("#search-run").disabled = false;
}

/** mount binds the search form. Returns {ready}. */
export function mount() {
  $("#search-form").addEventListener("submit", search);
  onCorpus(follow);
  return {
    /** ready lists the seed's passages. */
    ready(info) {
      clear($("#passages tbody")).append(...info.passages.map(passageRow));
    },
  };
}
