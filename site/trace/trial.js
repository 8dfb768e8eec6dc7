// trace/trial.js renders trials, for the Replay, Trace, Run and Recordings views:
// a trial's row in a trials table, the per-path summary, and the whole
// trace: a header (who decided, with which generation config, tokens and
// the estimated cost with its price table, the five limits as meters, the
// waterfall), each step (collapsible) with its observation, latency, tokens
// and cost, and the exact request and raw reply of its model call, then the
// ending with citations highlighted in their passages, and the fixture
// checks with their reasons. Renderers take what they show as arguments and
// keep no state; anything fetched (a trial's exchanges, its export) comes
// through a function the caller passes.

import { h, append, badge, clear, meter, copyButton, outcomeBadge, external, breakable, passageLink, ownText } from "../common/dom.js";
import { usd, seconds, plural, count, score, DASH } from "../common/format.js";
import { waterfall, outcomeBars } from "../common/charts.js";
import { PRICE_HEADS, priceRows } from "../common/prices.js";
import { addButton } from "../common/addtoset.js";
import { annotationRegion, passageChoices } from "./annotate.js";

/** retrievalText is the "Expected sources read" cell: true, false or No target. */
function retrievalText(checks) {
  if (!checks) return DASH;
  const r = checks.retrieval_targets_read;
  return r === null || r === undefined ? "No target" : String(r);
}

/** outcomeOf is a trial's graded outcome (pass, fail, incomplete), a refused key, refused or ungraded. */
export function outcomeOf(t) {
  if (t.checks) return t.checks.outcome;
  if (t.key_refused) return "key";
  return t.error ? "refused" : "none";
}

/** reasonOf is a trial's stop reason, or why it was refused. */
export function reasonOf(t) {
  if (t.result) return t.result.reason;
  if (t.error) return `refused: ${t.error}`;
  return DASH;
}

/** outcomeWhy is a failing or incomplete trial's outcome in a few words
 * beside its badge, so a fail next to a stop reason that reads as success
 * (citation_contract_passed) says what the check wanted. */
export function outcomeWhy(t) {
  const c = t.checks;
  if (!c || c.outcome === "pass") return null;
  const code = c.answer_reason?.code;
  let text = "";
  if (code === "abstention_expected") text = t.result?.status === "answered" ? "answered where only a stop passes" : "ran out where only a stop passes";
  else if (c.outcome === "incomplete") text = "ended without an answer";
  else if (t.result?.status === "failed") text = "the run failed";
  else if (t.result?.status === "answered") text = "answered, but the answer check was not met";
  return text ? h("span", { class: "outcome-why" }, text) : null;
}

/** trialRow is a trial's row in a trials table; its Trace link (to href) calls onTrace(t). */
export function trialRow(t, onTrace, href = "#trace") {
  const traceLink = h("a", {
    href,
    onclick: (e) => { e.preventDefault(); onTrace(t); },
  }, "Trace", h("span", { class: "sr-only" }, ` of ${t.case_id} / ${t.repeat} ${t.mode}`));
  const search = [t.id, t.case_id, t.mode, reasonOf(t), t.result?.question, t.result?.answer].filter(Boolean).join(" ").toLowerCase();
  return h("tr", { dataset: { id: t.id, case: t.case_id, mode: t.mode, outcome: outcomeOf(t), reason: reasonOf(t), search } },
    h("th", { scope: "row" }, `${t.case_id || t.id} / ${t.repeat}`),
    h("td", {}, t.mode),
    h("td", {}, retrievalText(t.checks)),
    h("td", {}, outcomeBadge(outcomeOf(t)), outcomeWhy(t)),
    h("td", {}, h("code", {}, breakable(reasonOf(t)))),
    h("td", { class: "num" }, t.result ? t.result.usage.model_calls : DASH),
    h("td", {}, traceLink));
}

/** renderSummary fills a tbody with pass, fail and incomplete per path, and
 * (when given) a box with the same as stacked bars. */
