// experiments/tune.js is the Experiments view's Tune section: `ragagent
// tune` in the engine's worker, off the main thread, on the corpus and
// question set chosen above. It shows the progress (questions ranked of
// questions × configurations) with a cancel, then the chosen
// configuration, its cross-validated MRR@10 and recall@10 with their 95%
// intervals, its paired differences against seed and the pack's default,
// and the warning a small set earns. "Use it for this pack" makes it the
// open pack's default for the session (its searches and the agent's rank
// by it) and adds it to the configurations this view offers; "Download"
// saves it as the spec file `--config FILE` reads; "Save as configuration"
// keeps it under a name of the person's among the view's own
// configurations (kept in this browser and carried by the view's link).

import { $, h, clear, download } from "../common/dom.js";
import { plural, count, refusal } from "../common/format.js";
import { call, events } from "../engine/client.js";

const f3 = (x) => x.toFixed(3);
const signed = (x) => (x >= 0 ? "+" : "") + x.toFixed(3);
const interval = (ci, fmt = f3) => `[${fmt(ci[0])}, ${fmt(ci[1])}]`;

/** scroll keeps a wide table inside the screen at 360 px: a
 * keyboard-scrollable region named for it, as dom.js table's are. */
const scroll = (label, tbl) => h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": label }, tbl);

/** resultBlock draws a tune result. */
export function resultBlock(r) {
  const est = (label, e) => h("tr", {}, h("th", { scope: "row" }, label),
    h("td", {}, f3(e["mrr@10"].value)), h("td", {}, interval(e["mrr@10"].ci95)),
    h("td", {}, f3(e["recall@10"].value)), h("td", {}, interval(e["recall@10"].ci95)));
  const head = (...cells) => h("thead", {}, h("tr", {}, ...cells.map((c) => h("th", { scope: "col" }, c))));
  return h("div", { class: "tune-result" },
    h("p", {}, "Chosen: ", h("strong", { "data-chosen": r.chosen.name }, r.chosen.name),
      ` — out of ${plural(r.space, "configuration")}, on ${count(r.answerable)} answerable of ${plural(r.cases, "question")}, ${r.folds}-fold cross-validation.`),
    scroll("What to expect on questions not yet written", h("table", {}, h("caption", {}, "What to expect on questions not yet written"),
      head("", "MRR@10", "95% interval", "recall@10", "95% interval"),
      h("tbody", {}, est("Cross-validated (the estimate)", r.estimate), est("In-sample (optimistic)", r.in_sample)))),
    scroll("The choice against the baselines", h("table", {}, h("caption", {}, "The choice against the baselines, paired by question"),
      head("Against", "Metric", "Difference", "95% interval", "p"),
      h("tbody", {}, ...r.against.map((a) => h("tr", {}, h("th", { scope: "row" }, a.name), h("td", {}, a.metric),
        h("td", {}, signed(a.difference)), h("td", {}, interval(a.ci95, signed)), h("td", {}, a.p_value.toFixed(4))))))),
    h("p", { class: "help" }, `Chosen in each fold: ${r.fold_choices.join(", ")}.`),
    r.warning ? h("p", { class: "message warning", role: "note" }, `Warning: ${r.warning}.`) : null);
}

/**
 * mountTune binds the section. request() is {req} (corpus and cases) or
 * {why} (why not now); adopt(spec) offers a chosen spec in the view's
 * configurations; keep(spec, name) saves it under a name as one of the
 * person's own, returning what was done (or throwing why not).
 * Returns {gate(why)}.
 */
