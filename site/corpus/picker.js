// corpus/picker.js is the corpus picker (#corpus-picker, in the page's
// bar, with its status line #corpus-status): the seed's four
// passages, each pack the site offers (packs/index.json), and the
// person's own documents. The Corpus and Run views follow the choice
// (onCorpus). A shipped pack is fetched only when chosen: its download is
// counted in bytes, its sha256 checked by the engine, and the verified
// bytes kept in Cache Storage for the next visit (worker-packs.js). The
// choice is remembered in localStorage. Replay, Trace and Rerank replay
// recordings made on the seed and stay on it.

import { $, h, clear, option } from "../common/dom.js";
import { mb, plural } from "../common/format.js";
import { call, events } from "../engine/client.js";
import { state } from "../common/state.js";

export const SEED = "seed";
export const DOCUMENTS = "documents";
const CHOICE_KEY = "ragagent.corpus";
/** DOCUMENTS_TITLE is the title the engine gives a pack of your documents. */
const DOCUMENTS_TITLE = "Your documents";

const listeners = [];
const busyListeners = [];
let choosing = 0;
let preferred = null; // a link's corpus, opened first instead of the one remembered
let started = false; // ready() has listed the corpora

/** onCorpus calls fn(state.corpus) each time a corpus is ready to use. */
export function onCorpus(fn) {
  listeners.push(fn);
}

/** onBusy calls fn(loading) each time a corpus starts or stops opening, so
 * a view disables what would run on the corpus before (a run started while
 * a pack opens would go to the previous one). */
export function onBusy(fn) {
  busyListeners.push(fn);
}

function busy(loading) {
  state.corpus.loading = loading;
  for (const fn of busyListeners) fn(loading);
}

function remembered() {
  try { return localStorage.getItem(CHOICE_KEY); } catch { return null; }
}

function remember(id) {
  try { localStorage.setItem(CHOICE_KEY, id); } catch { /* storage blocked: the choice lasts this visit */ }
}

/** describe is what choosing a pack costs: its passages and its download. */
function describe(m) {
  const size = m.compressed_bytes || m.passages_bytes;
  return `${m.title}: ${plural(m.passages, "passage")}, ${mb(size)} MB to download once`;
}

// seedTitle is the seed pack's manifest title, the picker's first option.
let seedTitle = "The seed";

/** renderOptions lists the corpora, each option's text its pack's title
 * (DESIGN: outside checks pick a pack by it), and says what each shipped
 * pack costs in the Corpus view's help line (#corpus-sizes), where the
 * packs are described. */
function renderOptions() {
  const c = state.corpus;
  const docs = c.documents;
  const sel = clear($("#corpus-choice"));
  sel.append(option(SEED, seedTitle));
  for (const m of c.shipped) sel.append(option(m.id, m.title));
  const mine = option(DOCUMENTS, DOCUMENTS_TITLE);
  mine.disabled = !docs;
  sel.append(mine);
  sel.value = c.id;
  $("#corpus-sizes").textContent = [...c.shipped.map(describe),
    docs ? `${DOCUMENTS_TITLE}: ${plural(docs.files.length, "file")}, ${plural(docs.passages, "passage")}, kept in this browser` : `${DOCUMENTS_TITLE}: none yet (add them in the Corpus view)`].join("; ") + ".";
}

/** status writes the bar's corpus line; the line is cut to its one line
 * on a narrow screen, so its title holds the whole text too. */
function status(text, kind = "") {
  const el = $("#corpus-status");
  el.textContent = text;
  el.title = text;
  el.className = kind;
}

/** progress shows one stage of a pack's loading. */
function progress(title) {
  const bar = $("#corpus-progress");
  return (e) => {
    bar.hidden = false;
    if (e.stage === "download" && e.total) {
      bar.max = e.total;
      bar.value = e.loaded;
      status(`Downloading ${title}: ${mb(e.loaded)} of ${mb(e.total)} MB`);
    } else if (e.stage === "cache") {
      bar.removeAttribute("value");
      status(`Reading ${title} from this browser's cache (${mb(e.total)} MB)…`);
    } else if (e.stage === "open") {
      bar.removeAttribute("value");
      status(`Checking the sha256 of ${title} and opening its index…`);
    } else if (e.stage === "read" || e.stage === "index") {
      bar.max = e.total;
      bar.value = e.done;
      status(`${e.stage === "read" ? "Reading" : "Cutting and indexing"} your documents: ${e.done} of ${e.total}`);
    }
  };
}