export function renderSummary(tbody, summary, chartBox) {
  clear(tbody);
  for (const path of ["fixed", "agent"]) {
    const s = summary[path];
    tbody.append(h("tr", {}, h("th", { scope: "row" }, path), h("td", { class: "num" }, s.pass), h("td", { class: "num" }, s.fail), h("td", { class: "num" }, s.incomplete)));
  }
  if (chartBox) clear(chartBox).append(outcomeBars(summary));
}

/** LIMITS are the five limits, in the order the meters show them. */
const LIMITS = [["model calls", "model_calls"], ["searches", "searches"], ["reads", "reads"], ["source bytes", "source_bytes"]];

function counters(usage, limits) {
  if (!usage || !limits) return null;
  return h("p", { class: "counters" }, LIMITS.map(([n, k], i) => [i ? " · " : "", h("span", {}, `${n} ${usage[k]}/${limits[k]}`)]));
}

/** meters shows the five limits, seconds included (elapsed against the
 * deadline); its group is named after the trial (two side by side). */
function meters(usage, limits, elapsedSeconds, title) {
  const box = h("div", { class: "meters", role: "group", "aria-label": `Use of the limits, ${title}` });
  for (const [n, k] of LIMITS) box.append(meter(n, usage[k], limits[k]));
  const secs = elapsedSeconds === null || elapsedSeconds === undefined ? null : elapsedSeconds;
  box.append(secs === null
    ? meter("seconds", 0, limits.seconds, `not recorded / ${limits.seconds}`)
    : meter("seconds", secs, limits.seconds, `${secs.toFixed(2)} / ${limits.seconds}`));
  return box;
}

function tokensText(t) {
  const thinking = t.thoughts ? `, ${t.thoughts} thinking` : "";
  return `${plural(t.total, "token")} (${count(t.prompt)} prompt, ${count(t.candidates)} output${thinking})`;
}

function tokensLine(t) {
  if (!t) return null;
  return h("p", { class: "tokens" }, `Tokens: ${t.prompt} prompt, ${t.candidates} output${t.thoughts ? `, ${t.thoughts} thinking` : ""}, ${t.total} total`);
}

/** versionLabel names a passage's or a run's version: "Python 3.11" for
 * a corpus of Python's documentation (the subject its model was told
 * about, report.CorpusRef), "version 1.0" for any other or an unknown one. */
export function versionLabel(version, corpus) {
  return corpus?.subject === "Python documentation" ? `Python ${version}` : `version ${version}`;
}

/** codeText writes text into el with each `inline code` span as a <code>
 * element (an unmatched backtick stays as it is). */
export function codeText(el, text) {
  const parts = String(text).split("`");
  if (parts.length % 2 === 0) return append(el, [text]);
  parts.forEach((part, i) => el.append(i % 2 ? h("code", {}, part) : document.createTextNode(part)));
  return el;
}

/** passageBlock shows a passage with its receipt; quotes are highlighted.
 * Given the trial's question, it offers the passage as that question's
 * target in one of the pack's question sets (common/addtoset.js). */
function passageBlock(p, quotes = [], corpus = null, question = null) {
  const text = h("p", { class: "passage-text" });
  highlight(text, p.text, quotes);
  return h("div", { class: "passage" },
    h("p", { class: "passage-meta" },
      h("code", {}, p.source_id), ` (${versionLabel(p.version, corpus)}) · `,
      passageLink(p.url)),
    text,
    h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256)),
    question === null ? null : h("p", { class: "hit-add" }, addButton(p.source_id, () => ({
      pack: corpus?.id || "seed", title: corpus?.title || corpus?.id || "the seed", question, version: p.version, passages: [p] }))));
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

/** observationBlock is a step's observation: a search's candidates (with
 * the score the pack's ranking gave each, from the engine, when it is
 * known: the model saw only the ranks) or the passage read. */
