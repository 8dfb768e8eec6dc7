// app.js is the page's one ES module: it renders the views, talks to the
// engine in worker.js, and alone holds the Gemini key (sending it only as
// the x-goog-api-key header of a live request). Everything that comes from
// a recording, a passage or a model is inserted as text, never as HTML.

const GEMINI_ENDPOINT = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.8-flash:generateContent";
const MAX_RESPONSE_BYTES = 262144;
const KEY_STORAGE = "ragagent.key";

performance.mark("shell-start");

// ---------- DOM helpers (text only) ----------

/** h builds an element; string and number children become text nodes. */
function h(tag, props = {}, ...children) {
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

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** safeURL allows only https links (and in-page anchors) from data. */
function safeURL(u) {
  return typeof u === "string" && (u.startsWith("https://") || u.startsWith("#"));
}

const $ = (sel) => document.querySelector(sel);

function clear(el) {
  el.replaceChildren();
  return el;
}

function option(value, label, selected = false) {
  const o = h("option", { value }, label);
  o.selected = selected;
  return o;
}

function isLoopbackHost(host) {
  host = host.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

// ---------- engine client ----------

// boot.js has usually started the worker already (else it is started here);
// its early messages are handed over once the progress code below exists.
const boot = self.ragagentBoot ??= { worker: new Worker("worker.js"), early: [] };
const worker = boot.worker;
let nextCall = 0;
const calls = new Map();

/** call invokes an engine method in the worker; onEvent sees its progress events. */
function call(op, args = [], onEvent) {
  const id = ++nextCall;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject, onEvent });
    worker.postMessage({ id, op, args });
  });
}

class EngineError extends Error {
  constructor(e) {
    super(e.message);
    this.name = e.name || "Error";
    this.code = e.code;
    this.detail = e.detail;
  }
}

let resolveReady, rejectReady;
const engineReady = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });

worker.onmessage = (event) => {
  const msg = event.data;
  if (msg.type === "progress") return onProgress(msg);
  if (msg.type === "fetch") return liveFetch(msg);
  if (msg.type === "abortFetch") return abortFetch(msg.fetchId);
  const pending = calls.get(msg.id);
  if (!pending) return;
  if (msg.event) {
    pending.onEvent?.(msg);
    return;
  }
  calls.delete(msg.id);
  if (msg.ok) pending.resolve(msg.value);
  else pending.reject(new EngineError(msg.error));
};
worker.onerror = (event) => {
  onProgress({ stage: "failed", message: event.message || "the engine worker failed to start" });
};

// ---------- start-up progress ----------

const timings = {};
let engineTag = ""; // main.wasm's ETag: which engine build the code cache holds
const progressBar = $("#engine-progress");
const progressLabel = $("#engine-label");

function mb(n) {
  return (n / 1048576).toFixed(1);
}

function onProgress(p) {
  timings[p.stage] ??= Math.round(p.at - performance.timeOrigin); // since navigation
  document.body.dataset.engine = p.stage;
  switch (p.stage) {
    case "download":
      if (p.total) {
        progressBar.max = p.total;
        progressBar.value = p.loaded;
        progressLabel.textContent = `Downloading the engine: ${mb(p.loaded)} of ${mb(p.total)} MB`;
      } else {
        progressBar.removeAttribute("value");
        progressLabel.textContent = p.loaded ? `Downloading the engine: ${mb(p.loaded)} MB` : "Downloading the engine…";
      }
      break;
    case "compile":
      progressBar.removeAttribute("value");
      progressLabel.textContent = `Downloaded ${mb(p.loaded)} MB; compiling the engine…`;
      break;
    case "start":
      progressBar.removeAttribute("value");
      progressLabel.textContent = "Starting the engine…";
      break;
    case "index":
      progressLabel.textContent = "Indexing the passages in SQLite FTS5…";
      break;
    case "ready":
      performance.mark("engine-ready");
      engineTag = p.etag || "";
      progressBar.max = 1;
      progressBar.value = 1;
      progressLabel.textContent = `Engine ready in ${(performance.measure("ready", "shell-start", "engine-ready").duration / 1000).toFixed(2)} s.`;
      $("#engine").classList.add("done");
      resolveReady(p.info);
      break;
    case "failed":
      progressLabel.textContent = `The engine could not start: ${p.message}`;
      $("#engine").classList.add("failed");
      rejectReady(new Error(p.message));
      break;
  }
}

