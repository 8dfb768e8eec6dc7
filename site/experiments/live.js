// experiments/live.js is the agent experiment with Gemini: the question
// set of the Experiments view on both paths, sent with the key the person
// entered (key.js alone holds it; the engine builds each body and the
// worker's post hands it to key.send). It follows the page's one live flow
// (common/flow.js): the engine's plan first (evalPlan: trials, worst-case
// requests and cost, checked against the spending ledger in IndexedDB; a
// plan whose worst case does not fit is refused whole), then evalLive,
// which reserves each request's estimate before sending, records every
// attempt (the recording offered for download) and reports each trial,
// with Stop. The result is drawn as the scripted one is (agent.js): the
// rates of `ragagent eval --policy gemini --json`.

import { $, h, clear, download } from "../common/dom.js";
import { usd, plural } from "../common/format.js";
import { call, events, onLedgerChange, FETCH, LEDGER } from "../engine/client.js";
import { liveFlow, planList, keyLine, retriesText } from "../common/flow.js";
import * as key from "../common/key.js";
import { state } from "../common/state.js";
import { agentBlock } from "./agent.js";

/**
 * mountLive binds the Gemini agent experiment. request() is the question
 * set's part of the request ({corpus, cases?}), or null with why not;
 * keep(result) keeps a finished experiment in the view's history and
 * resolves with a sentence saying so.
 * Returns {gate}: enables the plan button when the view can run.
 */
