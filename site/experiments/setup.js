// experiments/setup.js is the Experiments view's setup as data, apart from
// the page: what a deep link (#experiments?...) says, the order the
// configurations are sent in (the chosen baseline first, so the engine's
// comparisons, and the download, have it as `a`), the person's own
// configurations kept in localStorage, and each question's win, loss or
// tie against the baseline. It imports only common/format.js (which
// imports nothing) and touches no document, so node tests import it as it
// is.

import { plural } from "../common/format.js";

/** AUTHORED names the pack's own cases as the question set. */
export const AUTHORED = "authored";
/** FILE names a question set given as a file. */
export const FILE = "file";
/** SET names one of the person's own question sets (common/sets.js), by its name. */
export const SET = "set";
/** SPECS_KEY is where this browser keeps the person's own configurations. */
export const SPECS_KEY = "ragagent.experiment.configs";
/** MAX_SPECS and MAX_SPEC_CHARS bound the configurations a link or the
 * storage may bring, as every input is bounded. */
export const MAX_SPECS = 16;
export const MAX_SPEC_CHARS = 4096;
/** METRICS are the metrics of `ragagent retrieval --json`, in its order. */
export const METRICS = ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"];

/**
 * Setup is what an experiment is made from.
 * @typedef {object} Setup
 * @property {string} corpus     a pack id ("" when the link names none)
 * @property {string} cases      AUTHORED, FILE or SET
 * @property {string} set        the question set's name, for SET
 * @property {string[]} configs  the names checked, in list order
 * @property {string} baseline   the name the others are compared with
 * @property {object[]} specs    the person's own configurations (JSON specs, each with a name)
 */

/** SpecError is why a configuration of the person's own was not taken. */
export class SpecError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpecError";
  }
}

/**
 * parseSpec reads a configuration typed or linked as JSON: an object with
 * a non-empty one-line name, at most MAX_SPEC_CHARS characters. What its
 * settings mean is the engine's to judge (invalid_config when it runs).
 */
export function parseSpec(text) {
  if (typeof text !== "string" || !text.trim()) throw new SpecError("the configuration is empty: write a JSON object with a name");
  if (text.length > MAX_SPEC_CHARS) throw new SpecError(`the configuration is ${text.length} characters, over the cap of ${MAX_SPEC_CHARS}`);
  let spec;
  try {
    spec = JSON.parse(text);
  } catch (err) {
    throw new SpecError(`the configuration is not JSON (${err.message})`);
  }
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) throw new SpecError("the configuration must be a JSON object");
  if (typeof spec.name !== "string" || !spec.name.trim()) throw new SpecError("the configuration needs a name (a non-empty string)");
  if (!/^[a-z0-9._-]{1,64}$/.test(spec.name)) throw new SpecError("the configuration's name must be 1 to 64 lower-case letters, digits, '.', '_' or '-'");
  return spec;
}

/** encode is a setup as a link's query. */
export function encode(s) {
  const q = new URLSearchParams();
  if (s.corpus) q.set("corpus", s.corpus);
  q.set("cases", s.cases);
  if (s.cases === SET && s.set) q.set("set", s.set);
  q.set("configs", s.configs.join(","));
  if (s.baseline) q.set("baseline", s.baseline);
  for (const spec of s.specs) q.append("spec", JSON.stringify(spec));
  return q;
}

/**
 * decode reads a link's query as a setup; what it cannot use is left out
 * and named in `dropped` (a bad spec, too many), never silently. Which
 * names exist is the view's to check.
 */
export function decode(q) {
  const dropped = [];
  const specs = [];
  for (const text of q.getAll("spec")) {
    if (specs.length >= MAX_SPECS) {
      dropped.push(`more than ${plural(MAX_SPECS, "configuration")} of your own: the rest were left out`);
      break;
    }
    try {
      specs.push(parseSpec(text));
    } catch (err) {
      dropped.push(`a configuration in the link was left out: ${err.message}`);
    }
  }
  const configs = (q.get("configs") || "").split(",").map((c) => c.trim()).filter(Boolean);
  return {
    setup: {
      corpus: q.get("corpus") || "",
      cases: [FILE, SET].includes(q.get("cases")) ? q.get("cases") : AUTHORED,
      set: q.get("cases") === SET ? (q.get("set") || "").slice(0, 80) : "",
      configs: [...new Set(configs)],
      baseline: q.get("baseline") || "",
      specs,
    },
    dropped,
  };
}

/** mergeSpecs adds specs to kept ones; a spec of a name already kept replaces it. */
export function mergeSpecs(kept, specs) {
  const byName = new Map(kept.map((s) => [s.name, s]));
  for (const s of specs) byName.set(s.name, s);
  return [...byName.values()].slice(0, MAX_SPECS);
}

/** loadSpecs reads the kept configurations from storage (a Storage), dropping what does not parse. */
export function loadSpecs(storage) {
  let list = [];
  try {
    list = JSON.parse(storage?.getItem(SPECS_KEY) || "[]");
  } catch {
    return [];
  }
  if (!Array.isArray(list)) return [];
  const out = [];
  for (const s of list.slice(0, MAX_SPECS)) {
    try { out.push(parseSpec(JSON.stringify(s))); } catch { /* left out */ }
  }
  return out;
}

/** saveSpecs keeps the configurations in storage; false when storage refused. */
export function saveSpecs(storage, specs) {
  try {
    storage.setItem(SPECS_KEY, JSON.stringify(specs));
    return true;
  } catch {
    return false;
  }
}

/**
 * runOrder is what the engine is asked to run: the checked names in list
 * order with the baseline moved first, each a built-in's name or the
 * person's spec of that name.
 */
export function runOrder(checked, baseline, specs) {
  const names = checked.includes(baseline) ? [baseline, ...checked.filter((n) => n !== baseline)] : [...checked];
  const own = new Map(specs.map((s) => [s.name, s]));
  return names.map((n) => own.get(n) ?? n);
}

/** verdict compares a case's rank under a configuration with its rank
 * under the baseline (null: not in the top k): "win", "loss" or "tie". */
export function verdict(rank, base) {
  const r = rank ?? Infinity;
  const b = base ?? Infinity;
  if (r === b) return "tie";
  return r < b ? "win" : "loss";
}

/** tally counts the wins, losses and ties of configuration i against the result's first. */
export function tally(result, i) {
  const base = result.configs[0].cases;
  const out = { win: 0, loss: 0, tie: 0 };
  result.configs[i].cases.forEach((c, j) => { out[verdict(c.rank, base[j]?.rank)]++; });
  return out;
}
