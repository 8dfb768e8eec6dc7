// experiments/store.js keeps every retrieval experiment the Experiments
// view runs in IndexedDB, in its own database ("ragagent-experiments"),
// bounded: the newest LIMIT are kept and the oldest dropped as a new one
// is kept, which the view says. An experiment is what the history lists,
// opens again and compares without the engine having kept anything: when
// it ran, the pack and its receipt, the question set (its text when it was
// a file, its sha256 and its cases), the configurations with their spec
// sha256 (the engine's), and the result as the engine wrote it (the bytes
// `ragagent retrieval --json` prints). A browser that blocks IndexedDB
// keeps nothing, and the view says so.

/** LIMIT is how many experiments this browser keeps (the oldest go first). */
import { database, done, finished } from "../common/idb.js";

export const LIMIT = 100;

const DB = "ragagent-experiments";
const STORE = "experiments";

const open = database(DB, (db) => db.createObjectStore(STORE, { keyPath: "key", autoIncrement: true }));

/**
 * keep stores an experiment and drops the oldest beyond LIMIT; it
 * resolves with {key, dropped}. experiment: {time (ISO), corpus: {id,
 * title}, receipt: {id, sha256}, set: {name, kind, sha256, text, cases},
 * configs: [{name, sha256}], k, cases, answerable, headline: {config,
 * value}, text (the result's JSON), server (the team server's URL it ran
 * on; null or absent: this browser)}.
 */
export async function keep(experiment) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite", { durability: "strict" });
  const store = tx.objectStore(STORE);
  const key = await done(store.add(experiment));
  const keys = await done(store.getAllKeys());
  const drop = keys.slice(0, Math.max(0, keys.length - LIMIT));
  for (const k of drop) store.delete(k);
  await finished(tx);
  return { key, dropped: drop.length };
}

/** list is every kept experiment, newest first. */
export async function list() {
  const db = await open();
  const all = await done(db.transaction(STORE).objectStore(STORE).getAll());
  return all.reverse();
}

/** get is one kept experiment, or null. */
export async function get(key) {
  const db = await open();
  return (await done(db.transaction(STORE).objectStore(STORE).get(Number(key)))) ?? null;
}

/** remove deletes one kept experiment. */
export async function remove(key) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  tx.objectStore(STORE).delete(Number(key));
  await finished(tx);
}
