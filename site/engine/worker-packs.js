// worker-packs.js is the worker's side of the corpus picker (a classic
// script worker.js imports): it fetches a corpus pack only when someone
// chooses it, counting its bytes, keeps the verified bytes in the
// browser's Cache Storage for the next visit, and hands them to the
// engine, which checks their size and sha256 (with the platform's
// SubtleCrypto) against the manifest before opening them. It also keeps a
// person's own documents in IndexedDB (they never leave the browser):
// the files themselves, so a later drop rebuilds the pack with them, and
// the pack built from them, so a visit reopens it without rebuilding.
// Each function reports progress through event({stage, ...}).
"use strict";

/** PACK_CACHE names the Cache Storage of verified pack files. */
const PACK_CACHE = "ragagent-packs-1";
const DOCS_DB = "ragagent-documents";
const DOCS_STORE = "pack";
const DOCS_KEY = "documents";
/** PROGRESS_STEP is how many bytes pass between two download reports. */
const PROGRESS_STEP = 256 * 1024;

/** packLoad loads the shipped pack id: from Cache Storage when its bytes
 * are there (for this manifest's sha256), else from the site. A cached
 * file the engine refuses is dropped and fetched again, once. */
async function packLoad(api, id, event) {
  const t0 = performance.now();
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(id)) throw new Error(`no corpus pack ${JSON.stringify(id)}`);
  const res = await fetch(new URL(`packs/${id}/manifest.json`, SITE), { cache: "no-cache" });
  if (!res.ok) throw new Error(`packs/${id}/manifest.json: HTTP ${res.status}`);
  const manifestText = await res.text();
  const m = JSON.parse(manifestText);
  const file = `packs/${id}/${m.passages_file}`;
  const key = new URL(`${file}?sha256=${m.passages_sha256}`, SITE).href;
  const cache = await self.caches?.open(PACK_CACHE).catch(() => null);
  let bytes = null;
  let from = "network";
  const hit = cache && await cache.match(key);
  if (hit) {
    event({ stage: "cache", loaded: m.passages_bytes, total: m.passages_bytes });
    bytes = new Uint8Array(await hit.arrayBuffer());
    from = "cache";
  } else {
    bytes = await fetchPassages(file, m, event);
  }
  const read = performance.now();
  event({ stage: "open", loaded: bytes.byteLength, total: m.passages_bytes });
  let info;
  try {
    info = await api.loadPack(manifestText, bytes);
  } catch (err) {
    if (from !== "cache") throw err;
    await cache.delete(key);
    return packLoad(api, id, event);
  }
  const opened = performance.now();
  let cached = from === "cache";
  if (!cached && cache) {
    try {
      for (const old of await cache.keys()) if (old.url.split("?")[0] === key.split("?")[0]) await cache.delete(old);
      await cache.put(key, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } }));
      cached = true;
    } catch {
      cached = false; // storage full or refused: the next visit fetches again
    }
  }
  return { info, from, cached, timings: { read_ms: read - t0, open_ms: opened - read, total_ms: opened - t0 } };
}

/** fetchPassages fetches a pack's passages file, counting the bytes that
 * arrive, and gunzips a .gz file as it streams in, into a buffer of the
 * manifest's size (a longer file is refused). */
async function fetchPassages(file, m, event) {
  const gz = file.endsWith(".gz");
  const total = gz ? m.compressed_bytes : m.passages_bytes;
  event({ stage: "download", loaded: 0, total });
  const res = await fetch(new URL(file, SITE));
  if (!res.ok) throw new Error(`${file}: HTTP ${res.status}`);
  let loaded = 0;
  let reported = 0;
  let body = res.body.pipeThrough(new TransformStream({
    transform(chunk, out) {
      loaded += chunk.byteLength;
      if (loaded - reported >= PROGRESS_STEP || loaded === total) {
        reported = loaded;
        event({ stage: "download", loaded, total });
      }
      out.enqueue(chunk);
    },
  }));
  if (gz) body = body.pipeThrough(new DecompressionStream("gzip"));
  const out = new Uint8Array(m.passages_bytes);
  let n = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (n + value.byteLength > out.byteLength) {
      await reader.cancel();
      throw new Error(`${file} holds more than the manifest's ${m.passages_bytes} bytes`);
    }
    out.set(value, n);
    n += value.byteLength;
  }
  event({ stage: "download", loaded, total });
  return n === out.byteLength ? out : out.subarray(0, n);
}