function observationBlock(obs, corpus, scores = null, scoreKind = "", question = null) {
  if (!obs) return null;
  if (obs.tool === "search") {
    const cands = obs.result.candidates;
    const scored = Array.isArray(scores) && scores.some((x) => typeof x === "number");
    return h("div", { class: "obs" },
      h("p", {}, "Candidates (metadata only, not evidence):"),
      cands.length
        ? h("ol", { class: "cands" }, cands.map((c, i) => h("li", { dataset: { source: c.source_id } }, h("code", {}, c.source_id), ` · ${versionLabel(c.version, corpus)} · rank ${c.rank}`,
          scored ? [" · ", h("span", { class: "score", title: typeof scores[i] === "number" ? String(scores[i]) : null }, typeof scores[i] === "number" ? `score ${score(scores[i])}` : "score not found again")] : null)))
        : h("p", {}, "none"),
      scored && scoreKind ? h("p", { class: "help" }, `Scores: ${scoreKind}; the model saw only the ranks.`) : null);
  }
  return h("div", { class: "obs" }, h("p", {}, "Passage read (validated against its receipt):"), passageBlock(obs.result, [], corpus, question));
}

/** pretty indents a JSON text for reading (the text itself if it is not JSON). */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const byteLength = (s) => new TextEncoder().encode(s).length;

/** pane is one side of an exchange: the body shown indented, and a button that copies it exactly. */
function pane(title, text, cls) {
  return h("details", { class: `pane ${cls}`, open: true },
    h("summary", {}, title, ` (${plural(byteLength(text), "byte")})`),
    h("div", { class: "pane-tools" }, copyButton(text, "Copy exactly"), h("span", { class: "help" }, "shown indented; the copy is the exact body")),
    h("pre", { class: "body", tabindex: 0 }, pretty(text)));
}

/** userMessages shows each user turn of a request whose text is JSON (the
 * agent's state) parsed and indented, as the request pane shows it as one
 * escaped string. */
function userMessages(request) {
  let body;
  try {
    body = JSON.parse(request);
  } catch {
    return null;
  }
  const turns = (body?.contents || []).filter((c) => c.role === "user").flatMap((c) => (c.parts || []).map((p) => p.text)).filter((t) => typeof t === "string");
  const shown = turns.map((text) => {
    try {
      const v = JSON.parse(text);
      return v !== null && typeof v === "object" ? JSON.stringify(v, null, 2) : null;
    } catch {
      return null;
    }
  }).filter(Boolean);
  if (!shown.length) return null;
  return h("details", { class: "pane user-message", open: true },
    h("summary", {}, shown.length === 1 ? "User message, parsed" : `User messages (${shown.length}), parsed`),
    h("p", { class: "help" }, "The text of the request's user turn is itself JSON (what the agent knows so far); here it is parsed and indented."),
    shown.map((text) => h("pre", { class: "body", tabindex: 0 }, text)));
}

/** exchangeBox is a model call's request and reply, fetched when first opened. */
function exchangeBox(call, exchanges) {
  const box = h("details", { class: "exchange", dataset: { call } }, h("summary", {}, `Request and reply of model call ${call}`));
  const body = h("div", { class: "exchange-body" }, h("p", { class: "help" }, "Loading…"));
  box.append(body);
  box.addEventListener("toggle", async () => {
    if (!box.open || box.dataset.loaded) return;
    box.dataset.loaded = "1";
    try {
      const ex = (await exchanges()).exchanges.find((x) => x.call === call);
      if (!ex) {
        clear(body).append(h("p", { class: "help" }, "Nothing was sent for this call, so there is no request or reply."));
        return;
      }
      const reply = ex.error
        ? h("div", { class: "pane reply error" }, h("p", {}, `No reply: ${ex.error}${ex.http_status ? ` (HTTP ${ex.http_status})` : ""}. The body of a failed attempt is not recorded.`))
        : pane("Raw reply, as recorded", ex.response, "reply");
      clear(body).append(pane("Request body, as sent", ex.request, "request"), userMessages(ex.request), reply,
        ex.sent_at ? h("p", { class: "help" }, `Sent at ${ex.sent_at}.`) : "");
    } catch (err) {
      clear(body).append(h("p", { class: "error" }, `Could not load the exchange: ${err.message}`));
    }
  });
  return box;
}