for (const event of boot.early.splice(0)) (event.type === "error" ? worker.onerror : worker.onmessage)(event);

// ---------- views ----------

const views = ["replay", "trace", "run", "recordings", "corpus"];

function showView(name, focus = false) {
  if (!views.includes(name)) name = "replay";
  for (const v of views) {
    $(`#view-${v}`).hidden = v !== name;
    const link = document.querySelector(`a[data-view="${v}"]`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (focus) $(`#view-${name} h2`).focus?.();
}

window.addEventListener("hashchange", () => showView(location.hash.slice(1), true));
for (const h2 of document.querySelectorAll(".view h2")) h2.tabIndex = -1;
showView(location.hash.slice(1));
performance.mark("shell-rendered");

// ---------- shared state ----------

const state = {
  info: null,
  passages: new Map(),
  bundled: null, // replay report of the bundled recording
  loaded: null, // replay report of a loaded recording
  runs: 0,
};

// ---------- rendering a trial ----------

function retrievalText(checks) {
  if (!checks) return "–";
  const r = checks.retrieval_targets_read;
  return r === null || r === undefined ? "No target" : String(r);
}

function outcomeOf(t) {
  return t.checks ? t.checks.outcome : t.error ? "refused" : "–";
}

function reasonOf(t) {
  if (t.result) return t.result.reason;
  if (t.error) return `refused: ${t.error}`;
  return "–";
}

function badge(text, kind = text) {
  return h("span", { class: `badge b-${kind}` }, text);
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

/** stepsList renders a result's steps with their observations. */
function stepsList(result) {
  const ol = h("ol", { class: "steps" });
  const reads = [];
  for (const step of result.steps || []) {
    const obs = step.observation >= 0 ? result.observations[step.observation] : null;
    ol.append(stepItem(step, obs, result.limits, [...reads]));
    if (obs && obs.tool === "read") reads.push(obs.result.source_id);
  }
  return ol;
}

function ending(t) {
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
      const p = state.passages.get(id);
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

/** trialView renders a whole trial: its question, steps and ending. */
function trialView(t, headingLevel = "h3") {
  const r = t.result;
  const title = t.case_id ? `${t.case_id} / ${t.repeat}, ${t.mode} path` : `${t.id}, ${t.mode} path`;
  const art = h("article", { class: "trial", id: `trial-${t.id}`, tabindex: "-1", "aria-label": title });
  art.append(h(headingLevel, {}, title));
  if (r) {
    art.append(h("p", { class: "question" }, h("span", { class: "label" }, "Question: "), r.question),
      h("p", { class: "help" }, `Python ${r.version} · limits: ${Object.entries(r.limits).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ")}`),
      stepsList(r));
  }
  art.append(ending(t));
  return art;
}

// ---------- replay view ----------

function trialRow(t, source) {
  const traceLink = h("a", {
    href: "#trace",
    onclick: (e) => { e.preventDefault(); openTrace(source, t.case_id, t.repeat, t.id); },
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

function renderSummary(tbody, summary) {
  clear(tbody);
  for (const path of ["fixed", "agent"]) {
    const s = summary[path];
    tbody.append(h("tr", {}, h("th", { scope: "row" }, path), h("td", { class: "num" }, s.pass), h("td", { class: "num" }, s.fail), h("td", { class: "num" }, s.incomplete)));
  }
}

function applyFilters() {
  const c = $("#filter-case").value, p = $("#filter-path").value, o = $("#filter-outcome").value;
  let shown = 0;
  for (const tr of $("#trials tbody").rows) {
    const ok = (!c || tr.dataset.case === c) && (!p || tr.dataset.mode === p) && (!o || tr.dataset.outcome === o);
    tr.hidden = !ok;
    if (ok) shown++;
  }
  $("#trials-caption").textContent = `Trials (${shown} of ${$("#trials tbody").rows.length} shown)`;
}

async function replayBundled() {
  const status = $("#replay-status");
  $("#replay-run").disabled = true;
  status.textContent = "Replaying…";
  const t0 = performance.now();
  try {
    const rep = await call("replay", [{}], (e) => { status.textContent = `Replaying trial ${e.done} of ${e.total}…`; });
    const ms = performance.now() - t0;
    performance.mark("replay-done");
    timings.replayMs = ms;
    timings.replayEngineMs = rep.elapsed_ms;
    state.bundled = rep;
    const tbody = clear($("#trials tbody"));
    for (const t of rep.trials) tbody.append(trialRow(t, "bundled"));
    renderSummary($("#summary tbody"), rep.summary);
    const cases = [...new Set(rep.trials.map((t) => t.case_id))];
    const sel = $("#filter-case");
    const keep = sel.value;
    sel.replaceChildren(option("", "All cases"), ...cases.map((c) => option(c, c, c === keep)));
    applyFilters();
    status.textContent = `${rep.trials.length} trials replayed in ${Math.round(ms)} ms (engine ${Math.round(rep.elapsed_ms)} ms): ${rep.exchanges_used} of ${rep.exchanges} recorded exchanges used, no API calls.`;
    document.body.dataset.replay = "done";
    if (!state.traceShown) openTrace("bundled", "serialize-and-save", 1, null, false);
  } catch (err) {
    status.textContent = `Replay failed: ${err.message}`;
  } finally {
    $("#replay-run").disabled = false;
  }
}

for (const id of ["#filter-case", "#filter-path", "#filter-outcome"]) $(id).addEventListener("change", applyFilters);
$("#replay-run").addEventListener("click", replayBundled);

// ---------- trace view ----------

function traceReport(source) {
  return source === "loaded" ? state.loaded : state.bundled;
}

function fillTraceSelectors(source, caseID, repeat) {
  const rep = traceReport(source);
  if (!rep) return;
  const cases = [...new Set(rep.trials.map((t) => t.case_id))];
  $("#trace-case").replaceChildren(...cases.map((c) => option(c, c || "(no case)", c === caseID)));
  const repeats = [...new Set(rep.trials.filter((t) => t.case_id === caseID).map((t) => t.repeat))];
  $("#trace-repeat").replaceChildren(...repeats.map((r) => option(String(r), String(r), r === repeat)));
  $("#trace-source").value = source;
}

/** openTrace shows fixed and agent side by side for a case and repeat. */
function openTrace(source, caseID, repeat, focusID, navigate = true) {
  const rep = traceReport(source);
  if (!rep) return;
  state.traceShown = true;
  fillTraceSelectors(source, caseID, repeat);
  const pair = clear($("#trace-pair"));
  const trials = rep.trials.filter((t) => t.case_id === caseID && t.repeat === repeat);
  trials.sort((a, b) => (a.mode === "fixed" ? -1 : 1) - (b.mode === "fixed" ? -1 : 1));
  for (const t of trials) pair.append(trialView(t));
  if (!trials.length) pair.append(h("p", {}, "No trial matches."));
  if (navigate) {
    if (location.hash !== "#trace") history.pushState(null, "", "#trace");
    showView("trace");
    const target = focusID ? document.getElementById(`trial-${focusID}`) : pair.firstElementChild;
    target?.focus();
  }
}

$("#trace-source").addEventListener("change", () => {
  const rep = traceReport($("#trace-source").value);
  if (rep && rep.trials.length) openTrace($("#trace-source").value, rep.trials[0].case_id, rep.trials[0].repeat, null, false);
});
$("#trace-case").addEventListener("change", () => {
  const source = $("#trace-source").value;
  const rep = traceReport(source);
  const first = rep.trials.find((t) => t.case_id === $("#trace-case").value);
  openTrace(source, first.case_id, first.repeat, null, false);
});
$("#trace-repeat").addEventListener("change", () => {
  openTrace($("#trace-source").value, $("#trace-case").value, Number($("#trace-repeat").value), null, false);
});

// ---------- live fetch (the only code that touches the key) ----------

let apiKey = "";
const params = new URLSearchParams(location.search);
let endpoint = GEMINI_ENDPOINT;
const override = params.get("endpoint");
if (override) {
  // A test may point the page at a fake Gemini, but only a page served from
  // this machine, and only at an endpoint on this machine.
  try {
    const u = new URL(override);
    if (isLoopbackHost(location.hostname) && isLoopbackHost(u.hostname) && /^https?:$/.test(u.protocol) && !u.username && !u.search && !u.hash) {
      // A bare origin gets the API's path, as the engine resolves it.
      endpoint = u.pathname === "/" ? `${u.origin}${new URL(GEMINI_ENDPOINT).pathname}` : u.href;
    }
  } catch { /* not a URL: keep the real endpoint */ }
}
const inflight = new Map();

async function liveFetch({ fetchId, endpoint: target, body, timeoutMs }) {
  const reply = (msg, transfer = []) => worker.postMessage({ fetchId, ...msg }, transfer);
  if (target !== endpoint) {
    return reply({ type: "fetchFailed", kind: "URLError", message: "the engine asked for an endpoint this page does not allow" });
  }
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = typeof timeoutMs === "number" ? setTimeout(() => { timedOut = true; ctrl.abort(); }, timeoutMs) : null;
  inflight.set(fetchId, ctrl);
  try {
    const res = await fetch(target, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-goog-api-key": apiKey },
      body,
      redirect: "manual",
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
      signal: ctrl.signal,
    });
    if (res.type === "opaqueredirect") return reply({ type: "fetched", status: 300, body: new Uint8Array(0) });
    const bytes = await readCapped(res, MAX_RESPONSE_BYTES + 1);
    reply({ type: "fetched", status: res.status, body: bytes }, [bytes.buffer]);
  } catch (err) {
    reply({ type: "fetchFailed", kind: timedOut ? "TimeoutError" : "URLError", message: timedOut ? "timed out" : "the request failed" });
  } finally {
    clearTimeout(timer);
    inflight.delete(fetchId);
  }
}

function abortFetch(fetchId) {
  inflight.get(fetchId)?.abort();
}

async function readCapped(res, cap) {
  const reader = res.body.getReader();
  const chunks = [];
  let n = 0;
  while (n < cap) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.byteLength;
  }
  if (n >= cap) reader.cancel().catch(() => {});
  const out = new Uint8Array(Math.min(n, cap));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, Math.min(c.byteLength, out.length - at));
    out.set(part, at);
    at += part.byteLength;
    if (at >= out.length) break;
  }
  return out;
}

// ---------- run view ----------

const runForm = $("#run-form");
let currentRun = null;
let confirmedPlan = false;

function selectedPolicy() {
  const el = runForm.querySelector('input[name="policy"]:checked');
  return el ? state.info.policies.find((p) => p.name === el.value) : null;
}

function setupRun(info) {
  $("#run-preset").append(...info.cases.map((c) => option(c.id, `${c.id}: ${c.question}`)));
  $("#run-version").append(...info.versions.map((v) => option(v, v, v === "3.12")));
  const limits = clear($("#run-limits"));
  for (const f of info.limits.fields) {
    const id = `limit-${f.name}`;
    limits.append(h("div", { class: "field" },
      h("label", { for: id }, f.name.replace("_", " ")),
      h("input", { id, type: "number", min: 1, max: f.max, step: 1, value: info.limits.defaults[f.name], required: true, "aria-describedby": `${id}-cap` }),
      h("span", { id: `${id}-cap`, class: "help" }, `1 to ${f.max}`)));
  }
  const policies = clear($("#run-policies"));
  if (!info.policies.length) {
    policies.append(h("p", { class: "help" }, "This build offers no run policy yet."));
  }
  info.policies.forEach((p, i) => {
    policies.append(h("label", { class: "radio" },
      h("input", { type: "radio", name: "policy", value: p.name, checked: i === 0 }), ` ${p.label}`));
  });
  policies.addEventListener("change", onPolicyChange);
  onPolicyChange();
  $("#run-start").disabled = !info.policies.length;
  const remembered = sessionStorage.getItem(KEY_STORAGE);
  if (remembered) {
    apiKey = remembered;
    $("#run-key").value = remembered;
    $("#run-remember").checked = true;
  }
}

function onPolicyChange() {
  const p = selectedPolicy();
  $("#key-fields").hidden = !(p && p.live);
  confirmedPlan = false;
  $("#run-plan").hidden = true;
  $("#run-start").textContent = p && p.live ? "Show the plan" : "Run";
}

$("#run-preset").addEventListener("change", () => {
  const c = state.info.cases.find((x) => x.id === $("#run-preset").value);
  if (!c) return;
  $("#run-question").value = c.question;
  $("#run-version").value = c.version;
});
$("#run-key").addEventListener("input", () => {
  apiKey = $("#run-key").value;
  if ($("#run-remember").checked) sessionStorage.setItem(KEY_STORAGE, apiKey);
});
$("#run-remember").addEventListener("change", () => {
  if ($("#run-remember").checked) sessionStorage.setItem(KEY_STORAGE, apiKey);
  else sessionStorage.removeItem(KEY_STORAGE);
});
for (const el of runForm.querySelectorAll("textarea, select, input")) {
  if (el.name === "policy" || el.id === "run-key" || el.id === "run-remember") continue;
  el.addEventListener("change", () => {
    if (confirmedPlan) { confirmedPlan = false; $("#run-plan").hidden = true; onPolicyChange(); }
  });
}

function runSpec() {
  const limits = {};
  for (const f of state.info.limits.fields) limits[f.name] = Number($(`#limit-${f.name}`).value);
  const p = selectedPolicy();
  return {
    question: $("#run-question").value,
    version: $("#run-version").value,
    mode: runForm.querySelector('input[name="mode"]:checked').value,
    limits,
    policy: p ? p.name : "",
    hasKey: apiKey !== "",
    endpoint,
  };
}

function renderPlan(plan) {
  const box = clear($("#run-plan"));
  const caps = plan.caps || {};
  const a = plan.allowance || {};
  box.append(h("h3", {}, "Plan for this live run"),
    h("dl", { class: "plan-list" },
      h("dt", {}, "Model"), h("dd", {}, plan.model),
      h("dt", {}, "Endpoint"), h("dd", {}, h("code", {}, plan.endpoint)),
      h("dt", {}, "Request allowance"), h("dd", {}, `${a.remaining} of ${a.limit} left in this page`),
      h("dt", {}, "Worst case"), h("dd", {}, `${plan.worst_case_requests} requests (one per model call, no retries)`),
      h("dt", {}, "Caps"), h("dd", {}, `request ${caps.request_bytes} bytes, response ${caps.response_bytes} bytes, ${caps.call_timeout_seconds} s per call, ${caps.run_seconds} s per run, redirects ${caps.redirects}`),
      h("dt", {}, "Key"), h("dd", {}, apiKey ? "sent only as the x-goog-api-key header" : "none entered: the run will stop with missing_api_key before sending anything")),
    h("p", { class: "help" }, "Live calls may incur charges on your key."));
  box.hidden = false;
  box.focus();
}

runForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (currentRun) return;
  const status = $("#run-status");
  const p = selectedPolicy();
  if (!p) return;
  const spec = runSpec();
  if (p.live && !confirmedPlan) {
    clear($("#run-output"));
    try {
      renderPlan(await call("plan", [spec]));
      confirmedPlan = true;
      $("#run-start").textContent = "Send the requests";
      status.textContent = "Check the plan, then send.";
    } catch (err) {
      status.textContent = refusalText(err);
    }
    return;
  }
  const out = clear($("#run-output"));
  const steps = h("ol", { class: "steps", "aria-live": "polite" });
  out.append(h("h3", {}, "Steps as they happen"), steps);
  const reads = [];
  const observations = [];
  $("#run-start").disabled = true;
  $("#run-stop").disabled = false;
  status.textContent = "Running…";
  currentRun = { id: null };
  try {
    const report = await call("run", [spec], (e) => {
      if (e.event === "started") currentRun.id = e.runId;
      if (e.event === "step") {
        if (e.observation) observations.push(e.observation);
        steps.append(stepItem(e.step, e.observation, spec.limits, [...reads]));
        if (e.observation && e.observation.tool === "read") reads.push(e.observation.result.source_id);
        status.textContent = `Running… ${e.step.call ? `model call ${e.step.call}` : "retrieval"} ${e.step.outcome}`;
      }
    });
    clear(out).append(trialView(report));
    status.textContent = report.result ? `Finished: ${report.result.status}, ${report.result.reason}.` : `Refused: ${report.error}.`;
    if (report.exchanges > 0) updateRecordingCount((await call("recording")).trials);
  } catch (err) {
    status.textContent = refusalText(err);
  } finally {
    currentRun = null;
    $("#run-start").disabled = false;
    $("#run-stop").disabled = true;
    confirmedPlan = false;
    onPolicyChange();
  }
});

$("#run-stop").addEventListener("click", () => {
  if (currentRun && currentRun.id !== null) call("cancel", [currentRun.id]);
  $("#run-status").textContent = "Stopping…";
});

function refusalText(err) {
  return err.code ? `Refused before it started: ${err.code}${err.detail ? ` (${err.detail})` : ""}` : `Could not run: ${err.message}`;
}

// ---------- recordings view ----------

function updateRecordingCount(trials) {
  state.runs = trials;
  $("#rec-count").textContent = trials ? `${trials} recorded live run${trials === 1 ? "" : "s"} in this session.` : "No live runs yet.";
  $("#rec-download").disabled = trials === 0;
}

$("#rec-download").addEventListener("click", async () => {
  const rec = await call("recording");
  const blob = new Blob([rec.text], { type: "application/json" });
  const a = h("a", { download: `ragagent-session-${new Date().toISOString().replace(/[:.]/g, "-")}.json` });
  a.href = URL.createObjectURL(blob);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
});

async function loadRecording(file) {
  const msg = $("#rec-message");
  const out = clear($("#rec-result"));
  msg.hidden = true;
  let text;
  try {
    text = await file.text();
  } catch {
    return showMessage(`Could not read ${file.name}.`);
  }
  try {
    const rep = await call("replay", [{ recording: text }]);
    state.loaded = rep;
    const opt = $('#trace-source option[value="loaded"]');
    opt.disabled = false;
    const mismatches = rep.trials.filter((t) => t.result && t.result.reason === "replay_request_mismatch");
    const refused = rep.trials.filter((t) => !t.result);
    const notes = [`${file.name}: ${rep.trials.length} trials replayed, ${rep.exchanges_used} of ${rep.exchanges} recorded exchanges used.`];
    if (mismatches.length) {
      showMessage(notes[0], `${mismatches.length} trial${mismatches.length === 1 ? "" : "s"} stopped on a request that differs from the recording:`,
        mismatches.map((t) => `${t.id}: ${t.result.detail}`));
    } else if (refused.length) {
      showMessage(notes[0], "Some trials were refused before they started:", refused.map((t) => `${t.id}: ${t.error} ${t.error_detail || ""}`));
    } else {
      showMessage(notes[0]);
      msg.classList.remove("error");
    }
    const table = h("table", { class: "trials" },
      h("caption", {}, `Trials of ${file.name}`),
      h("thead", {}, h("tr", {}, ["Case / repeat", "Path", "Expected sources read", "Answer fixture", "Stop reason", "Model calls"].map((c) => h("th", { scope: "col" }, c)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Trace")))),
      h("tbody", {}, rep.trials.map((t) => trialRow(t, "loaded"))));
    out.append(h("div", { class: "scroll" }, table));
    const sum = h("tbody");
    renderSummary(sum, rep.summary);
    out.append(h("div", { class: "scroll" }, h("table", { class: "summary" }, h("caption", {}, "Outcomes per path (graded trials)"),
      h("thead", {}, h("tr", {}, ["Path", "Pass", "Fail", "Incomplete"].map((c) => h("th", { scope: "col" }, c)))), sum)));
  } catch (err) {
    const kind = err.name === "RecordingError" ? "This file is not a usable recording" : "The recording could not be replayed";
    showMessage(`${kind}: ${err.message}`);
  }
}

function showMessage(first, second, items) {
  const msg = clear($("#rec-message"));
  msg.classList.add("error");
  msg.append(h("p", {}, first));
  if (second) msg.append(h("p", {}, second));
  if (items) msg.append(h("ul", {}, items.map((i) => h("li", {}, i))));
  msg.hidden = false;
}

$("#rec-file").addEventListener("change", () => {
  const f = $("#rec-file").files[0];
  if (f) loadRecording(f);
});
const drop = $("#rec-drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const f = e.dataTransfer.files[0];
  if (f) loadRecording(f);
});

// ---------- corpus view ----------

function renderCorpus(info) {
  const tbody = clear($("#passages tbody"));
  for (const p of info.passages) {
    tbody.append(h("tr", {},
      h("th", { scope: "row" }, h("code", {}, p.source_id)),
      h("td", {}, p.version),
      h("td", { class: "num" }, p.bytes),
      h("td", {}, h("p", {}, p.text), h("p", { class: "passage-meta" }, h("a", { href: p.url, rel: "noopener noreferrer", target: "_blank" }, p.url)),
        h("p", { class: "sha" }, "sha256 ", h("code", {}, p.text_sha256)))));
  }
  $("#search-version").append(...info.versions.map((v) => option(v, v)));
}

$("#search-form").addEventListener("submit", async (event) => {
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
        h("td", { class: "num" }, x.score.toPrecision(6)), h("td", { class: "num" }, x.bytes)))))));
  } catch (err) {
    out.append(h("p", { class: "error" }, err.code ? `${err.code}: ${err.detail || err.message}` : err.message));
  }
});

