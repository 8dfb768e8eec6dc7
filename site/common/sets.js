// common/sets.js keeps the question sets a person makes in the page, by
// clicking on passages (common/addtoset.js) or by importing a file, in
// IndexedDB, in a database of their own ("ragagent-sets"), per pack, and
// writes them as the files the command line reads, unchanged: a
// ragagent-cases/1 JSON file (toJSON) or the three-column TSV (toTSV). It
// is bounded: a browser keeps at most LIMIT sets (a new one is refused
// until one is deleted, never dropped silently: each is the person's own
// work), and a set's cases are bounded by the engine, which reads each set
// as the command line does before it is kept (invalid_cases otherwise).
// A browser that blocks IndexedDB keeps nothing, and the views say so.
// It imports only format.js and touches IndexedDB only when called, so
// node tests import it as it is.

import { plural } from "./format.js";
import { database, done, finished } from "./idb.js";

/** LIMIT is how many question sets this browser keeps, over every pack. */
export const LIMIT = 100;
/** MAX_NAME_CHARS bounds a set's name. */
export const MAX_NAME_CHARS = 80;
/** SPLITS are a case's splits, as ragagent-cases/1 names them. */
export const SPLITS = ["development", "held-out"];
/** FORMAT is the question set file's format tag. */
export const FORMAT = "ragagent-cases/1";

const DB = "ragagent-sets";
const STORE = "sets";
const listeners = [];
/** SetError is why a question set (or a change to one) was not taken. */
export class SetError extends Error {
  constructor(message) {
    super(message);
    this.name = "SetError";
  }
}

/**
 * A question set as this browser keeps it.
 * @typedef {object} QuestionSet
 * @property {number} key      IndexedDB's key (absent until kept)
 * @property {string} pack     the pack's id ("python-3.11", "documents")
 * @property {string} name     the person's name for it, unique in its pack
 * @property {string} time     when it was made (ISO)
 * @property {SetCase[]} cases in the order they were added
 *
 * @typedef {object} SetCase
 * @property {string} id        stable: made once from the question when the case is added
 * @property {string} question  as typed
 * @property {string} version   the passage's version ("" for the pack's default)
 * @property {string} split     "development" or "held-out"
 * @property {string[]} targets target URLs as the page shows them (an https
 *   URL, with or without #fragment, or a file of your documents as its path
 *   and anchor); none (and no sources) for a question the documents cannot answer
 * @property {string[]} sources source ids (the seed's passages, or an imported file's)
 * @property {string[]} answer_patterns
 * @property {string[]} forbidden_patterns
 * @property {string} note
 */

/** caseID is a new case's id: the question's words, lower-case, joined by
 * "-" (at most 48 characters), made unique among taken with a counter. */
