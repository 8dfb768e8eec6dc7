// rerank/report.js renders the reranking lab's replay report for the
// Rerank view: each development case's candidates and the second stages'
// orders side by side, the mechanism check, the unfiltered diagnostic, the
// twelve expanded cases and the summary. Every number is the engine's.

import { h, badge, table, numCell } from "../common/dom.js";
import { num, score, DASH } from "../common/format.js";
import { slopegraph } from "../common/charts.js";

/** sourceList is a list of rows as "a, b, c" by source id. */
export const sourceList = (rows) => rows.map((r) => r.source_id).join(", ");

function candidatesTable(caption, rows) {
  return table(caption, ["Source", "Version", "Lexical rank", "bm25 score", "Vector rank", "Cosine", "Lexical RRF", "Vector RRF", "Fused score"],
    rows.map((c) => h("tr", {},
      h("th", { scope: "row" }, h("code", {}, c.source_id)), h("td", {}, c.version),
      numCell(c.lexical_rank, 0), numCell(c.lexical_score, null, score), numCell(c.vector_rank, 0), numCell(c.vector_score, null, score),
      numCell(c.lexical_contribution, null, score), numCell(c.vector_contribution, null, score), numCell(c.fused_score, null, score))), "cands-table");
}

const matched = (r) => r.rerank_features.matched_tokens.join(", ") || "none";
const coverageText = (r) => `${r.rerank_features.matched_count}/${r.rerank_features.query_token_count} = ${num(r.coverage_score, 3)}`;

/** coveredTable is the seed's table: incoming rank, matched terms, coverage, reranked position. */
function coveredTable(caption, rows) {
  return table(caption, ["Source", "Incoming rank", "Matched terms", "Coverage", "Reranked position"],
    rows.map((r) => h("tr", {},
      h("th", { scope: "row" }, h("code", {}, r.source_id)), numCell(r.incoming_rank, 0),
      h("td", {}, matched(r)), h("td", { class: "num", title: String(r.coverage_score) }, coverageText(r)), numCell(r.rerank_rank, 0))));
}

/** orderCell is a candidate at a position of an order; one that moved from its incoming position is highlighted. */
function orderCell(row, detail, moved = false, exact = undefined) {
  return h("td", { class: moved ? "moved" : null, title: exact === undefined ? null : String(exact) },
    h("code", {}, row.source_id), moved ? h("span", { class: "sr-only" }, " (moved)") : "", " ", h("span", { class: "cell-detail" }, detail));
}

/** orderSlope draws the case's incoming order and the second stages' orders as a slopegraph. */
function orderSlope(d, gem, cross) {
  const cols = [{ title: "Hybrid (incoming)", ids: d.before.map((c) => c.source_id) },
    { title: "Coverage", ids: d.after.map((c) => c.source_id) }];
  if (gem) cols.push({ title: "Gemini listwise", ids: (gem.gemini || []).map((c) => c.source_id), empty: gem.error ? `refused: ${gem.error.code}` : "none" });
  if (cross) cols.push({ title: "Cross-encoder", ids: cross.cross_encoder.map((c) => c.source_id) });
  return slopegraph(cols, `${d.case_id}: ${cols.map((c) => `${c.title}: ${c.ids.join(", ") || c.empty || "none"}`).join("; ")}`);
}

/** ordersTable puts the incoming order and the three second stages side by side. */
function ordersTable(d, gem, cross) {
  const incoming = new Map(d.before.map((c, i) => [c.chunk_id, i + 1]));
  const rows = d.before.map((c, i) => {
    const cov = d.after[i];
    const g = gem && gem.gemini && gem.gemini[i];
    const x = cross && cross.cross_encoder[i];
    return h("tr", {},
      h("th", { scope: "row" }, String(i + 1)),
      orderCell(c, `fused ${score(c.fused_score)}`, false, c.fused_score),
      cov ? orderCell(cov, `matched ${matched(cov)} · ${coverageText(cov)} · was #${cov.incoming_rank}`, cov.incoming_rank !== i + 1) : h("td", {}, DASH),
      g ? orderCell(g, `was #${incoming.get(g.chunk_id)}`, incoming.get(g.chunk_id) !== i + 1)
        : h("td", {}, i === 0 && gem && gem.error ? [badge("refused", "fail"), " ", h("code", {}, gem.error.code)] : DASH),
      x ? orderCell(x, `logit ${num(x.cross_encoder_logit, 3)} · was #${x.incoming_rank}`, x.incoming_rank !== i + 1, x.cross_encoder_logit) : h("td", {}, DASH));
  });
  return table("The same candidates in each second stage's order", ["Position", "Hybrid (incoming)", "Coverage", "Gemini listwise", "Cross-encoder"], rows, "orders");
}

/** scorerCell is a scorer's order for an expanded case and how it did. */
function scorerCell(rows, o) {
  const verdict = o.top1_hit === null
    ? [badge("not counted", "incomplete"), " ", h("code", {}, o.reason)]
    : [o.top1_hit ? badge("top-1 hit", "pass") : badge("top-1 miss", "fail"), ` reciprocal rank ${num(o.reciprocal_rank, 3)}`];
  return h("td", {}, h("code", {}, sourceList(rows)), " ", h("span", { class: "cell-detail" }, verdict));
}

