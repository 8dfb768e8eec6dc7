// embed.mjs runs the models of a retrieval configuration under node with
// the pinned transformers.js (onnxruntime-node, CPU, fp32):
//
// - a sentence-embedding model (a BERT-style encoder exported to ONNX, as
//   all-MiniLM-L6-v2 is) for the vector branch: sentence vectors
//   mean-pooled over the tokens and L2-normalised, as sentence-transformers
//   does (openEmbedder);
// - a cross-encoder (a one-label *ForSequenceClassification exported to
//   ONNX, as cross-encoder/ms-marco-MiniLM-L6-v2 is) for a second stage:
//   one raw logit per (query, passage) pair (openScorer).
//
// The model is a folder laid out as its hub repository with a
// ragagent-model/1 manifest (ragagent-model.json) pinning each file's
// sha256 and size. Every file is checked against it before transformers.js
// is even imported; transformers.js is then given those verified bytes
// only (from memory: it reads no file itself and may fetch nothing), so a
// file changed on disk after the check cannot reach it either. Which kind
// a folder holds is what its (verified) config.json says: architectures
// naming a *ForSequenceClassification is a cross-encoder, anything else a
// sentence encoder (modelKind); opening one as the other is refused with
// invalid_model before the runtime loads.
//
// Node only, and not imported by index.js: @huggingface/transformers is a
// devDependency of ragagent-lab, imported here only when a model is opened,
// so installing the package downloads no runtime and no model.
//
//   import { openEmbedder, openScorer } from "./lab/embed.mjs";   (by path: the package exports only ".")
//   const e = await openEmbedder({ modelDir });  e.model; await e.embed(texts); await e.close();
//   const s = await openScorer({ modelDir });    s.model; await s.score(query, texts); await s.close();
//
//   node lab/embed.mjs serve --model DIR [--weights ID] [--threads N]
//     JSON lines: first {"ready": true, "model": {...}} (or {"error": ...}
//     and exit 1); then per stdin line one answer, in order: to
//     {"id": N, "texts": [...]} from a sentence encoder's folder
//     {"id": N, "dimensions": D, "f32": base64}; to {"id": N, "query": Q,
//     "texts": [...]} from a cross-encoder's folder {"id": N, "scores":
//     [logit per text]}; else {"id": N, "error": {code, message}} (a
//     request for the other kind: wrong_model_kind), and the server goes
//     on. The folder's config.json decides the kind (no flag: one folder
//     is one model). stdin's end exits 0. stdout carries nothing else.
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { LabError } from "./errors.js";

/** RUNTIME_PACKAGE is the npm package that runs the model (a devDependency, pinned in package.json). */
export const RUNTIME_PACKAGE = "@huggingface/transformers";

/** MODEL_FORMAT tags the manifest a model folder holds (ragagent-model.json). */
export const MODEL_FORMAT = "ragagent-model/1";

/** EMBED_CODES are the error codes the embedder rejects with (as LabError's code). */
export const EMBED_CODES = Object.freeze({
  /** The manifest is missing or malformed, or a file is missing or differs from its pin. */
  INVALID_MODEL: "invalid_model",
  /** @huggingface/transformers is not installed. */
  RUNTIME_MISSING: "runtime_missing",
  /** embed() was given something other than a list of strings (or serve a bad line). */
  INVALID_REQUEST: "invalid_request",
  /** The runtime failed while embedding. */
  EMBED_FAILED: "embed_failed",
  /** embed() after close(). */
  CLOSED: "embedder_closed",
  /** The runtime failed while scoring pairs. */
  SCORE_FAILED: "score_failed",
  /** score() after close(). */
  SCORER_CLOSED: "scorer_closed",
  /** A query so long that no passage token fits beside it in the model's context. */
  QUERY_TOO_LONG: "query_exceeds_model_context",
  /** serve was asked to score by a sentence encoder, or to embed by a cross-encoder. */
  WRONG_KIND: "wrong_model_kind",
});

/** KINDS are the two kinds of model folder (modelKind; the model record's kind). */
export const KINDS = Object.freeze({ EMBEDDER: "embedder", CROSS_ENCODER: "cross-encoder" });

/** BATCH is how many texts go through one forward pass: padding is to the batch's longest. */
export const BATCH = 32;

/**
 * SCORE_BATCH is how many (query, passage) pairs go through one forward
 * pass of a cross-encoder: pairs are longer than a query's texts (a
 * passage of a few hundred tokens beside the query), so fewer a pass.
 */
export const SCORE_BATCH = 16;

const MANIFEST = "ragagent-model.json";
const HEX64 = /^[0-9a-f]{64}$/;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

const invalid = (message, more) => Object.assign(new LabError(EMBED_CODES.INVALID_MODEL, message), more);