/** narrow says whether the page is phone-sized (steps then start folded). */
const narrow = () => typeof matchMedia === "function" && matchMedia("(max-width: 40rem)").matches;

/** stepItem is one step, collapsible: the call, the action and its
 * argument, the outcome and reason, its time, tokens and cost in the
 * summary; the model's assessment, why it searched again after
 * earlierReads, the observation, the counters and the model call's
 * request and reply inside. */
function stepItem(step, obs, limits, earlierReads, extra = {}) {
  const call = step.call ? `Call ${step.call}` : "Fixed retrieval";
  const action = step.action || "(refused reply)";
  const facts = [];
  if (extra.time) facts.push(seconds(extra.time.end_ms - extra.time.start_ms));
  if (step.tokens) facts.push(plural(step.tokens.total, "token"));
  if (extra.usd !== null && extra.usd !== undefined) facts.push(`${usd(extra.usd)} est.`);
  const details = h("details", { class: "step-box", open: !narrow() },
    h("summary", { class: "step-head" },
      h("span", { class: "call" }, call), " ",
      h("strong", { class: "action" }, action), " ",
      step.argument ? h("code", { class: "arg" }, step.argument) : null, " ",
      badge(step.outcome),
      step.reason ? [" ", h("span", { class: "reason" }, step.reason)] : null,
      facts.length ? [" ", h("span", { class: "step-facts" }, facts.join(" · "))] : null));
  if (step.assessment) {
    details.append(h("figure", { class: "assessment" },
      h("figcaption", {}, "Model assessment"),
      h("blockquote", {}, step.assessment)));
  } else if (!step.call) {
    details.append(h("p", { class: "help" }, "The fixed path's own retrieval: no model call."));
  }
  if (step.action === "search" && step.call && earlierReads.length) {
    details.append(h("p", { class: "why" }, `Searched again after reading ${earlierReads.join(", ")}.`));
  }
  if (step.detail) details.append(h("p", { class: "detail" }, step.detail));
  details.append(observationBlock(obs, extra.corpus, extra.scores, extra.scoreKind, extra.question ?? null) || "", counters(step.usage, limits) || "");
  if (step.tokens) details.append(h("p", { class: "tokens" }, `Tokens: ${tokensText(step.tokens)}${extra.usd !== null && extra.usd !== undefined ? ` · estimated ${usd(extra.usd)}` : ""}${step.model_version ? ` · model ${step.model_version}` : ""}`));
  if (extra.time?.model_ms !== null && extra.time?.model_ms !== undefined) details.append(h("p", { class: "tokens" }, `Model latency ${seconds(extra.time.model_ms)}`));
  if (step.call && extra.exchanges) details.append(exchangeBox(step.call, extra.exchanges));
  return h("li", { class: `step o-${step.outcome}` }, details);
}

/**
 * stepList is an ordered list of steps that grows one step at a time (a
 * live run's steps as they happen, or a finished result's), keeping track
 * of which sources were read before each step. extra(i) gives step i's
 * time, cost and exchanges when known.
 */
export function stepList(limits, attrs = {}, extra = () => ({})) {
  const ol = h("ol", { class: "steps", ...attrs });
  const reads = [];
  let i = 0;
  return {
    el: ol,
    add(step, obs) {
      ol.append(stepItem(step, obs, limits, [...reads], extra(i++)));
      if (obs && obs.tool === "read") reads.push(obs.result.source_id);
    },
  };
}

/** configText is a generation config as one line (nested values as JSON). */
function configText(config) {
  if (!config || typeof config !== "object") return null;
  return Object.entries(config).map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ");
}

/** priceTable lists the price table, the trial's model first and marked;
 * its region is named after the trial, so two trials side by side (the
 * Trace view's pair) do not give two regions one name. */
function priceTable(prices, model, note, title) {
  return h("details", { class: "prices" },
    h("summary", {}, "Price table (list prices; every cost here is an estimate)"),
    h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": `Price table, ${title}` },
      h("table", { class: "price-table" },
        h("thead", {}, h("tr", {}, PRICE_HEADS.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, priceRows(prices, model, " (this trace)")))),
    h("p", { class: "help" }, note));
}

