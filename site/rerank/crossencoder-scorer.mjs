// crossencoder-scorer.mjs scores the reranking lab's cross-encoder pairs
// with transformers.js, the same way in the page's cross-encoder worker and
// under node (scripts/crossencode.mjs, the node tests). It imports only the
// page's number format (common/format.js, which imports nothing): the
// caller hands it the transformers.js module, a fetch and a store, so it
// runs unchanged in both (and is an .mjs file so node reads it as a module).
//
// The steps, each its own function:
//   fetchModel   every file the manifest names for the chosen weights, from
//                the store (the browser's cache) or the host, with a byte
//                count; each checked against its sha256 pin before anything
//                is loaded (a mismatch is refused, naming the file)
//   loadScorer   the tokenizer and the ONNX model, from those verified bytes
//                only: transformers.js is given them as its cache and may
//                fetch nothing itself
//   scoreCall    one call's (question, passage) pairs as the seed scored
//                them: one padded batch in candidate order, no truncation
//                (a pair over the context is refused), the raw logits
//   scoreRun     every call of the plan, then the payload the engine's
//                acceptance contract takes (acceptCrossEncoder)
//   runScoring   the four in order: what the worker and the script call

import { mb } from "../common/format.js";

/** PAYLOAD_FORMAT tags what scoreRun returns (the engine's reranklab.ScoresFormat). */
export const PAYLOAD_FORMAT = "ragagent-cross-encoder-scores/1";

/** The hub that serves the published model's files. */
export const HUB = "https://huggingface.co";

/**
 * ModelFileError is a model file that cannot be used: kind is "hash" (its
 * sha256 differs from the pin), "http" (the host answered with an error),
 * "network" (no answer: offline, or a redirect the page's policy refused)
 * or "size" (more bytes than the manifest allows).
 */
export class ModelFileError extends Error {
  constructor(kind, path, message) {
    super(message);
    this.name = "ModelFileError";
    this.kind = kind;
    this.path = path;
  }
}

/** fileURL is a file's resolve URL on host, as the hub lays them out. */
export function fileURL(host, model, path) {
  return `${host.replace(/\/+$/, "")}/${model.model}/resolve/${encodeURIComponent(model.revision)}/${path}`;
}

/** filesFor lists the files a scoring with weights reads: the manifest's files, then the weights. */
export function filesFor(model, weightsId) {
  const weights = model.weights.find((w) => w.id === weightsId);
  if (!weights) throw new Error(`no weights "${weightsId}" in the manifest (it has ${model.weights.map((w) => w.id).join(", ")})`);
  return [...model.files, weights];
}

/** sha256Hex is the lower-case hex sha256 of bytes. */
export async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}


/**
 * download fetches url without credentials or referrer, reading the body
 * as it arrives so onBytes(loaded, total) can count it (total from
 * Content-Length, else the manifest's size). A body longer than limit
 * bytes is cut off and refused.
 */
