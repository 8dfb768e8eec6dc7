// experiments/history.js is the Experiments view's history: every
// experiment run in the view (retrieval, and the scripted agent
// experiment's `ragagent eval --json` object) kept in this browser
// (experiments/store.js, IndexedDB "ragagent-experiments", the newest
// store.LIMIT), listed newest first with when, the pack, the question
// set, its cases, the configurations and the best configuration's mrr@10
// (an agent experiment: the agent path's pass rate);
// each opened again (its result drawn as when it ran, and downloadable)
// or deleted. Two retrieval experiments on the same cases compare: each pair of
// configurations (matched by spec sha256, else by name, and the pair
// chosen) with the paired difference of recall@1/5/10 and mrr@10, its 95%
// interval and p-value from the engine (compareExperiments, the command's
// resampling), and the chosen pair question by question: a scatter of
// ranks (common/charts.js) and its table. The comparison is a link:
// #experiments/compare/<A>/<B>?a=<configuration of A>&b=<of B>. An
// experiment run on a team server is kept the same way, with the
// server's URL (never its token), and listed as run there.

import { $, h, clear, option, stackRow, badge } from "../common/dom.js";
import { plural, refusal, DASH } from "../common/format.js";
import { rankScatter } from "../common/charts.js";
import { call } from "../engine/client.js";
import { go } from "../common/nav.js";
import * as store from "./store.js";
import { fixed, pValue } from "./results.js";

/** sha256 is text's lower-case hex sha256 (the platform's SubtleCrypto). */
async function sha256(text) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const signed = (x) => `${x > 0 ? "+" : x < 0 ? "−" : "±"}${fixed(Math.abs(x))}`;

/** when is a kept time for reading (UTC, to the second). */
const when = (iso) => iso.replace("T", " ").replace(/\.\d+Z$/, " UTC");

/** idsOf is an experiment's answerable case ids, joined: two experiments compare when theirs are equal. */
const idsOf = (result) => (result.configs[0]?.cases || []).map((c) => c.id).join("\n");

/** isAgent is whether a kept experiment is an agent experiment (eval's result), not a retrieval one. */
const isAgent = (e) => e.kind === "agent";

/** label names a kept experiment in a list. */
const label = (e) => `#${e.key} · ${when(e.time)} · ${e.corpus.id}${e.server ? ` (on ${e.server})` : ""} · ${e.set.name} · ${e.configs.map((c) => c.name).join(", ")}`;

/**
 * mountHistory binds the history. onOpen(record, result) draws a kept
 * experiment in the view (record.kind "agent" for an agent experiment).
 * Returns {keep, keepAgent, ready, route}.
 */