/** header is a trial's who, what and how much: model and config, tokens
 * and estimated cost with the price table, elapsed time, the limits as
 * meters, the waterfall, and the export. */
function header(t, o) {
  const r = t.result;
  const model = t.model || o.model;
  const config = t.config || o.config;
  const versions = [...new Set(r.steps.map((s) => s.model_version).filter(Boolean))];
  const rows = [];
  if (model === "scripted") {
    rows.push(["Decided by", "the scripted policy (offline rules; no model, nothing sent)"]);
  } else if (model) {
    rows.push(["Model", [h("code", {}, model), versions.length ? ` (replies from ${versions.join(", ")})` : "", o.source && o.source !== "session" ? " · recorded" : ""]]);
    if (config) rows.push(["Generation config", h("code", { class: "config" }, configText(config))]);
  }
  if (r.tokens && r.tokens.total) rows.push(["Tokens", tokensText(r.tokens)]);
  if (t.cost && r.tokens?.total) rows.push(["Estimated cost", [h("strong", { class: "trace-cost", title: String(t.cost.total_usd) }, usd(t.cost.total_usd)),
    ` at $${t.cost.rate.input_usd_per_mtok}/M input, $${t.cost.rate.output_usd_per_mtok}/M output (an estimate from list prices)`]]);
  if (t.elapsed_seconds !== null && t.elapsed_seconds !== undefined) {
    rows.push(["Elapsed", `${seconds(t.elapsed_seconds * 1000)} (${t.timing?.source === "measured" ? "measured here" : "as recorded"})`]);
  }
  const box = h("div", { class: "trace-head" },
    h("dl", { class: "plan-list trace-meta" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    meters(r.usage, r.limits, t.elapsed_seconds, trialTitle(t)));
  if (t.timing) box.append(waterfall(r.steps, t.timing));
  else box.append(h("p", { class: "help no-timing" }, `No per-step times: this recording keeps only the trial's elapsed time${t.elapsed_seconds ? ` (${seconds(t.elapsed_seconds * 1000)})` : ""}, not when each request was sent.`));
  if (o.constants && t.cost && r.tokens?.total) box.append(priceTable(o.constants.prices, model, o.constants.estimate_note, trialTitle(t)));
  if (o.exportTrace) {
    const status = h("span", { class: "help", role: "status" });
    const b = h("button", { type: "button", class: "small export" }, "Download this trace (OTLP/JSON)");
    b.addEventListener("click", async () => {
      status.textContent = "Exporting…";
      try {
        await o.exportTrace();
        status.textContent = "Downloaded: OpenTelemetry spans with OpenInference attributes.";
      } catch (err) {
        status.textContent = `Could not export: ${err.message}`;
      }
    });
    box.append(h("div", { class: "controls" }, b, status));
  }
  return box;
}

function stepsOf(t, o) {
  const r = t.result;
  const steps = r.steps || [];
  const list = stepList(r.limits, {}, (i) => ({ time: t.timing?.steps[i], usd: t.cost?.steps_usd[i], exchanges: o.exchanges, corpus: t.corpus, question: r.question ?? null,
    scores: steps[i] && steps[i].observation >= 0 ? t.scores?.[steps[i].observation] : null, scoreKind: t.score_kind }));
  for (const step of r.steps || []) list.add(step, step.observation >= 0 ? r.observations[step.observation] : null);
  return list.el;
}

/** why is a check's reason: its code and its sentence. */
function why(reason) {
  if (!reason) return null;
  return [" ", h("code", { class: "why-code" }, reason.code), " ", h("span", { class: "why-text" }, ownText(reason.detail))];
}

/** checksBlock lists the fixture checks, each with its value and its reason. */
function checksBlock(c) {
  return [h("h4", {}, "Fixture checks"), h("ul", { class: "checks" },
    h("li", { dataset: { check: "outcome" } }, "Answer fixture: ", outcomeBadge(c.outcome), why(c.outcome_reason)),
    h("li", { dataset: { check: "retrieval" } }, `Expected sources read: ${retrievalText(c)}`, why(c.retrieval_reason)),
    h("li", { dataset: { check: "answer" } }, `Answer check: ${c.answer_fixture_check ? "met" : "not met"}`, why(c.answer_reason)),
    h("li", {}, `Queries: ${c.trajectory.queries.map((q) => `“${q}”`).join(", ") || "none"}`),
    h("li", {}, `Refined: ${c.trajectory.refined} · within limits: ${c.trajectory.within_limits}`),
    h("li", { class: "help" }, c.scope))];
}

/** keyProblem says that the API refused the key: not a fixture result. */
export function keyProblem(k) {
  return h("div", { class: "message error key-problem", role: "alert" },
    h("p", {}, h("strong", {}, `The API refused the key (HTTP ${k.http_status}).`), " ", k.detail),
    h("p", {}, "This is a problem with the key, not a fixture result, so the run is not graded. Check the key (",
      external("https://aistudio.google.com/apikey", "Google AI Studio"),
      "), or forget it and paste another."));
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
    box.append(h("h4", {}, "Answer"), codeText(h("p", { class: "answer" }), r.answer));
    const byPassage = new Map();
    for (const c of r.citations) {
      if (!byPassage.has(c.source_id)) byPassage.set(c.source_id, []);
      byPassage.get(c.source_id).push(c.quote);
    }
    box.append(h("h4", {}, "Citations, highlighted in the passages they quote"));
    for (const [id, quotes] of byPassage) {
      const p = passages.get(id);
      if (p) box.append(passageBlock(p, quotes, t.corpus, r.question ?? null));
      else box.append(h("p", {}, h("code", {}, id), ": ", quotes.join(" · ")));
    }
  }
  if (r.tokens && r.tokens.total) box.append(tokensLine(r.tokens));
  if (t.key_refused) box.append(keyProblem(t.key_refused));
  else if (t.checks) box.append(...checksBlock(t.checks));
  else box.append(h("p", { class: "help" }, "No authored case matches this trial, so there are no fixture checks."));
  return box;
}

/** trialTitle is a trial's heading, which names its regions too. */
function trialTitle(t) {
  return t.case_id ? `${t.case_id} / ${t.repeat}, ${t.mode} path` : `${t.id}, ${t.mode} path`;
}

/**
 * trialView renders a whole trial. o: passages (source_id -> passage),
 * constants (load()'s: the price table and the estimate note), model and
 * config (the recording's, for a replayed trial), source ("bundled",
 * "loaded" or "session"), exchanges() (a Promise of the trial's recorded
 * exchanges; none for a run that sent nothing), exportTrace() (downloads
 * its OTLP/JSON), headingLevel, annotate ({kind, id} of what the person's
 * annotation judges, trace/annotate.js: its region closes the trial).
 */
export function trialView(t, o) {
  const r = t.result;
  const title = trialTitle(t);
  const art = h("article", { class: "trial", id: `trial-${t.id}`, tabindex: "-1", "aria-label": title, dataset: { trial: t.id } });
  art.append(h(o.headingLevel || "h3", {}, title));
  if (r) {
    art.append(h("p", { class: "question" }, h("span", { class: "label" }, "Question: "), r.question),
      h("p", { class: "help" }, `${t.corpus && t.corpus.subject !== "Python documentation" ? `${t.corpus.title}, ` : ""}${versionLabel(r.version, t.corpus)} · limits: ${Object.entries(r.limits).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ")}`),
      header(t, o),
      stepsOf(t, o));
  }
  art.append(ending(t, o.passages));
  if (o.annotate) {
    art.append(annotationRegion({ ...o.annotate, title, pack: t.corpus?.id || "seed", subject: { trial: t.id, case_id: t.case_id || "", mode: t.mode, question: r?.question || "" } },
      passageChoices(t, o.passages)));
  }
  return art;
}
