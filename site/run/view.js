// run/view.js is the Run view: a question (typed or authored), version,
// mode, limits and policy; a scripted run starts at once, a live one shows
// its plan first (flow.js). Steps appear as they happen, then the whole
// trace. A live policy needs a key: without one the button is disabled and
// the reason stands beside it, and nothing is sent or recorded. The
// question and settings are kept in the address (#run?question=...), so a
// run can be shared and reloaded; the link names the corpus too
// (corpus=<pack id>), which opening it selects in the picker before
// anything can run, and a link to someone's own documents, which no link
// can carry, is said to be one, with Run disabled until a corpus is chosen
// here (never run silently on another corpus). The view owns the key box (#key-fields),
// which the Rerank view borrows while it is shown.

import { $, h, clear, option, download } from "../common/dom.js";
import { usd, plural } from "../common/format.js";
import { call, events, FETCH } from "../engine/client.js";
import { liveFlow, planList, keyLine, retriesText } from "../common/flow.js";
import { hasKey, onChange as onKeyChange } from "../common/key.js";
import { onRoute, replace } from "../common/nav.js";
import { state } from "../common/state.js";
import { stepList, trialView } from "../trace/trial.js";
import { onCorpus, onBusy, passagesFor, prefer, DOCUMENTS } from "../corpus/picker.js";
import * as runs from "../common/runs.js";
import { outcome } from "../common/trials.js";

/** refusalText is the status line for a run the engine refused or could not run. */
function refusalText(err) {
  return err.code ? `Refused before it started: ${err.code}${err.detail ? ` (${err.detail})` : ""}` : `Could not run: ${err.message}`;
}

/** mount binds the form; onRecorded(trials) hears the session recording's
 * size after a live run. Returns {ready, reclaimKeyBox}. */
