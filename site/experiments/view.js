// experiments/view.js is the Experiments view (#experiments): the corpus
// chosen in the picker at the top of the page, a question set (the pack's
// authored cases, or a file through the input labelled "Question set",
// bounded as every file the page reads), the retrieval configurations to
// compare (the engine's built-ins, the offline deterministic ones checked
// by default, and configurations of the person's own as JSON, kept in this
// browser and carried by the link), a baseline, and "Run experiment",
// (or one of the person's own question sets, listed below the form by
// sets.js and offered by "Questions from"), which asks the engine's worker for `ragagent retrieval --json` with the
// baseline first, with progress and a cancel. The result is drawn by
// results.js; "Download results (JSON)" saves the engine's bytes as they
// came, and is enabled only once an experiment has ended. The setup is
// kept in the address (#experiments?corpus=...&configs=...), so a link
// restores it. "Run on" sends the same experiment to the team server
// connected to (common/server.js, which alone holds its token): a pack
// the server offers, the same question set and configurations, the
// server's progress events, Cancel cancelling it there, and the result
// the server sent drawn, downloadable and kept as a local one is, marked
// with the server it ran on. The scripted agent experiment has its own
// "Run ... on": on the team server it is the same question set and a pack
// the server offers, its events shown, Cancel cancelling it there, and
// the server's eval object drawn and kept likewise (its trials the
// server's: none in Runs, no trace linked).

import { $, h, clear, option, download } from "../common/dom.js";
import { plural, refusal } from "../common/format.js";
import { readText } from "../common/files.js";
import { call, events } from "../engine/client.js";
import { onRoute, replace, currentView, link } from "../common/nav.js";
import * as runs from "../common/runs.js";
import * as server from "../common/server.js";
import { outcome } from "../common/trials.js";
import { state } from "../common/state.js";
import { onCorpus, onBusy, choose, DOCUMENTS } from "../corpus/picker.js";
import { AUTHORED, FILE, SET, MAX_SPEC_CHARS, encode, decode, parseSpec, runOrder, loadSpecs, saveSpecs, mergeSpecs, SpecError } from "./setup.js";
import { metricsBlock, comparisonsBlock, questionsBlock } from "./results.js";
import { agentBlock } from "./agent.js";
import { mountLive } from "./live.js";
import { mountTune } from "./tune.js";
import { mountHistory } from "./history.js";
import { mountSets } from "./sets.js";
import { toJSON } from "../common/sets.js";
import { annotationRegion } from "../trace/annotate.js";

/** storage is localStorage, or null when the browser blocks it. */
function storage() {
  try { return window.localStorage; } catch { return null; }
}