/** safePath says whether p names a file inside the model folder. */
function safePath(p) {
  return typeof p === "string" && p !== "" && p.length <= 200 && !p.startsWith("/") && !p.includes("\\") &&
    p.split("/").every((s) => s !== "" && s !== "." && s !== "..");
}

/**
 * readManifest reads and checks modelDir's ragagent-model.json and picks
 * the weights (by id, default "fp32"): every file must name a path inside
 * the folder, a sha256 and an exact size, since each is checked before
 * anything loads.
 */
async function readManifest(modelDir, weightsId) {
  const where = path.join(modelDir, MANIFEST);
  let m;
  try {
    m = JSON.parse(await readFile(where, "utf8"));
  } catch (err) {
    throw invalid(err.code === "ENOENT" ? `${where} is missing: a model folder holds a ${MODEL_FORMAT} manifest pinning each file`
      : `${where}: ${err.code ? err.message : `not JSON (${err.message})`}`);
  }
  if (m === null || typeof m !== "object" || m.format !== MODEL_FORMAT) throw invalid(`${where}: format is ${JSON.stringify(m?.format)}, want "${MODEL_FORMAT}"`);
  if (typeof m.model !== "string" || !MODEL_ID.test(m.model)) throw invalid(`${where}: model ${JSON.stringify(m.model)} is not an owner/name id`);
  if (typeof m.revision !== "string" || m.revision === "") throw invalid(`${where}: revision is required`);
  if (!Array.isArray(m.files) || !Array.isArray(m.weights)) throw invalid(`${where}: files and weights must be lists`);
  const weights = m.weights.find((w) => w?.id === weightsId);
  if (!weights) throw invalid(`${where}: no weights "${weightsId}" (it has ${m.weights.map((w) => JSON.stringify(w?.id)).join(", ") || "none"})`);
  const files = [...m.files, weights];
  const seen = new Set();
  for (const f of files) {
    const name = JSON.stringify(f?.path);
    if (!safePath(f?.path)) throw invalid(`${where}: ${name} is not a path inside the model folder`);
    if (seen.has(f.path)) throw invalid(`${where}: ${f.path} is named twice`);
    seen.add(f.path);
    if (typeof f.sha256 !== "string" || !HEX64.test(f.sha256)) throw invalid(`${where}: ${f.path} has no sha256 pin (a lower-case hex sha256); every file is checked before it loads`);
    if (!Number.isSafeInteger(f.bytes) || f.bytes < 0 || f.approximate === true) throw invalid(`${where}: ${f.path} needs its exact size in bytes`);
  }
  if (!/\.onnx$/.test(weights.path)) throw invalid(`${where}: weights ${weights.path} are not an .onnx file`);
  for (const p of ["config.json", "tokenizer.json", "tokenizer_config.json"]) {
    if (!seen.has(p)) throw invalid(`${where}: ${p} is not among the files; transformers.js reads it`);
  }
  return { manifest: m, files, weights };
}

/**
 * verifyModel reads every file the manifest names and checks its size and
 * sha256 against the pins. The first difference rejects with code
 * invalid_model naming the file and both sha256s (err.path,
 * err.expected_sha256, err.actual_sha256 hold them too). Returns the
 * manifest, the weights entry and the verified bytes by path.
 */