export function caseID(question, taken) {
  const words = String(question).toLowerCase().match(/[a-z0-9]+/g) || [];
  let base = "";
  for (const w of words) {
    const next = base ? `${base}-${w}` : w;
    if (next.length > 48) break;
    base = next;
  }
  base ||= "question";
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** makeCase is a case for a set: its id made from the question, unique
 * among the set's ids; targets [] for a question the documents cannot answer. */
export function makeCase(set, { question, version = "", split = "held-out", targets = [], sources = [] }) {
  return {
    id: caseID(question, set.cases.map((c) => c.id)), question: String(question).trim(), version: version || "", split,
    targets: [...targets], sources: [...sources], answer_patterns: [], forbidden_patterns: [], note: "",
  };
}

/** fileCase is one case as ragagent-cases/1 writes it (resolve maps a
 * target as stored to the file's form; by default it is kept as shown). */
function fileCase(c, resolve) {
  const out = { id: c.id, question: c.question };
  if (c.version) out.version = c.version;
  out.split = c.split;
  out.sources = [...(c.sources || [])];
  out.target_urls = (c.targets || []).map(resolve);
  out.answer_patterns = [...(c.answer_patterns || [])];
  out.forbidden_patterns = [...(c.forbidden_patterns || [])];
  if (c.note) out.note = c.note;
  return out;
}

/** toJSON is a set as a ragagent-cases/1 file: its cases in order, each
 * question as typed, its targets in target_urls as the page shows them
 * (the engine and the command line read a file of your documents' path
 * and anchor against the pack), a version only where the case names one. */
export function toJSON(set, resolve = (t) => t) {
  return `${JSON.stringify({ format: FORMAT, cases: set.cases.map((c) => fileCase(c, resolve)) }, null, 2)}\n`;
}

/** toTSV is a set as the command line's three-column TSV (id, question,
 * target URLs separated by spaces or "-"), with its header line. A TSV
 * names no split, version, source or pattern (the command line reads each
 * case as held-out on the pack's default version), so a set that needs one
 * is refused with why: export it as JSON. */
export function toTSV(set) {
  const lines = ["id\tquestion\ttarget_urls"];
  for (const c of set.cases) {
    const lost = [];
    if (c.sources?.length) lost.push("sources");
    if (c.answer_patterns?.length || c.forbidden_patterns?.length) lost.push("patterns");
    if (c.targets.some((t) => /\s/.test(t))) lost.push("a target with white space");
    if (/[\t\r\n]/.test(c.question)) lost.push("a tab or line break in its question");
    if (lost.length) throw new SetError(`case ${c.id} has ${lost.join(" and ")}, which a TSV cannot carry: export it as JSON`);
    lines.push(`${c.id}\t${c.question}\t${c.targets.length ? c.targets.join(" ") : "-"}`);
  }
  return `${lines.join("\n")}\n`;
}

/** fromCases is an imported file's cases (as the engine read them:
 * questionSet's) as a set's; show maps a target URL to the form the page
 * shows (your documents' path and anchor). */
export function fromCases(cases, show = (t) => t) {
  return cases.map((c) => ({
    id: c.id, question: c.question, version: c.version || "", split: c.split,
    targets: (c.target_urls || []).map(show), sources: [...(c.sources || [])],
    answer_patterns: [...(c.answer_patterns || [])], forbidden_patterns: [...(c.forbidden_patterns || [])], note: c.note || "",
  }));
}

/** checkName is a set's name trimmed, or a SetError: one line, at most
 * MAX_NAME_CHARS characters, not another set's of the same pack. */
export function checkName(name, others = []) {
  const n = String(name ?? "").trim();
  if (!n) throw new SetError("give the set a name");
  if (n.length > MAX_NAME_CHARS) throw new SetError(`the name is ${n.length} characters, over the cap of ${MAX_NAME_CHARS}`);
  if (/[\u0000-\u001f\u007f]/.test(n)) throw new SetError("the name has a control character");
  if (others.some((s) => s.name === n)) throw new SetError(`this pack already has a set named ${n}`);
  return n;
}

const open = database(DB, (db) => db.createObjectStore(STORE, { keyPath: "key", autoIncrement: true }).createIndex("pack", "pack"));

/** onChange calls fn(pack) whenever a set of that pack is kept, changed or deleted. */
export function onChange(fn) {
  listeners.push(fn);
}

function changed(pack) {
  for (const fn of listeners) fn(pack);
}

/** list is a pack's sets, oldest first. */
export async function list(pack) {
  const db = await open();
  return done(db.transaction(STORE).objectStore(STORE).index("pack").getAll(pack));
}

/** get is one kept set, or null. */
export async function get(key) {
  const db = await open();
  return (await done(db.transaction(STORE).objectStore(STORE).get(Number(key)))) ?? null;
}

/** put keeps a set (a new one when it has no key) and resolves with its
 * key; a new set beyond LIMIT is refused, and a name another set of its
 * pack has. The transaction is durable: a reload finds it. */
export async function put(set) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite", { durability: "strict" });
  const store = tx.objectStore(STORE);
  const siblings = (await done(store.index("pack").getAll(set.pack))).filter((s) => s.key !== set.key);
  try {
    checkName(set.name, siblings);
    if (set.key === undefined && (await done(store.count())) >= LIMIT) {
      throw new SetError(`this browser keeps at most ${plural(LIMIT, "question set")}: delete one (Experiments view) before making another`);
    }
  } catch (err) {
    tx.abort();
    await finished(tx).catch(() => {});
    throw err;
  }
  const key = await done(store.put(set));
  await finished(tx);
  changed(set.pack);
  return key;
}

/** remove deletes one kept set. */
export async function remove(key) {
  const db = await open();
  const set = await get(key);
  const tx = db.transaction(STORE, "readwrite", { durability: "strict" });
  tx.objectStore(STORE).delete(Number(key));
  await finished(tx);
  changed(set?.pack);
}
