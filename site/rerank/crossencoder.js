// crossencoder.js is the Rerank view's "Score with the cross-encoder in
// this browser" block: it names the model (id, revision, licence, each
// file with its size and how it is checked, the download in all) before
// anything is fetched; on request it has its own worker
// (crossencoder-worker.js) fetch, check and score, with a byte count; the
// scores go through the engine's acceptance contract (acceptCrossEncoder)
// and are shown beside the published logits, with the recording to
// download. Where the files come from is endpoints.js's modelHost: the hub,
// or a loopback test host on a loopback page.

import { $, h, clear, table, numCell, download, badge } from "../common/dom.js";
import { mb, plural, DASH } from "../common/format.js";
import { call } from "../engine/client.js";
import { modelHost } from "../common/endpoints.js";
import { state } from "../common/state.js";

const HUB = "https://huggingface.co";

const size = (f) => (f.bytes < 1e5
  ? (f.approximate ? `about ${Math.max(1, Math.round(f.bytes / 1e3))} kB` : `${f.bytes.toLocaleString("en")} bytes`)
  : `${f.approximate ? "about " : ""}${mb(f.bytes)} MB`);
const short = (sha) => `${sha.slice(0, 12)}…`;
const logit = (x) => Number(x).toFixed(4);
const signed = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(x) >= 1e-3 || x === 0 ? Math.abs(x).toFixed(4) : Math.abs(x).toExponential(2)}`;

let worker = null;
let nextId = 0;
const pending = new Map();

/** ask sends the cross-encoder worker one request; onEvent sees its progress. */
function ask(msg, onEvent) {
  worker ??= startWorker();
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onEvent });
    worker.postMessage({ id, ...msg });
  });
}

function startWorker() {
  const w = new Worker("rerank/crossencoder-worker.js", { type: "module" });
  w.onmessage = ({ data }) => {
    const p = pending.get(data.id);
    if (!p) return;
    if (data.event) return p.onEvent?.(data.event);
    pending.delete(data.id);
    if (data.ok) p.resolve(data.value);
    else p.reject(Object.assign(new Error(data.error.message), data.error));
  };
  w.onerror = (e) => {
    for (const p of pending.values()) p.reject(new Error(e.message || "the cross-encoder worker failed to start"));
    pending.clear();
  };
  return w;
}

/** mountCrossEncoder binds the block. Returns {load}. */
export function mountCrossEncoder() {
  const status = $("#xenc-status");
  const start = $("#xenc-start");
  const bar = $("#xenc-progress");
  const s = state.crossEncoder;

  const weights = () => document.querySelector('input[name="xenc-weights"]:checked')?.value || s.plan.model.weights[0].id;
  const chosen = () => [...s.plan.model.files, s.plan.model.weights.find((w) => w.id === weights())];

  async function showModel() {
    const m = s.plan.model;
    const cached = await ask({ op: "cached", host: s.host.url, model: m, weights: weights() }).catch(() => ({}));
    const files = chosen();
    const toFetch = files.filter((f) => !cached[f.path]);
    const bytes = toFetch.reduce((n, f) => n + f.bytes, 0);
    const approx = toFetch.some((f) => f.approximate);
    const check = (f) => f.sha256
      ? [badge("pinned", "pass"), " sha256 ", h("code", { title: f.sha256 }, short(f.sha256))]
      : [badge("no pin", "incomplete"), " sha256 recorded as downloaded"];
    clear($("#xenc-model")).append(
      h("dl", { class: "plan-list" },
        h("dt", {}, "Model"), h("dd", { id: "xenc-model-id" }, h("code", {}, m.model), s.host.test ? " (a loopback test host's model)" : ""),
        h("dt", {}, "Revision"), h("dd", {}, h("code", { id: "xenc-revision" }, m.revision)),
        h("dt", {}, "Licence"), h("dd", { id: "xenc-license" }, m.license),
        h("dt", {}, "From"), h("dd", {}, h("code", {}, s.host.url), s.host.test ? "" : ", which may redirect large files to its CDN (cdn.hf.co)"),
        h("dt", {}, "Download"), h("dd", { id: "xenc-size" }, toFetch.length
          ? `${approx ? "about " : ""}${mb(bytes)} MB in ${plural(toFetch.length, "file")}${toFetch.length < files.length ? `; ${files.length - toFetch.length} already in this browser's cache` : ""}`
          : "nothing: every file is in this browser's cache")),
      table("Files read (each checked before the model loads)", ["File", "Size", "Check", "Cache"],
        files.map((f) => h("tr", { dataset: { path: f.path } },
          h("th", { scope: "row" }, h("code", {}, f.path)), h("td", { class: "num" }, size(f)), h("td", {}, check(f)),
          h("td", {}, cached[f.path] ? "in this browser's cache" : "to download"))), "xenc-files"),
      m.description ? h("p", { class: "help" }, m.description) : null);
  }

  function renderWeights() {
    const box = clear($("#xenc-weights"));
    box.append(h("legend", {}, "Weights"));
    s.plan.model.weights.forEach((w, i) => {
      const input = h("input", { type: "radio", name: "xenc-weights", value: w.id });
      input.checked = i === 0;
      input.addEventListener("change", showModel);
      box.append(h("label", {}, input, ` ${w.label} (`, h("code", {}, w.path), `, ${size(w)})`));
    });
  }

  function progress(p) {
    if (p.phase === "download" || p.phase === "cached" || p.phase === "verified") {
      bar.max = Math.max(p.total, p.loaded, 1);
      bar.value = p.loaded;
      const what = p.phase === "download" ? `Downloading ${p.path}: ${mb(p.fileLoaded)} MB${p.fileTotal ? ` of ${mb(p.fileTotal)} MB` : ""}`
        : p.phase === "cached" ? `${p.path} from this browser's cache` : `${p.path}: sha256 checked`;
      status.textContent = `${what} (${mb(p.loaded)} MB of ${mb(p.total)} MB in all)`;
    } else if (p.phase === "load") {
      bar.removeAttribute("value");
      status.textContent = "Every file checked out. Loading transformers.js and the model…";
    } else if (p.phase === "score") {
      bar.max = p.total;
      bar.value = p.done;
      status.textContent = `Scoring: call ${p.done} of ${p.total} done…`;
    }
  }

  function precisionNote(run, payload) {
    const c = run.comparison;
    const published = state.rerank.report?.cross_encoder.model.model;
    const fp = `the largest difference from the published logits is ${c.max_abs_diff.toPrecision(3)} (mean ${c.mean_abs_diff.toPrecision(3)} over ${c.pairs} pairs); ${c.orders_agree} of ${c.calls.length} orders agree, and the twelve-case summary ${c.summary.agrees ? "agrees" : "differs"}.`;
    if (published && payload.model.model !== published) {
      return `This is not the published model (${payload.model.model}): the differences measure another model, not the runtime. For the record, ${fp}`;
    }
    if (weights() !== s.plan.model.weights[0].id) {
      return `Quantized weights change the logits: ${fp} The published logits came from full-precision weights.`;
    }
    return `Full-precision weights, as the seed ran: ${fp} What remains is ONNX Runtime's arithmetic against PyTorch's; quantized weights change the logits more.`;
  }

  function renderRun(run, payload) {
    const c = run.comparison;
    const t = payload.timings;
    const env = payload.environment;
    const pairRows = c.calls.flatMap((call) => call.pairs.map((p, j) => h("tr", { dataset: { call: call.id, chunk: p.chunk_id } },
      h("th", { scope: "row", class: j ? "repeat" : null }, call.id),
      h("td", {}, h("code", {}, p.source_id)),
      numCell(p.published, 4, logit), h("td", { class: "num fresh", title: String(p.fresh) }, logit(p.fresh)),
      h("td", { class: "num", title: String(p.diff) }, signed(p.diff)))));
    const tally = (x) => `${x.top1_hits} of ${x.answerable}, MRR ${x.mrr === null ? DASH : Number(x.mrr).toFixed(3)}`;
    clear($("#xenc-output")).append(
      h("p", { id: "xenc-precision", class: "message" }, precisionNote(run, payload)),
      h("p", { class: "help" }, `${env.runtime} ${env["transformers.js"]} on ${env.onnxruntime} (${env.device}, ${plural(env.threads, "thread")}), weights ${env.weights}. `,
        `Files ${t.download_bytes ? `downloaded (${mb(t.download_bytes)} MB)` : "read from this browser's cache"}; the model loaded in ${Math.round(t.load_ms)} ms; first score ${Math.round(t.first_score_ms)} ms after the files were ready; ${t.inference_ms_per_pair} ms of inference per pair.`),
      table("Logits beside the published ones (raw logits, not probabilities)", ["Call", "Source", "Published", "This browser", "Difference"], pairRows, "xenc-pairs"),
      table("Orders", ["Call", "Published order", "This browser's order", "Same order"],
        c.calls.map((call) => h("tr", { dataset: { call: call.id } }, h("th", { scope: "row" }, call.id),
          h("td", {}, h("code", {}, call.published_order.join(", "))), h("td", {}, h("code", {}, call.fresh_order.join(", "))),
          h("td", {}, call.order_agrees ? badge("same", "pass") : badge("differs", "fail")))), "xenc-orders"),
      table("Twelve-case summary (cross-encoder top-1 hits and MRR)", ["Split", "Published", "This browser"],
        ["diagnostic", "validation"].map((split) => h("tr", { dataset: { split } }, h("th", { scope: "row" }, split),
          h("td", {}, tally(c.summary.published[split].cross_encoder)), h("td", {}, tally(c.summary.fresh[split].cross_encoder)))), "xenc-summary"),
      h("p", {}, "The summary ", c.summary.agrees ? badge("agrees", "pass") : badge("differs", "fail"), "."),
      h("div", { class: "controls" },
        h("button", { type: "button", id: "xenc-download", onclick: () => {
          // A file holding the key is withheld (dom.download); say so.
          try {
            download("ragagent-cross-encoder", run.recording.text);
          } catch (err) {
            status.textContent = `Not downloaded: ${err.message}`;
          }
        } }, "Download this scoring's recording"),
        h("span", { class: "help" }, "It replays offline like the published logits: ", h("code", {}, "ragagent rerank --cross-encoder FILE"), ".")));
  }

  async function score() {
    s.running = true;
    start.disabled = true;
    clear($("#xenc-output"));
    const message = $("#xenc-message");
    message.hidden = true;
    bar.hidden = false;
    bar.value = 0;
    document.body.dataset.xenc = "running";
    try {
      const payload = await ask({ op: "score", host: s.host.url, plan: s.plan, weights: weights() }, progress);
      status.textContent = "Scored; the engine is checking the scores…";
      const run = await call("acceptCrossEncoder", [payload]);
      s.run = run;
      state.timings.crossEncoder = { ...payload.timings, environment: payload.environment };
      renderRun(run, payload);
      status.textContent = `Scored ${payload.timings.pairs} pairs in ${plural(payload.calls.length, "call")} in this browser; the engine accepted every score.`;
      document.body.dataset.xenc = "done";
    } catch (err) {
      message.textContent = err.kind === "hash" || err.kind === "http" || err.kind === "network" || err.kind === "size"
        ? `Refused: ${err.message}`
        : err.code ? `The engine refused the scores: ${err.code}: ${err.detail || err.message}` : `Could not score: ${err.message}`;
      message.hidden = false;
      status.textContent = "Nothing was scored.";
      document.body.dataset.xenc = "refused";
    } finally {
      bar.hidden = true;
      s.running = false;
      start.disabled = false;
      showModel().catch(() => {});
    }
  }

  /** show fetches the plan (and a test host's manifest) and names the model. */
  async function show() {
    s.host = modelHost(HUB, location.href);
    try {
      let manifest;
      if (s.host.test) {
        const res = await fetch(`${s.host.url}/ragagent-model.json`, { credentials: "omit" });
        if (!res.ok) throw new Error(`${s.host.url}/ragagent-model.json: HTTP ${res.status}`);
        manifest = await res.text();
      }
      s.plan = await call("crossEncoderPlan", manifest === undefined ? [] : [manifest]);
      renderWeights();
      await showModel();
      $("#xenc-pairs-count").textContent = `${s.plan.pairs} (question, passage) pairs in ${s.plan.calls.length} calls`;
      start.disabled = false;
    } catch (err) {
      status.textContent = `The cross-encoder is not available: ${err.message}`;
    }
  }

  start.addEventListener("click", score);
  let loading = null;

  return {
    /**
     * load names the model (from the engine, or a loopback test host's
     * manifest) and allows scoring, once: when the Rerank view is first
     * shown, so the page's start-up does not pay for it.
     */
    load() {
      loading ??= show();
      return loading;
    },
  };
}
