// ragagent-lab: the lab's engine (site/main.wasm, the Go core compiled to
// WebAssembly, as the page runs it) as an ES module for headless tests
// under node. openLab() starts the engine; each method returns, parsed,
// exactly what the command line's --json prints for the same inputs, and
// rejects with a LabError whose code is the reason code the command line
// would print. See docs/node.md.
import { readFile, stat, writeFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gunzipSync } from "node:zlib";
import path from "node:path";
import { CODES, LabError, fromEngine } from "./errors.js";
import { keyFromEnv, livePost, screenKey } from "./live.js";
import { ServerLab, serverOf } from "./server.js";

export { CODES, LabError } from "./errors.js";
export * from "./assert.js";
export { ServerLab } from "./server.js";

/** SITE is the built page beside this module (site/, made by make wasm). */
export const SITE = fileURLToPath(new URL("../site/", import.meta.url));

// PRICE_HINT ends each shipped price's source: how this front end changes it.
const PRICE_HINT = "the shipped list price (the command line's --price changes it)";

// The compiled module per main.wasm path: compiling is most of a first
// start, and the bytes do not change while a process runs.
const compiled = new Map();
// Starts one at a time: the engine announces itself through globals.
let starting = Promise.resolve();

/**
 * openLab starts the engine from site (default: the site/ folder beside
 * this module) and loads it. It rejects with code engine_missing when
 * main.wasm or wasm_exec.js is not there (run make wasm).
 *
 * With server (an http or https URL) and token it returns a ServerLab
 * instead, whose retrieval runs on that team's server (lab/server.js);
 * its local engine, which reads question sets, starts only when a call
 * brings one.
 *
 * @param {{site?: string, server?: string | URL, token?: string}} [options]
 * @returns {Promise<Lab | ServerLab>}
 */
export async function openLab(options = {}) {
  if (options.server !== undefined || options.token !== undefined) {
    const base = serverOf(options.server, options.token);
    const { server: _s, token, ...local } = options;
    return new ServerLab(base, token, () => openLab(local));
  }
  const site = path.resolve(options.site ?? SITE);
  const turn = starting.then(() => start(site));
  starting = turn.catch(() => {});
  const engine = await turn;
  return new Lab(engine, site);
}

async function start(site) {
  const began = performance.now();
  const wasmPath = path.join(site, "main.wasm");
  const execPath = path.join(site, "wasm_exec.js");
  for (const p of [wasmPath, execPath]) {
    try {
      await stat(p);
    } catch {
      throw new LabError(CODES.ENGINE_MISSING, `the engine is not built: ${p} is missing (run make wasm in the repository, or give openLab({ site }) the folder that holds main.wasm and wasm_exec.js)`);
    }
  }
  if (typeof globalThis.Go !== "function") await import(pathToFileURL(execPath).href);
  let module = compiled.get(wasmPath);
  if (!module) {
    module = WebAssembly.compile(await readFile(wasmPath));
    compiled.set(wasmPath, module);
    module.catch(() => compiled.delete(wasmPath));
  }
  const go = new globalThis.Go();
  const ready = new Promise((resolve) => { globalThis.ragagentReady = resolve; });
  const instance = await WebAssembly.instantiate(await module, go.importObject);
  const exited = go.run(instance);
  const api = await ready;
  delete globalThis.ragagentReady;
  let info;
  try {
    info = await api.load({ priceHint: PRICE_HINT });
  } catch (err) {
    api.exit();
    throw fromEngine(err);
  }
  return { api, go, exited, info, openMs: performance.now() - began };
}

/**
 * Lab is one started engine. Its methods may run concurrently; close()
 * ends the engine.
 */
export class Lab {
  #api;
  #go;
  #exited;
  #site;
  #closed = false;
  #packs = new Map();
  // #folders are the folders of packs loaded from disk, by id: a vector
  // branch's vectors file is looked for there too.
  #folders = new Map();

  constructor({ api, go, exited, info, openMs }, site) {
    this.#api = api;
    this.#go = go;
    this.#exited = exited;
    this.#site = site;
    /** The engine's description (load()'s value): passages, cases, policies, limits, versions. */
    this.info = info;
    /** How long openLab took, in milliseconds (compiling, starting and loading the engine). */
    this.openMs = openMs;
  }