async function download(url, path, { fetchFn, expected, limit, onBytes, signal }) {
  let res;
  try {
    res = await fetchFn(url, { credentials: "omit", referrerPolicy: "no-referrer", cache: "no-store", redirect: "follow", signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ModelFileError("network", path, `${path}: the download failed (${err.message || err}); offline, or a redirect to a host this page may not contact`);
  }
  if (!res.ok) {
    const hint = res.status === 404 ? ": the host has no such file at this revision" : "";
    throw new ModelFileError("http", path, `${path}: HTTP ${res.status} from ${new URL(res.url || url).host}${hint}`);
  }
  const total = Number(res.headers.get("content-length")) || expected;
  const chunks = [];
  let loaded = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    loaded += value.byteLength;
    if (loaded > limit) {
      await reader.cancel();
      throw new ModelFileError("size", path, `${path}: more than ${mb(limit)} MB arrived, more than the manifest allows; refused`);
    }
    chunks.push(value);
    onBytes(loaded, total);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

/**
 * fetchModel gets and checks every file a scoring reads, one after the
 * other, before anything is loaded. A file in store (a previous visit's
 * verified bytes) is read from it and checked again; any other is fetched
 * from host. Each file's sha256 must equal its pin when the manifest has
 * one; a file without a pin keeps the sha256 it arrived with (and, when
 * stored, must still have it). The first mismatch is refused with a
 * ModelFileError naming the file and both hashes, and nothing is loaded or
 * scored. onProgress sees {phase: "download" | "cached" | "verified", path,
 * loaded, total, fileLoaded, fileTotal}.
 *
 * Returns {files: Map(path -> bytes), hashes: {path: sha256},
 * verification: {path: how it was checked}, bytes, downloaded, cached, ms}.
 */
export async function fetchModel({ host, model, weights, fetchFn, store, onProgress = () => {}, signal }) {
  const list = filesFor(model, weights);
  const total = list.reduce((n, f) => n + f.bytes, 0);
  const started = performance.now();
  const out = { files: new Map(), hashes: {}, verification: {}, bytes: 0, downloaded: 0, cached: 0, ms: 0 };
  let before = 0;
  for (const f of list) {
    const url = fileURL(host, model, f.path);
    // A file may be a little larger than an approximate size; never 4x.
    const limit = f.approximate ? Math.max(f.bytes * 4, 1 << 20) : f.bytes;
    let bytes = null;
    let sha = null; // each file's bytes are hashed once, where they came from
    let stored = store ? await store.get(url) : null;
    if (stored) {
      sha = await sha256Hex(stored.bytes);
      const want = f.sha256 || stored.sha256;
      if (sha === want) {
        bytes = stored.bytes;
        out.cached++;
        onProgress({ phase: "cached", path: f.path, loaded: before + bytes.byteLength, total, fileLoaded: bytes.byteLength, fileTotal: bytes.byteLength });
      } else {
        await store.delete(url); // changed in the cache: fetch it again
        stored = null;
      }
    }
    if (!bytes) {
      bytes = await download(url, f.path, {
        fetchFn, expected: f.bytes, limit, signal,
        onBytes: (n, fileTotal) => onProgress({ phase: "download", path: f.path, loaded: before + n, total, fileLoaded: n, fileTotal }),
      });
      out.downloaded += bytes.byteLength;
      sha = await sha256Hex(bytes);
    }
    if (f.sha256 && sha !== f.sha256) {
      throw new ModelFileError("hash", f.path,
        `${f.path} was refused: its sha256 is ${sha}, the manifest pins ${f.sha256}. Nothing was loaded or scored.`);
    }
    if (!f.approximate && bytes.byteLength !== f.bytes && !f.sha256) {
      throw new ModelFileError("size", f.path, `${f.path}: ${bytes.byteLength} bytes, the manifest says ${f.bytes}; refused`);
    }
    out.verification[f.path] = f.sha256 ? "sha256 equals the pin" : "no pin: sha256 recorded as downloaded";
    if (store && !stored) await store.put(url, bytes, sha);
    out.files.set(f.path, bytes);
    out.hashes[f.path] = sha;
    out.bytes += bytes.byteLength;
    before += bytes.byteLength;
    onProgress({ phase: "verified", path: f.path, loaded: before, total, fileLoaded: bytes.byteLength, fileTotal: bytes.byteLength });
  }
  out.ms = performance.now() - started;
  return out;
}

/** weightsName splits a weights path ("onnx/model.onnx") as transformers.js names it: subfolder and file name. */
function weightsName(path) {
  const m = /^(?:(.*)\/)?([^/]+)\.onnx$/.exec(path);
  if (!m) throw new Error(`weights ${path} are not an .onnx file`);
  return { subfolder: m[1] || "", model_file_name: m[2] };
}

// The cache keys transformers.js asks for start with this host; it is
// never contacted (transformers.js may fetch nothing: see loadScorer).
const KEY_HOST = "https://verified.invalid/";

/**
 * loadScorer loads the tokenizer and the model from fetched.files only:
 * transformers.js gets them as its cache (env.customCache), local files
 * and its own caches are off, and its fetch refuses every request, so no
 * byte reaches it that fetchModel did not check. device is "wasm" in the
 * browser, "cpu" under node; threads sets ONNX Runtime's intra-op threads
 * where the runtime allows it.
 */
export async function loadScorer(T, { model, weights, fetched, device, threads }) {
  const { env } = T;
  // Keys are <KEY_HOST><model>/resolve/<revision>/<path>. The revision in
  // a key is not trusted to be the pinned one (transformers.js 4.3 asks
  // whether tokenizer_config.json exists at "main" whatever the revision):
  // whatever it names, only this model's verified bytes are there.
  const prefix = `${KEY_HOST}${model.model}/resolve/`;
  Object.assign(env, {
    allowLocalModels: false, allowRemoteModels: true, remoteHost: KEY_HOST,
    remotePathTemplate: "{model}/resolve/{revision}/",
    useBrowserCache: false, useFSCache: false, useWasmCache: false,
    useCustomCache: true,
    customCache: {
      async match(key) {
        const k = String(key);
        const path = k.startsWith(prefix) ? k.slice(prefix.length).replace(/^[^/]+\//, "") : null;
        const bytes = path === null ? undefined : fetched.files.get(path);
        return bytes ? new Response(bytes, { headers: { "content-length": String(bytes.byteLength) } }) : undefined;
      },
      async put() {},
    },
    fetch: async (url) => { throw new Error(`transformers.js asked for ${url}, which the manifest does not name`); },
  });
  const started = performance.now();
  const w = filesFor(model, weights).at(-1);
  const opts = { revision: model.revision };
  const tokenizer = await T.AutoTokenizer.from_pretrained(model.model, opts);
  const session_options = threads ? { intraOpNumThreads: threads } : {};
  const clf = await T.AutoModelForSequenceClassification.from_pretrained(model.model,
    { ...opts, ...weightsName(w.path), dtype: "fp32", device, session_options });
  return { T, tokenizer, model: clf, weights: w, device, threads, loadMs: performance.now() - started };
}

/**
 * scoreCall scores one call's pairs as the seed did: the question beside
 * each candidate text, in candidate order, tokenized together with padding
 * to the longest pair and no truncation, one forward pass, the raw logit
 * per pair (no sigmoid). A pair longer than contextTokens is refused
 * (pair_exceeds_model_context), as the seed refuses it, never truncated.
 * seconds times the forward pass, as the seed does.
 */
export async function scoreCall(scorer, request, contextTokens) {
  const questions = request.candidates.map(() => request.question);
  const texts = request.candidates.map((c) => c.text);
  if (texts.length === 0) return { scores: [], seconds: 0 };
  const lengths = scorer.tokenizer(questions, { text_pair: texts, padding: false, truncation: false, return_tensor: false }).input_ids.map((ids) => ids.length);
  const longest = Math.max(...lengths);
  if (longest > contextTokens) {
    throw new Error(`pair_exceeds_model_context: a pair of "${request.question}" has ${longest} tokens; the model reads at most ${contextTokens}, and the seed refuses rather than truncates`);
  }
  const inputs = scorer.tokenizer(questions, { text_pair: texts, padding: true, truncation: false });
  const started = performance.now();
  const { logits } = await scorer.model(inputs);
  const seconds = (performance.now() - started) / 1000;
  if (logits.dims.length !== 2 || logits.dims[0] !== texts.length || logits.dims[1] !== 1) {
    throw new Error(`the model gave logits of shape [${logits.dims}], want [${texts.length}, 1]: not a one-label cross-encoder`);
  }
  return { scores: Array.from(logits.data, Number), seconds, inputIds: inputs.input_ids.tolist().map((r) => r.map(Number)) };
}

/**
 * scoreRun scores every call of plan (engine.crossEncoderPlan()) and
 * returns the payload acceptCrossEncoder takes: the model's acquisition
 * record in the published record's shape, the runtime, the timings, how
 * each file was verified, and each call's raw logits and inference time.
 * onCall(done, total) sees each call end.
 */
export async function scoreRun(scorer, { plan, model, fetched, environment, onCall = () => {} }) {
  const calls = [];
  const started = performance.now();
  let firstScoreMs = null;
  let pairs = 0;
  for (const [i, call] of plan.calls.entries()) {
    const { scores, seconds } = await scoreCall(scorer, call.request, plan.context_tokens);
    if (firstScoreMs === null) firstScoreMs = performance.now() - started;
    calls.push({ id: call.id, scores, inference_seconds: seconds });
    pairs += scores.length;
    onCall(i + 1, plan.calls.length);
  }
  const scoreMs = performance.now() - started;
  const inferenceMs = calls.reduce((n, c) => n + c.inference_seconds * 1000, 0);
  return {
    format: PAYLOAD_FORMAT,
    model: { model: model.model, revision: model.revision, license: model.license, files: fetched.hashes },
    environment: {
      runtime: "transformers.js", "transformers.js": scorer.T.env.version,
      onnxruntime: onnxVersion(scorer.T), device: scorer.device, dtype: "fp32",
      weights: scorer.weights.path, threads: scorer.threads || 1, ...environment,
    },
    timings: {
      download_bytes: fetched.downloaded, cached_files: fetched.cached, files_ms: round(fetched.ms),
      load_ms: round(scorer.loadMs), first_score_ms: round(scorer.loadMs + firstScoreMs),
      score_ms: round(scoreMs), pairs, inference_ms_per_pair: round(inferenceMs / pairs, 3),
    },
    verification: fetched.verification,
    calls,
  };
}

function onnxVersion(T) {
  const v = T.env.backends?.onnx?.versions || {};
  if (v.web) return `onnxruntime-web ${v.web}`;
  if (v.node) return `onnxruntime-node ${v.node}`;
  return "onnxruntime";
}

const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * runScoring is the whole scoring: fetchModel, then (only when every file
 * checked out) loadScorer and scoreRun. T is a function returning the
 * transformers.js module, called only then, so a refused file leaves the
 * runtime unloaded and nothing scored. onProgress sees fetchModel's
 * events, then {phase: "load"} and {phase: "score", done, total}.
 */
export async function runScoring({ T, host, plan, weights, fetchFn, store, device, threads, environment, onProgress = () => {}, signal }) {
  const model = plan.model;
  const fetched = await fetchModel({ host, model, weights, fetchFn, store, onProgress, signal });
  onProgress({ phase: "load" });
  const scorer = await loadScorer(await T(), { model, weights, fetched, device, threads });
  return scoreRun(scorer, { plan, model, fetched, environment, onCall: (done, total) => onProgress({ phase: "score", done, total }) });
}