export function mountLive(request, keep) {
  const start = $("#exp-gemini-start");
  const status = $("#exp-gemini-status");
  const bar = $("#exp-gemini-progress");
  const output = $("#exp-gemini-results");
  const budget = $("#exp-budget");
  const setBudget = $("#exp-set-budget");
  const save = $("#exp-gemini-download");
  let recording = null;
  let shown = ""; // what the plan shown was made for

  function showLedger(l) {
    $("#exp-ledger").textContent = l.budget_usd === null
      ? "Ledger: no budget set."
      : `Ledger: budget ${usd(l.budget_usd)}, ${usd(l.spent_usd)} reserved, ${usd(l.remaining_usd)} remaining.`;
    if (l.budget_usd !== null && document.activeElement !== budget) budget.value = String(l.budget_usd);
  }

  async function refreshLedger() {
    try {
      showLedger(await call("ledger", [LEDGER]));
    } catch (err) {
      $("#exp-ledger").textContent = `Ledger: ${err.message}`;
    }
  }

  function spec() {
    const r = request();
    if (r.why) {
      status.textContent = r.why;
      return null;
    }
    const s = { ...r.req, hasKey: key.hasKey() };
    if (state.endpoints.run !== state.info.constants.endpoint) s.endpoint = state.endpoints.run;
    return s;
  }

  function showPlan(plan) {
    const l = plan.ledger, a = plan.allowance;
    const worst = plan.worst_case_estimated_usd;
    const at = Math.min(plan.worst_case_requests, plan.request_allowance);
    flow.showPlan(h("h4", {}, "Plan for this Gemini agent experiment"),
      planList([
        ["Model", plan.model],
        ["Endpoint", h("code", {}, plan.endpoint)],
        ["Trials", `${plan.trials}: ${plural(plan.cases.length, "question")} on the ${plan.modes.join(" and ")} paths, once each`, "exp-plan-trials"],
        ["Requests", `at most ${plan.worst_case_requests} by the limits, capped at ${plan.request_allowance} by the request allowance (${a.remaining} left in this page); ${retriesText(0)}`],
        ["Worst-case cost", worst === null ? "not priced" : `${usd(worst)}: ${plural(at, "request")}, each a full ${plan.max_request_bytes}-byte body and a full reply`, "exp-plan-worst"],
        ["Budget", l.budget_usd === null ? "not set" : `${usd(l.budget_usd)}: ${usd(l.spent_usd)} reserved, ${usd(l.remaining_usd)} remaining`],
        ["Price", plan.price ? `$${plan.price.input_usd_per_mtok}/M input, $${plan.price.output_usd_per_mtok}/M output (${plan.price.source})` : "none"],
        ["Caps", `request ${plan.max_request_bytes} bytes, response ${plan.max_response_bytes} bytes, ${plan.max_call_timeout_seconds} s per call, redirects refused`],
        ["Key", keyLine("none entered")],
      ]),
      plan.refusal
        ? h("p", { class: "message error", role: "alert", id: "exp-gemini-refusal" },
          "Refused before anything is reserved or sent: ", plan.refusal.code ? [h("code", {}, plan.refusal.code), ": "] : "", plan.refusal.message, ".")
        : h("p", { class: "help" }, plan.note));
  }

  const flow = liveFlow(state.agentLive, {
    els: { form: $("#exp-gemini-form"), start, stop: $("#exp-gemini-stop"), status, plan: $("#exp-gemini-plan") },
    prepare: spec,
    async plan(s) {
      const plan = await call("evalPlan", [s, LEDGER]);
      showPlan(plan);
      showLedger(plan.ledger);
      document.body.dataset.agentGemini = plan.refusal ? "refused" : "planned";
      if (plan.refusal) return { refused: `Refused: ${plan.refusal.code || "not sent"}. Nothing was sent.` };
      return { label: `Send up to ${plural(Math.min(plan.worst_case_requests, plan.request_allowance), "request")}` };
    },
    starting() {
      clear(output);
      recording = null;
      save.disabled = true;
      bar.hidden = false;
      bar.removeAttribute("value");
      document.body.dataset.agentGemini = "running";
    },
    op: "evalLive",
    hooks: { post: FETCH, store: LEDGER, save: events("save", "text"), onTrial: events("trial", "done", "total", "trial") },
    sending: "Sending…",
    onEvent(e) {
      if (e.event === "save") {
        recording = e.text;
        save.disabled = false;
      } else if (e.event === "trial" && e.total) {
        bar.max = e.total;
        bar.value = e.done;
        status.textContent = `Trial ${e.done} of ${e.total} (${e.trial})…`;
      }
    },
    finished(res) {
      output.append(agentBlock(res));
      showLedger(res.ledger);
      document.body.dataset.agentGemini = res.cancelled ? "stopped" : "done";
      // Kept as the scripted one is, after the status below is written; a
      // stopped one is not: its rates cover only the trials that ran.
      if (!res.cancelled) {
        keep(res).then((said) => {
          status.textContent += ` ${said}`;
          document.body.dataset.agentGeminiKept = "yes";
        });
      }
      const what = `${plural(res.summary.trials, "trial")} of ${res.planned_trials}, ${plural(res.actual_api_requests, "request")} sent, ${usd(res.ledger.spent_usd)} reserved in the ledger`;
      return res.cancelled ? `Stopped: ${what}; the rates cover the trials that ran.` : `Finished: ${what}.`;
    },
    planFailed: (err) => `Could not plan: ${err.message}`,
    sendFailed(err) {
      document.body.dataset.agentGemini = "failed";
      return err.code ? `Refused: ${err.code}: ${err.detail || err.message}` : `Stopped: ${err.message}`;
    },
    idleLabel: () => "Show the plan",
    lock: [setBudget],
    async after() {
      bar.hidden = true;
      await refreshLedger();
    },
  });

  setBudget.addEventListener("click", async () => {
    const amount = Number(budget.value);
    if (budget.value === "" || !Number.isFinite(amount) || amount < 0) {
      status.textContent = "Enter a budget of at least $0.";
      budget.focus();
      return;
    }
    try {
      showLedger(await call("setBudget", [amount, LEDGER]));
      status.textContent = `Budget set to ${usd(amount)}.`;
      flow.reset();
    } catch (err) {
      status.textContent = `Could not set the budget: ${err.message}`;
    }
  });
  save.addEventListener("click", () => {
    if (recording) download("ragagent-eval-gemini", recording);
  });
  key.onChange(flow.reset);
  onLedgerChange(() => {
    if (!flow.running()) flow.reset();
    refreshLedger();
  });

  return {
    /** gate enables the plan when the question set can run (and withdraws a shown plan when it changed). */
    gate(why) {
      if (flow.running()) return;
      start.disabled = Boolean(why);
      const r = why ? null : request().req;
      const now = JSON.stringify([why, r]);
      if (now !== shown) flow.reset();
      shown = now;
    },
    ready: refreshLedger,
  };
}
