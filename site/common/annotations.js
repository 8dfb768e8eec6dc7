// common/annotations.js owns the person's annotations, kept in this
// browser's IndexedDB beside the runs, in a database of its own
// ("ragagent-annotations"), so they survive a reload. An annotation judges
// one thing the page shows: a recorded trial ({kind: "trial", id:
// "<source>:<trial id>"}), a run kept in Runs ({kind: "run", id: <its
// key>}) or a retrieval experiment's question ({kind: "case", id:
// "<pack>/<case id>"}). It holds a verdict (correct, wrong, partly or
// none), a free note, and the passage that answers the question (one the
// run was shown or read, or a URL typed), with its author ("user") and the
// time it was made or last edited (the page's clock, ISO 8601 UTC). The
// answering passage's URL is kept so it can become a question set's
// target. The Trace view's form edits them (trace/annotate.js), the Runs
// view lists and filters by them, a trace's OTLP download carries them as
// span events (forExport), and exportText is the JSON download. A browser
// that refuses IndexedDB keeps none, and the form says so.

import { state } from "./state.js";
import { database, finished } from "./idb.js";

/** VERDICTS are the verdicts an annotation may give (or none, ""). */
export const VERDICTS = ["correct", "wrong", "partly"];

/** FORMAT names the JSON download's shape (docs/page.md, "Annotations"). */
export const FORMAT = "ragagent-annotations/1";

/** AUTHOR is who makes the page's annotations. */
export const AUTHOR = "user";

const DB = "ragagent-annotations";
const STORE = "annotations";
const listeners = [];

const open = database(DB, (db) => db.createObjectStore(STORE, { keyPath: "ref" }));

/** ref is the key of what an annotation judges: "<kind>:<id>". */
export function ref(kind, id) {
  return `${kind}:${id}`;
}

/** onChange calls fn(ref) whenever an annotation is saved or deleted. */
export function onChange(fn) {
  listeners.push(fn);
}

/** EVENT is dispatched on the document with {detail: {ref}} when an
 * annotation is saved or deleted, so every form showing it follows (a
 * form listens only while it is in the document). */
export const EVENT = "ragagent-annotation";

let reading = null;

/** whenLoaded is load()'s first reading, once. */
export function whenLoaded() {
  reading ??= load();
  return reading;
}

/** load reads every annotation into state.annotations (by ref), or why it could not. */
export async function load() {
  const a = state.annotations;
  try {
    const db = await open();
    const all = await new Promise((resolve, reject) => {
      const req = db.transaction(STORE).objectStore(STORE).getAll();
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    a.byRef = new Map(all.map((x) => [x.ref, x]));
    a.error = "";
  } catch (err) {
    a.byRef = new Map();
    a.error = err?.message || "this browser refused IndexedDB";
  }
  a.loaded = true;
  return a.byRef;
}

/** storeError is why this browser keeps no annotations ("" when it does). */
export function storeError() {
  return state.annotations.error;
}

/** of is the annotation of kind and id as last read, or null. */
export function of(kind, id) {
  return state.annotations.byRef.get(ref(kind, id)) || null;
}

/**
 * save keeps (or replaces) the annotation of {kind, id}: verdict (one of
 * VERDICTS or ""), note, passage ({url, source_id?} or null), and what it
 * is about for the download (subject: {trial, question, title}); time is
 * now. Resolves with the record kept.
 */
export async function save({ kind, id, verdict = "", note = "", passage = null, subject = {} }) {
  if (verdict && !VERDICTS.includes(verdict)) throw new Error(`verdict ${verdict} is not ${VERDICTS.join(", ")} or none`);
  const record = {
    ref: ref(kind, id), kind, id: String(id), author: AUTHOR, verdict, note: note.trim(),
    passage: passage && passage.url ? { url: passage.url, ...(passage.source_id ? { source_id: passage.source_id } : {}) } : null,
    time: new Date().toISOString(), subject,
  };
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  tx.objectStore(STORE).put(record);
  await finished(tx);
  state.annotations.byRef.set(record.ref, record);
  changed(record.ref);
  return record;
}

/** remove deletes the annotation of kind and id. */
export async function remove(kind, id) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  tx.objectStore(STORE).delete(ref(kind, id));
  await finished(tx);
  state.annotations.byRef.delete(ref(kind, id));
  changed(ref(kind, id));
}

function changed(which) {
  for (const fn of listeners) fn(which);
  document.dispatchEvent(new CustomEvent(EVENT, { detail: { ref: which } }));
}

/** forExport is an annotation as the engine's OTLP export takes it
 * (otlp.Annotation: an event "ragagent.annotation" on the run's span);
 * [] for none, so a trace without one exports the same bytes. */
export function forExport(a) {
  if (!a) return [];
  const out = { author: a.author, time: a.time };
  if (a.verdict) out.verdict = a.verdict;
  if (a.note) out.note = a.note;
  if (a.passage?.url) out.passage_url = a.passage.url;
  if (a.passage?.source_id) out.passage_id = a.passage.source_id;
  return [out];
}

/** firstWords is a note's first n words, with an ellipsis when it goes on. */
export function firstWords(note, n = 8) {
  const words = String(note || "").trim().split(/\s+/).filter(Boolean);
  return words.length > n ? `${words.slice(0, n).join(" ")}…` : words.join(" ");
}

/** exportText is every annotation as the JSON download writes it:
 * {format, exported_at, annotations: [{kind, id, author, verdict, note,
 * passage: {url, source_id?} | null, time, subject}]}, oldest first. */
export function exportText() {
  const list = [...state.annotations.byRef.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0))
    .map(({ kind, id, author, verdict, note, passage, time, subject }) => ({ kind, id, author, verdict, note, passage, time, subject }));
  return `${JSON.stringify({ format: FORMAT, exported_at: new Date().toISOString(), annotations: list }, null, 1)}\n`;
}