export async function verifyModel({ modelDir, weights = "fp32" }) {
  if (typeof modelDir !== "string" || modelDir === "") throw new LabError(EMBED_CODES.INVALID_MODEL, "openEmbedder and openScorer need modelDir, the model folder");
  const dir = path.resolve(modelDir);
  const { manifest, files, weights: w } = await readManifest(dir, weights);
  const bytes = new Map();
  for (const f of files) {
    let data;
    try {
      data = await readFile(path.join(dir, ...f.path.split("/")));
    } catch (err) {
      throw invalid(`${f.path} was refused: ${err.code === "ENOENT" ? "it is missing from" : `it cannot be read (${err.code || err.message}) in`} ${dir}. Nothing was loaded.`, { path: f.path });
    }
    const sha = createHash("sha256").update(data).digest("hex");
    if (sha !== f.sha256 || data.byteLength !== f.bytes) {
      throw invalid(`${f.path} was refused: its sha256 is ${sha} (${data.byteLength} bytes), the manifest pins ${f.sha256} (${f.bytes} bytes). Nothing was loaded.`,
        { path: f.path, expected_sha256: f.sha256, actual_sha256: sha });
    }
    bytes.set(f.path, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return { dir, manifest, weights: w, files: files.map((f) => ({ path: f.path, sha256: f.sha256, bytes: f.bytes })), bytes };
}

/** pinnedVersion is the transformers.js version ragagent-lab's package.json pins, or null. */
async function pinnedVersion() {
  try {
    const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
    return pkg.devDependencies?.[RUNTIME_PACKAGE] ?? pkg.dependencies?.[RUNTIME_PACKAGE] ?? null;
  } catch {
    return null;
  }
}

/** importRuntime imports transformers.js, or rejects with runtime_missing saying what to install. */
export async function importRuntime() {
  try {
    return await import(RUNTIME_PACKAGE);
  } catch (err) {
    if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes(RUNTIME_PACKAGE)) throw err;
    const v = await pinnedVersion();
    throw new LabError(EMBED_CODES.RUNTIME_MISSING,
      `the embedder needs the npm package ${RUNTIME_PACKAGE}, which is not installed (ragagent-lab lists it as a devDependency, so installing ragagent-lab does not bring it): npm install ${RUNTIME_PACKAGE}${v ? `@${v}` : ""}`,
      { cause: err });
  }
}

// transformers.js keeps its settings in one env object: one model loads at a time.
let loading = Promise.resolve();
let opened = 0;

const ENV_KEYS = ["allowLocalModels", "allowRemoteModels", "localModelPath", "useFSCache", "useBrowserCache", "useCustomCache", "customCache"];

/** TASKS is the transformers.js pipeline each kind of model loads as (its tokenizer and model classes). */
const TASKS = { [KINDS.EMBEDDER]: "feature-extraction", [KINDS.CROSS_ENCODER]: "text-classification" };

/**
 * loadPipeline loads kind's pipeline from verified.bytes only:
 * transformers.js sees them as its cache (env.customCache, matched by
 * path), remote models are off (it fetches nothing), and its local folder
 * is an empty temporary one, so a file the manifest does not name is
 * simply absent rather than read unchecked from disk. The env is put back
 * afterwards. (Only the pipeline's tokenizer and model are used: their
 * inputs are built and their outputs read here.)
 */
async function loadPipeline(T, verified, threads, kind) {
  const key = `ragagent-verified/model-${++opened}`;
  const empty = await mkdtemp(path.join(os.tmpdir(), "ragagent-embed-"));
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, T.env[k]]));
  Object.assign(T.env, {
    allowLocalModels: true, allowRemoteModels: false, localModelPath: empty,
    useFSCache: false, useBrowserCache: false, useCustomCache: true,
    customCache: {
      async match(request) {
        const k = String(request);
        const at = k.indexOf(`${key}/`);
        if (at < 0) return undefined;
        const file = k.slice(at + key.length + 1).replace(/^resolve\/[^/]+\//, "");
        const data = verified.bytes.get(file);
        return data ? new Response(data, { headers: { "content-length": String(data.byteLength) } }) : undefined;
      },
      async put() {},
    },
  });
  try {
    const m = /^(?:(.*)\/)?([^/]+)\.onnx$/.exec(verified.weights.path);
    return await T.pipeline(TASKS[kind], key, {
      revision: verified.manifest.revision, dtype: "fp32", device: "cpu",
      subfolder: m[1] || "", model_file_name: m[2],
      session_options: threads ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {},
    });
  } finally {
    Object.assign(T.env, saved);
    await rm(empty, { recursive: true, force: true });
  }
}

/**
 * maxTokens is how many tokens (specials included) the model reads: the
 * tokenizer's model_max_length, capped by the positions it has
 * (config.max_position_embeddings) and, when the manifest pins one, by
 * sentence_bert_config.json's max_seq_length (what sentence-transformers
 * truncates to, e.g. 256 for all-MiniLM-L6-v2 whose tokenizer says 512).
 */
function maxTokens(pipe, verified, declared) {
  const limits = [pipe.tokenizer.model_max_length, pipe.model.config?.max_position_embeddings, declared];
  const ok = limits.filter((n) => Number.isSafeInteger(n) && n > 0);
  if (ok.length === 0) throw invalid(`${verified.manifest.model}: neither tokenizer_config.json nor config.json says how many tokens the model reads`);
  return Math.min(...ok);
}

/** pinnedJSON parses a verified file, or is null when the manifest does not name it. */
function pinnedJSON(verified, file) {
  const data = verified.bytes.get(file);
  if (!data) return null;
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw invalid(`${file} is not JSON`);
  }
}

/**
 * modelKind is the kind of model a verified folder holds, from its
 * config.json (always pinned): architectures naming a class that ends in
 * ForSequenceClassification (BertForSequenceClassification, as the
 * ms-marco cross-encoders say) is a cross-encoder; anything else
 * (BertModel, none) a sentence encoder.
 */
export function modelKind(verified) {
  const cfg = pinnedJSON(verified, "config.json");
  const arch = Array.isArray(cfg?.architectures) ? cfg.architectures : [];
  return arch.some((a) => typeof a === "string" && a.endsWith("ForSequenceClassification")) ? KINDS.CROSS_ENCODER : KINDS.EMBEDDER;
}