function summaryTable(ce) {
  const rows = [];
  for (const split of ["diagnostic", "validation"]) {
    const cases = ce.expanded_cases.filter((c) => c.split === split);
    for (const [scorer, label] of [["coverage", "coverage"], ["cross_encoder", "cross-encoder"]]) {
      const t = ce.summary[split][scorer];
      rows.push(h("tr", { dataset: { split, scorer } },
        h("th", { scope: "row" }, split), h("td", {}, label),
        h("td", { class: "num" }, `${t.top1_hits} of ${t.answerable}`),
        h("td", { class: "num", title: String(t.mrr) }, num(t.mrr, 3)),
        h("td", { class: "num" }, `${cases.length - t.answerable} of ${cases.length}`)));
    }
  }
  return table("Summary by split and scorer", ["Split", "Scorer", "Top-1 hits", "MRR", "Not counted (no supported target)"], rows, "rerank-summary");
}

/** rerankReport is the replayed lab's whole report, as nodes to append. */
export function rerankReport(rep) {
  const out = [];
  const cov = rep.coverage, gem = rep.gemini, ce = rep.cross_encoder;
  const geminiBy = new Map(gem.cases.map((c) => [c.case_id, c]));
  const crossBy = new Map(ce.original_candidate_comparison.map((c) => [c.case_id, c]));
  const conf = cov.configuration;
  out.push(h("h3", {}, "Development cases"),
    h("p", { class: "help" }, `Snapshot ${cov.snapshot_id.slice(0, 12)}… · rank constant ${conf.rank_constant} · candidate budget ${conf.candidate_budget} · coverage: ${conf.score}, ties by ${conf.tie} · Gemini ${gem.model} (${gem.execution_mode}) · cross-encoder ${ce.model.model} (${ce.execution_mode}; raw logits, not probabilities).`));
  for (const d of cov.development_cases) {
    const id = `rcase-${d.case_id}`;
    const g = geminiBy.get(d.case_id);
    out.push(h("article", { class: "rcase", id, tabindex: "-1", "aria-labelledby": `${id}-title`, dataset: { case: d.case_id } },
      h("h4", { id: `${id}-title` }, `${d.case_id} (Python ${d.requested_version}) `, h("a", { href: `#rerank/${encodeURIComponent(d.case_id)}`, class: "permalink" }, "link", h("span", { class: "sr-only" }, ` to ${d.case_id}`))),
      h("p", { class: "question" }, h("span", { class: "label" }, "Question: "), d.query),
      orderSlope(d, g, crossBy.get(d.case_id)),
      h("details", { class: "rcase-body" }, h("summary", {}, "Candidates, scores and orders"),
        h("p", { class: "help" }, "Question tokens: ", d.after[0] ? d.after[0].rerank_features.query_tokens.join(", ") : DASH),
        candidatesTable("Hybrid candidates (first stage)", d.before),
        ordersTable(d, g, crossBy.get(d.case_id)),
        g?.error ? h("p", { class: "detail" }, `Gemini: ${g.error.code}: ${g.error.detail}`) : null)));
  }
  out.push(h("p", { class: "note" }, gem.scope));

  const m = cov.mechanism_check;
  out.push(h("h3", {}, "Mechanism check"),
    h("p", {}, `${m.query} Reversed input: `, h("code", {}, sourceList(m.before)), " → coverage order: ", h("code", { id: "rerank-mechanism-after" }, sourceList(m.after)), "."),
    h("details", { class: "rcase-body" }, h("summary", {}, "Its coverage table"),
      coveredTable("Coverage of the reversed candidates", m.after)),
    h("p", { class: "note" }, `Scope: ${m.scope}.`));

  const u = cov.unfiltered_read_write_diagnostic;
  out.push(h("h3", {}, "Unfiltered read/write diagnostic"),
    h("p", {}, `${u.query} Every version is searched and every chunk kept.`),
    h("details", { class: "rcase-body" }, h("summary", {}, "Its candidates and coverage order"),
      candidatesTable("Candidates across versions", u.before),
      coveredTable("Their coverage order", u.after)),
    h("p", { class: "note" }, `Scope: ${u.scope}.`),
    h("p", {}, `Empty candidates give ${cov.empty_candidates.length} reranked rows; a candidate whose text was altered is refused with `,
      h("code", { id: "rerank-altered" }, cov.altered_candidate_refusal), "."),
    h("p", { class: "note" }, `Limit: ${cov.limit}`));

  out.push(h("h3", {}, "Twelve expanded cases"),
    h("p", {}, `Every version-eligible passage is a candidate; each scorer's top-1 and reciprocal rank against the target sources. Cases file sha256 ${ce.cases_sha256.slice(0, 12)}….`),
    h("details", { class: "rcase-body" }, h("summary", {}, "The twelve cases, each scorer's order and verdict"),
      table("Expanded cases", ["Case", "Split", "Stratum", "Version", "Targets", "Coverage order", "Cross-encoder order"],
        ce.expanded_cases.map((c) => h("tr", { dataset: { case: c.case_id } },
          h("th", { scope: "row" }, c.case_id), h("td", {}, c.split), h("td", {}, c.stratum), h("td", {}, c.version),
          h("td", {}, c.target_sources.length ? c.target_sources.join(", ") : "none"),
          scorerCell(c.coverage, c.outcome.coverage), scorerCell(c.cross_encoder, c.outcome.cross_encoder))), "expanded")),
    h("h3", {}, "Summary"),
    summaryTable(ce),
    h("p", { class: "note" }, "Unsupported questions have no target to hit, so they are outside every denominator. ", ce.scope));
  return out;
}