export function mountHistory(onOpen) {
  const status = $("#exh-status");
  const listBox = $("#exh-list");
  const form = $("#exh-form");
  const selA = $("#exh-a");
  const selB = $("#exh-b");
  const selCA = $("#exh-ca");
  const selCB = $("#exh-cb");
  const runBtn = $("#exh-run");
  const cmpStatus = $("#exh-cmp-status");
  const out = $("#exh-result");
  $("#exh-limit").textContent = String(store.LIMIT);
  let kept = [];
  let engineReady = false;
  let pending = null; // a link's comparison, shown once the engine is ready

  const byKey = (k) => kept.find((e) => String(e.key) === String(k));

  async function refresh(note = "") {
    try {
      kept = await store.list();
      status.textContent = note || (kept.length ? `${plural(kept.length, "experiment")} kept in this browser.` : "No experiment kept yet: each one you run here is kept.");
    } catch (err) {
      kept = [];
      status.textContent = `This browser keeps no history (${err?.message || "IndexedDB refused"}).`;
    }
    renderList();
    fillSelects();
  }

  function renderList() {
    clear(listBox);
    if (!kept.length) return;
    const heads = ["When", "Corpus and where it ran", "Question set", "Cases", "Configurations", "Headline: best mrr@10 (agent: pass rate)", "Actions"];
    const rows = kept.map((e) => h("tr", { dataset: { key: String(e.key) } },
      h("th", { scope: "row" }, `#${e.key} `, h("time", { datetime: e.time }, when(e.time))),
      h("td", { dataset: { ran: e.server ? "server" : "browser" } }, e.corpus.title || e.corpus.id, h("span", { class: "cell-detail" }, `${e.receipt.id}, passages sha256 ${(e.receipt.sha256 || DASH).slice(0, 12)}`),
        h("span", { class: "cell-detail" }, e.server ? `run on the team server ${e.server}` : "run in this browser")),
      h("td", {}, e.set.name, h("span", { class: "cell-detail" }, `sha256 ${e.set.sha256.slice(0, 12)}`)),
      h("td", { class: "num" }, isAgent(e) ? `${e.answerable} answerable, ${plural(e.cases, "case")}` : `${e.answerable} of ${e.cases}`),
      h("td", {}, isAgent(e) ? `agent experiment, policy ${e.policy}` : e.configs.map((c) => c.name).join(", ")),
      h("td", { class: "num", title: e.headline ? String(e.headline.value) : null }, !e.headline ? DASH
        : isAgent(e) ? `agent pass ${e.headline.count}/${e.headline.of} ${fixed(e.headline.value)}` : `mrr@10 ${fixed(e.headline.value)} (${e.headline.config})`),
      h("td", {},
        h("button", { type: "button", class: "small", onclick: () => openKept(e.key) }, "Open", h("span", { class: "sr-only" }, ` experiment #${e.key}`)), " ",
        h("button", { type: "button", class: "small stop", onclick: () => removeKept(e.key) }, "Delete", h("span", { class: "sr-only" }, ` experiment #${e.key}`)))));
    for (const tr of rows) stackRow(tr, heads);
    listBox.append(h("div", { class: "scroll", tabindex: 0, role: "region", "aria-labelledby": "exh-caption" },
      h("table", { class: "stack exh-list", role: "table" },
        h("caption", { id: "exh-caption" }, "Experiments kept in this browser, newest first"),
        h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
        h("tbody", { role: "rowgroup" }, rows))));
  }

  /** fillSelects offers every kept experiment as A, those on A's cases as B, and each one's configurations. */
  function fillSelects(want = {}) {
    const a = want.a ?? selA.value;
    const b = want.b ?? selB.value;
    const retrieval = kept.filter((e) => !isAgent(e));
    clear(selA).append(...retrieval.map((e) => option(String(e.key), label(e), String(e.key) === String(a))));
    const ea = byKey(selA.value);
    const same = retrieval.filter((e) => ea && e.ids === ea.ids);
    clear(selB).append(...same.map((e) => option(String(e.key), label(e), String(e.key) === String(b))));
    if (!same.some((e) => String(e.key) === String(b))) {
      const other = same.find((e) => e.key !== ea?.key);
      if (other) selB.value = String(other.key);
    }
    const eb = byKey(selB.value);
    const ca = want.ca ?? selCA.value, cb = want.cb ?? selCB.value;
    clear(selCA).append(...(ea?.configs || []).map((c) => option(c.name, c.name, c.name === ca)));
    clear(selCB).append(...(eb?.configs || []).map((c) => option(c.name, c.name, c.name === cb)));
    // Unless asked, B's configuration is the one matching A's (same spec, else same name).
    if (!want.cb && ea && eb && ca !== cb) {
      const c = ea.configs.find((x) => x.name === selCA.value);
      const m = eb.configs.find((x) => x.sha256 === c?.sha256) || eb.configs.find((x) => x.name === c?.name);
      if (m) selCB.value = m.name;
    }
    gate();
  }

  function gate() {
    let why = "";
    if (!engineReady) why = "Waiting for the engine.";
    else if (!kept.some((e) => !isAgent(e))) why = "Run a retrieval experiment first: none is kept yet.";
    else if (!selB.value) why = "No kept experiment has the same questions as A.";
    runBtn.disabled = Boolean(why);
    $("#exh-why").textContent = why;
  }

  /** pairsOf is the chosen pair first, then each configuration of A with its match in B (same spec, else same name). */
  function pairsOf(ea, eb, ca, cb) {
    const pairs = [{ a: ca, b: cb, matched: "chosen" }];
    for (const c of ea.configs) {
      let m = eb.configs.find((x) => x.sha256 === c.sha256);
      let how = "same spec";
      if (!m) {
        m = eb.configs.find((x) => x.name === c.name);
        how = "same name, another spec";
      }
      if (!m) continue;
      const p = pairs.find((x) => x.a === c.name && x.b === m.name);
      if (p) p.matched = `chosen, ${how}`;
      else pairs.push({ a: c.name, b: m.name, matched: how });
    }
    return pairs;
  }

  async function compare(keyA, keyB, ca, cb) {
    clear(out);
    let ea = byKey(keyA), eb = byKey(keyB);
    if (ea && isAgent(ea)) ea = null;
    if (eb && isAgent(eb)) eb = null;
    if (!ea || !eb) {
      cmpStatus.textContent = `The link names experiment${!ea && !eb ? "s" : ""} ${[!ea ? `#${keyA}` : "", !eb ? `#${keyB}` : ""].filter(Boolean).join(" and ")} this browser does not keep as a retrieval experiment (a kept experiment's link works only in the browser that kept it).`;
      document.body.dataset.experimentCompare = "failed";
      return;
    }
    const ra = JSON.parse(ea.text), rb = JSON.parse(eb.text);
    ca = ra.configs.some((c) => c.name === ca) ? ca : ra.configs[0].name;
    cb = rb.configs.some((c) => c.name === cb) ? cb : rb.configs[0].name;
    const pairs = pairsOf(ea, eb, ca, cb);
    cmpStatus.textContent = `Comparing experiment #${ea.key} with #${eb.key}…`;
    document.body.dataset.experimentCompare = "running";
    try {
      const res = await call("compareExperiments", [{ a: ra, b: rb, pairs: pairs.map(({ a, b }) => ({ a, b })) }]);
      cmpStatus.textContent = `Experiment #${eb.key} against #${ea.key} on the same ${plural(res.cases, "answerable question")}, ${plural(res.pairs.length, "pair")} of configurations.`;
      out.append(differences(ea, eb, res, pairs), perQuestion(ra, rb, ca, cb, res.k, new Map(ea.set.cases.map((c) => [c.id, c.question]))));
      document.body.dataset.experimentCompare = "done";
    } catch (err) {
      cmpStatus.textContent = `Not compared: ${refusal(err)}`;
      document.body.dataset.experimentCompare = "failed";
    }
  }

  function differences(ea, eb, res, pairs) {
    const heads = ["Configuration of A", "Configuration of B", "Paired by", "Metric", "A", "B", "Difference (B − A)", "95% interval", "p-value"];
    const rows = res.pairs.flatMap((p, i) => p.metrics.map((m) => h("tr", { dataset: { a: p.a, b: p.b, metric: m.metric } },
      h("th", { scope: "row" }, p.a),
      h("td", {}, p.b),
      h("td", {}, pairs[i].matched),
      h("td", {}, m.metric),
      h("td", { class: "num", title: String(m.a_value) }, fixed(m.a_value)),
      h("td", { class: "num", title: String(m.b_value) }, fixed(m.b_value)),
      h("td", { class: "num", dataset: { value: "difference" }, title: String(m.difference) }, signed(m.difference)),
      h("td", { class: "num", dataset: { value: "ci95" }, title: JSON.stringify(m.ci95) }, `[${signed(m.ci95[0])}, ${signed(m.ci95[1])}]`),
      h("td", { class: "num", dataset: { value: "p_value" }, title: String(m.p_value) }, pValue(m.p_value)))));
    for (const tr of rows) stackRow(tr, heads);
    return h("section", { class: "exh-differences", "aria-labelledby": "exh-diff-title" },
      h("h4", { id: "exh-diff-title" }, `Experiment #${eb.key} against #${ea.key}, configuration by configuration`),
      h("p", { class: "help" }, `B minus A on the same questions, with the 95% interval and the two-sided p-value of 10,000 paired resamples: the engine's, as ragagent retrieval --json compares two configurations run together. nDCG@10 is not compared: the kept ranks do not give it again.`),
      h("div", { class: "scroll", tabindex: 0, role: "region", "aria-labelledby": "exh-diff-caption" },
        h("table", { class: "stack exh-diff", role: "table" },
          h("caption", { id: "exh-diff-caption" }, `Paired differences, experiment #${eb.key} minus #${ea.key}`),
          h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
          h("tbody", { role: "rowgroup" }, rows))));
  }

  function perQuestion(ra, rb, ca, cb, k, questions) {
    const A = ra.configs.find((c) => c.name === ca), B = rb.configs.find((c) => c.name === cb);
    const heads = ["Question", `Rank under ${ca} (A)`, `Rank under ${cb} (B)`, "B against A"];
    const points = A.cases.map((c, i) => ({ id: c.id, a: c.rank, b: B.cases[i]?.rank ?? null }));
    const rank = (r) => (r === null || r === undefined ? "not found" : String(r));
    const rows = points.map((p) => {
      const x = p.a ?? Infinity, y = p.b ?? Infinity;
      const v = x === y ? ["same", "none"] : y < x ? ["better", "pass"] : ["worse", "fail"];
      return stackRow(h("tr", { dataset: { case: p.id } },
        h("th", { scope: "row" }, p.id, questions.has(p.id) ? h("span", { class: "cell-detail" }, questions.get(p.id)) : null), h("td", { class: "num" }, rank(p.a)), h("td", { class: "num" }, rank(p.b)), h("td", {}, badge(v[0], v[1]))), heads);
    });
    return h("section", { class: "exh-questions", "aria-labelledby": "exh-q-title" },
      h("h4", { id: "exh-q-title" }, `Per question: ${ca} in A against ${cb} in B`),
      rankScatter(points, k, ca, cb),
      h("div", { class: "scroll", tabindex: 0, role: "region", "aria-labelledby": "exh-q-caption" },
        h("table", { class: "stack exh-q", role: "table" },
          h("caption", { id: "exh-q-caption" }, `Rank of the first matching passage per question, ${ca} (A) and ${cb} (B)`),
          h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, heads.map((c) => h("th", { scope: "col", role: "columnheader" }, c)))),
          h("tbody", { role: "rowgroup" }, rows))));
  }

  async function openKept(key) {
    const e = byKey(key);
    if (!e) return;
    onOpen(e, JSON.parse(e.text));
  }

  async function removeKept(key) {
    try {
      await store.remove(key);
      await refresh(`Deleted experiment #${key}.`);
    } catch (err) {
      status.textContent = `Not deleted: ${err.message}`;
    }
  }

  form.addEventListener("change", (e) => {
    if (e.target === selA) fillSelects({ ca: "", cb: "" });
    else if (e.target === selB) fillSelects({ cb: "" });
    else if (e.target === selCA) fillSelects({ cb: "" });
    else gate();
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (runBtn.disabled) return;
    go("experiments", ["compare", selA.value, selB.value], new URLSearchParams({ a: selCA.value, b: selCB.value }));
    compare(selA.value, selB.value, selCA.value, selCB.value);
  });

  return {
    /**
     * keep stores the experiment just run: ran is {corpus: {id, title,
     * manifest}, set: {name, kind, text, cases}, text (the result's JSON),
     * result, server (the team server's URL it ran on, or null: this
     * browser)}. It resolves with a sentence for the view's status.
     */
    async keep(ran) {
      try {
        const r = ran.result;
        const digests = await call("specDigests", [r.configs.map((c) => c.spec)]);
        const best = r.configs.reduce((m, c) => (m === null || c.metrics["mrr@10"].value > m.value ? { config: c.name, value: c.metrics["mrr@10"].value } : m), null);
        const setText = ran.set.text ?? JSON.stringify(ran.set.cases);
        const record = {
          time: new Date().toISOString(),
          corpus: { id: ran.corpus.id, title: ran.corpus.title },
          receipt: { id: ran.corpus.manifest?.id || ran.corpus.id, sha256: ran.corpus.manifest?.passages_sha256 || "" },
          set: { ...ran.set, sha256: await sha256(setText) },
          configs: r.configs.map((c, i) => ({ name: c.name, sha256: digests[i] })),
          k: r.k, cases: r.cases, answerable: r.answerable, ids: idsOf(r),
          headline: best,
          text: ran.text,
          server: ran.server ?? null,
        };
        const { key, dropped } = await store.keep(record);
        await refresh();
        return `Kept as experiment #${key} in this browser's history${dropped ? ` (the oldest ${plural(dropped, "experiment")} dropped: the newest ${store.LIMIT} are kept)` : ""}.`;
      } catch (err) {
        return `Not kept in the history: ${err.message}.`;
      }
    },
    /**
     * keepAgent stores an agent experiment just run: ran is {corpus: {id,
     * title, manifest}, set, policy, result (what ragagent eval --json
     * prints), server (the team server's URL it ran on, or null: this
     * browser)}. It resolves with a sentence for the view's status.
     */
    async keepAgent(ran) {
      try {
        const r = ran.result;
        const pass = r.experiment.paths.find((p) => p.path === "agent")?.rates.find((x) => x.name === "pass");
        const setText = ran.set.text ?? JSON.stringify(ran.set.cases);
        const record = {
          kind: "agent",
          time: new Date().toISOString(),
          corpus: { id: ran.corpus.id, title: ran.corpus.title },
          receipt: { id: ran.corpus.manifest?.id || ran.corpus.id, sha256: ran.corpus.manifest?.passages_sha256 || "" },
          set: { ...ran.set, sha256: await sha256(setText) },
          policy: ran.policy, configs: [],
          cases: r.summary.answerable_cases + r.summary.unanswerable_cases, answerable: r.summary.answerable_cases, ids: "",
          headline: pass ? { config: "agent", value: pass.value, count: pass.count, of: pass.of } : null,
          text: JSON.stringify(r, null, 2) + "\n",
          server: ran.server ?? null,
        };
        const { key, dropped } = await store.keep(record);
        await refresh();
        return `Kept as experiment #${key} in this browser's history${dropped ? ` (the oldest ${plural(dropped, "experiment")} dropped: the newest ${store.LIMIT} are kept)` : ""}.`;
      } catch (err) {
        return `Not kept in the history: ${err.message}.`;
      }
    },
    /** ready lists the kept experiments and shows a comparison a link asked for. */
    async ready() {
      engineReady = true;
      await refresh();
      if (pending) {
        const p = pending;
        pending = null;
        fillSelects({ a: p.a, b: p.b, ca: p.ca, cb: p.cb });
        await compare(p.a, p.b, p.ca, p.cb);
      }
    },
    /** route follows #experiments/compare/<A>/<B>?a=...&b=...; true when it was one. */
    route(segs, query) {
      if (segs[0] !== "compare") return false;
      const p = { a: segs[1] || "", b: segs[2] || "", ca: query.get("a") || "", cb: query.get("b") || "" };
      $("#exh-title").scrollIntoView?.();
      if (!engineReady) pending = p;
      else {
        fillSelects({ a: p.a, b: p.b, ca: p.ca, cb: p.cb });
        compare(p.a, p.b, p.ca, p.cb);
      }
      return true;
    },
  };
}