/**
 * sentenceTransformers reads what a sentence-transformers model's own
 * files say, when the manifest pins them, before anything loads: the
 * pooling (1_Pooling/config.json) must be the mean over the tokens, the
 * only pooling this embedder does (else its vectors would be another
 * model's), and sentence_bert_config.json's max_seq_length is returned
 * (null without it) as the truncation length.
 */
function sentenceTransformers(verified) {
  const cfg = pinnedJSON(verified, "1_Pooling/config.json");
  if (cfg) {
    const modes = Object.keys(cfg).filter((k) => k.startsWith("pooling_mode_") && cfg[k] === true);
    if (modes.length !== 1 || modes[0] !== "pooling_mode_mean_tokens") {
      throw invalid(`${verified.manifest.model} pools with ${modes.join(" and ") || "no mode"} (1_Pooling/config.json); this embedder mean-pools only`);
    }
  }
  return pinnedJSON(verified, "sentence_bert_config.json")?.max_seq_length ?? null;
}

/**
 * oneLabel refuses a cross-encoder whose config.json gives more than one
 * logit a pair (num_labels, else id2label's entries, else Hugging Face's
 * default of 2): a second stage reads one raw relevance logit.
 */
function oneLabel(verified) {
  const cfg = pinnedJSON(verified, "config.json");
  const labels = Number.isSafeInteger(cfg?.num_labels) ? cfg.num_labels
    : cfg?.id2label && typeof cfg.id2label === "object" ? Object.keys(cfg.id2label).length : 2;
  if (labels !== 1) throw invalid(`${verified.manifest.model} gives ${labels} logits a pair (config.json's labels); a cross-encoder here gives one relevance logit`);
}

/**
 * specialLayout finds how many special tokens the tokenizer puts before
 * and after a text ([CLS] … [SEP]: 1 and 1), so a long text is truncated
 * as the Python tokenizers do it: the text's own pieces are cut and the
 * specials kept. (transformers.js 4.3.2's truncation cuts the finished
 * sequence instead, dropping the closing [SEP], which changes the vector
 * of every passage longer than the model's context.)
 */
function specialLayout(tokenizer) {
  const opts = { padding: false, truncation: false, return_tensor: false };
  const full = tokenizer(["a b"], { ...opts, add_special_tokens: true }).input_ids[0].map(Number);
  const bare = tokenizer(["a b"], { ...opts, add_special_tokens: false }).input_ids[0].map(Number);
  const head = find(full, bare, 0);
  if (head < 0) throw invalid("the tokenizer's special tokens do not wrap the text; cannot truncate it safely");
  return { head, tail: full.length - head - bare.length };
}

/**
 * pairTemplate is how the tokenizer lays out a (query, passage) pair, read
 * from its own encoding of ("a", "b"): the special tokens before the
 * query, between the two and after the passage ([CLS] q [SEP] p [SEP]),
 * each with its token type, and the token type of the query's and of the
 * passage's pieces (0 and 1 for BERT). A pair is then the two texts'
 * pieces, each tokenized alone, set in the template, as Python's
 * tokenizers' post-processor does; transformers.js 4.3.2 would drop an
 * empty passage from a pair instead ([CLS] q [SEP], not [CLS] q [SEP]
 * [SEP]).
 */
function pairTemplate(tokenizer) {
  const opts = { padding: false, truncation: false, return_tensor: false };
  const enc = tokenizer(["a"], { ...opts, text_pair: ["b"], add_special_tokens: true });
  const full = enc.input_ids[0].map(Number);
  const types = enc.token_type_ids ? enc.token_type_ids[0].map(Number) : null;
  const [a, b] = tokenizer(["a", "b"], { ...opts, add_special_tokens: false }).input_ids.map((r) => r.map(Number));
  const head = find(full, a, 0);
  const at = head < 0 ? -1 : find(full, b, head + a.length);
  if (at < 0) throw invalid("the tokenizer's pair encoding is not [specials] query [specials] passage [specials]; cannot set a pair out safely");
  const part = (from, to) => ({ ids: full.slice(from, to), types: types && types.slice(from, to) });
  return {
    head: part(0, head), mid: part(head + a.length, at), tail: part(at + b.length, full.length),
    queryType: types && types[head], passageType: types && types[at],
  };
}

/** find is where the ids part first occur in row at or after from, or -1. */
function find(row, part, from) {
  for (let i = from; i + part.length <= row.length; i++) {
    if (part.every((id, j) => row[i + j] === id)) return i;
  }
  return -1;
}

function onnxVersion(T) {
  const v = T.env.backends?.onnx?.versions ?? {};
  return v.node ?? v.common ?? v.web ?? "unknown";
}