// ---------- start ----------

const WARM_KEY = "ragagent.warmed";

/** primeCodeCache has the worker repeat the start-up work in the background,
 * once per engine build, so the next visit starts from the browser's cache
 * of optimised code (see warmUp in worker.js). */
async function primeCodeCache() {
  let warmed = null;
  try { warmed = localStorage.getItem(WARM_KEY); } catch { /* storage blocked: warm every visit */ }
  if (!engineTag || warmed === engineTag) {
    document.body.dataset.warm = "skipped";
    return;
  }
  document.body.dataset.warm = "running";
  try {
    timings.warm = await call("warm");
    try { localStorage.setItem(WARM_KEY, engineTag); } catch { /* as above */ }
    document.body.dataset.warm = "done";
  } catch {
    document.body.dataset.warm = "failed";
  }
}

engineReady.then((info) => {
  state.info = info;
  for (const p of info.passages) state.passages.set(p.source_id, p);
  renderCorpus(info);
  setupRun(info);
  $("#search-run").disabled = false;
  return replayBundled();
}).then(primeCodeCache).catch((err) => {
  if (document.body.dataset.engine !== "failed") {
    progressLabel.textContent = `The page could not start: ${err.message}`;
    $("#engine").classList.add("failed");
    document.body.dataset.engine = "failed";
  }
});

// For the browser tests and the benchmark: start-up marks and timings.
window.ragagentPage = { timings, engineReady, call };
