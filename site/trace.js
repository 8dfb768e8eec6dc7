// trace.js renders trials, for the Replay, Trace, Run and Recordings views:
// a trial's row in a trials table, the per-path summary, and the whole
// trace (question, each step with its observation, counters and tokens,
// the ending with citations highlighted in their passages, and the fixture
// checks). Renderers take what they show as arguments and keep no state.

import { h, badge, clear } from "./dom.js";

/** retrievalText is the "Expected sources read" cell: true, false or No target. */
function retrievalText(checks) {
  if (!checks) return "–";
  const r = checks.retrieval_targets_read;
  return r === null || r === undefined ? "No target" : String(r);
}

/** outcomeOf is a trial's graded outcome (pass, fail, incomplete), refused or –. */
function outcomeOf(t) {
  return t.checks ? t.checks.outcome : t.error ? "refused" : "–";
}

function reasonOf(t) {
  if (t.result) return t.result.reason;
  if (t.error) return `refused: ${t.error}`;
  return "–";
}

/** trialRow is a trial's row in a trials table; its Trace link calls onTrace(t). */
export function trialRow(t, onTrace) {
  const traceLink = h("a", {
    href: "#trace",
    onclick: (e) => { e.preventDefault(); onTrace(t); },
  }, "Trace", h("span", { class: "sr-only" }, ` of ${t.case_id} / ${t.repeat} ${t.mode}`));
  return h("tr", { dataset: { case: t.case_id, mode: t.mode, outcome: outcomeOf(t) } },
    h("th", { scope: "row" }, `${t.case_id || t.id} / ${t.repeat}`),
    h("td", {}, t.mode),
    h("td", {}, retrievalText(t.checks)),
    h("td", {}, t.checks ? badge(t.checks.outcome) : "–"),
    h("td", {}, h("code", {}, reasonOf(t))),
    h("td", { class: "num" }, t.result ? t.result.usage.model_calls : "–"),
    h("td", {}, traceLink));
}

/** renderSummary fills a tbody with pass, fail and incomplete per path. */
export function renderSummary(tbody, summary) {
  clear(tbody);
  for (const path of ["fixed", "agent"]) {
    const s = summary[path];
    tbody.append(h("tr", {}, h("th", { scope: "row" }, path), h("td", { class: "num" }, s.pass), h("td", { class: "num" }, s.fail), h("td", { class: "num" }, s.incomplete)));
  }
}

function counters(usage, limits) {
  if (!usage || !limits) return null;
  const parts = [
    ["model calls", usage.model_calls, limits.model_calls],
    ["searches", usage.searches, limits.searches],
    ["reads", usage.reads, limits.reads],
    ["source bytes", usage.source_bytes, limits.source_bytes],
  ];
  return h("p", { class: "counters" }, parts.map(([n, u, l], i) => [i ? " · " : "", h("span", {}, `${n} ${u}/${l}`)]));
}

function tokensLine(t) {
  if (!t) return null;
  const thinking = t.thoughts ? `, ${t.thoughts} thinking` : "";
  return h("p", { class: "tokens" }, `Tokens: ${t.prompt} prompt, ${t.candidates} output${thinking}, ${t.total} total`);
}

/** passageBlock shows a passage with its receipt; quotes are highlighted. */
function passageBlock(p, quotes = []) {
  const text = h("p", { class: "passage-text" });
  highlight(text, p.text, quotes);
  return h("div", { class: "passage" },
    h("p", { class: "passage-meta" },
      h("code", {}, p.source_id), ` (Python ${p.version}) · `,
      h("a", { href: p.url, rel: "noopener noreferrer", target: "_blank" }, p.url)),
    text,
    h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256)));
}

/** highlight writes text into el with each quote wrapped in <mark>. */
function highlight(el, text, quotes) {
  const spans = [];
  for (const q of quotes) {
    if (!q) continue;
    let at = text.indexOf(q);
    while (at >= 0) {
      spans.push([at, at + q.length]);
      at = text.indexOf(q, at + q.length);
    }
  }
  spans.sort((a, b) => a[0] - b[0]);
  let pos = 0;
  for (const [s, e] of spans) {
    if (s < pos) continue;
    el.append(document.createTextNode(text.slice(pos, s)), h("mark", {}, text.slice(s, e)));
    pos = e;
  }
  el.append(document.createTextNode(text.slice(pos)));
}

function observationBlock(obs) {
  if (!obs) return null;
  if (obs.tool === "search") {
    const cands = obs.result.candidates;
    return h("div", { class: "obs" },
      h("p", {}, "Candidates (metadata only, not evidence):"),
      cands.length
        ? h("ol", { class: "cands" }, cands.map((c) => h("li", {}, h("code", {}, c.source_id), ` · Python ${c.version} · rank ${c.rank}`)))
        : h("p", {}, "none"));
  }
  return h("div", { class: "obs" }, h("p", {}, "Passage read (validated against its receipt):"), passageBlock(obs.result));
}