/**
 * openModel checks modelDir's files against its ragagent-model.json
 * (rejecting with invalid_model before transformers.js is imported),
 * refuses a folder of another kind than want (when given) or a model the
 * kind's checks refuse, all before the runtime loads, then loads it on the
 * CPU in fp32. Resolves to what the kind's front (embedderOf, scorerOf)
 * builds on: the verified files, the kind, the runtime, the pipeline and
 * the context in tokens.
 */
async function openModel({ modelDir, weights = "fp32", threads, batch, loadRuntime = importRuntime } = {}, want) {
  if (threads !== undefined && !(Number.isSafeInteger(threads) && threads > 0)) throw new LabError(EMBED_CODES.INVALID_REQUEST, "threads must be a whole number of at least 1");
  if (batch !== undefined && !(Number.isSafeInteger(batch) && batch > 0)) throw new LabError(EMBED_CODES.INVALID_REQUEST, "batch must be a whole number of at least 1");
  const verified = await verifyModel({ modelDir, weights });
  const kind = modelKind(verified);
  if (want && kind !== want) {
    throw invalid(kind === KINDS.CROSS_ENCODER
      ? `${verified.manifest.model} is a cross-encoder (config.json's architectures say ForSequenceClassification): it scores (query, passage) pairs and makes no sentence vectors; open it with openScorer`
      : `${verified.manifest.model} is not a cross-encoder (config.json's architectures name no ForSequenceClassification): it makes sentence vectors and scores no pairs; open it with openEmbedder`);
  }
  const declared = kind === KINDS.EMBEDDER ? sentenceTransformers(verified) : null;
  if (kind === KINDS.CROSS_ENCODER) oneLabel(verified);
  const T = await loadRuntime();
  const turn = loading.then(() => loadPipeline(T, verified, threads, kind));
  loading = turn.catch(() => {});
  let pipe;
  try {
    pipe = await turn;
  } catch (err) {
    if (err instanceof LabError) throw err;
    throw invalid(`${verified.manifest.model}: transformers.js could not load it: ${err.message}`, { cause: err });
  }
  return { verified, kind, T, pipe, limit: maxTokens(pipe, verified, declared), threads };
}

/** record is the model record both kinds share (what serve's ready line carries), then the kind's own fields. */
function record({ verified, kind, T, limit, threads }, dimensions, own) {
  return {
    id: verified.manifest.model,
    revision: verified.manifest.revision,
    license: verified.manifest.license ?? null,
    kind,
    dimensions,
    max_tokens: limit,
    files: verified.files,
    weights: verified.weights.id,
    runtime: { "transformers.js": T.env.version, onnxruntime: onnxVersion(T), device: "cpu", dtype: "fp32", threads: threads ?? null },
    ...own,
  };
}

/**
 * inputsOf is the model's input tensors for rows of token ids (and token
 * types), padded to the longest with padId and masked.
 */
function inputsOf(T, rows, padId) {
  const n = rows.length;
  const len = Math.max(...rows.map((r) => r.ids.length));
  const ids = new BigInt64Array(n * len).fill(BigInt(padId));
  const mask = new BigInt64Array(n * len);
  const types = new BigInt64Array(n * len);
  rows.forEach((r, i) => {
    r.ids.forEach((id, j) => {
      ids[i * len + j] = BigInt(id);
      mask[i * len + j] = 1n;
      if (r.types) types[i * len + j] = BigInt(r.types[j]);
    });
  });
  const inputs = {
    input_ids: new T.Tensor("int64", ids, [n, len]),
    attention_mask: new T.Tensor("int64", mask, [n, len]),
  };
  if (rows[0].types) inputs.token_type_ids = new T.Tensor("int64", types, [n, len]);
  return inputs;
}

/**
 * inBatches runs forward over rows `batch` at a time in order of length
 * (stable), so a batch pads little, and puts each result back in its
 * row's place.
 */
async function inBatches(rows, batch, forward) {
  const out = new Array(rows.length);
  const order = rows.map((_, i) => i).sort((a, b) => rows[a].ids.length - rows[b].ids.length || a - b);
  for (let i = 0; i < order.length; i += batch) {
    const part = order.slice(i, i + batch);
    (await forward(part.map((j) => rows[j]))).forEach((v, k) => { out[part[k]] = v; });
  }
  return out;
}

/**
 * lane runs calls one at a time, in order, refusing them (code) once
 * closed; close waits for the calls before it, then disposes.
 */
function lane(code, what, dispose) {
  let closed = false;
  let queue = Promise.resolve();
  return {
    run(fn) {
      const result = queue.then(() => {
        if (closed) throw new LabError(code, `the ${what} was closed`);
        return fn();
      });
      queue = result.catch(() => {});
      return result;
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      await dispose();
    },
  };
}