/** showCredit shows a pack's licence and attribution (and source). */
function showCredit(m) {
  const el = $("#corpus-credit");
  if (!m || m.id === SEED) {
    el.hidden = true;
    return;
  }
  clear(el).append(h("strong", {}, m.title), `: ${m.attribution} Licence: ${m.licence} Source: ${m.source}`);
  el.hidden = false;
}

/** title is how the status line names a corpus. */
function title(id) {
  if (id === DOCUMENTS) return "your documents";
  return state.corpus.shipped.find((m) => m.id === id)?.title || id;
}

/**
 * choose makes id the corpus: the seed at once, a shipped pack from the
 * cache or the site, the documents from this browser's storage. A later
 * choice wins over one still loading; a failure keeps the corpus before.
 */
export async function choose(id) {
  const seq = ++choosing;
  const c = state.corpus;
  const sel = $("#corpus-choice");
  const bar = $("#corpus-progress");
  busy(true);
  document.body.dataset.corpus = "loading";
  status(`Opening ${title(id)}…`);
  const t0 = performance.now();
  try {
    let info;
    let note = "";
    let worker = {};
    if (id === SEED) {
      info = await call("packInfo", [SEED]);
    } else if (id === DOCUMENTS) {
      const r = await call("docsLoad", [events("pack")], progress(title(id)));
      if (!r) throw new Error("no documents are kept in this browser; add them in the Corpus view");
      info = r.info;
    } else {
      const r = await call("packLoad", [id, events("pack")], progress(title(id)));
      info = r.info;
      worker = r.timings;
      note = r.from === "cache" ? " from this browser's cache" : r.cached ? ", downloaded and kept for the next visit" : ", downloaded (this browser would not keep it)";
    }
    const cases = await call("packCases", [id]);
    if (seq !== choosing) return;
    c.id = id;
    c.info = info;
    c.cases = cases;
    remember(id);
    sel.value = id;
    showCredit(info.manifest);
    bar.hidden = true;
    const ms = Math.round(performance.now() - t0);
    status(id === SEED ? "" : `${info.manifest.title}: ${plural(info.manifest.passages, "passage")}, ready in ${ms} ms${note}.`);
    state.timings.corpus = { id, ms, note: note.trim(), ...worker };
    document.body.dataset.corpus = "ready";
    busy(false);
    for (const fn of listeners) fn(c);
  } catch (err) {
    if (seq !== choosing) return;
    bar.hidden = true;
    sel.value = c.id;
    status(`Could not open ${title(id)}: ${err.message}`, "error");
    document.body.dataset.corpus = "failed";
  } finally {
    if (seq === choosing && c.loading) busy(false);
  }
}

/** openable says whether id is a corpus this page can open here: the
 * seed, a pack the site offers, or documents this browser keeps. */
export function openable(id) {
  const c = state.corpus;
  return id === SEED || (id === DOCUMENTS ? Boolean(c.documents) : c.shipped.some((m) => m.id === id));
}

/** prefer opens the corpus a link names (the Run view's): at once when the
 * picker is ready, else first, instead of the one remembered. One it
 * cannot open here is not chosen: the view that asked says so. */
export function prefer(id) {
  if (!id) return;
  if (!started) preferred = id;
  else if (id !== state.corpus.id && openable(id)) choose(id);
}

/** setDocuments records what the browser keeps of the documents (after an
 * add or a removal) and lists it in the picker. */
export function setDocuments(stored) {
  state.corpus.documents = stored;
  renderOptions();
}

/** passagesFor is the passages a trial's citations can be shown in: the
 * seed's, and every passage the run read (its observation has the text). */
export function passagesFor(report) {
  const out = new Map(state.passages);
  for (const o of report?.result?.observations || []) {
    if (o.tool === "read" && o.result && typeof o.result.text === "string") out.set(o.result.source_id, o.result);
  }
  return out;
}

/** ready lists the corpora and opens the one chosen on the last visit. */
export async function ready() {
  const c = state.corpus;
  try {
    const res = await fetch("packs/index.json", { cache: "no-cache" });
    if (res.ok) c.shipped = (await res.json()).packs || [];
  } catch {
    c.shipped = [];
  }
  c.documents = await call("docsStored").catch(() => null);
  seedTitle = (await call("packInfo", [SEED]).catch(() => null))?.manifest.title || seedTitle;
  renderOptions();
  const sel = $("#corpus-choice");
  sel.disabled = false;
  sel.addEventListener("change", () => choose(sel.value));
  started = true;
  const want = preferred && openable(preferred) ? preferred : remembered();
  preferred = null;
  await choose(want && openable(want) ? want : SEED);
}
