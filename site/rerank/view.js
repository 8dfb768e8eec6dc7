// rerank/view.js is the Rerank view: the reranking lab replayed in the
// engine the first time the view is opened (report.js shows it),
// and a live Gemini listwise rerank of the development cases (flow.js)
// with its price table and the spending ledger (kept by the worker in
// IndexedDB, shared by the site's tabs).

import { $, h, clear, table, numCell, download, badge } from "../common/dom.js";
import { usd, plural, count, DASH } from "../common/format.js";
import { call, events, onLedgerChange, FETCH, LEDGER } from "../engine/client.js";
import { liveFlow, planList, keyLine, retriesText } from "../common/flow.js";
import * as key from "../common/key.js";
import { currentView, onRoute } from "../common/nav.js";
import { PRICE_HEADS, priceRows } from "../common/prices.js";
import { rerankReport, sourceList } from "./report.js";
import { state } from "../common/state.js";
// The cross-encoder in this browser: its own module (crossencoder.js).
import { mountCrossEncoder } from "./crossencoder.js";

/** mount binds the view. Returns {ready, load, borrowKeyBox}. */
export function mount() {
  const status = $("#rerank-status");
  const liveStatus = $("#rerank-live-status");
  const priceIn = $("#rerank-price-in");
  const priceOut = $("#rerank-price-out");
  const budget = $("#rerank-budget");
  const setBudget = $("#rerank-set-budget");
  const start = $("#rerank-start");
  // The cross-encoder in this browser (crossencoder.js).
  const crossEncoder = mountCrossEncoder();

  async function replay() {
    $("#rerank-run").disabled = true;
    status.textContent = "Replaying the reranking lab…";
    const t0 = performance.now();
    try {
      state.rerank.loading = call("rerank");
      const rep = await state.rerank.loading;
      state.rerank.report = rep;
      clear($("#rerank-report")).append(...rerankReport(rep));
      showCase();
      const cross = rep.cross_encoder.original_candidate_comparison.length + rep.cross_encoder.expanded_cases.length;
      status.textContent = `Replayed in ${Math.round(performance.now() - t0)} ms (engine ${Math.round(rep.elapsed_ms)} ms): ${rep.coverage.development_cases.length} development cases, ${rep.gemini.cases.length - rep.gemini_unused} recorded Gemini replies and ${cross} recorded cross-encoder scorings used; no API call.`;
      document.body.dataset.rerank = "done";
    } catch (err) {
      status.textContent = `The replay failed: ${err.message}`;
      document.body.dataset.rerank = "failed";
    } finally {
      state.rerank.loading = null;
      $("#rerank-run").disabled = false;
    }
    await refreshLedger();
  }

  let wantedCase = null; // #rerank/<case>
  /** showCase opens and focuses the case a link names, once the report is shown. */
  function showCase() {
    if (!wantedCase || !state.rerank.report) return;
    const art = document.getElementById(`rcase-${wantedCase}`);
    if (!art) return;
    art.querySelector("details")?.setAttribute("open", "");
    art.scrollIntoView({ block: "start" });
    art.focus({ preventScroll: true });
    wantedCase = null;
  }
  onRoute("rerank", (segs) => {
    wantedCase = segs[0] || null;
    showCase();
  });

  /** load replays the lab unless it was (or is being) replayed, and names the cross-encoder's model. */
  function load() {
    crossEncoder.load();
    if (state.rerank.report || state.rerank.loading) return;
    replay();
  }

  /** spec is what the live form asks for (never the key, only whether there is one). */
  function spec() {
    const s = { hasKey: key.hasKey() };
    if (state.endpoints.listwise !== state.info.constants.listwise_endpoint) s.endpoint = state.endpoints.listwise;
    if (priceIn.value !== "" || priceOut.value !== "") s.price = { input_usd_per_mtok: Number(priceIn.value), output_usd_per_mtok: Number(priceOut.value) };
    return s;
  }

  function priceError() {
    const ok = (v) => v !== "" && Number.isFinite(Number(v)) && Number(v) >= 0;
    return ok(priceIn.value) && ok(priceOut.value) ? null : "Enter both prices as amounts of at least 0.";
  }

  function renderLedger(ledger) {
    const n = ledger.entries.length;
    clear($("#rerank-ledger")).append(
      h("dt", {}, "Budget"), h("dd", { id: "rerank-ledger-budget" }, ledger.budget_usd === null ? "not set: set one before any paid request" : usd(ledger.budget_usd)),
      h("dt", {}, "Reserved so far"), h("dd", { id: "rerank-ledger-spent" }, `${usd(ledger.spent_usd)} in ${plural(n, "reservation")}`),
      h("dt", {}, "Remaining"), h("dd", { id: "rerank-ledger-remaining" }, usd(ledger.remaining_usd)));
    if (ledger.budget_usd !== null && document.activeElement !== budget) budget.value = String(ledger.budget_usd);
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
    clear($("#rerank-prices")).append(table("Price table (assumed list prices; an estimate, never a bill)", PRICE_HEADS,
      priceRows(plan.prices, plan.model, " (reranks)")));
    if (priceIn.value === "" && priceOut.value === "") {
      priceIn.value = String(plan.rate.input_usd_per_mtok);
      priceOut.value = String(plan.rate.output_usd_per_mtok);
    }
  }

  /** refreshLedger reads the ledger and the prices from the engine (a plan that is not shown). */
  async function refreshLedger() {
    const s = spec();
    if (priceError()) delete s.price;
    try {
      const plan = await call("rerankPlan", [s, LEDGER]);
      renderPrices(plan);
      renderLedger(plan.ledger);
      setBudget.disabled = false;
      start.disabled = flow.running();
    } catch (err) {
      clear($("#rerank-ledger")).append(h("dt", {}, "Ledger"), h("dd", { class: "error", role: "alert" }, err.message));
    }
  }

  function renderPlan(plan) {
    const l = plan.ledger, a = plan.allowance, caps = plan.caps;
    const after = l.remaining_usd === null ? null : l.remaining_usd - plan.total_usd;
    flow.showPlan(h("h4", {}, "Plan for this live rerank"),
      planList([
        ["Model", plan.model],
        ["Endpoint", h("code", {}, plan.endpoint)],
        ["Price", `$${plan.rate.input_usd_per_mtok}/M input, $${plan.rate.output_usd_per_mtok}/M output (${plan.rate.source})`],
        ["Requests", `${plan.calls.length}, one per case, ${retriesText(caps.retries)}; each reserves its body bytes as input tokens plus ${plan.max_output_tokens} output tokens`],
        ["Reserved before sending", `${usd(plan.total_usd)} in all`, "rerank-plan-total"],
        ["Budget", l.budget_usd === null ? "not set" : `${usd(l.budget_usd)}: ${usd(l.spent_usd)} reserved, ${usd(l.remaining_usd)} remaining, ${usd(after)} after this rerank`],
        ["Request allowance", `${a.remaining} of ${a.limit} left in this page (shared with live runs)`],
        ["Caps", `request ${caps.request_bytes} bytes, response ${caps.response_bytes} bytes, ${caps.call_timeout_seconds} s per call, redirects ${caps.redirects}`],
        ["Key", keyLine("none entered")],
      ]),
      table("Each request's reservation", ["Case", "Request bytes", "Request sha256", "Reserved estimate"],
        plan.calls.map((c) => h("tr", {}, h("th", { scope: "row" }, c.case_id), numCell(c.request_bytes, 0),
          h("td", {}, h("code", { class: "sha", title: c.request_sha256 }, `${c.request_sha256.slice(0, 16)}…`)),
          h("td", { class: "num", title: String(c.estimated_usd) }, usd(c.estimated_usd))))),
      plan.refusal
        ? h("p", { class: "message error", role: "alert", id: "rerank-refusal" },
          "Refused before anything is reserved or sent: ", plan.refusal.code ? [h("code", {}, plan.refusal.code), ": "] : "", plan.refusal.message, ".")
        : h("p", { class: "help" }, "Live calls may incur charges on your key."));
  }

  function renderLive(live) {
    const recorded = new Map((state.rerank.report ? state.rerank.report.gemini.cases : []).map((c) => [c.case_id, c]));
    clear($("#rerank-live-output")).append(h("h4", {}, "Live result"),
      table("Live Gemini orders beside the recorded ones", ["Case", "Hybrid (incoming)", "Coverage", "Live Gemini", "Recorded Gemini"],
        live.gemini.cases.map((c) => h("tr", { dataset: { case: c.case_id } },
          h("th", { scope: "row" }, c.case_id),
          h("td", {}, h("code", {}, sourceList(c.before))),
          h("td", {}, h("code", {}, sourceList(c.coverage))),
          c.error ? h("td", {}, badge("refused", "fail"), " ", h("code", {}, c.error.code), " ", h("span", { class: "cell-detail" }, c.error.detail))
            : liveCell(c.gemini, recorded.get(c.case_id)?.gemini),
          h("td", {}, recorded.get(c.case_id)?.gemini ? h("code", {}, sourceList(recorded.get(c.case_id).gemini)) : DASH))), "live-orders"),
      h("div", { class: "controls" },
        h("button", { type: "button", id: "rerank-download", onclick: downloadRecording }, "Download this rerank's recording"),
        h("span", { class: "help" }, `${plural(live.exchanges, "attempt")} recorded (never the key); replay it with `, h("code", {}, "ragagent rerank --gemini FILE"), ".")));
  }

  /** liveCell is the live order, highlighted where it differs from the recorded one (each differing position marked). */
  function liveCell(live, rec) {
    if (!rec) return h("td", {}, h("code", {}, sourceList(live)));
    const differs = live.some((r, i) => rec[i]?.source_id !== r.source_id) || live.length !== rec.length;
    const items = live.map((r, i) => {
      const same = rec[i]?.source_id === r.source_id;
      return [i ? ", " : "", same ? h("code", {}, r.source_id) : h("mark", { class: "diff" }, h("code", {}, r.source_id))];
    });
    return h("td", { class: differs ? "differs" : null }, items, " ",
      h("span", { class: "cell-detail" }, differs ? "differs from the recorded order (highlighted positions)" : "same as recorded"));
  }

  async function downloadRecording() {
    try {
      const rec = await call("rerankRecording");
      if (rec) download("ragagent-rerank", rec.text);
    } catch (err) {
      liveStatus.textContent = `Could not download: ${err.message}.`;
    }
  }

  const flow = liveFlow(state.rerankLive, {
    els: { form: $("#rerank-form"), start, stop: $("#rerank-stop"), status: liveStatus, plan: $("#rerank-plan") },
    prepare() {
      const bad = priceError();
      if (!bad) return spec();
      liveStatus.textContent = bad;
      priceIn.focus();
      return null;
    },
    async plan(s) {
      clear($("#rerank-live-output"));
      const plan = await call("rerankPlan", [s, LEDGER]);
      renderPlan(plan);
      renderLedger(plan.ledger);
      if (plan.refusal) return { refused: `Refused: ${plan.refusal.code || "no budget"}. Nothing was sent.` };
      return { label: `Send ${plural(plan.calls.length, "request")}` };
    },
    op: "rerankLive",
    hooks: { post: FETCH, store: LEDGER, onCase: events("case", "done", "total") },
    sending: "Sending…",
    onEvent(e) {
      if (e.event === "case") liveStatus.textContent = `Case ${e.done} of ${e.total} done…`;
    },
    finished(live) {
      renderLive(live);
      const failed = live.gemini.cases.filter((c) => c.error).length;
      return `Finished: ${count(live.gemini.cases.length - failed)} of ${plural(live.gemini.cases.length, "case")} reranked${failed ? `, ${count(failed)} refused` : ""}.`;
    },
    planFailed: (err) => `Could not plan: ${err.message}`,
    sendFailed: (err) => (err.code ? `Refused: ${err.code}: ${err.detail || err.message}` : `Stopped: ${err.message}`),
    idleLabel: () => "Show the plan",
    lock: [setBudget],
    async after() {
      await refreshLedger();
      document.body.dataset.rerankLive = "done";
    },
  });

  setBudget.addEventListener("click", async () => {
    const value = budget.value;
    const amount = Number(value);
    if (value === "" || !Number.isFinite(amount) || amount < 0) {
      liveStatus.textContent = "Enter a budget of at least $0.";
      budget.focus();
      return;
    }
    try {
      renderLedger(await call("setBudget", [amount, LEDGER]));
      liveStatus.textContent = `Budget set to ${usd(amount)}.`;
      flow.reset();
    } catch (err) {
      liveStatus.textContent = `Could not set the budget: ${err.message}`;
    }
  });
  for (const el of [priceIn, priceOut]) el.addEventListener("input", flow.reset);
  key.onChange(flow.reset);
  $("#rerank-run").addEventListener("click", replay);
  // Another tab changed the shared ledger (a budget, a reservation, its
  // outcome): show it at once. A plan shown here is withdrawn, its numbers
  // being stale; a rerank running here keeps its plan and reservations.
  onLedgerChange(async () => {
    if (!state.rerank.report) return;
    if (!flow.running()) {
      flow.reset();
      return refreshLedger();
    }
    try {
      renderLedger(await call("ledger", [LEDGER]));
    } catch { /* the next refresh shows why */ }
  });

  return {
    /** ready allows replaying, and replays at once if the view is shown. */
    ready() {
      $("#rerank-run").disabled = false;
      if (currentView() === "rerank") load();
    },
    load,
    /** borrowKeyBox shows the Run view's key box in this view's form. */
    borrowKeyBox() {
      const box = $("#key-fields");
      $("#rerank-key-slot").append(box);
      box.hidden = false;
    },
  };
}