/** stepItem is one step: the call, the action and its argument, the
 * outcome and reason, the model's assessment, why it searched again after
 * earlierReads, the observation, the counters and the tokens. */
function stepItem(step, obs, limits, earlierReads) {
  const call = step.call ? `Call ${step.call}` : "Fixed retrieval";
  const action = step.action || "(refused reply)";
  const li = h("li", { class: `step o-${step.outcome}` },
    h("div", { class: "step-head" },
      h("span", { class: "call" }, call), " ",
      h("strong", { class: "action" }, action), " ",
      step.argument ? h("code", { class: "arg" }, step.argument) : null, " ",
      badge(step.outcome),
      step.reason ? [" ", h("span", { class: "reason" }, step.reason)] : null));
  if (step.assessment) {
    li.append(h("figure", { class: "assessment" },
      h("figcaption", {}, "Model assessment"),
      h("blockquote", {}, step.assessment)));
  } else if (!step.call) {
    li.append(h("p", { class: "help" }, "The fixed path's own retrieval: no model call."));
  }
  if (step.action === "search" && step.call && earlierReads.length) {
    li.append(h("p", { class: "why" }, `Searched again after reading ${earlierReads.join(", ")}.`));
  }
  if (step.detail) li.append(h("p", { class: "detail" }, step.detail));
  li.append(observationBlock(obs) || "", counters(step.usage, limits) || "", tokensLine(step.tokens) || "");
  return li;
}

/**
 * stepList is an ordered list of steps that grows one step at a time (a
 * live run's steps as they happen, or a finished result's), keeping track
 * of which sources were read before each step.
 */
export function stepList(limits, attrs = {}) {
  const ol = h("ol", { class: "steps", ...attrs });
  const reads = [];
  return {
    el: ol,
    add(step, obs) {
      ol.append(stepItem(step, obs, limits, [...reads]));
      if (obs && obs.tool === "read") reads.push(obs.result.source_id);
    },
  };
}

function stepsOf(result) {
  const list = stepList(result.limits);
  for (const step of result.steps || []) list.add(step, step.observation >= 0 ? result.observations[step.observation] : null);
  return list.el;
}

function ending(t, passages) {
  const r = t.result;
  const box = h("div", { class: "ending" });
  if (!r) {
    box.append(h("p", {}, "Refused before it started: ", h("strong", {}, t.error || "?"), t.error_detail ? ` (${t.error_detail})` : ""));
    return box;
  }
  box.append(h("p", { class: "final" }, "Ended ", badge(r.status), " ", h("strong", {}, r.reason), r.detail ? ` — ${r.detail}` : ""));
  if (r.status === "answered") {
    box.append(h("h4", {}, "Answer"), h("p", { class: "answer" }, r.answer));
    const byPassage = new Map();
    for (const c of r.citations) {
      if (!byPassage.has(c.source_id)) byPassage.set(c.source_id, []);
      byPassage.get(c.source_id).push(c.quote);
    }
    box.append(h("h4", {}, "Citations, highlighted in the passages they quote"));
    for (const [id, quotes] of byPassage) {
      const p = passages.get(id);
      if (p) box.append(passageBlock(p, quotes));
      else box.append(h("p", {}, h("code", {}, id), ": ", quotes.join(" · ")));
    }
  }
  if (r.tokens && r.tokens.total) box.append(tokensLine(r.tokens));
  if (t.checks) {
    const c = t.checks;
    box.append(h("h4", {}, "Fixture checks"), h("ul", { class: "checks" },
      h("li", {}, `Expected sources read: ${retrievalText(c)}`),
      h("li", {}, "Answer fixture: ", badge(c.answer_fixture_check ? "passed" : "failed", c.answer_fixture_check ? "pass" : "fail"), ` (outcome ${c.outcome})`),
      h("li", {}, `Queries: ${c.trajectory.queries.map((q) => `“${q}”`).join(", ") || "none"}`),
      h("li", {}, `Refined: ${c.trajectory.refined} · within limits: ${c.trajectory.within_limits}`),
      h("li", { class: "help" }, c.scope)));
  } else {
    box.append(h("p", { class: "help" }, "No authored case matches this trial, so there are no fixture checks."));
  }
  return box;
}

/** trialView renders a whole trial: its question, steps and ending, with
 * each cited passage looked up in passages (source_id -> passage). */
export function trialView(t, passages, headingLevel = "h3") {
  const r = t.result;
  const title = t.case_id ? `${t.case_id} / ${t.repeat}, ${t.mode} path` : `${t.id}, ${t.mode} path`;
  const art = h("article", { class: "trial", id: `trial-${t.id}`, tabindex: "-1", "aria-label": title });
  art.append(h(headingLevel, {}, title));
  if (r) {
    art.append(h("p", { class: "question" }, h("span", { class: "label" }, "Question: "), r.question),
      h("p", { class: "help" }, `Python ${r.version} · limits: ${Object.entries(r.limits).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ")}`),
      stepsOf(r));
  }
  art.append(ending(t, passages));
  return art;
}
