// views/run.js is the Run view: a question (typed or authored), version,
// mode, limits and policy; a scripted run starts at once, a live one shows
// its plan first (flow.js). Steps appear as they happen, then the whole
// trace. The view owns the key box (#key-fields), which the Rerank view
// borrows while it is shown.

import { $, h, clear, option } from "../dom.js";
import { call } from "../engine.js";
import { liveFlow, planList, keyLine, retriesText } from "../flow.js";
import { hasKey } from "../key.js";
import { state } from "../state.js";
import { stepList, trialView } from "../trace.js";
import { onCorpus, passagesFor } from "../corpus.js";

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
    flow.showPlan(h("h3", {}, "Plan for this live run"),
      planList([
        ["Model", plan.model],
        ["Corpus", `${plan.corpus} (${plan.search_k} candidates per search)`],
        ["Endpoint", h("code", {}, plan.endpoint)],
        ["Request allowance", `${a.remaining} of ${a.limit} left in this page`],
        ["Worst case", `${plan.worst_case_requests} requests (one per model call, ${retriesText(caps.retries)})`],
        ["Caps", `request ${caps.request_bytes} bytes, response ${caps.response_bytes} bytes, ${caps.call_timeout_seconds} s per call, ${caps.run_seconds} s per run, redirects ${caps.redirects}`],
        ["Key", keyLine("none entered: the run will stop with missing_api_key before sending anything")],
      ]),
      h("p", { class: "help" }, "Live calls may incur charges on your key."));
  }

  const flow = liveFlow(state.run, {
    els: { form, start: $("#run-start"), stop: $("#run-stop"), status, plan: $("#run-plan") },
    prepare: () => (selectedPolicy() ? spec() : null),
    needsPlan: () => selectedPolicy().live,
    async plan(s) {
      clear(output);
      renderPlan(await call("plan", [s]));
      return { label: "Send the requests" };
    },
    starting(s) {
      steps = stepList(s.limits, { "aria-live": "polite" });
      clear(output).append(h("h3", {}, "Steps as they happen"), steps.el);
    },
    op: "run",
    sending: "Running…",
    onEvent(e) {
      if (e.event !== "step") return;
      steps.add(e.step, e.observation);
      status.textContent = `Running… ${e.step.call ? `model call ${e.step.call}` : "retrieval"} ${e.step.outcome}`;
    },
    async finished(report) {
      clear(output).append(trialView(report, passagesFor(report)));
      if (report.exchanges > 0) onRecorded((await call("recording")).trials);
      return report.result ? `Finished: ${report.result.status}, ${report.result.reason}.` : `Refused: ${report.error}.`;
    },
    planFailed: refusalText,
    sendFailed: refusalText,
    idleLabel: () => (selectedPolicy()?.live ? "Show the plan" : "Run"),
  });

  function onPolicyChange() {
    const p = selectedPolicy();
    // The key box is shared with the Rerank view, which may be holding it.
    if (form.contains(keyBox)) keyBox.hidden = !(p && p.live);
    flow.reset();
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
    onPolicyChange();
    $("#run-start").disabled = !info.policies.length;
  }

  // The chosen corpus (corpus.js): its versions, its authored questions,
  // its name; a plan shown for another corpus is withdrawn.
  onCorpus((c) => {
    const m = c.info.manifest;
    clear($("#run-version")).append(...m.versions.map((v) => option(v, v, v === m.default_version)));
    clear($("#run-preset")).append(option("", "(type your own)"), ...c.cases.map((x) => option(x.id, `${x.id}: ${x.question}`)));
    $("#run-corpus").textContent = `${m.title} (${c.info.search_k} candidates per search)`;
    flow.reset();
  });
  $("#run-preset").addEventListener("change", () => {
    // The presets shown: the chosen corpus's, or the seed's until it is open.
    const cases = state.corpus.info ? state.corpus.cases : state.info.cases;
    const c = cases.find((x) => x.id === $("#run-preset").value);
    if (!c) return;
    $("#run-question").value = c.question;
    $("#run-version").value = c.version;
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
