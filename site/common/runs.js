// common/runs.js keeps the runs made in this page (scripted or live) in
// IndexedDB ("ragagent-runs"), bounded: the newest LIMIT are kept and the
// oldest dropped as a new one is kept, which the Runs view says. Each run is
// what the page needs to list, search, show, compare and download it
// without the engine having kept anything: the trial report the engine
// returned, the settings it was run with, and for a live run the
// ragagent-recording/1 file of its own exchanges (never a key: the engine's
// recording holds none). A browser that blocks IndexedDB keeps nothing, and
// the view says so.

/** LIMIT is how many runs this browser keeps (the oldest go first). */
export const LIMIT = 100;

import { state } from "./state.js";
import { database, done, finished } from "./idb.js";

const DB = "ragagent-runs";
const STORE = "runs";
const listeners = [];

const open = database(DB, (db) => db.createObjectStore(STORE, { keyPath: "key", autoIncrement: true }));

/** onChange calls fn() whenever a run is kept or deleted. */
export function onChange(fn) {
  listeners.push(fn);
}

function changed() {
  for (const fn of listeners) fn();
}

/**
 * keep stores a run and drops the oldest beyond LIMIT; it resolves with
 * {key, dropped}. run: {time (ISO), question, corpus: {id, title}, config,
 * policy, mode, outcome, reason, report, recording (text or null)}.
 */
export async function keep(run) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  const store = tx.objectStore(STORE);
  const key = await done(store.add(run));
  const keys = await done(store.getAllKeys());
  const drop = keys.slice(0, Math.max(0, keys.length - LIMIT));
  for (const k of drop) store.delete(k);
  await finished(tx);
  changed();
  return { key, dropped: drop.length };
}

/** keepAll stores several runs in one transaction (an agent experiment's
 * trials), dropping the oldest beyond LIMIT, and tells the listeners once;
 * it resolves with {keys (in the order given), dropped}. */
export async function keepAll(list) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  const store = tx.objectStore(STORE);
  const keys = [];
  for (const run of list) keys.push(await done(store.add(run)));
  const all = await done(store.getAllKeys());
  const drop = all.slice(0, Math.max(0, all.length - LIMIT));
  for (const k of drop) store.delete(k);
  await finished(tx);
  changed();
  return { keys, dropped: drop.length };
}

/** list is every kept run, newest first. */
export async function list() {
  const db = await open();
  const all = await done(db.transaction(STORE).objectStore(STORE).getAll());
  return all.reverse();
}

/** load reads every kept run into state.runs (newest first), or why it could not. */
export async function load() {
  try {
    state.runs.kept = await list();
    state.runs.error = "";
  } catch (err) {
    state.runs.kept = [];
    state.runs.error = err?.message || "this browser refused IndexedDB";
  }
  return state.runs.kept;
}

/** get is one kept run, or null. */
export async function get(key) {
  const db = await open();
  return (await done(db.transaction(STORE).objectStore(STORE).get(Number(key)))) ?? null;
}

/** remove deletes one kept run. */
export async function remove(key) {
  const db = await open();
  const tx = db.transaction(STORE, "readwrite");
  tx.objectStore(STORE).delete(Number(key));
  await finished(tx);
  changed();
}

/** recordingOf is a ragagent-recording/1 file of one trial of a recording's
 * text (the session's, which holds every live run made here), or null
 * when it has no such trial. */
export function recordingOf(text, trialID) {
  const file = JSON.parse(text);
  const trials = (file.trials || []).filter((t) => t.id === trialID);
  if (!trials.length) return null;
  return JSON.stringify({ ...file, trials }, null, 1);
}
