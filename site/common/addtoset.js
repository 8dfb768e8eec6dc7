// common/addtoset.js is the "Add to question set" form (the #addset
// dialog), which any view opens on a passage or a run: addToSet({pack,
// question, passages}). It offers the question (editable), the target as
// a choice (each passage's URL, its aliases, its whole page, or "the
// documents cannot answer this"), the split and the set (the pack's own or
// a new one by name), and keeps the case in common/sets.js once the engine
// has read the set with it as the command line would (questionSet: a
// refusal is its invalid_cases line, shown in the form). Targets of your
// documents are offered and kept as the page shows them (their path and
// anchor, dom.js ownTarget), which the engine reads against the pack.

import { $, h, clear, option, ownTarget } from "./dom.js";
import { plural, refusal } from "./format.js";
import { call } from "../engine/client.js";
import { state } from "./state.js";
import * as sets from "./sets.js";

const NEW = "new";
const NONE = "none";
/** last is the set each pack's last case went to, offered first next time. */
const last = new Map();

let pending = null; // the open form's {pack, resolve, choices}

/** shown is a URL as the page shows it and a set keeps it: your documents' path and anchor, else the URL. */
const shown = (url) => ownTarget(url) ?? url;

/**
 * choicesFor is the targets a case may name for these passages, deduped,
 * in order: each passage's URL, its aliases, its whole page (the URL
 * without #fragment), or its source id when it has no URL (the seed's).
 */
export function choicesFor(passages) {
  const out = [];
  const seen = new Set();
  const add = (kind, value, label) => {
    const k = `${kind}:${value}`;
    if (seen.has(k)) return;
    seen.add(k);
    out.push({ kind, value, label });
  };
  for (const p of passages) {
    if (!p.url) {
      if (p.source_id) add("source", p.source_id, `the passage ${p.source_id} (by its source id)`);
      continue;
    }
    if (!p.url.includes("#")) {
      add("target", shown(p.url), "the whole page (every passage of it matches)");
      continue;
    }
    add("target", shown(p.url), "this passage");
    for (const a of p.aliases || []) add("target", shown(a), "an alias of this passage (another anchor of the same object)");
    add("target", shown(p.url.slice(0, p.url.indexOf("#"))), "its whole page (every passage of it matches)");
  }
  return out;
}

/**
 * withAliases is passages with their aliases: a passage a run read or a
 * trace shows carries only what the read tool returned (the seed's
 * observation, no aliases), so the pack's own passage is asked for them.
 * A pack this page has not opened, or a passage it does not hold, leaves
 * the passage as given: its URL and page are still offered.
 */
async function withAliases(pack, passages) {
  return Promise.all(passages.map(async (p) => {
    if (p.aliases || !p.source_id || !p.url) return p;
    try {
      const full = await call("passage", [{ corpus: pack, source_id: p.source_id }]);
      return full.url === p.url && full.aliases ? { ...p, aliases: full.aliases } : p;
    } catch {
      return p;
    }
  }));
}

function message(text) {
  const el = $("#addset-message");
  el.textContent = text;
  el.hidden = !text;
}

function syncName() {
  const isNew = $("#addset-set").value === NEW;
  $("#addset-name-field").hidden = !isNew;
  $("#addset-name").required = isNew;
}

/** freeName is a name for a new set that none of the pack's sets has. */
function freeName(list, title) {
  const base = `Questions on ${title}`.slice(0, sets.MAX_NAME_CHARS - 4);
  const names = new Set(list.map((s) => s.name));
  if (!names.has(base)) return base;
  for (let n = 2; ; n++) if (!names.has(`${base} ${n}`)) return `${base} ${n}`;
}

/**
 * addToSet opens the form for a case of pack: question (prefilled,
 * editable), the targets passages offer ([{url, aliases, source_id}]) and
 * any target URLs given as they are (targets: an annotation's "the
 * passage that answers it is ..."); none leaves only "the documents
 * cannot answer this". version is the passages' (empty: the pack's
 * default), title the pack's for reading. It resolves with {set, case}
 * once added, or null when the form was closed.
 */