/** mount binds the view. Returns {ready, gate, borrowKeyBox}. */
export function mount() {
  const form = $("#exp-form");
  const fileInput = $("#exp-cases-file");
  const start = $("#exp-run");
  const cancel = $("#exp-cancel");
  const save = $("#exp-download");
  const status = $("#exp-status");
  const bar = $("#exp-progress");
  const message = $("#exp-message");
  const output = $("#exp-results");
  const ex = state.experiments;
  let wanted = null; // a link's setup, applied once the engine and the corpus are ready
  let agentWhy = "Waiting for the engine.";
  // The Gemini agent experiment asks the same question set as the scripted one.
  const live = mountLive(() => {
    if (agentWhy) return { why: agentWhy };
    const req = { corpus: state.corpus.id };
    if (ex.casesText !== null) req.cases = ex.casesText;
    return { req };
  }, (result) => history.keepAgent({ ...agentEntry(state.corpus.id, "gemini"), result }));

  // Tune asks the same question set too; its choice joins the view's configurations.
  const tune = mountTune(() => {
    if (agentWhy) return { why: agentWhy };
    const req = { corpus: state.corpus.id };
    if (ex.casesText !== null) req.cases = ex.casesText;
    return { req };
  }, (spec) => {
    // A built-in chosen is offered already; a grid point becomes one of the person's own.
    if (!(ex.builtins || []).some((c) => c.name === spec.name)) ex.specs = mergeSpecs(ex.specs, [spec]);
    specsChanged([...new Set([...checked(), spec.name])]);
  }, (spec, name) => {
    // Saved under the person's name: one of their own configurations, checked.
    const own = parseSpec(JSON.stringify({ ...spec, name, description: `chosen by Tune on ${state.corpus.id}` }));
    if ((ex.builtins || []).some((c) => c.name === own.name)) throw new SpecError(`${own.name} is a built-in's name: give yours another`);
    ex.specs = mergeSpecs(ex.specs, [own]);
    specsChanged([...new Set([...checked(), own.name])]);
    return `Saved as ${own.name}: one of your configurations above (kept in this browser and carried by this view's link), checked for the next experiment.`;
  });

  // Every experiment run is kept; a kept one opens again here.
  const history = mountHistory((record, result) => {
    if (record.kind === "agent") {
      clear($("#exp-agent-results")).append(agentBlock(result));
      $("#exp-agent-status").textContent = `Experiment #${record.key}, kept ${record.time.replace("T", " ").replace(/\.\d+Z$/, " UTC")}: the agent experiment (policy ${record.policy}) on ${record.corpus.title || record.corpus.id}, ${record.set.name}${record.server ? `, run on the team server ${record.server}` : ""}.`;
      $("#exp-agent").scrollIntoView?.();
      return;
    }
    ex.text = record.text;
    ex.result = result;
    ex.ran = { corpus: record.corpus.id, order: result.configs.map((c) => c.spec), questions: new Map(record.set.cases.filter((c) => c.question).map((c) => [c.id, { question: c.question, version: c.version }])), server: record.server ?? null };
    showMessage("");
    status.textContent = `Experiment #${record.key}, kept ${record.time.replace("T", " ").replace(/\.\d+Z$/, " UTC")}: ${plural(result.configs.length, "configuration")} on ${record.corpus.title || record.corpus.id}, ${record.set.name}${record.server ? `, run on the team server ${record.server}` : ""}.`;
    showResult();
    save.disabled = false;
    output.scrollIntoView?.();
  });

  function showMessage(text) {
    message.textContent = text;
    message.hidden = !text;
  }

  /** checked is the configurations checked, in list order. */
  const checked = () => [...form.querySelectorAll('input[name="exp-config"]:checked')].map((i) => i.value);

  /** onServer says whether the experiment is to run on the team server connected to. */
  const onServer = () => $("#exp-where-server").checked && server.connection() !== null;

  /** serverPack is the server's pack chosen ({id, title, sha256, origin, ...}), or null. */
  const serverPack = () => packOf("#exp-server-pack");

  /** agentOnServer says whether the scripted agent experiment is to run on the team server connected to. */
  const agentOnServer = () => $("#exp-agent-where-server").checked && server.connection() !== null;

  /** agentServerPack is the server's pack chosen for the agent experiment, or null. */
  const agentServerPack = () => packOf("#exp-agent-server-pack");

  /** packOf is the connected server's pack a select names, or null. */
  const packOf = (select) => server.connection()?.corpora.find((c) => c.id === $(select).value) ?? null;

  /** fillServerPacks offers the connected server's packs to both experiments, the page's pack chosen
   * when the server has it (else the choice kept); without a connection they run in this browser. */
  function fillServerPacks(want = null) {
    offerPacks("exp-where", "exp-server-pack", want ?? $("#exp-server-pack").value, onServer,
      "the question set and configurations are the ones chosen here");
    offerPacks("exp-agent-where", "exp-agent-server-pack", want ?? $("#exp-agent-server-pack").value, agentOnServer,
      "the question set is the one chosen above, the configuration the pack's default there; the trials are graded there and not kept in Runs, so no trace is linked");
    gate();
  }

  /** offerPacks fills one "Run on" fieldset (radios named name, the select's id) with the server's packs. */
  function offerPacks(name, select, want, on, what) {
    const c = server.connection();
    const radio = $(`#${name}-server`);
    const sel = clear($(`#${select}`));
    radio.disabled = c === null;
    if (c === null) {
      radio.checked = false;
      document.querySelector(`input[name="${name}"][value="browser"]`).checked = true;
      $(`#${name}-help`).textContent = `Connect to a team server above to run there. Its packs, your uploads among them, are offered as the pack; ${what}.`;
    } else {
      $(`#${name}-help`).textContent = `On ${c.server}: its packs are offered (the page's pack, ${state.corpus.id}, chosen when the server has it); ${what}. For a pack only the server has, choose it before the question set file: the file is then read as the server will be sent it, its targets the server's to check.`;
      if (!c.corpora.some((p) => p.id === want)) want = c.corpora.some((p) => p.id === state.corpus.id) ? state.corpus.id : c.corpora[0]?.id;
      sel.append(...c.corpora.map((p) => option(p.id, `${p.id}: ${p.title} (${p.origin === "uploaded" ? "your upload" : "built in"}, ${plural(p.passages, "passage")})`, p.id === want)));
    }
    sel.disabled = !on();
  }

  function setup() {
    const set = ex.setKey !== null ? setList.get(ex.setKey) : null;
    return { corpus: state.corpus.id, cases: set ? SET : ex.casesText === null ? AUTHORED : FILE, set: set?.name ?? "", configs: checked(), baseline: $("#exp-baseline").value, specs: ex.specs };
  }

  // The open pack's question sets, offered by "Questions from" (a link's set is chosen once they are listed).
  let wantSet = "";
  const setList = mountSets({ use: useSet, inUse: () => ex.setKey, listed: (list) => {
    fillChoice(list);
    if (wantSet) {
      const set = list.find((x) => x.name === wantSet);
      if (set) useSet(set);
      else showMessage(`From the link: this browser has no question set named ${wantSet} for ${state.corpus.info?.manifest.title || state.corpus.id}.`);
      wantSet = "";
    }
  } });
  let listedSets = [];

  /** fillChoice offers the authored questions, the pack's sets and the file chosen, the one in use selected. */
  function fillChoice(list = listedSets) {
    listedSets = list;
    const sel = clear($("#exp-cases-choice"));
    sel.append(option(AUTHORED, "the corpus's authored questions", ex.casesText === null),
      ...list.map((x) => option(`set:${x.key}`, `your set: ${x.name} (${plural(x.cases.length, "question")})`, ex.setKey === x.key)));
    if (ex.casesText !== null && ex.setKey === null) sel.append(option(FILE, `the file ${ex.casesName}`, true));
    sel.disabled = !state.info;
  }

  /** useSet makes one of the pack's question sets the view's question set
   * (its ragagent-cases/1 text, read by the engine as a file would be);
   * null (the set in use was deleted) goes back to the authored questions. */
  async function useSet(set) {
    if (!set) {
      useAuthored();
      return;
    }
    const text = toJSON(set);
    try {
      ex.casesQuestions = await call("questionSet", [{ corpus: state.corpus.id, text }]);
      ex.casesText = text;
      ex.casesName = `your set “${set.name}”`;
      ex.setKey = set.key;
      fileInput.value = "";
      showMessage("");
    } catch (err) {
      showMessage(`Your set ${set.name}: ${refusal(err)}`);
    }
    describeCases();
    fillChoice();
    setList.refresh();
    gate();
    remember();
  }

  function remember() {
    // A comparison's link stays in the address until the setup is changed by hand.
    if (location.hash.startsWith("#experiments/compare/")) return;
    if (state.info && ex.builtins && !wanted && currentView() === "experiments") replace("experiments", [], encode(setup()));
  }

  /** fillBaseline offers the checked configurations as the baseline, keeping the choice when it is still checked. */
  function fillBaseline(want = $("#exp-baseline").value) {
    const names = checked();
    const sel = clear($("#exp-baseline"));
    sel.append(...names.map((n) => option(n, n, n === want)));
    if (!names.includes(want) && names.length) sel.value = names[0];
    sel.disabled = !names.length;
  }

  /** gate enables Run experiment only when it can run on the corpus shown, and says why not. */
  function gate() {
    // base: what the page's engine needs, for every experiment of the view.
    let base = "";
    if (!state.info) base = "Waiting for the engine.";
    else if (state.corpus.loading) base = "Waiting while the corpus opens: an experiment now would run on the corpus before.";
    else if (ex.builtinsError) base = ex.builtinsError;
    else if (!ex.builtins) base = "Waiting for the engine's configurations.";
    const noSet = ex.casesText === null && !state.corpus.cases.length ? "This corpus has no authored questions: choose a question set file." : "";
    // On the team server the pack's own questions are the server's to know.
    const why = base || (!checked().length ? "Check at least one configuration."
      : onServer() ? (serverPack() ? "" : "The team server offers no pack: upload one to it first.") : noSet);
    start.disabled = Boolean(why) || ex.running !== null;
    $("#exp-why").textContent = ex.running ? "" : why;
    // The agent experiments run here on the same question set, with no configuration.
    agentWhy = base || noSet;
    // On the team server, as the retrieval experiment there, the pack's own questions are the server's.
    const agentRunWhy = agentOnServer() ? base || (agentServerPack() ? "" : "The team server offers no pack: upload one to it first.") : agentWhy;
    $("#exp-agent-run").disabled = Boolean(agentRunWhy) || ex.agentRunning;
    $("#exp-agent-why").textContent = ex.agentRunning ? "" : agentRunWhy;
    live.gate(agentWhy);
    tune.gate(agentWhy || (ex.running ? "Waiting for the experiment to end." : ""));
  }

  /** questionSet is what the history keeps of the question set chosen now. */
  function questionSet(corpus) {
    const cases = (list) => list.map((c) => ({ id: c.id, question: c.question, version: c.version }));
    if (ex.casesText !== null) return { name: ex.casesName, kind: FILE, text: ex.casesText, cases: cases(ex.casesQuestions || []) };
    // A pack this page has not open (the server's own): its questions are the server's, unknown here.
    const known = corpus === state.corpus.id ? state.corpus.cases : [];
    return { name: `the authored questions of ${corpus}`, kind: AUTHORED, text: null, cases: cases(known) };
  }

  /** agentEntry is what the history keeps of an agent experiment on
   * corpus besides its result: the pack as it is now (remote: the team
   * server's {server, pack} it runs on, whose receipt is kept for a pack
   * this page has not open), the set, the policy. */
  function agentEntry(corpus, policy, remote = null) {
    if (remote && (corpus !== state.corpus.id || !state.corpus.info)) {
      const pack = remote.pack;
      return { corpus: { id: corpus, title: pack.title, manifest: { id: pack.id, title: pack.title, passages_sha256: pack.sha256 } }, set: questionSet(corpus), policy, server: remote.server };
    }
    return { corpus: { id: corpus, title: state.corpus.info?.manifest.title || corpus, manifest: state.corpus.info?.manifest }, set: questionSet(corpus), policy, server: remote?.server ?? null };
  }

  /** runAgent runs the engine's eval over the question set: the scripted
   * policy on both paths, in this page's worker or, chosen, on the team
   * server connected to (its progress events, Cancel cancelling it there). */
  async function runAgent() {
    if ($("#exp-agent-run").disabled) return;
    const box = $("#exp-agent-results");
    const st = $("#exp-agent-status");
    const pr = $("#exp-agent-progress");
    const remote = agentOnServer() ? { server: server.connection().server, pack: agentServerPack() } : null;
    const req = { corpus: remote ? remote.pack.id : state.corpus.id, policy: "scripted" };
    if (ex.casesText !== null) req.cases = ex.casesText;
    const entry = agentEntry(req.corpus, req.policy, remote);
    const setName = ex.casesText !== null ? ex.casesName : "the authored questions";
    ex.agentRunning = true;
    ex.agentAbort = remote ? new AbortController() : null;
    ex.agentJob = { id: null, cancel: false }; // the engine's job, in this browser
    gate();
    clear(box);
    pr.hidden = false;
    pr.removeAttribute("value");
    st.textContent = remote
      ? `Sending the scripted policy on both paths over ${setName} on ${entry.corpus.title} to the team server ${remote.server}…`
      : `Running the scripted policy on both paths over ${setName}…`;
    document.body.dataset.agentExperiment = "running";
    $("#exp-agent-cancel").disabled = false;
    const t0 = performance.now();
    agentText = null;
    $("#exp-agent-download").disabled = true;
    try {
      let json, trials = null;
      if (remote) {
        json = await server.evaluate({ ...req, signal: ex.agentAbort.signal,
          onState: (s, id) => {
            st.textContent = s === "queued"
              ? `Queued on the team server (experiment ${id}): it runs when the experiments before it end…`
              : `Running on the team server (experiment ${id})…`;
            document.body.dataset.agentExperimentServer = s;
          },
          onTrial: (done, total) => {
            if (!total) return;
            pr.max = total;
            pr.value = done;
            st.textContent = `Trial ${done} of ${total} on the team server…`;
          } });
      } else {
        const job = ex.agentJob;
        ({ json, trials } = await call("evalReport", [req, events("trial", "done", "total", "trial")], (e) => {
          if (e.event === "started") {
            job.id = e.runId;
            if (job.cancel) call("cancel", [e.runId]); // Cancel came before the engine named the job
            return;
          }
          if (e.event !== "trial" || !e.total || job.cancel) return;
          pr.max = e.total;
          pr.value = e.done;
          st.textContent = `Trial ${e.done} of ${e.total} (${e.trial})…`;
        }));
      }
      const result = JSON.parse(json);
      agentText = json;
      $("#exp-agent-download").disabled = false;
      // The server's trials are its own: none is kept in Runs, no trace linked.
      const kept = remote ? { keys: [], note: "" } : await keepTrials(req, result, trials);
      st.textContent = `Done in ${Math.round(performance.now() - t0)} ms${remote ? ` on the team server ${remote.server}` : ""}: ${plural(result.summary.trials, "trial")} on ${result.corpus}.${kept.note}`;
      box.append(agentBlock(result, remote ? null : (i) => (kept.keys[i] === undefined ? null : link("trace", ["run", kept.keys[i]]))));
      st.textContent += ` ${await history.keepAgent({ ...entry, result })}`;
      document.body.dataset.agentExperiment = "done";
    } catch (err) {
      const stopped = err.code === "cancelled";
      st.textContent = stopped
        ? `Cancelled${remote ? ` on the team server ${remote.server}` : ""}: nothing was kept, so there is nothing to download.`
        : `The agent experiment did not run${remote ? ` on the team server ${remote.server}` : ""}: ${refusal(err)}`;
      document.body.dataset.agentExperiment = stopped ? "cancelled" : "failed";
    } finally {
      ex.agentRunning = false;
      ex.agentAbort = null;
      ex.agentJob = null;
      $("#exp-agent-cancel").disabled = true;
      pr.hidden = true;
      gate();
    }
  }

  /** stopAgent cancels the agent experiment running: on the team server,
   * or the engine's job in this browser (it stops between trials). */
  function stopAgent() {
    if (!ex.agentRunning) return;
    $("#exp-agent-cancel").disabled = true;
    if (ex.agentAbort) {
      $("#exp-agent-status").textContent = "Cancelling on the team server…";
      ex.agentAbort.abort();
      return;
    }
    $("#exp-agent-status").textContent = "Cancelling…";
    ex.agentJob.cancel = true;
    if (ex.agentJob.id !== null) call("cancel", [ex.agentJob.id]);
  }

  let agentText = null; // the last agent experiment's JSON, as ragagent eval --json prints it

  /** keepTrials keeps an agent experiment's trials in Runs (one
   * transaction), so each question's trace can be opened, now and later;
   * keys[i] is result.cases[i]'s. */
  async function keepTrials(req, result, trials) {
    const time = new Date().toISOString();
    const title = state.corpus.info?.manifest.title || req.corpus;
    const config = state.corpus.info?.retrieval_config || "seed";
    const list = trials.map((t) => ({
      time, question: t.result?.question || "", corpus: { id: req.corpus, title }, config, policy: "scripted", mode: t.mode,
      outcome: outcome(t), report: t, recording: null, experiment: `agent experiment on ${ex.casesText !== null ? ex.casesName : "the authored questions"}`,
      spec: t.result ? { corpus: req.corpus, question: t.result.question, version: t.result.version, mode: t.mode, limits: t.result.limits, policy: "scripted" } : null,
    }));
    try {
      const { keys, dropped } = await runs.keepAll(list);
      return { keys, note: ` Its ${plural(keys.length, "trial")} are kept in Runs${dropped ? ` (the oldest ${plural(dropped, "run")} dropped: this browser keeps ${runs.LIMIT})` : ""}.` };
    } catch (err) {
      return { keys: [], note: ` Its trials are not kept in Runs: ${err.message || "this browser refused IndexedDB"}.` };
    }
  }

  function saveAgent() {
    if (!agentText) return;
    try {
      download("ragagent-eval", agentText);
      $("#exp-agent-status").textContent = "Downloaded: the same JSON as ragagent eval --cases FILE --json for this experiment (its seconds measured here).";
    } catch (err) {
      $("#exp-agent-status").textContent = `Not downloaded: ${err.message}`;
    }
  }

  function describeCases() {
    const el = $("#exp-cases-now");
    if (ex.casesText !== null) {
      const size = ex.setKey !== null ? plural(ex.casesQuestions?.length ?? 0, "question") : plural(new TextEncoder().encode(ex.casesText).length, "byte");
      el.textContent = `Using ${ex.casesName} (${size}).`;
      $("#exp-cases-authored").hidden = false;
    } else {
      const n = state.corpus.cases.length;
      el.textContent = n ? `Using the ${plural(n, "authored question")} of ${state.corpus.info?.manifest.title || "this corpus"}.` : "This corpus has no authored questions.";
      $("#exp-cases-authored").hidden = true;
    }
  }

  /** renderConfigs lists the built-ins and the person's own, checking names (default: the engine's default selection). */
  function renderConfigs(names = null) {
    const box = clear($("#exp-configs"));
    // The default selection is every built-in: the engine lists only the
    // offline, deterministic ones (DESIGN: --config all), seed first.
    const want = new Set(names ?? (ex.builtins || []).map((c) => c.name));
    for (const c of ex.builtins || []) {
      const id = `exp-config-${c.name}`;
      box.append(h("li", {},
        h("input", { type: "checkbox", name: "exp-config", id, value: c.name, checked: want.has(c.name), "aria-describedby": c.description ? `${id}-about` : null }),
        " ", h("label", { for: id }, c.name),
        c.description ? h("span", { class: "help", id: `${id}-about` }, ` ${c.description}`) : null));
    }
    ex.specs.forEach((s, i) => {
      const id = `exp-own-${i}`;
      box.append(h("li", { class: "exp-own" },
        h("input", { type: "checkbox", name: "exp-config", id, value: s.name, checked: want.has(s.name) }),
        " ", h("label", { for: id }, s.name), h("span", { class: "help" }, " (your own)"), " ",
        h("button", { type: "button", class: "small stop", onclick: () => removeSpec(s.name) }, "Remove", h("span", { class: "sr-only" }, ` ${s.name}`))));
    });
  }

  function specsChanged(names) {
    if (!saveSpecs(storage(), ex.specs)) $("#exp-spec-status").textContent = "This browser would not keep it (storage blocked); the link still carries it.";
    renderConfigs(names);
    fillBaseline();
    gate();
    remember();
  }

  function removeSpec(name) {
    const keep = checked().filter((n) => n !== name);
    ex.specs = ex.specs.filter((s) => s.name !== name);
    $("#exp-spec-status").textContent = `Removed ${name}.`;
    specsChanged(keep);
  }

  function addSpec() {
    const out = $("#exp-spec-status");
    try {
      const spec = parseSpec($("#exp-spec").value);
      if ((ex.builtins || []).some((c) => c.name === spec.name)) throw new SpecError(`${spec.name} is a built-in's name: give yours another`);
      const names = [...new Set([...checked(), spec.name])];
      ex.specs = mergeSpecs(ex.specs, [spec]);
      out.textContent = `Added ${spec.name}; the engine checks its settings when the experiment runs.`;
      out.className = "help";
      specsChanged(names);
    } catch (err) {
      out.textContent = `Not added: ${err.message}.`;
      out.className = "error";
    }
  }

  /** apply fills the form from a link's setup (nothing runs). */
  async function apply({ setup: s, dropped }) {
    wanted = null;
    ex.specs = mergeSpecs(ex.specs, s.specs);
    if (s.specs.length) saveSpecs(storage(), ex.specs);
    const known = new Set([...(ex.builtins || []).map((c) => c.name), ...ex.specs.map((x) => x.name)]);
    const unknown = s.configs.filter((n) => !known.has(n));
    const notes = [...dropped, ...unknown.map((n) => `the link names ${n}, which this engine does not offer`)];
    if (s.cases === SET && s.set) wantSet = s.set;
    if (s.cases === FILE && ex.casesText === null) notes.push("the link's question set was a file: choose it again through \u201cQuestion set\u201d");
    renderConfigs(s.configs.length ? s.configs.filter((n) => known.has(n)) : null);
    fillBaseline(s.baseline);
    showMessage(notes.length ? `From the link: ${notes.join("; ")}.` : "");
    gate();
    const shipped = state.corpus.shipped.some((m) => m.id === s.corpus) || (s.corpus === DOCUMENTS && state.corpus.documents);
    if (s.corpus && s.corpus !== state.corpus.id && (shipped || s.corpus === "seed")) await choose(s.corpus);
    if (wantSet) await setList.refresh();
  }

  async function chooseFile() {
    const file = fileInput.files[0];
    if (!file) return;
    showMessage("");
    try {
      const text = await readText(file, state.info.constants.max_input_bytes);
      // The engine reads it now, as the experiment will: a malformed set
      // is refused at once with its one-line invalid_cases reason. For a
      // pack only the team server has, it is read as the server will be
      // sent it (no pack's check here: its targets are the server's to check).
      const elsewhere = (onServer() && serverPack() && serverPack().id !== state.corpus.id)
        || (agentOnServer() && agentServerPack() && agentServerPack().id !== state.corpus.id);
      ex.casesQuestions = elsewhere
        ? JSON.parse(await call("casesJSON", [text])).cases
        : await call("questionSet", [{ corpus: state.corpus.id, text }]);
      ex.casesText = text;
      ex.casesName = file.name;
      ex.setKey = null;
    } catch (err) {
      ex.casesText = null;
      ex.casesName = "";
      ex.casesQuestions = null;
      ex.setKey = null;
      fileInput.value = "";
      showMessage(err.code ? `${file.name}: ${err.message}` : `${err.message}.`);
    }
    describeCases();
    fillChoice();
    gate();
    remember();
  }

  function useAuthored() {
    const wasSet = ex.setKey !== null;
    ex.casesText = null;
    ex.casesQuestions = null;
    ex.casesName = "";
    ex.setKey = null;
    fileInput.value = "";
    showMessage("");
    describeCases();
    fillChoice();
    if (wasSet) setList.refresh();
    gate();
    remember();
  }

  function progress(e) {
    if (e.event === "started") {
      ex.running.id = e.runId;
      if (ex.running.cancel) call("cancel", [e.runId]);
      return;
    }
    if (e.event !== "progress" || !e.total) return;
    bar.max = e.total;
    bar.value = e.done;
    status.textContent = `Ranking: ${e.done} of ${e.total}${e.config ? ` (${e.config})` : ""}…`;
  }

  /** serverState says what the team server's events say of the experiment: queued behind others, or running. */
  function serverState(st, id) {
    if (!ex.running) return;
    ex.running.id = id;
    status.textContent = st === "queued"
      ? `Queued on the team server (experiment ${id}): it runs when the experiments before it end…`
      : `Running on the team server (experiment ${id})…`;
    document.body.dataset.experimentServer = st;
  }

  /** serverProgress shows the server's progress events: rankings kept of those to make. */
  function serverProgress(done, total) {
    if (!ex.running || !total) return;
    bar.max = total;
    bar.value = done;
    status.textContent = `Ranking on the team server: ${done} of ${total} (experiment ${ex.running.id})…`;
  }

  /** questions maps each case id to its question, for the table (the authored set's, or the file's as the engine read it). */
  function questions(parsed, corpus = state.corpus.id) {
    const list = parsed || (ex.casesText !== null ? ex.casesQuestions || [] : corpus === state.corpus.id ? state.corpus.cases : []);
    return new Map(list.map((c) => [c.id, { question: c.question, version: c.version }]));
  }

  async function run() {
    if (start.disabled) return;
    const order = runOrder(checked(), $("#exp-baseline").value, ex.specs);
    const remote = onServer() ? { server: server.connection().server, pack: serverPack() } : null;
    const req = { corpus: remote ? remote.pack.id : state.corpus.id, configs: order };
    if (ex.casesText !== null) req.cases = ex.casesText;
    // What the history keeps of the question set, as it was when the experiment began.
    const set = questionSet(req.corpus);
    const local = req.corpus === state.corpus.id;
    const title = remote && !local ? remote.pack.title : state.corpus.info?.manifest.title || req.corpus;
    // The receipt kept: the page's manifest, or the server's for its pack (passages_sha256 is its sha256).
    const manifest = remote && (!local || !state.corpus.info) ? { id: remote.pack.id, title: remote.pack.title, passages_sha256: remote.pack.sha256 } : state.corpus.info?.manifest;
    const ranQuestions = questions(null, req.corpus);
    ex.running = { id: null, cancel: false, abort: remote ? new AbortController() : null };
    ex.text = null;
    ex.result = null;
    save.disabled = true;
    cancel.disabled = false;
    showMessage("");
    clear(output);
    bar.hidden = false;
    bar.removeAttribute("value");
    status.textContent = remote
      ? `Sending ${plural(order.length, "configuration")} on ${title} to the team server ${remote.server}…`
      : `Ranking ${plural(order.length, "configuration")} on ${state.corpus.info?.manifest.title || state.corpus.id}…`;
    document.body.dataset.experiment = "running";
    gate();
    const t0 = performance.now();
    try {
      let text;
      if (remote) {
        text = await server.retrieval({ ...req, signal: ex.running.abort.signal, onState: serverState, onCase: serverProgress });
      } else {
        const value = await call("retrieval", [req, { onProgress: events("progress", "done", "total", "config") }], progress);
        text = typeof value === "string" ? value : value.json;
      }
      const result = JSON.parse(text);
      if (ex.running.cancel) throw Object.assign(new Error("cancelled"), { code: "cancelled" });
      ex.text = text;
      ex.result = result;
      ex.ran = { corpus: req.corpus, order, questions: ranQuestions, server: remote?.server ?? null };
      if (remote && !set.cases.length) set.cases = result.configs[0].cases.map((c) => ({ id: c.id }));
      const ms = Math.round(performance.now() - t0);
      status.textContent = `Done in ${ms} ms${remote ? ` on the team server ${remote.server}` : ""}: ${plural(result.configs.length, "configuration")} on ${result.answerable} answerable of ${plural(result.cases, "question")}.`;
      showResult();
      const note = await history.keep({ corpus: { id: req.corpus, title, manifest }, set, text, result, server: remote?.server ?? null });
      status.textContent += ` ${note}`;
      save.disabled = false;
      document.body.dataset.experiment = "done";
    } catch (err) {
      const stopped = ex.running.cancel || err.code === "cancelled";
      status.textContent = stopped
        ? `Cancelled${remote ? ` on the team server ${remote.server}` : ""}: nothing was kept, so there is nothing to download.`
        : remote ? `The experiment did not run on the team server ${remote.server}.` : "The experiment did not run.";
      if (!stopped) showMessage(refusal(err));
      document.body.dataset.experiment = stopped ? "cancelled" : "failed";
    } finally {
      ex.running = null;
      bar.hidden = true;
      cancel.disabled = true;
      gate();
    }
  }

  function showResult() {
    const r = ex.result;
    clear(output).append(
      h("h3", { class: "sr-only" }, "Results"),
      metricsBlock(r),
      comparisonsBlock(r),
      questionsBlock(r, ex.ran.questions, openQuestion, annotateQuestion));
  }

  /** annotateQuestion is the person's annotation of one question of the
   * experiment on its pack ({kind: "case", id: "<pack>/<case id>"}): the
   * same question on the same pack in any experiment, its answering
   * passage chosen among those ranked side by side (or typed). */
  function annotateQuestion(caseID, lists) {
    const q = ex.ran.questions.get(caseID);
    const choices = new Map();
    for (const l of lists) {
      for (const hit of l.hits) {
        if (hit.url && !choices.has(hit.source_id)) choices.set(hit.source_id, { source_id: hit.source_id, url: hit.url, how: `rank ${hit.rank} under ${l.config}` });
      }
    }
    return annotationRegion({ kind: "case", id: `${ex.ran.corpus}/${caseID}`, title: `question ${caseID}`, pack: ex.ran.corpus,
      subject: { corpus: ex.ran.corpus, case_id: caseID, question: q?.question || "" } }, [...choices.values()]);
  }

  /** openQuestion is one question's top results under each configuration run, from the engine. */
  async function openQuestion(caseID) {
    const q = ex.ran.questions.get(caseID);
    if (ex.ran.corpus !== state.corpus.id) throw new Error(`the pack ${ex.ran.corpus} is not open in this page${ex.ran.server ? " (it is the team server's)" : ""}, so its passages cannot be ranked here: choose it in the Corpus picker if this browser has it`);
    if (!q) throw new Error("the page does not know this question's text");
    return Promise.all(ex.ran.order.map(async (config) => {
      const name = typeof config === "string" ? config : config.name;
      try {
        // The engine's search under the configuration, by name or spec
        // (the pack's default could be another), to the experiment's depth
        // (at most 10 shown); a refusal is shown in its column.
        const spec = { corpus: ex.ran.corpus, query: q.question, version: q.version, k: Math.min(ex.result.k, 10), config };
        const res = await call("search", [spec]);
        return { config: name, hits: res.hits };
      } catch (err) {
        return { config: name, hits: [], error: err.message };
      }
    }));
  }

  function saveResult() {
    if (!ex.text) return;
    try {
      download("ragagent-retrieval", ex.text);
      status.textContent = "Downloaded: the same JSON as ragagent retrieval --json for this experiment.";
    } catch (err) {
      status.textContent = `Not downloaded: ${err.message}`;
    }
  }

  function stop() {
    if (!ex.running) return;
    ex.running.cancel = true;
    cancel.disabled = true;
    status.textContent = ex.running.abort ? "Cancelling on the team server…" : "Cancelling…";
    if (ex.running.abort) ex.running.abort.abort();
    else if (ex.running.id !== null) call("cancel", [ex.running.id]);
  }

  async function copyLink() {
    const url = new URL(location.href);
    url.hash = `experiments?${encode(setup())}`;
    try {
      await navigator.clipboard.writeText(url.href);
      $("#exp-link-status").textContent = "Link copied.";
    } catch {
      $("#exp-link-status").textContent = `Copy this link: ${url.href}`;
    }
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  form.addEventListener("change", (e) => {
    if (e.target.name === "exp-config") fillBaseline();
    gate();
    if (location.hash.startsWith("#experiments/compare/")) replace("experiments", [], encode(setup()));
    remember();
  });
  fileInput.addEventListener("change", chooseFile);
  $("#exp-cases-authored").addEventListener("click", useAuthored);
  $("#exp-cases-choice").addEventListener("change", (e) => {
    const v = e.target.value;
    if (v === AUTHORED) useAuthored();
    else if (v.startsWith("set:")) useSet(setList.get(Number(v.slice(4))));
  });
  $("#exp-spec-add").addEventListener("click", addSpec);
  $("#exp-link").addEventListener("click", copyLink);
  cancel.addEventListener("click", stop);
  $("#exp-agent-run").addEventListener("click", runAgent);
  $("#exp-agent-cancel").addEventListener("click", stopAgent);
  $("#exp-agent-download").addEventListener("click", saveAgent);
  save.addEventListener("click", saveResult);

  onRoute("experiments", (segs, query) => {
    if (history.route(segs, query)) return;
    if (![...query].length) return;
    const d = decode(query);
    if (!ex.builtins) wanted = d;
    else apply(d);
  });
  onBusy(gate);
  server.onChange(() => fillServerPacks());
  document.querySelectorAll('input[name="exp-where"], input[name="exp-agent-where"]').forEach((r) => r.addEventListener("change", () => fillServerPacks()));
  $("#exp-agent-server-pack").addEventListener("change", gate);
  onCorpus(() => {
    $("#exp-corpus").textContent = state.corpus.info.manifest.title;
    // A question set is the pack's own: another pack starts from its authored questions.
    if (ex.setKey !== null) {
      ex.casesText = null;
      ex.casesQuestions = null;
      ex.casesName = "";
      ex.setKey = null;
    }
    setList.refresh();
    describeCases();
    fillServerPacks(state.corpus.id);
    remember();
  });

  $("#exp-spec").maxLength = MAX_SPEC_CHARS;
  ex.specs = loadSpecs(storage());
  return {
    /** ready asks the engine for its configurations, then follows a link that waited. */
    async ready() {
      fileInput.disabled = false;
      try {
        ex.builtins = await call("retrievalConfigs");
        const seed = ex.builtins.find((c) => c.name === "seed");
        if (seed && !$("#exp-spec").value) $("#exp-spec").value = JSON.stringify({ ...seed, name: "my-config", description: undefined }, null, 2);
      } catch (err) {
        ex.builtins = [];
        ex.builtinsError = `This engine offers no retrieval configurations (${err.message}).`;
      }
      renderConfigs();
      fillBaseline();
      if (wanted) await apply(wanted);
      describeCases();
      gate();
      await history.ready();
      await live.ready();
    },
    gate,
    /** borrowKeyBox shows the Run view's key box in the Gemini agent experiment's form. */
    borrowKeyBox() {
      const box = $("#key-fields");
      $("#exp-key-slot").append(box);
      box.hidden = false;
    },
  };
}