export function mount({ onRecorded }) {
  const form = $("#run-form");
  const status = $("#run-status");
  const output = $("#run-output");
  const keyBox = $("#key-fields");
  const keyHome = { parent: keyBox.parentNode, next: keyBox.nextSibling };
  let steps = null; // the steps of the run in progress, as they happen

  function selectedPolicy() {
    const el = form.querySelector('input[name="policy"]:checked');
    return el ? state.info.policies.find((p) => p.name === el.value) : null;
  }

  function spec() {
    const limits = {};
    for (const f of state.info.limits.fields) limits[f.name] = Number($(`#limit-${f.name}`).value);
    const p = selectedPolicy();
    return {
      corpus: state.corpus.id,
      question: $("#run-question").value,
      version: $("#run-version").value,
      mode: form.querySelector('input[name="mode"]:checked').value,
      limits,
      policy: p ? p.name : "",
      hasKey: hasKey(),
      endpoint: state.endpoints.run,
    };
  }

  function renderPlan(plan) {
    const caps = plan.caps || {};
    const a = plan.allowance || {};
    const rate = plan.rate;
    flow.showPlan(h("h3", {}, "Plan for this live run"),
      planList([
        ["Model", plan.model],
        ["Corpus", `${plan.corpus} (${plan.search_k} candidates per search)`],
        ["Endpoint", h("code", {}, plan.endpoint)],
        ["Request allowance", `${a.remaining} of ${a.limit} left in this page`],
        ["Worst case", `${plural(plan.worst_case_requests, "request")} (one per model call, ${retriesText(caps.retries)})`],
        ["Worst-case cost", rate ? `${usd(plan.worst_case_estimated_usd)} at $${rate.input_usd_per_mtok}/M input, $${rate.output_usd_per_mtok}/M output (${rate.source}): every request a full body at one token per byte and every reply the whole output allowance; an estimate, never a bill` : "no price for this model in the price table"],
        ["Caps", `request ${caps.request_bytes} bytes, response ${caps.response_bytes} bytes, ${caps.call_timeout_seconds} s per call, ${caps.run_seconds} s per run, redirects ${caps.redirects}`],
        ["Key", keyLine("none entered: nothing can be sent")],
      ]),
      plan.refusal
        ? h("p", { class: "message error", role: "alert", id: "run-refusal" }, "Refused before anything is sent or recorded: ", h("code", {}, plan.refusal.code), `: ${plan.refusal.message}.`)
        : h("p", { class: "help" }, "Live calls may incur charges on your key."));
  }

  /** gate disables the button while a corpus opens (the run would go to
   * the corpus before) and for a live policy without a key, and says why
   * beside it. */
  function gate() {
    if (!state.info || flow.running()) return;
    const p = selectedPolicy();
    const opening = state.corpus.loading;
    const blocked = Boolean(p && p.live && !hasKey());
    const elsewhere = linkCorpusWhy();
    $("#run-start").disabled = opening || blocked || Boolean(elsewhere) || !state.info.policies.length;
    $("#run-why").textContent = opening ? "Waiting while the corpus chosen at the top of the page opens: a run now would go to the corpus before."
      : elsewhere || (blocked ? "No key: paste a Gemini API key above to show the plan and send. Without one nothing is sent or recorded." : "");
  }

  // linkCorpus is the corpus a followed link names, until it is the one
  // open (or the person chooses one in the picker).
  let linkCorpus = null;

  /** linkCorpusWhy is why a run would not go to the link's corpus, or "". */
  function linkCorpusWhy() {
    if (!linkCorpus || linkCorpus === state.corpus.id) return "";
    if (!state.corpus.info) return `Waiting for the corpus this link names (${linkCorpus}) to open.`;
    if (linkCorpus === DOCUMENTS) {
      return "This link was made on someone's own documents (\u201cYour documents\u201d), which stay in the browser that made them: a link cannot carry them and this browser keeps none. "
        + `Nothing runs on ${state.corpus.info.manifest.title} in their place: choose a corpus at the top of the page to run this question on it, or add the documents in the Corpus view.`;
    }
    return `This link names the corpus ${linkCorpus}, which this page does not offer or could not open: choose a corpus at the top of the page to run this question on it.`;
  }

  // runCorpus is the corpus of the run under way: its trace is exported
  // from that pack, whatever the picker shows by then.
  let runCorpus = state.corpus.id;
  let runSpec = null;
  let runConfig = "seed"; // the configuration the run's corpus ranks by (its manifest's default)

  /** keepRun keeps a finished run in this browser (common/runs.js), a
   * live one with its own exchanges as a recording; a browser that keeps
   * nothing is told in the status line. */
  async function keepRun(report, recordingText) {
    const m = state.corpus.info?.manifest;
    const corpus = report.corpus ? { id: report.corpus.id, title: report.corpus.title } : { id: runCorpus, title: m?.title || runCorpus };
    const { hasKey: _, endpoint: __, ...spec } = runSpec;
    try {
      const kept = await runs.keep({
        time: new Date().toISOString(), question: spec.question, corpus, config: runConfig,
        policy: spec.policy, mode: spec.mode, outcome: outcome(report), spec, report,
        recording: recordingText ? runs.recordingOf(recordingText, report.id) : null,
      });
      return kept.dropped ? ` Kept in Runs (the oldest ${kept.dropped === 1 ? "run" : plural(kept.dropped, "run")} dropped: this browser keeps ${runs.LIMIT}).` : " Kept in Runs.";
    } catch (err) {
      return ` Not kept in Runs: ${err.message || "this browser refused IndexedDB"}.`;
    }
  }

  /** options is how trialView shows a run made here: its recorded exchanges and export when it sent any. */
  function options(report, corpus, spec) {
    const sent = report.exchanges > 0;
    let exchanges = null;
    return {
      passages: passagesFor(report),
      constants: state.info.constants,
      source: sent ? "session" : null,
      exchanges: sent ? () => (exchanges ??= call("exchanges", [{ source: "session", trial: report.id }])) : null,
      // A run that sent nothing (scripted) is made again by the engine to export it.
      exportTrace: async () => download("", await (sent ? call("exportOTLP", [{ source: "session", trial: report.id, corpus }])
        : call("exportRunOTLP", [{ corpus, run: spec, recorded_at: new Date().toISOString(), trial: { id: report.id, repeat: report.repeat } }])), `ragagent-trace-${report.id}.otlp.json`),
    };
  }

  const flow = liveFlow(state.run, {
    els: { form, start: $("#run-start"), stop: $("#run-stop"), status, plan: $("#run-plan") },
    prepare: () => (selectedPolicy() ? spec() : null),
    needsPlan: () => selectedPolicy().live,
    async plan(s) {
      clear(output);
      const plan = await call("plan", [s]);
      renderPlan(plan);
      if (plan.refusal) return { refused: `Refused: ${plan.refusal.code}. Nothing was sent or recorded.` };
      return { label: "Send the requests" };
    },
    starting(s) {
      runCorpus = s.corpus;
      runSpec = s;
      runConfig = state.corpus.info?.retrieval_config || "seed";
      steps = stepList(s.limits, { "aria-live": "polite" });
      clear(output).append(h("h3", {}, "Steps as they happen"), steps.el);
    },
    op: "run",
    hooks: { onStep: events("step", "step", "observation"), post: FETCH },
    sending: "Running…",
    onEvent(e) {
      if (e.event !== "step") return;
      steps.add(e.step, e.observation);
      status.textContent = `Running… ${e.step.call ? `model call ${e.step.call}` : "retrieval"} ${e.step.outcome}`;
    },
    async finished(report) {
      clear(output).append(trialView(report, options(report, runCorpus, runSpec)));
      let recorded = null;
      if (report.exchanges > 0) {
        const rec = await call("recording");
        onRecorded(rec.trials);
        recorded = rec.text;
      }
      const keptNote = await keepRun(report, recorded);
      if (report.key_refused) return `Key refused: the API answered HTTP ${report.key_refused.http_status}; this is a key problem, not a fixture result.${keptNote}`;
      return `${report.result ? `Finished: ${report.result.status}, ${report.result.reason}.` : `Refused: ${report.error}.`}${keptNote}`;
    },
    planFailed: refusalText,
    sendFailed: refusalText,
    idleLabel: () => (selectedPolicy()?.live ? "Show the plan" : "Run"),
    after: gate,
  });

  function onPolicyChange() {
    const p = selectedPolicy();
    // The key box is shared with the Rerank view, which may be holding it.
    if (form.contains(keyBox)) keyBox.hidden = !(p && p.live);
    flow.reset();
    gate();
  }

  /** reclaimKeyBox puts the key box back in this form, shown for a live policy. */
  function reclaimKeyBox() {
    if (form.contains(keyBox)) return;
    keyHome.parent.insertBefore(keyBox, keyHome.next);
    const p = state.info && selectedPolicy();
    keyBox.hidden = !(p && p.live);
  }

  /** ready fills the form from load()'s result. */
  function ready(info) {
    const c = info.constants;
    $("#run-question").maxLength = c.max_question_chars;
    $("#run-preset").append(...info.cases.map((x) => option(x.id, `${x.id}: ${x.question}`)));
    $("#run-version").append(...info.versions.map((v) => option(v, v, v === c.default_version)));
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
    if (wanted) follow(wanted);
    onPolicyChange();
  }

  /** settings is the form as a link's query: corpus, question, version, mode, policy, limits. */
  function settings() {
    const s = spec();
    return new URLSearchParams({ corpus: s.corpus, question: s.question, version: s.version, mode: s.mode, policy: s.policy,
      limits: Object.entries(s.limits).map(([k, v]) => `${k}:${v}`).join(",") });
  }

  /** follow fills the form from a link's query and opens the corpus it
   * names (nothing runs); the rest waits until that corpus is open, whose
   * versions the link's version is one of. */
  function follow(q) {
    linkCorpus = q.get("corpus") || null;
    linkQuery = q;
    apply(q);
    if (linkCorpus && linkCorpus !== state.corpus.id) prefer(linkCorpus);
    onPolicyChange();
  }
  let linkQuery = null;

  /** apply fills the form from a link's query (nothing runs). */
  function apply(q) {
    if (q.has("question")) $("#run-question").value = q.get("question").slice(0, state.info.constants.max_question_chars);
    const c = state.info.cases.find((x) => x.question === $("#run-question").value);
    $("#run-preset").value = c ? c.id : "";
    // The versions offered are the open corpus's (a link's corpus opens first).
    if (q.has("version") && [...$("#run-version").options].some((o) => o.value === q.get("version"))) $("#run-version").value = q.get("version");
    const mode = form.querySelector(`input[name="mode"][value="${CSS.escape(q.get("mode") || "")}"]`);
    if (mode) mode.checked = true;
    const policy = form.querySelector(`input[name="policy"][value="${CSS.escape(q.get("policy") || "")}"]`);
    if (policy) policy.checked = true;
    for (const part of (q.get("limits") || "").split(",")) {
      const [k, v] = part.split(":");
      const field = state.info.limits.fields.find((f) => f.name === k);
      if (field && Number.isInteger(Number(v))) $(`#limit-${k}`).value = String(Math.min(Math.max(Number(v), 1), field.max));
    }
  }

  let wanted = null; // a link's settings that came before the engine was ready
  onRoute("run", (segs, query) => {
    if (![...query].length) return;
    if (!state.info) {
      wanted = query;
      return;
    }
    follow(query);
  });
  // A link's corpus still opening keeps the link's settings in the address.
  const remember = () => { if (state.info && !linkCorpusWhy()) replace("run", [], settings()); };
  form.addEventListener("input", remember);
  form.addEventListener("change", remember);
  onKeyChange(gate);
  onBusy(gate);

  // The chosen corpus (corpus/picker.js): its versions, its authored questions,
  // its name; a plan shown for another corpus is withdrawn.
  onCorpus((c) => {
    const m = c.info.manifest;
    clear($("#run-version")).append(...m.versions.map((v) => option(v, v, v === m.default_version)));
    clear($("#run-preset")).append(option("", "(type your own)"), ...c.cases.map((x) => option(x.id, `${x.id}: ${x.question}`)));
    $("#run-corpus").textContent = `${m.title} (${c.info.search_k} candidates per search)`;
    // The link's corpus is open: its version and the rest apply now.
    if (linkCorpus && c.id === linkCorpus && linkQuery) {
      apply(linkQuery);
      linkCorpus = null;
      linkQuery = null;
    }
    flow.reset();
    gate();
  });
  // A corpus the person chooses is theirs to run on, whatever a link named.
  $("#corpus-choice").addEventListener("change", () => {
    linkCorpus = null;
    linkQuery = null;
    gate();
  });
  $("#run-preset").addEventListener("change", () => {
    // The presets shown: the chosen corpus's, or the seed's until it is open.
    const cases = state.corpus.info ? state.corpus.cases : state.info.cases;
    const c = cases.find((x) => x.id === $("#run-preset").value);
    if (!c) return;
    $("#run-question").value = c.question;
    $("#run-version").value = c.version;
    remember();
  });
  // A change to anything the plan was made from (question, version, mode,
  // limits: one listener for the whole form, as the limit fields are made
  // only once the engine is ready) withdraws it. The key's own changes do
  // not: the plan only says whether there is one.
  form.addEventListener("change", (e) => {
    if (e.target.name === "policy" || keyBox.contains(e.target)) return;
    if (state.run.confirmed) flow.reset();
  });
  return { ready, reclaimKeyBox };
}