export async function addToSet({ pack, title = pack, question = "", version = "", passages = [], targets = [] }) {
  const dialog = $("#addset");
  if (pending) pending.resolve(null);
  message("");
  let list = [];
  let why = "";
  try {
    list = await sets.list(pack);
  } catch (err) {
    why = `This browser keeps no question sets here (${err?.message || "IndexedDB refused"}).`;
  }
  const choices = choicesFor([...await withAliases(pack, passages), ...targets.map((url) => ({ url }))]);
  $("#addset-pack").textContent = `Corpus: ${title}.${why ? ` ${why}` : ""}`;
  const q = $("#addset-question");
  q.maxLength = state.info?.constants.max_question_chars ?? 512;
  q.value = question;
  const box = clear($("#addset-choices"));
  const radios = [...choices.map((c, i) => ({ id: `addset-t-${i}`, value: String(i), label: c.label, code: c.value })),
    { id: "addset-t-none", value: NONE, label: "The documents cannot answer this (no target: only an explicit stop passes it)", code: null }];
  for (const [i, r] of radios.entries()) {
    box.append(h("li", {}, h("input", { type: "radio", name: "addset-target", id: r.id, value: r.value, checked: i === 0 }), " ",
      h("label", { for: r.id }, r.code !== null ? [h("code", {}, r.code), ` — ${r.label}`] : r.label)));
  }
  const sel = clear($("#addset-set"));
  const want = last.get(pack);
  sel.append(...list.map((s) => option(String(s.key), `${s.name} (${plural(s.cases.length, "question")})`, s.key === want)),
    option(NEW, "A new set…", !list.length));
  if (want === undefined && list.length) sel.value = String(list[list.length - 1].key);
  $("#addset-name").value = freeName(list, title);
  $("#addset-name").maxLength = sets.MAX_NAME_CHARS;
  syncName();
  $("#addset-add").disabled = Boolean(why);
  return new Promise((resolve) => {
    pending = { pack, title, version, choices, list, resolve };
    if (!dialog.open) dialog.showModal();
    q.focus();
    q.select();
  });
}

/** add keeps the case the form describes, once the engine has read the set with it. */
async function add(event) {
  event.preventDefault();
  const p = pending;
  if (!p) return;
  message("");
  const question = $("#addset-question").value.trim();
  if (!question) {
    message("Write the question.");
    $("#addset-question").focus();
    return;
  }
  const picked = document.querySelector('input[name="addset-target"]:checked')?.value ?? NONE;
  const choice = picked === NONE ? null : p.choices[Number(picked)];
  const key = $("#addset-set").value;
  let set;
  try {
    if (key === NEW) {
      set = { pack: p.pack, name: sets.checkName($("#addset-name").value, p.list), time: new Date().toISOString(), cases: [] };
    } else {
      set = await sets.get(key);
      if (!set) throw new sets.SetError("that set was deleted meanwhile: choose another");
    }
    const c = sets.makeCase(set, {
      question, version: p.version, split: $("#addset-split").value,
      targets: choice?.kind === "target" ? [choice.value] : [], sources: choice?.kind === "source" ? [choice.value] : [],
    });
    const next = { ...set, cases: [...set.cases, c] };
    $("#addset-add").disabled = true;
    // The engine reads the set as the command line will: a question too
    // long, a set over the cap, a target it cannot take is refused here.
    await call("questionSet", [{ corpus: p.pack, text: sets.toJSON(next) }]);
    next.key = await sets.put(next);
    last.set(p.pack, next.key);
    pending = null;
    $("#addset").close("added");
    document.body.dataset.addset = "added";
    announce(`Added “${c.question}” to ${next.name} (${plural(next.cases.length, "question")}; listed in the Experiments view).`);
    p.resolve({ set: next, case: c });
  } catch (err) {
    message(`Not added: ${err instanceof sets.SetError ? `${err.message}.` : refusal(err)}`);
  } finally {
    $("#addset-add").disabled = false;
  }
}

/** announce says what was added in the page's own status line (#addset-status), after the form closed. */
let announced = 0;
function announce(text) {
  const el = $("#addset-status");
  el.textContent = text;
  clearTimeout(announced);
  announced = setTimeout(() => { el.textContent = ""; }, 10000);
}

/** addButton is the "Add to question set…" button for a passage or a run;
 * what names it for a screen reader (the source, the run) follows the
 * visible words; open() gives addToSet its arguments. */
export function addButton(what, open) {
  return h("button", { type: "button", class: "small", onclick: () => addToSet(open()) },
    "Add to question set…", h("span", { class: "sr-only" }, ` ${what}`));
}

/** mount binds the form once (app.js). */
export function mountForm() {
  const dialog = $("#addset");
  $("#addset-form").addEventListener("submit", add);
  $("#addset-set").addEventListener("change", syncName);
  $("#addset-cancel").addEventListener("click", () => dialog.close("cancelled"));
  dialog.addEventListener("close", () => {
    if (pending) {
      pending.resolve(null);
      pending = null;
    }
  });
}