  /**
   * replay replays a ragagent-recording/1 recording (its text; default:
   * the bundled 16-trial comparison) and returns what `ragagent replay
   * --json` prints: {trials, summary}.
   *
   * @param {{recording?: string, caseId?: string, onTrial?: (done: number, total: number, id: string) => void}} [options]
   */
  async replay({ recording, caseId, onTrial } = {}) {
    const api = this.#open();
    if (recording !== undefined && typeof recording !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "replay: recording must be the recording file's text (a string)");
    }
    if (caseId !== undefined && typeof caseId !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "replay: caseId must be a string");
    }
    const opts = {};
    if (recording !== undefined) opts.recording = recording;
    if (caseId !== undefined) opts.caseId = caseId;
    const res = await call(() => api.replay(opts, onTrial));
    return { trials: res.trials, summary: res.summary };
  }

  /**
   * run runs one question and returns what `ragagent run --json` prints:
   * {policy, recording, result, tokens, note}. policy is "scripted" (the
   * offline rules, the default) or "gemini" (live: the key from
   * GOOGLE_API_KEY or GEMINI_API_KEY, at least 16 characters, sent only to
   * the endpoint named, the Gemini API's unless it is a loopback test
   * double's, under the command line's caps). record, for a live run, is a
   * file the session's recording is written to (never overwritten).
   *
   * @param {import("./index.js").RunOptions} options
   */
  async run(options = {}) {
    const api = this.#open();
    const { onStep, record, env = process.env, ...fields } = options;
    const policy = fields.policy ?? "scripted";
    const spec = { ...fields, hasKey: false };
    if (fields.corpus !== undefined) spec.corpus = await this.#corpus(fields.corpus);
    const hooks = { onStep };
    let key = null;
    if (policy === "gemini") {
      key = keyFromEnv(env);
      if (record !== undefined && (await stat(record).catch(() => null)) !== null) {
        throw new LabError(CODES.INVALID_ARGUMENT, `run: ${record} exists: a recording is never overwritten; nothing was sent`);
      }
      spec.hasKey = true;
      hooks.post = livePost(key, this.info.limits?.response_bytes);
    } else if (record !== undefined) {
      throw new LabError(CODES.INVALID_ARGUMENT, "run: record goes with policy gemini");
    }
    if (typeof api.runOutput !== "function") {
      throw new LabError(CODES.ENGINE_MISSING, "run: this engine has no runOutput; it was built before the node module's run (run make wasm)");
    }
    const out = await call(() => api.runOutput(spec, hooks).result);
    if (key !== null && record !== undefined) {
      const { text } = await call(() => api.recording());
      screenKey(text, key, record);
      try {
        await writeFile(record, text, { flag: "wx", mode: 0o600 });
      } catch (err) {
        throw new LabError(CODES.INVALID_ARGUMENT, `run: the recording was not written to ${record}: ${err.message}`, { cause: err });
      }
      out.recording = record;
    }
    return out;
  }

  /**
   * eval grades a pack's authored cases on both paths and returns what
   * `ragagent eval --json` prints: policy "scripted" (the default) or
   * "replay" with recording (a recording's text made over the pack);
   * config a configuration's name or spec (default: the pack's); cases a
   * question set's text (ragagent-cases/1 JSON or the TSV) graded instead
   * of the pack's own, as `ragagent eval --cases FILE`.
   *
   * @param {{corpus?: string, policy?: "scripted" | "replay", recording?: string, config?: string | object, cases?: string, onTrial?: Function}} [options]
   */
  async eval({ corpus, policy = "scripted", recording, config, cases, onTrial } = {}) {
    const api = this.#open();
    if (cases !== undefined && typeof cases !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "eval: cases must be the question set's text (a string)");
    }
    const opts = { corpus: corpus === undefined ? "seed" : await this.#corpus(corpus), policy };
    if (cases !== undefined) opts.cases = cases;
    if (recording !== undefined) opts.recording = recording;
    if (config !== undefined) opts.config = config;
    return call(() => api.eval(opts, onTrial));
  }

  /**
   * retrieval ranks a question set's answerable cases under each
   * configuration and returns what `ragagent retrieval --json` prints:
   * cases the set's text (ragagent-cases/1 JSON or the TSV; default the
   * pack's own), configs names (["all"], the default) or specs, the first
   * the baseline; k the depth ranked (default 10).
   *
   * A configuration with a vector branch (fusion) also needs models,
   * the model folders (each with its ragagent-model.json), and the
   * pack's vectors file (`ragagent corpus embed`), looked for in the
   * vectors folders and then beside a pack given as a folder: the
   * command line's --model and --vectors. A cross-encoder second stage
   * needs its model's folder among models. The models run here, under
   * node, with lab/embed.mjs (install @huggingface/transformers), and are
   * closed when the call ends.
   *
   * signal (an AbortSignal), once aborted, stops the ranking: the call
   * rejects with code cancelled, as a server lab's does.
   *
   * @param {{corpus?: string, cases?: string, configs?: Array<string | object>, k?: number, onCase?: Function, models?: string[], vectors?: string[], gemini?: string, signal?: AbortSignal}} [options]
   */
  async retrieval({ corpus, cases, configs, k, onCase, models, vectors, gemini, signal } = {}) {
    const api = this.#open();
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: signal must be an AbortSignal");
    }
    if (cases !== undefined && typeof cases !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: cases must be the question set's text (a string)");
    }
    for (const [name, v] of [["models", models], ["vectors", vectors]]) {
      if (v !== undefined && (!Array.isArray(v) || v.some((d) => typeof d !== "string"))) {
        throw new LabError(CODES.INVALID_ARGUMENT, `retrieval: ${name} must be an array of folder paths`);
      }
    }
    const req = { corpus: corpus === undefined ? "seed" : await this.#corpus(corpus) };
    if (cases !== undefined) req.cases = cases;
    if (configs !== undefined) req.configs = configs;
    if (k !== undefined) req.k = k;
    if (gemini !== undefined) {
      if (typeof gemini !== "string") throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: gemini must be a listwise recording's text (a string)");
      req.gemini = gemini;
    }
    const hooks = { onProgress: onCase };
    const opened = [];
    if (models !== undefined || vectors !== undefined) {
      Object.assign(hooks, modelHooks(models ?? [], [...(vectors ?? []), ...(this.#folders.has(req.corpus) ? [this.#folders.get(req.corpus)] : [])], opened));
    }
    if (signal?.aborted) throw new LabError("cancelled", "retrieval: the signal was aborted before the ranking began");
    let stop = null;
    try {
      // The engine's retrieval is a job whose value is the command's bytes
      // (the page downloads them as they are); here they are parsed.
      const text = await call(() => {
        const job = api.retrieval(req, hooks);
        // The engine ranks before it returns the job (it hands the event
        // loop back every 50 ms): a signal aborted meanwhile stops it now.
        stop = () => api.cancel(job.id);
        signal?.addEventListener("abort", stop, { once: true });
        if (signal?.aborted) stop();
        return job.result;
      });
      return JSON.parse(text);
    } finally {
      if (stop !== null) signal?.removeEventListener("abort", stop);
      for (const e of opened) await e.close();
    }
  }

  /**
   * tune chooses a retrieval configuration for a pack from a question
   * set and returns what `ragagent tune --json` prints: the chosen spec,
   * its cross-validated MRR@10 and recall@10 with 95% intervals, the
   * paired differences against seed and the pack's default, the folds'
   * choices and a warning when the set is too small to tell. cases is
   * the set's text (default the pack's own), folds the cross-validation
   * folds (default 5); onCase(done, total, config) sees each question
   * ranked. The same choice, byte for byte, as the command line's.
   *
   * @param {{corpus?: string, cases?: string, folds?: number, onCase?: Function}} [options]
   */
  async tune({ corpus, cases, folds, onCase } = {}) {
    const api = this.#open();
    if (cases !== undefined && typeof cases !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "tune: cases must be the question set's text (a string)");
    }
    if (folds !== undefined && (!Number.isInteger(folds) || folds < 2)) {
      throw new LabError(CODES.INVALID_ARGUMENT, "tune: folds must be an integer of 2 or more");
    }
    const req = { corpus: corpus === undefined ? "seed" : await this.#corpus(corpus) };
    if (cases !== undefined) req.cases = cases;
    if (folds !== undefined) req.folds = folds;
    const text = await call(() => api.tune(req, { onProgress: onCase }).result);
    return JSON.parse(text);
  }

  /**
   * readCases reads a question set's text (ragagent-cases/1 JSON or the
   * TSV) as the command line reads --cases and returns its
   * ragagent-cases/1 object, no pack's defaults filled in: the one
   * shape a server lab sends for either form. A set the parser refuses
   * rejects with invalid_cases.
   *
   * @param {string} text
   */
  async readCases(text) {
    const api = this.#open();
    if (typeof text !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "readCases: the question set's text must be a string");
    }
    if (typeof api.casesJSON !== "function") {
      throw new LabError(CODES.ENGINE_MISSING, "readCases: this engine has no casesJSON; it was built before the node module's server lab (run make wasm)");
    }
    return JSON.parse(await call(() => api.casesJSON(text)));
  }

  /**
   * recording is the session's recording (every live run of this lab) as
   * ragagent-recording/1 text, with how many trials and exchanges it holds.
   *
   * @returns {Promise<{trials: number, exchanges: number, text: string}>}
   */
  async recording() {
    const api = this.#open();
    return call(() => api.recording());
  }

  /**
   * packs lists the packs this lab can name: the engine's (the seed, and
   * any loaded) and those shipped beside the engine (site/packs/), by id.
   *
   * @returns {Promise<string[]>}
   */
  async packs() {
    const api = this.#open();
    const ids = (await call(() => api.packs())).map((p) => p.manifest.id);
    for (const m of await this.#shipped()) if (!ids.includes(m.id)) ids.push(m.id);
    return ids;
  }

  /**
   * close ends the engine and releases its timers, so node can exit; a
   * closed lab's methods reject with code lab_closed. Calling it again
   * does nothing.
   */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const go = this.#go;
    // A stopped Go timer (a live call's 45 s timeout) can stay scheduled
    // as a JS timeout until it would have fired: unref it now, clear it
    // once the program has exited (it would resume an exited program).
    for (const t of go._scheduledTimeouts.values()) t.unref?.();
    this.#api.exit();
    await this.#exited;
    for (const t of go._scheduledTimeouts.values()) clearTimeout(t);
    go._scheduledTimeouts.clear();
  }

  #open() {
    if (this.#closed) throw new LabError(CODES.CLOSED, "the lab is closed: open another with openLab()");
    return this.#api;
  }

  // #corpus makes corpus usable in the engine and returns its pack id: a
  // pack the engine knows, one shipped beside the engine (site/packs/),
  // or a pack folder (or its manifest.json) on disk, loaded once.
  async #corpus(corpus) {
    const api = this.#open();
    if (typeof corpus !== "string" || corpus === "") {
      throw new LabError(CODES.INVALID_ARGUMENT, "corpus must be a pack id or a pack folder's path");
    }
    if (this.#packs.has(corpus)) return this.#packs.get(corpus);
    const known = (await call(() => api.packs())).map((p) => p.manifest.id);
    if (known.includes(corpus)) return corpus;
    const shipped = await this.#shipped();
    let manifestPath;
    if (shipped.some((m) => m.id === corpus)) {
      manifestPath = path.join(this.#site, "packs", corpus, "manifest.json");
    } else {
      const info = await stat(corpus).catch(() => null);
      if (info === null) {
        const ids = [...known, ...shipped.map((m) => m.id).filter((id) => !known.includes(id))];
        throw new LabError("unknown_corpus", `corpus ${JSON.stringify(corpus)} is neither a pack (${ids.join(", ")}) nor a pack folder or manifest`);
      }
      manifestPath = info.isDirectory() ? path.join(corpus, "manifest.json") : corpus;
    }
    const { manifest, passages } = await readPack(manifestPath);
    const loaded = await call(() => api.loadPack(manifest, passages));
    this.#packs.set(corpus, loaded.manifest.id);
    this.#folders.set(loaded.manifest.id, path.dirname(manifestPath));
    return loaded.manifest.id;
  }

  // #shipped lists the manifests in site/packs/index.json (none when it
  // is missing: a site folder without packs).
  async #shipped() {
    const text = await readFile(path.join(this.#site, "packs", "index.json"), "utf8").catch(() => null);
    if (text === null) return [];
    try {
      return JSON.parse(text).packs ?? [];
    } catch {
      return [];
    }
  }
}

// call runs an engine call, turning its rejection into a LabError.
async function call(fn) {
  try {
    return await fn();
  } catch (err) {
    throw fromEngine(err);
  }
}

/**
 * readPack reads a pack's manifest and the passages file it names beside
 * it, gunzipped when it ends in .gz, refusing more bytes than the manifest
 * declares before unpacking them all (as the command line's packs.Load).
 * The engine then checks the passages against the manifest (size, sha256).
 */
/**
 * modelHooks are the engine's hooks for a vector branch and a
 * cross-encoder second stage (jsbridge.Models): vectors(pack, name) reads
 * the file from the first folder holding it; embedder(model) opens
 * lab/embed.mjs's embedder, scorer(model) its cross-encoder scorer, on the
 * model folder whose ragagent-model.json names that model (each kept in
 * opened, which the caller closes when the call ends).
 */
function modelHooks(modelDirs, vectorDirs, opened) {
  /** folderOf is the model folder whose manifest names model. */
  async function folderOf(model) {
    const known = [];
    for (const dir of modelDirs) {
      const manifest = JSON.parse(await readFile(path.join(dir, "ragagent-model.json"), "utf8"));
      if (manifest.model === model) return dir;
      known.push(manifest.model);
    }
    throw new Error(modelDirs.length === 0 ? "no model folder was given (models: [folders])" : `no model folder holds it (they hold ${known.join(", ")})`);
  }
  return {
    async vectors(pack, name) {
      if (name !== path.basename(name) || name.startsWith(".")) {
        throw new LabError("invalid_config", `${JSON.stringify(name)} is not a plain file name`);
      }
      for (const dir of vectorDirs) {
        const data = await readFile(path.join(dir, name)).catch(() => null);
        if (data !== null) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      }
      throw new Error(vectorDirs.length === 0 ? "no folder to look in (give vectors: [folders])" : `it is not in ${vectorDirs.join(", ")}`);
    },
    async embedder(model) {
      const dir = await folderOf(model);
      const { openEmbedder } = await import("./embed.mjs");
      const e = await openEmbedder({ modelDir: dir });
      opened.push(e);
      return { model: e.model, embed: (texts) => e.embed(texts) };
    },
    async scorer(model) {
      const dir = await folderOf(model);
      const { openScorer } = await import("./embed.mjs");
      const s = await openScorer({ modelDir: dir });
      opened.push(s);
      return { model: s.model, score: (query, texts) => s.score(query, texts) };
    },
  };
}

async function readPack(manifestPath) {
  let manifest;
  try {
    manifest = await readFile(manifestPath, "utf8");
  } catch (err) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${manifestPath}: ${err.message}`, { cause: err });
  }
  let m;
  try {
    m = JSON.parse(manifest);
  } catch (err) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${manifestPath}: not valid JSON: ${err.message}`, { cause: err });
  }
  if (typeof m?.passages_file !== "string" || path.basename(m.passages_file) !== m.passages_file || !Number.isSafeInteger(m.passages_bytes)) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${manifestPath}: not a ragagent-corpus/1 manifest (passages_file and passages_bytes)`);
  }
  const file = path.join(path.dirname(manifestPath), m.passages_file);
  let raw;
  try {
    raw = await readFile(file);
  } catch (err) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${file}: ${err.message}`, { cause: err });
  }
  let passages = raw;
  if (file.endsWith(".gz")) {
    try {
      passages = gunzipSync(raw, { maxOutputLength: m.passages_bytes + 1 });
    } catch (err) {
      const over = err.code === "ERR_BUFFER_TOO_LARGE";
      throw new LabError(CODES.INVALID_ARGUMENT, over ? `${file} holds more than the manifest's ${m.passages_bytes} bytes` : `${file}: ${err.message}`, { cause: err });
    }
  }
  if (passages.length > m.passages_bytes) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${file} holds more than the manifest's ${m.passages_bytes} bytes`);
  }
  return { manifest, passages: new Uint8Array(passages.buffer, passages.byteOffset, passages.length) };
}
