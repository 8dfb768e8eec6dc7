// flow.js is the one plan → confirm → send → stop flow of the page's live
// requests, used by the Run view's live runs and the Rerank view's live
// rerank. The form's submit button first asks the engine for the plan and
// shows it (nothing is sent); pressed again, relabelled, it sends; Stop
// cancels the engine's run (or, if Stop comes before the engine has named
// the run, as soon as it has). Changing anything the plan depends on
// withdraws the plan. The flow's progress lives in the page state (a
// FlowState of state.js).

import { h, clear } from "./dom.js";
import { call } from "../engine/client.js";
import { hasKey, KEY_HEADER } from "./key.js";

/**
 * liveFlow wires a form to the flow and returns {reset, showPlan, running}.
 *
 * slot      the FlowState this flow keeps its progress in
 * els       {form, start, stop, status, plan}: the submit and Stop buttons,
 *           the status line and the plan's box
 * prepare() the request's spec, or null when the form is not ready (it
 *           then says why)
 * needsPlan(spec)  whether this request needs a plan first (default: yes)
 * plan(spec)       asks for the plan and shows it (showPlan); resolves to
 *           {label} (the submit button's text while confirmed) or
 *           {refused} (the status text; the plan cannot be sent)
 * starting(spec)  prepares the output just before sending
 * op, hooks  the engine export that sends and its hooks (stand-ins,
 *           engine/client.js): call(op, [spec, hooks], events)
 * onEvent(e)       the call's other events (step, case)
 * finished(result) shows the result; resolves to the status text
 * planFailed(err), sendFailed(err)  status texts for a rejected call
 * sending   the status text while sending
 * idleLabel()      the submit button's text with no plan shown
 * lock      other controls disabled while sending
 * after()   what follows every send, once the flow is reset
 */
export function liveFlow(slot, { els, prepare, needsPlan = () => true, plan, starting = () => {}, op, hooks, onEvent = () => {}, finished, planFailed, sendFailed, sending, idleLabel, lock = [], after = () => {} }) {
  const { form, start, stop, status } = els;

  /** reset withdraws a shown plan (not while sending: the plan stays beside what it sends). */
  function reset() {
    if (slot.running) return;
    slot.confirmed = false;
    els.plan.hidden = true;
    start.textContent = idleLabel();
  }

  /** showPlan puts the plan in its box and moves focus there. */
  function showPlan(...nodes) {
    clear(els.plan).append(...nodes);
    els.plan.hidden = false;
    els.plan.focus();
  }

  async function submit(event) {
    event.preventDefault();
    if (slot.running) return;
    const spec = prepare();
    if (!spec) return;
    if (needsPlan(spec) && !slot.confirmed) {
      try {
        const verdict = await plan(spec);
        if (verdict.refused) {
          status.textContent = verdict.refused;
          return;
        }
        slot.confirmed = true;
        start.textContent = verdict.label;
        status.textContent = "Check the plan, then send.";
      } catch (err) {
        status.textContent = planFailed(err);
      }
      return;
    }
    starting(spec);
    start.disabled = true;
    stop.disabled = false;
    for (const el of lock) el.disabled = true;
    status.textContent = sending;
    slot.running = Object.seal({ id: null, stopRequested: false });
    try {
      const result = await call(op, [spec, hooks], (e) => {
        if (e.event === "started") {
          slot.running.id = e.runId;
          if (slot.running.stopRequested) call("cancel", [e.runId]); // Stop came before the engine named the run
        } else onEvent(e);
      });
      status.textContent = await finished(result);
    } catch (err) {
      status.textContent = sendFailed(err);
    } finally {
      slot.running = null;
      start.disabled = false;
      stop.disabled = true;
      for (const el of lock) el.disabled = false;
      reset();
      await after();
    }
  }

  form.addEventListener("submit", submit);
  stop.addEventListener("click", () => {
    if (!slot.running) return;
    if (slot.running.id !== null) call("cancel", [slot.running.id]);
    else slot.running.stopRequested = true; // cancelled as soon as the run is started
    status.textContent = "Stopping…";
  });
  return { reset, showPlan, running: () => slot.running !== null };
}

/**
 * planList is a plan's terms and values as a definition list; a row is
 * [term, value] or [term, value, id of the value].
 */
export function planList(rows) {
  return h("dl", { class: "plan-list" }, rows.map(([term, value, id]) => [h("dt", {}, term), h("dd", { id }, value)]));
}

/** keyLine says how the key will be sent, or none when there is none. */
export function keyLine(none) {
  return hasKey() ? `sent only as the ${KEY_HEADER} header` : none;
}

/** retriesText is a plan's "no retries" (or how many). */
export function retriesText(retries) {
  return retries ? `${retries} retr${retries === 1 ? "y" : "ies"}` : "no retries";
}