/** docsTx runs fn(store) in one transaction and resolves with its request's result. */
async function docsTx(mode, fn) {
  const db = await openStore(DOCS_DB, DOCS_STORE);
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(DOCS_STORE, mode);
      const req = fn(tx.objectStore(DOCS_STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = tx.onabort = () => reject(tx.error || req.error);
    });
  } finally {
    db.close();
  }
}

/** docsSummary is what is kept: the files' paths and sizes, and the pack's passages. */
function docsSummary(record) {
  if (!record) return null;
  return { files: record.files.map((f) => ({ path: f.path, bytes: f.bytes.byteLength })), passages: record.passages_count, updated: record.updated };
}

/** docsStored says what documents this browser keeps, without loading them. */
async function docsStored() {
  return docsSummary(await docsTx("readonly", (s) => s.get(DOCS_KEY)));
}

/** docsLoad reopens the kept documents pack in the engine. */
async function docsLoad(api, event) {
  const record = await docsTx("readonly", (s) => s.get(DOCS_KEY));
  if (!record) return null;
  event({ stage: "open", loaded: record.passages.length, total: record.passages.length });
  const info = await api.loadPack(record.manifest, record.passages);
  return { info, stored: docsSummary(record) };
}

/**
 * docsAdd adds files ([{path, file}], File objects) to the kept ones (a
 * file of the same path replaces the kept one) and rebuilds the pack from
 * all of them. A file over the engine's size bound is refused before it
 * is read; the builder leaves out what it cannot read, each with its
 * reason. Only when the build succeeds are the files and the pack kept;
 * otherwise what was kept before stays as it was.
 */
async function docsAdd(api, files, event) {
  const caps = (await api.load()).constants.documents;
  const record = await docsTx("readonly", (s) => s.get(DOCS_KEY));
  const byPath = new Map((record?.files || []).map((f) => [f.path, f]));
  const refused = [];
  let done = 0;
  for (const { path, file } of files) {
    done++;
    if (file.size > caps.file_bytes) {
      refused.push({ path, reason: `larger than ${caps.file_bytes} bytes` });
    } else {
      byPath.set(path, { path, bytes: await file.arrayBuffer() });
    }
    event({ stage: "read", done, total: files.length });
  }
  const all = [...byPath.values()];
  const total = all.reduce((n, f) => n + f.bytes.byteLength, 0);
  if (all.length > caps.files) throw new Error(`more files than this browser keeps (${all.length.toLocaleString("en")} in all; at most ${caps.files.toLocaleString("en")})`);
  if (total > caps.total_bytes) throw new Error(`${total} bytes in all; this browser keeps at most ${caps.total_bytes}`);
  if (!all.length) return { info: null, skipped: refused, stored: docsSummary(record) };
  const res = await api.buildPack(all.map((f) => ({ path: f.path, bytes: new Uint8Array(f.bytes) })),
    (d, t) => event({ stage: "index", done: d, total: t }));
  const skipped = [...refused, ...res.skipped];
  if (!res.info) return { info: null, skipped, stored: docsSummary(record) };
  const left = new Set(res.skipped.map((s) => s.path));
  const kept = { files: all.filter((f) => !left.has(f.path)), manifest: res.manifest, passages: res.passages,
    passages_count: res.info.manifest.passages, updated: new Date().toISOString() };
  await docsTx("readwrite", (s) => s.put(kept, DOCS_KEY));
  return { info: res.info, skipped, stored: docsSummary(kept) };
}

/** docsRemove forgets the kept documents, here and in the engine. */
async function docsRemove(api) {
  await docsTx("readwrite", (s) => s.delete(DOCS_KEY));
  await api.removePack("documents").catch(() => {});
  return null;
}
