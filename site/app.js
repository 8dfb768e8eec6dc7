// app.js is the page's one ES module: it renders the views, talks to the
// engine in worker.js, and alone holds the Gemini key (sending it only as
// the x-goog-api-key header of a live request). Everything that comes from
// a recording, a passage or a model is inserted as text, never as HTML.

const GEMINI_ENDPOINT = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.8-flash:generateContent";
const LISTWISE_ENDPOINT = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.1-flash-lite:generateContent";
const MAX_RESPONSE_BYTES = 262144;
const KEY_STORAGE = "ragagent.key";
const LEDGER_STORAGE = "ragagent.ledger";

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
  if (msg.type === "storage") return ledgerStorage(msg);
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

const views = ["replay", "trace", "run", "rerank", "recordings", "corpus"];

function showView(name, focus = false) {
  if (!views.includes(name)) name = "replay";
  for (const v of views) {
    $(`#view-${v}`).hidden = v !== name;
    const link = document.querySelector(`a[data-view="${v}"]`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (focus) $(`#view-${name} h2`).focus?.();
  window.dispatchEvent(new CustomEvent("ragagent:view", { detail: name }));
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
let listwiseEndpoint = LISTWISE_ENDPOINT;
const override = params.get("endpoint");
if (override) {
  // A test may point the page at a fake Gemini, but only a page served from
  // this machine, and only at an endpoint on this machine.
  try {
    const u = new URL(override);
    if (isLoopbackHost(location.hostname) && isLoopbackHost(u.hostname) && /^https?:$/.test(u.protocol) && !u.username && !u.search && !u.hash) {
      // A bare origin gets the API's path, as the engine resolves it.
      endpoint = u.pathname === "/" ? `${u.origin}${new URL(GEMINI_ENDPOINT).pathname}` : u.href;
      // The listwise reranker's model has its own path on the same fake.
      listwiseEndpoint = `${u.origin}${new URL(LISTWISE_ENDPOINT).pathname}`;
    }
  } catch { /* not a URL: keep the real endpoint */ }
}
const inflight = new Map();

async function liveFetch({ fetchId, endpoint: target, body, timeoutMs }) {
  const reply = (msg, transfer = []) => worker.postMessage({ fetchId, ...msg }, transfer);
  if (target !== endpoint && target !== listwiseEndpoint) {
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
    let bytes = await readCapped(res, MAX_RESPONSE_BYTES + 1);
    if (!res.ok) bytes = redactKey(bytes); // an error body that echoes the key must not reach the engine
    reply({ type: "fetched", status: res.status, body: bytes }, [bytes.buffer]);
  } catch (err) {
    reply({ type: "fetchFailed", kind: timedOut ? "TimeoutError" : "URLError", message: timedOut ? "timed out" : "the request failed" });
  } finally {
    clearTimeout(timer);
    inflight.delete(fetchId);
  }
}

/** redactKey replaces every occurrence of the key in a reply body, as the
 * native transport does, so the engine, a run's detail and the console
 * never see it. Only error bodies can echo a request header back. */
function redactKey(bytes) {
  if (!apiKey) return bytes;
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (!text.includes(apiKey)) return bytes;
  return new TextEncoder().encode(text.split(apiKey).join("[redacted]"));
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
  // The key box is shared with the Rerank view, which may be holding it.
  if (runForm.contains($("#key-fields"))) $("#key-fields").hidden = !(p && p.live);
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
      if (e.event === "started") {
        currentRun.id = e.runId;
        if (currentRun.stopRequested) call("cancel", [e.runId]); // Stop came before the engine named the run
      }
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
  if (!currentRun) return;
  if (currentRun.id !== null) call("cancel", [currentRun.id]);
  else currentRun.stopRequested = true; // cancelled as soon as the run is started
  $("#run-status").textContent = "Stopping…";
});

function refusalText(err) {
  return err.code ? `Refused before it started: ${err.code}${err.detail ? ` (${err.detail})` : ""}` : `Could not run: ${err.message}`;
}

// ---------- rerank view ----------

const rerank = {
  report: null, // the replay of the three recorded runs
  loading: null, // that replay while it runs
  confirmed: false, // the plan was shown and allows sending
  running: null, // {id} of the live rerank in progress
};

/** ledgerStorage answers the engine's ledger load/save from localStorage. */
function ledgerStorage({ storageId, op, text }) {
  const reply = (msg) => worker.postMessage({ type: "stored", storageId, ...msg });
  try {
    if (op === "load") return reply({ ok: true, value: localStorage.getItem(LEDGER_STORAGE) });
    if (op === "save") {
      localStorage.setItem(LEDGER_STORAGE, text);
      return reply({ ok: true });
    }
    reply({ ok: false, message: `unknown storage operation ${op}` });
  } catch (err) {
    reply({ ok: false, message: `${err.name || "Error"}: ${err.message}` });
  }
}

const DASH = "–";

/** num formats a number to a fixed number of decimals (whole numbers as they are). */
function num(x, digits) {
  if (x === null || x === undefined) return DASH;
  return digits === 0 ? String(x) : Number(x).toFixed(digits);
}

/** sig formats a score to significant digits, so a bm25 of -4.9e-6 is not shown as -0.0000. */
function sig(x, digits) {
  return x === null || x === undefined ? DASH : Number(x).toPrecision(digits);
}

/** usd formats an amount of US dollars to six significant digits, which
 * shows list-price estimates (and their sums) as they are. */
function usd(x) {
  if (x === null || x === undefined) return DASH;
  if (x !== 0 && Math.abs(x) < 1e-6) return `$${x.toExponential(2)}`;
  return `$${Number(x.toPrecision(6))}`;
}

/** numCell is a right-aligned number with its exact value as the title. */
function numCell(x, digits, format = num) {
  return h("td", { class: "num", title: x === null || x === undefined ? null : String(x) }, format(x, digits));
}

let tableIds = 0;

/**
 * table builds a captioned table in a keyboard-scrollable region. On a
 * narrow screen its rows stack (style.css, table.stack), each cell labelled
 * with its column's head; explicit roles keep it a table for screen readers
 * once its display is no longer a table's.
 */
function table(caption, heads, rows, cls = "") {
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

const sourceList = (rows) => rows.map((r) => r.source_id).join(", ");

function candidatesTable(caption, rows) {
  return table(caption, ["Source", "Version", "Lexical rank", "bm25 score", "Vector rank", "Cosine", "Lexical RRF", "Vector RRF", "Fused score"],
    rows.map((c) => h("tr", {},
      h("th", { scope: "row" }, h("code", {}, c.source_id)), h("td", {}, c.version),
      numCell(c.lexical_rank, 0), numCell(c.lexical_score, 4, sig), numCell(c.vector_rank, 0), numCell(c.vector_score, 4, sig),
      numCell(c.lexical_contribution, 5, sig), numCell(c.vector_contribution, 5, sig), numCell(c.fused_score, 5, sig))), "cands-table");
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

function orderCell(row, detail) {
  return h("td", {}, h("code", {}, row.source_id), " ", h("span", { class: "cell-detail" }, detail));
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
      orderCell(c, `fused ${sig(c.fused_score, 5)}`),
      cov ? orderCell(cov, `matched ${matched(cov)} · ${coverageText(cov)} · was #${cov.incoming_rank}`) : h("td", {}, DASH),
      g ? orderCell(g, `was #${incoming.get(g.chunk_id)}`)
        : h("td", {}, i === 0 && gem && gem.error ? [badge("refused", "fail"), " ", h("code", {}, gem.error.code)] : DASH),
      x ? orderCell(x, `logit ${num(x.cross_encoder_logit, 3)} · was #${x.incoming_rank}`) : h("td", {}, DASH));
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

/** renderRerank shows the replayed runs: every number is the engine's, computed here. */
function renderRerank(rep) {
  const out = clear($("#rerank-report"));
  const cov = rep.coverage, gem = rep.gemini, ce = rep.cross_encoder;
  const geminiBy = new Map(gem.cases.map((c) => [c.case_id, c]));
  const crossBy = new Map(ce.original_candidate_comparison.map((c) => [c.case_id, c]));
  const conf = cov.configuration;
  out.append(h("h3", {}, "Development cases"),
    h("p", { class: "help" }, `Snapshot ${cov.snapshot_id.slice(0, 12)}… · rank constant ${conf.rank_constant} · candidate budget ${conf.candidate_budget} · coverage: ${conf.score}, ties by ${conf.tie} · Gemini ${gem.model} (${gem.execution_mode}) · cross-encoder ${ce.model.model} (${ce.execution_mode}; raw logits, not probabilities).`));
  for (const d of cov.development_cases) {
    const id = `rcase-${d.case_id}`;
    out.append(h("article", { class: "rcase", id, "aria-labelledby": `${id}-title`, dataset: { case: d.case_id } },
      h("h4", { id: `${id}-title` }, `${d.case_id} (Python ${d.requested_version})`),
      h("p", { class: "question" }, h("span", { class: "label" }, "Question: "), d.query),
      h("p", { class: "help" }, "Question tokens: ", d.after[0] ? d.after[0].rerank_features.query_tokens.join(", ") : DASH),
      candidatesTable("Hybrid candidates (first stage)", d.before),
      ordersTable(d, geminiBy.get(d.case_id), crossBy.get(d.case_id)),
      geminiBy.get(d.case_id)?.error ? h("p", { class: "detail" }, `Gemini: ${geminiBy.get(d.case_id).error.code}: ${geminiBy.get(d.case_id).error.detail}`) : null));
  }
  out.append(h("p", { class: "note" }, gem.scope));

  const m = cov.mechanism_check;
  out.append(h("h3", {}, "Mechanism check"),
    h("p", {}, `${m.query} Reversed input: `, h("code", {}, sourceList(m.before)), " → coverage order: ", h("code", { id: "rerank-mechanism-after" }, sourceList(m.after)), "."),
    coveredTable("Coverage of the reversed candidates", m.after),
    h("p", { class: "note" }, `Scope: ${m.scope}.`));

  const u = cov.unfiltered_read_write_diagnostic;
  out.append(h("h3", {}, "Unfiltered read/write diagnostic"),
    h("p", {}, `${u.query} Every version is searched and every chunk kept.`),
    candidatesTable("Candidates across versions", u.before),
    coveredTable("Their coverage order", u.after),
    h("p", { class: "note" }, `Scope: ${u.scope}.`),
    h("p", {}, `Empty candidates give ${cov.empty_candidates.length} reranked rows; a candidate whose text was altered is refused with `,
      h("code", { id: "rerank-altered" }, cov.altered_candidate_refusal), "."),
    h("p", { class: "note" }, `Limit: ${cov.limit}`));

  out.append(h("h3", {}, "Twelve expanded cases"),
    h("p", {}, `Every version-eligible passage is a candidate; each scorer's top-1 and reciprocal rank against the target sources. Cases file sha256 ${ce.cases_sha256.slice(0, 12)}….`),
    table("Expanded cases", ["Case", "Split", "Stratum", "Version", "Targets", "Coverage order", "Cross-encoder order"],
      ce.expanded_cases.map((c) => h("tr", { dataset: { case: c.case_id } },
        h("th", { scope: "row" }, c.case_id), h("td", {}, c.split), h("td", {}, c.stratum), h("td", {}, c.version),
        h("td", {}, c.target_sources.length ? c.target_sources.join(", ") : "none"),
        scorerCell(c.coverage, c.outcome.coverage), scorerCell(c.cross_encoder, c.outcome.cross_encoder))), "expanded"),
    h("h3", {}, "Summary"),
    summaryTable(ce),
    h("p", { class: "note" }, "Unsupported questions have no target to hit, so they are outside every denominator. ", ce.scope));
}

function currentView() {
  return views.find((v) => !$(`#view-${v}`).hidden) || "replay";
}

async function replayRerank() {
  const status = $("#rerank-status");
  $("#rerank-run").disabled = true;
  status.textContent = "Replaying the reranking lab…";
  const t0 = performance.now();
  try {
    rerank.loading = call("rerank");
    const rep = await rerank.loading;
    rerank.report = rep;
    renderRerank(rep);
    const cross = rep.cross_encoder.original_candidate_comparison.length + rep.cross_encoder.expanded_cases.length;
    status.textContent = `Replayed in ${Math.round(performance.now() - t0)} ms (engine ${Math.round(rep.elapsed_ms)} ms): ${rep.coverage.development_cases.length} development cases, ${rep.gemini.cases.length - rep.gemini_unused} recorded Gemini replies and ${cross} recorded cross-encoder scorings used; no API call.`;
    document.body.dataset.rerank = "done";
  } catch (err) {
    status.textContent = `The replay failed: ${err.message}`;
  } finally {
    rerank.loading = null;
    $("#rerank-run").disabled = false;
  }
  await refreshLedger();
}

function loadRerank() {
  if (rerank.report || rerank.loading) return;
  replayRerank();
}

// ----- live rerank -----

/** rerankSpec is what the live form asks for (never the key, only whether there is one). */
function rerankSpec() {
  const spec = { hasKey: apiKey !== "" };
  if (listwiseEndpoint !== LISTWISE_ENDPOINT) spec.endpoint = listwiseEndpoint;
  const pin = $("#rerank-price-in").value, pout = $("#rerank-price-out").value;
  if (pin !== "" || pout !== "") spec.price = { input_usd_per_mtok: Number(pin), output_usd_per_mtok: Number(pout) };
  return spec;
}

function priceError() {
  const pin = $("#rerank-price-in").value, pout = $("#rerank-price-out").value;
  const ok = (v) => v !== "" && Number.isFinite(Number(v)) && Number(v) >= 0;
  return ok(pin) && ok(pout) ? null : "Enter both prices as amounts of at least 0.";
}

function renderLedger(ledger) {
  const dl = clear($("#rerank-ledger"));
  const n = ledger.entries.length;
  dl.append(
    h("dt", {}, "Budget"), h("dd", { id: "rerank-ledger-budget" }, ledger.budget_usd === null ? "not set: set one before any paid request" : usd(ledger.budget_usd)),
    h("dt", {}, "Reserved so far"), h("dd", { id: "rerank-ledger-spent" }, `${usd(ledger.spent_usd)} in ${n} reservation${n === 1 ? "" : "s"}`),
    h("dt", {}, "Remaining"), h("dd", { id: "rerank-ledger-remaining" }, usd(ledger.remaining_usd)));
  const budgetInput = $("#rerank-budget");
  if (ledger.budget_usd !== null && document.activeElement !== budgetInput) budgetInput.value = String(ledger.budget_usd);
  const entries = clear($("#rerank-entries"));
  if (n) {
    entries.append(table("Reservations in this browser's ledger", ["#", "Reserved at (UTC)", "Request", "Bytes", "Estimate", "Outcome"],
      ledger.entries.map((e) => h("tr", {},
        h("th", { scope: "row" }, String(e.seq)), h("td", { class: "when" }, e.at), h("td", {}, e.label),
        numCell(e.request_bytes, 0), h("td", { class: "num", title: String(e.estimated_usd) }, usd(e.estimated_usd)),
        h("td", {}, e.outcome === "completed" ? badge("completed", "pass") : h("code", {}, e.outcome)))), "entries"));
  }
}

function renderPrices(plan) {
  const box = clear($("#rerank-prices"));
  box.append(table("Price table (assumed list prices; an estimate, never a bill)", ["Model", "Input per M tokens", "Output per M tokens", "Source"],
    plan.prices.map((r) => h("tr", { class: r.model === plan.model ? "current" : null },
      h("th", { scope: "row" }, h("code", {}, r.model), r.model === plan.model ? " (reranks)" : ""),
      h("td", { class: "num" }, `$${r.input_usd_per_mtok}`), h("td", { class: "num" }, `$${r.output_usd_per_mtok}`), h("td", {}, r.source)))));
  if ($("#rerank-price-in").value === "" && $("#rerank-price-out").value === "") {
    $("#rerank-price-in").value = String(plan.rate.input_usd_per_mtok);
    $("#rerank-price-out").value = String(plan.rate.output_usd_per_mtok);
  }
}

/** refreshLedger reads the ledger and the prices from the engine (a plan that is not shown). */
async function refreshLedger() {
  const spec = rerankSpec();
  if (priceError()) delete spec.price;
  try {
    const plan = await call("rerankPlan", [spec]);
    renderPrices(plan);
    renderLedger(plan.ledger);
    $("#rerank-set-budget").disabled = false;
    $("#rerank-start").disabled = !!rerank.running;
  } catch (err) {
    clear($("#rerank-ledger")).append(h("dt", {}, "Ledger"), h("dd", { class: "error", role: "alert" }, err.message));
  }
}

function renderRerankPlan(plan) {
  const box = clear($("#rerank-plan"));
  const l = plan.ledger, a = plan.allowance, caps = plan.caps;
  const after = l.remaining_usd === null ? null : l.remaining_usd - plan.total_usd;
  box.append(h("h4", {}, "Plan for this live rerank"),
    h("dl", { class: "plan-list" },
      h("dt", {}, "Model"), h("dd", {}, plan.model),
      h("dt", {}, "Endpoint"), h("dd", {}, h("code", {}, plan.endpoint)),
      h("dt", {}, "Price"), h("dd", {}, `$${plan.rate.input_usd_per_mtok}/M input, $${plan.rate.output_usd_per_mtok}/M output (${plan.rate.source})`),
      h("dt", {}, "Requests"), h("dd", {}, `${plan.calls.length}, one per case, no retries; each reserves its body bytes as input tokens plus ${plan.max_output_tokens} output tokens`),
      h("dt", {}, "Reserved before sending"), h("dd", { id: "rerank-plan-total" }, `${usd(plan.total_usd)} in all`),
      h("dt", {}, "Budget"), h("dd", {}, l.budget_usd === null ? "not set" : `${usd(l.budget_usd)}: ${usd(l.spent_usd)} reserved, ${usd(l.remaining_usd)} remaining, ${usd(after)} after this rerank`),
      h("dt", {}, "Request allowance"), h("dd", {}, `${a.remaining} of ${a.limit} left in this page (shared with live runs)`),
      h("dt", {}, "Caps"), h("dd", {}, `request ${caps.request_bytes} bytes, response ${caps.response_bytes} bytes, ${caps.call_timeout_seconds} s per call, redirects ${caps.redirects}`),
      h("dt", {}, "Key"), h("dd", {}, apiKey ? "sent only as the x-goog-api-key header" : "none entered")),
    table("Each request's reservation", ["Case", "Request bytes", "Request sha256", "Reserved estimate"],
      plan.calls.map((c) => h("tr", {}, h("th", { scope: "row" }, c.case_id), numCell(c.request_bytes, 0),
        h("td", {}, h("code", { class: "sha", title: c.request_sha256 }, `${c.request_sha256.slice(0, 16)}…`)),
        h("td", { class: "num", title: String(c.estimated_usd) }, usd(c.estimated_usd))))));
  if (plan.refusal) {
    box.append(h("p", { class: "message error", role: "alert", id: "rerank-refusal" },
      "Refused before anything is reserved or sent: ", plan.refusal.code ? [h("code", {}, plan.refusal.code), ": "] : "", plan.refusal.message, "."));
  } else {
    box.append(h("p", { class: "help" }, "Live calls may incur charges on your key."));
  }
  box.hidden = false;
  box.focus();
}

function resetRerankPlan() {
  if (rerank.running) return;
  rerank.confirmed = false;
  $("#rerank-plan").hidden = true;
  $("#rerank-start").textContent = "Show the plan";
}

function renderLiveRerank(live) {
  const out = clear($("#rerank-live-output"));
  const recorded = new Map((rerank.report ? rerank.report.gemini.cases : []).map((c) => [c.case_id, c]));
  out.append(h("h4", {}, "Live result"),
    table("Live Gemini orders beside the recorded ones", ["Case", "Hybrid (incoming)", "Coverage", "Live Gemini", "Recorded Gemini"],
      live.gemini.cases.map((c) => h("tr", { dataset: { case: c.case_id } },
        h("th", { scope: "row" }, c.case_id),
        h("td", {}, h("code", {}, sourceList(c.before))),
        h("td", {}, h("code", {}, sourceList(c.coverage))),
        c.error ? h("td", {}, badge("refused", "fail"), " ", h("code", {}, c.error.code), " ", h("span", { class: "cell-detail" }, c.error.detail))
          : h("td", {}, h("code", {}, sourceList(c.gemini))),
        h("td", {}, recorded.get(c.case_id)?.gemini ? h("code", {}, sourceList(recorded.get(c.case_id).gemini)) : DASH))), "live-orders"),
    h("div", { class: "controls" },
      h("button", { type: "button", id: "rerank-download", onclick: downloadRerankRecording }, "Download this rerank's recording"),
      h("span", { class: "help" }, `${live.exchanges} attempt${live.exchanges === 1 ? "" : "s"} recorded (never the key); replay it with `, h("code", {}, "ragagent rerank --gemini FILE"), ".")));
}

async function downloadRerankRecording() {
  const rec = await call("rerankRecording");
  if (!rec) return;
  const a = h("a", { download: `ragagent-rerank-${new Date().toISOString().replace(/[:.]/g, "-")}.json` });
  a.href = URL.createObjectURL(new Blob([rec.text], { type: "application/json" }));
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

$("#rerank-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (rerank.running) return;
  const status = $("#rerank-live-status");
  const bad = priceError();
  if (bad) {
    status.textContent = bad;
    $("#rerank-price-in").focus();
    return;
  }
  const spec = rerankSpec();
  if (!rerank.confirmed) {
    clear($("#rerank-live-output"));
    try {
      const plan = await call("rerankPlan", [spec]);
      renderRerankPlan(plan);
      renderLedger(plan.ledger);
      if (plan.refusal) {
        status.textContent = `Refused: ${plan.refusal.code || "no budget"}. Nothing was sent.`;
        return;
      }
      rerank.confirmed = true;
      $("#rerank-start").textContent = `Send ${plan.calls.length} requests`;
      status.textContent = "Check the plan, then send.";
    } catch (err) {
      status.textContent = `Could not plan: ${err.message}`;
    }
    return;
  }
  $("#rerank-start").disabled = true;
  $("#rerank-stop").disabled = false;
  $("#rerank-set-budget").disabled = true;
  status.textContent = "Sending…";
  rerank.running = { id: null };
  try {
    const live = await call("rerankLive", [spec], (e) => {
      if (e.event === "started") {
        rerank.running.id = e.runId;
        if (rerank.running.stopRequested) call("cancel", [e.runId]);
      }
      if (e.event === "case") status.textContent = `Case ${e.done} of ${e.total} done…`;
    });
    renderLiveRerank(live);
    const failed = live.gemini.cases.filter((c) => c.error).length;
    status.textContent = `Finished: ${live.gemini.cases.length - failed} of ${live.gemini.cases.length} cases reranked${failed ? `, ${failed} refused` : ""}.`;
  } catch (err) {
    status.textContent = err.code ? `Refused: ${err.code}: ${err.detail || err.message}` : `Stopped: ${err.message}`;
  } finally {
    rerank.running = null;
    $("#rerank-stop").disabled = true;
    $("#rerank-set-budget").disabled = false;
    $("#rerank-start").disabled = false;
    resetRerankPlan();
    await refreshLedger();
    document.body.dataset.rerankLive = "done";
  }
});

$("#rerank-stop").addEventListener("click", () => {
  if (!rerank.running) return;
  if (rerank.running.id !== null) call("cancel", [rerank.running.id]);
  else rerank.running.stopRequested = true;
  $("#rerank-live-status").textContent = "Stopping…";
});

$("#rerank-set-budget").addEventListener("click", async () => {
  const status = $("#rerank-live-status");
  const value = $("#rerank-budget").value;
  const amount = Number(value);
  if (value === "" || !Number.isFinite(amount) || amount < 0) {
    status.textContent = "Enter a budget of at least $0.";
    $("#rerank-budget").focus();
    return;
  }
  try {
    renderLedger(await call("setBudget", [amount]));
    status.textContent = `Budget set to ${usd(amount)}.`;
    resetRerankPlan();
  } catch (err) {
    status.textContent = `Could not set the budget: ${err.message}`;
  }
});

for (const id of ["#rerank-price-in", "#rerank-price-out"]) $(id).addEventListener("input", resetRerankPlan);
$("#rerank-run").addEventListener("click", replayRerank);

// One key field serves the Run and Rerank views: it moves to the view shown.
const keyBox = $("#key-fields");
const keyHome = { parent: keyBox.parentNode, next: keyBox.nextSibling };

function placeKeyBox(view) {
  if (view === "rerank") {
    $("#rerank-key-slot").append(keyBox);
    keyBox.hidden = false;
  } else if (!runForm.contains(keyBox)) {
    keyHome.parent.insertBefore(keyBox, keyHome.next);
    const p = state.info && selectedPolicy();
    keyBox.hidden = !(p && p.live);
  }
}

window.addEventListener("ragagent:view", (e) => {
  placeKeyBox(e.detail);
  if (e.detail === "rerank" && state.info) loadRerank();
});
$("#run-key").addEventListener("input", resetRerankPlan);
// Another tab of this page spent from the same ledger: show it.
window.addEventListener("storage", (e) => {
  if (e.key === LEDGER_STORAGE && rerank.report && !rerank.running) {
    resetRerankPlan();
    refreshLedger();
  }
});
placeKeyBox(currentView());

function setupRerank() {
  $("#rerank-run").disabled = false;
  if (currentView() === "rerank") loadRerank();
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
  try {
    warmed = localStorage.getItem(WARM_KEY);
  } catch {
    warmed = engineTag; // storage blocked: it could not be remembered, so it would cost every visit; skip
  }
  if (!engineTag || warmed === engineTag || navigator.connection?.saveData) {
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
  setupRerank();
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