/**
 * openEmbedder checks modelDir's files against its ragagent-model.json
 * (rejecting with invalid_model before transformers.js is imported; so is
 * a cross-encoder's folder), then loads the model on the CPU in fp32 and
 * embeds one text to learn its dimensions. Options: weights (the
 * manifest's weights id, default "fp32"), threads (ONNX Runtime's
 * intra-op threads; default its own), batch (texts per forward pass,
 * default BATCH) and loadRuntime (returns the transformers.js module;
 * default importRuntime, for tests).
 *
 * Resolves to {model, embed(texts) -> Promise<Float32Array[]>,
 * tokenize(texts) -> number[][] (the token ids embed feeds, truncated),
 * close()}.
 */
export async function openEmbedder(options = {}) {
  return embedderOf(await openModel(options, KINDS.EMBEDDER), options);
}

/** embedderOf is openEmbedder's embedder over an opened sentence encoder. */
async function embedderOf(opened, options) {
  const { T, pipe, limit, verified } = opened;
  const batch = options.batch ?? BATCH;
  const tokenizer = pipe.tokenizer;
  const { head, tail } = specialLayout(tokenizer);
  if (limit <= head + tail) throw invalid(`${verified.manifest.model}: a context of ${limit} tokens leaves no room for text`);
  const padId = Number.isSafeInteger(tokenizer.pad_token_id) ? tokenizer.pad_token_id : 0;

  /** encode tokenizes texts, each truncated to limit tokens with its specials kept. */
  function encode(texts) {
    const enc = tokenizer(texts, { padding: false, truncation: false, add_special_tokens: true, return_tensor: false });
    return enc.input_ids.map((row, i) => {
      let ids = row.map(Number);
      let types = enc.token_type_ids ? enc.token_type_ids[i].map(Number) : null;
      if (ids.length > limit) {
        const keep = (a) => [...a.slice(0, limit - tail), ...a.slice(a.length - tail)];
        ids = keep(ids);
        types = types && keep(types);
      }
      return { ids, types };
    });
  }

  /** forward embeds one batch of encoded rows: padded to its longest, one pass, mean-pooled and normalised. */
  async function forward(rows) {
    const n = rows.length;
    const inputs = inputsOf(T, rows, padId);
    const out = await pipe.model(inputs);
    const hidden = out.last_hidden_state ?? out.token_embeddings;
    if (!hidden || hidden.dims.length !== 3 || hidden.dims[0] !== n) {
      throw new LabError(EMBED_CODES.EMBED_FAILED, `the model gave no last_hidden_state of shape [${n}, ${inputs.input_ids.dims[1]}, D]: not a sentence encoder`);
    }
    const pooled = T.mean_pooling(hidden, inputs.attention_mask).normalize(2, -1);
    const d = pooled.dims[1];
    const data = Float32Array.from(pooled.data);
    return Array.from({ length: n }, (_, i) => data.slice(i * d, (i + 1) * d));
  }

  const calls = lane(EMBED_CODES.CLOSED, "embedder", async () => pipe.dispose?.());
  const dimensions = (await forward(encode([""])))[0].length;

  /**
   * embed returns one unit-length Float32Array per text, in order. The
   * texts are tokenized together, then go through the model `batch` at a
   * time in order of length (stable), so a batch pads little; each vector
   * is put back in its text's place.
   */
  function embed(texts) {
    return calls.run(async () => {
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
        throw new LabError(EMBED_CODES.INVALID_REQUEST, "embed takes a list of strings");
      }
      if (texts.length === 0) return [];
      try {
        return await inBatches(encode(texts), batch, forward);
      } catch (err) {
        if (err instanceof LabError) throw err;
        throw new LabError(EMBED_CODES.EMBED_FAILED, `embedding failed: ${err.message}`, { cause: err });
      }
    });
  }

  const model = record(opened, dimensions, { pooling: "mean", normalize: true });
  verified.bytes.clear();
  return {
    model,
    embed,
    tokenize: (texts) => (texts.length === 0 ? [] : encode(texts).map((r) => r.ids)),
    close: () => calls.close(),
  };
}