export function mountTune(request, adopt, keep) {
  const runBtn = $("#exp-tune-run");
  const cancelBtn = $("#exp-tune-cancel");
  const applyBtn = $("#exp-tune-apply");
  const saveBtn = $("#exp-tune-download");
  const keepBtn = $("#exp-tune-save");
  const nameInput = $("#exp-tune-name");
  nameInput.maxLength = 64; // parseSpec's bound on a name
  const status = $("#exp-tune-status");
  const bar = $("#exp-tune-progress");
  const out = $("#exp-tune-result");
  let running = null; // {id, cancel}
  let result = null; // {corpus, value}
  let why = "Waiting for the engine.";

  function gate(w = why) {
    why = w;
    runBtn.disabled = Boolean(why) || running !== null;
    $("#exp-tune-why").textContent = running ? "" : why;
    applyBtn.disabled = running !== null || !result || result.corpus === "seed";
    saveBtn.disabled = running !== null || !result;
    keepBtn.disabled = running !== null || !result;
  }

  async function run() {
    const { req, why: not } = request();
    if (not || running) return;
    running = { id: null, cancel: false };
    result = null;
    clear(out);
    bar.hidden = false;
    bar.removeAttribute("value");
    cancelBtn.disabled = false;
    status.textContent = "Tuning: ranking every question under every configuration of the space…";
    document.body.dataset.tune = "running";
    gate();
    try {
      const text = await call("tune", [req, { onProgress: events("progress", "done", "total", "config") }], (e) => {
        if (e.event === "started") {
          running.id = e.runId;
          if (running.cancel) call("cancel", [e.runId]);
          return;
        }
        if (e.event !== "progress" || !e.total) return;
        bar.max = e.total;
        bar.value = e.done;
        status.textContent = `Tuning: ${e.done} of ${e.total} ranked (questions × configurations)…`;
      });
      if (running.cancel) throw Object.assign(new Error("cancelled"), { code: "cancelled" });
      const value = JSON.parse(text);
      result = { corpus: req.corpus, value, text };
      status.textContent = `Done: ${value.chosen.name} chosen for ${value.corpus}.`;
      out.append(resultBlock(value));
      if (!nameInput.value) nameInput.value = `tuned-${value.corpus}`.toLowerCase().replace(/[^a-z0-9._-]/g, "-").slice(0, 64);
      document.body.dataset.tune = "done";
    } catch (err) {
      const stopped = running.cancel || err.code === "cancelled";
      status.textContent = stopped ? "Cancelled: nothing was chosen." : `Not tuned: ${refusal(err)}`;
      document.body.dataset.tune = stopped ? "cancelled" : "failed";
    } finally {
      running = null;
      bar.hidden = true;
      cancelBtn.disabled = true;
      gate();
    }
  }

  function stop() {
    if (!running) return;
    running.cancel = true;
    cancelBtn.disabled = true;
    status.textContent = "Cancelling…";
    if (running.id !== null) call("cancel", [running.id]);
  }

  async function apply() {
    if (!result) return;
    const spec = result.value.chosen;
    try {
      const info = await call("applyDefault", [{ corpus: result.corpus, config: spec }]);
      adopt(spec);
      status.textContent = `${info.manifest.id} now searches by ${info.retrieval_config} for this session (the Corpus view, runs and agent experiments); it is also offered among the configurations above.`;
    } catch (err) {
      status.textContent = `Not applied: ${refusal(err)}`;
    }
  }

  function save() {
    if (!result) return;
    try {
      download(`ragagent-config-${result.value.chosen.name}`, JSON.stringify(result.value.chosen, null, 2) + "\n");
      status.textContent = "Downloaded: a spec file that ragagent retrieval --config FILE and ragagent corpus config --config FILE read.";
    } catch (err) {
      status.textContent = `Not downloaded: ${err.message}`;
    }
  }

  function keepAs() {
    if (!result) return;
    try {
      status.textContent = keep(result.value.chosen, nameInput.value.trim());
    } catch (err) {
      status.textContent = `Not saved: ${err.message}.`;
    }
  }

  runBtn.addEventListener("click", run);
  keepBtn.addEventListener("click", keepAs);
  cancelBtn.addEventListener("click", stop);
  applyBtn.addEventListener("click", apply);
  saveBtn.addEventListener("click", save);
  return { gate };
}