/**
 * openScorer opens a cross-encoder folder as openEmbedder opens a
 * sentence encoder's (the same checks before the runtime loads; a
 * sentence encoder's folder, or a cross-encoder giving more than one logit
 * a pair, is refused with invalid_model), for a retrieval configuration's
 * second stage. Options: weights, threads and loadRuntime as
 * openEmbedder's; batch is pairs per forward pass (default SCORE_BATCH).
 *
 * Resolves to {model, score(query, texts) -> Promise<number[]>,
 * tokenize(query, texts) -> number[][] (the pair token ids score feeds),
 * close()}. score gives one raw logit per (query, text) pair, in the
 * texts' order: no sigmoid, the number the model's one output gives (as
 * the reranking lab's scorer, site/rerank/crossencoder-scorer.mjs, and
 * the seed take it).
 *
 * Truncation: a pair longer than the model's context (model.max_tokens)
 * is TRUNCATED here, only the passage's side and from its end, the specials
 * kept ("only_second", as Python's tokenizers do it; for a query shorter
 * than half the context it is also what sentence-transformers'
 * CrossEncoder's longest_first does), so a long passage is scored on its
 * beginning and a ranking goes on. The reranking lab refuses such a pair
 * instead (pair_exceeds_model_context, as the seed does) and stays so:
 * its logits are the published ones' replay. A query that leaves no room
 * for a passage token is refused (query_exceeds_model_context).
 */
export async function openScorer(options = {}) {
  return scorerOf(await openModel(options, KINDS.CROSS_ENCODER), options);
}

/**
 * openAny opens modelDir as the kind its config.json says (modelKind):
 * openEmbedder's embedder or openScorer's scorer, model.kind saying which.
 * serve runs it.
 */
export async function openAny(options = {}) {
  const opened = await openModel(options);
  return opened.kind === KINDS.CROSS_ENCODER ? scorerOf(opened, options) : embedderOf(opened, options);
}

/** scorerOf is openScorer's scorer over an opened cross-encoder. */
async function scorerOf(opened, options) {
  const { T, pipe, limit, verified } = opened;
  const batch = options.batch ?? SCORE_BATCH;
  const tokenizer = pipe.tokenizer;
  const { head, mid, tail, queryType, passageType } = pairTemplate(tokenizer);
  const specials = head.ids.length + mid.ids.length + tail.ids.length;
  const padId = Number.isSafeInteger(tokenizer.pad_token_id) ? tokenizer.pad_token_id : 0;
  const opts = { padding: false, truncation: false, add_special_tokens: false, return_tensor: false };

  /**
   * encode sets each (query, text) pair in the tokenizer's pair template,
   * the passage's own pieces cut from their end until the pair fits in
   * limit tokens (the specials after it kept).
   */
  function encode(query, texts) {
    const q = tokenizer([query], opts).input_ids[0].map(Number);
    const room = limit - specials - q.length;
    if (room <= 0) {
      throw new LabError(EMBED_CODES.QUERY_TOO_LONG, `the query has ${q.length} tokens; beside the pair's ${specials} special tokens that leaves no room for a passage in the model's ${limit}`);
    }
    const same = (n, type) => (type === null ? [] : new Array(n).fill(type));
    const passages = tokenizer(texts, opts).input_ids;
    return passages.map((row) => {
      const p = row.slice(0, room).map(Number);
      const ids = [...head.ids, ...q, ...mid.ids, ...p, ...tail.ids];
      const types = queryType === null ? null : [...head.types, ...same(q.length, queryType), ...mid.types, ...same(p.length, passageType), ...tail.types];
      return { ids, types };
    });
  }

  /** forward scores one batch of encoded pairs: padded to its longest, one pass, the raw logits. */
  async function forward(rows) {
    const n = rows.length;
    const { logits } = await pipe.model(inputsOf(T, rows, padId));
    if (!logits || logits.dims.length !== 2 || logits.dims[0] !== n || logits.dims[1] !== 1) {
      throw new LabError(EMBED_CODES.SCORE_FAILED, `the model gave logits of shape [${logits?.dims ?? ""}], want [${n}, 1]: not a one-label cross-encoder`);
    }
    return Array.from(logits.data, Number);
  }

  const calls = lane(EMBED_CODES.SCORER_CLOSED, "scorer", async () => pipe.dispose?.());

  /**
   * score returns one raw logit per (query, text) pair, in the texts'
   * order; pairs go through the model `batch` at a time in order of
   * length (stable).
   */
  function score(query, texts) {
    return calls.run(async () => {
      if (typeof query !== "string") throw new LabError(EMBED_CODES.INVALID_REQUEST, "score takes a query (a string) and a list of strings");
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
        throw new LabError(EMBED_CODES.INVALID_REQUEST, "score takes a query and a list of strings");
      }
      if (texts.length === 0) return [];
      let logits;
      try {
        logits = await inBatches(encode(query, texts), batch, forward);
      } catch (err) {
        if (err instanceof LabError) throw err;
        throw new LabError(EMBED_CODES.SCORE_FAILED, `scoring failed: ${err.message}`, { cause: err });
      }
      const bad = logits.findIndex((x) => !Number.isFinite(x));
      if (bad >= 0) throw new LabError(EMBED_CODES.SCORE_FAILED, `the model's logit for pair ${bad + 1} is ${logits[bad]}`);
      return logits;
    });
  }

  // dimensions 1: one logit a pair (the Go side's vectors.Model record).
  const model = record(opened, 1, { truncation: "only_second", logit: "raw" });
  verified.bytes.clear();
  return {
    model,
    score,
    tokenize: (query, texts) => (texts.length === 0 ? [] : encode(query, texts).map((r) => r.ids)),
    close: () => calls.close(),
  };
}

/** vectorsBase64 is the vectors' float32 little-endian bytes, row after row, in base64. */
export function vectorsBase64(vectors) {
  const d = vectors[0]?.length ?? 0;
  const all = new Float32Array(vectors.length * d);
  vectors.forEach((v, i) => all.set(v, i * d));
  const buf = Buffer.from(all.buffer, all.byteOffset, all.byteLength);
  if (os.endianness() === "BE") buf.swap32(); // the protocol is little-endian whatever the host
  return buf.toString("base64");
}

const USAGE = "usage: node lab/embed.mjs serve --model DIR [--weights ID] [--threads N]";

function parseArgs(argv) {
  if (argv[0] !== "serve") throw new LabError(EMBED_CODES.INVALID_REQUEST, USAGE);
  const opts = {};
  for (let i = 1; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined || !["--model", "--weights", "--threads"].includes(flag)) throw new LabError(EMBED_CODES.INVALID_REQUEST, USAGE);
    if (flag === "--model") opts.modelDir = value;
    if (flag === "--weights") opts.weights = value;
    if (flag === "--threads") opts.threads = Number(value);
  }
  if (!opts.modelDir) throw new LabError(EMBED_CODES.INVALID_REQUEST, USAGE);
  return opts;
}

const errorOf = (err) => ({ code: typeof err?.code === "string" && !err.code.startsWith("ERR_") ? err.code : EMBED_CODES.EMBED_FAILED, message: String(err?.message ?? err) });

/**
 * serve speaks the JSON-lines protocol on stdin and stdout (see the top of
 * this file): a ready line or an error line, then one answer per request
 * line in order (a blank line is skipped, unanswered): a request with a
 * query is scored (a cross-encoder's folder), one without embedded (a
 * sentence encoder's); a request for the other kind, like a malformed
 * one, is answered with an error line and the server goes on. The next
 * request is handled once the last answer's line has drained to stdout.
 * Resolves to the exit code: 0 at stdin's end, 1 when the model did not
 * open.
 */
export async function serve(argv) {
  const send = (value) => new Promise((resolve) => (process.stdout.write(`${JSON.stringify(value)}\n`) ? resolve() : process.stdout.once("drain", resolve)));
  let model;
  try {
    model = await openAny(parseArgs(argv));
  } catch (err) {
    await send({ error: errorOf(err) });
    return 1;
  }
  const scores = model.model.kind === KINDS.CROSS_ENCODER;
  const { id: name } = model.model;
  await send({ ready: true, model: model.model });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let id = null;
    try {
      let req;
      try {
        req = JSON.parse(line);
      } catch (err) {
        throw new LabError(EMBED_CODES.INVALID_REQUEST, `a request is one JSON object a line: ${err.message}`);
      }
      if (req === null || typeof req !== "object" || Array.isArray(req)) throw new LabError(EMBED_CODES.INVALID_REQUEST, 'a request is {"id": N, "texts": [...]} (or {"id": N, "query": Q, "texts": [...]} to a cross-encoder)');
      if (Number.isSafeInteger(req.id) || typeof req.id === "string") id = req.id;
      if (id === null) throw new LabError(EMBED_CODES.INVALID_REQUEST, "a request needs an id (a whole number or a string)");
      const asksScores = req.query !== undefined;
      if (asksScores !== scores) {
        throw new LabError(EMBED_CODES.WRONG_KIND, scores
          ? `${name} is a cross-encoder: it scores {"query", "texts"} pairs and embeds nothing (a sentence encoder's folder embeds)`
          : `${name} is a sentence encoder: it embeds texts and scores no pairs (a request with a query needs a cross-encoder's folder)`);
      }
      if (scores) {
        await send({ id, scores: await model.score(req.query, req.texts) });
      } else {
        const vectors = await model.embed(req.texts);
        await send({ id, dimensions: model.model.dimensions, f32: vectorsBase64(vectors) });
      }
    } catch (err) {
      await send({ id, error: errorOf(err) });
    }
  }
  await model.close();
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // stdout is the protocol's: whatever a library would print there goes to stderr.
  console.log = console.info = console.debug = console.error;
  const code = await serve(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`embed: ${err?.stack ?? err}\n`);
    return 1;
  });
  process.exitCode = code;
}
