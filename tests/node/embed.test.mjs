// The vector branch's embedder (lab/embed.mjs) on the tests' tiny model
// (tests/fixtures/tiny-embedder, scripts/tiny-embedder.py), no network:
// transformers.js gives PyTorch's token ids exactly and its mean-pooled,
// L2-normalised vectors within 1e-5 (see TOLERANCE); a changed, missing
// or unpinned file is refused with invalid_model before transformers.js is
// imported; `node lab/embed.mjs serve` answers JSON lines in order, a
// malformed line with an error line, and exits 0 at stdin's end.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { copyModel, SERVE, startServer } from "./models.mjs";
import { openEmbedder, importRuntime, vectorsBase64, EMBED_CODES } from "../../lab/embed.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TINY = path.join(root, "tests/fixtures/tiny-embedder");
const EXPECTED = JSON.parse(readFileSync(path.join(TINY, "expected.json"), "utf8"));
const MANIFEST = JSON.parse(readFileSync(path.join(TINY, "ragagent-model.json"), "utf8"));
const TEXTS = EXPECTED.texts.map((t) => t.text);

// TOLERANCE bounds |transformers.js - PyTorch| per component. Both compute
// in float32 (epsilon 1.2e-7) on unit vectors whose components are below
// 1; ONNX Runtime orders its sums differently, and padding a text to its
// batch's longest changes its attention sums by rounding only. The largest
// difference seen is 1.5e-7 (batched or alone); 1e-5 leaves room for
// another CPU's kernels and is still far below what a real mistake makes
// (dropping the closing [SEP] of the truncated text moves it by 4e-3).
const TOLERANCE = 1e-5;

const maxDiff = (got, want) => Math.max(...want.map((x, j) => Math.abs(x - got[j])));
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));


/** addPinned writes file into a model folder and pins it in the folder's manifest. */
function addPinned(dir, file, value) {
  const text = JSON.stringify(value);
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), text);
  const m = JSON.parse(readFileSync(path.join(dir, "ragagent-model.json"), "utf8"));
  m.files.push({ path: file, sha256: createHash("sha256").update(text).digest("hex"), bytes: Buffer.byteLength(text) });
  writeFileSync(path.join(dir, "ragagent-model.json"), JSON.stringify(m));
}

test("the tiny model's vectors and token ids from transformers.js are PyTorch's", async () => {
  const e = await openEmbedder({ modelDir: TINY, threads: 1 });
  try {
    assert.equal(e.model.id, "ragagent-test/tiny-embedder");
    assert.equal(e.model.revision, MANIFEST.revision);
    assert.equal(e.model.dimensions, EXPECTED.dimensions);
    assert.equal(e.model.max_tokens, EXPECTED.max_tokens);
    assert.equal(e.model.pooling, "mean");
    assert.equal(e.model.normalize, true);
    assert.deepEqual(e.model.files, [...MANIFEST.files, MANIFEST.weights[0]].map(({ path: p, sha256, bytes }) => ({ path: p, sha256, bytes })));
    assert.deepEqual(e.tokenize(TEXTS), EXPECTED.texts.map((t) => t.input_ids), "token ids, the long text truncated with its [SEP] kept");

    // All ten in one batch (padded to the truncated text's 128 tokens), then
    // three a pass through a second embedder, so batches split the list.
    const batched = await e.embed(TEXTS);
    const small = await openEmbedder({ modelDir: TINY, threads: 1, batch: 3 });
    const split = await small.embed(TEXTS);
    await small.close();
    for (const [name, vectors] of [["one batch", batched], ["batches of 3", split]]) {
      assert.equal(vectors.length, TEXTS.length, name);
      EXPECTED.texts.forEach((t, i) => {
        assert.ok(vectors[i] instanceof Float32Array, `${name}: a Float32Array`);
        assert.equal(vectors[i].length, EXPECTED.dimensions, `${name}: dimensions of text ${i}`);
        assert.ok(maxDiff(vectors[i], t.vector) <= TOLERANCE, `${name}: text ${i} (${JSON.stringify(t.text.slice(0, 30))}) differs by ${maxDiff(vectors[i], t.vector)}`);
        assert.ok(Math.abs(norm(vectors[i]) - 1) < 1e-6, `${name}: text ${i} has length ${norm(vectors[i])}`);
      });
    }
    // The vectors differ from text to text (a model that gave one vector would pass the checks above only by luck).
    assert.ok(maxDiff(batched[0], Array.from(batched[1])) > 0.1);
    assert.deepEqual(await e.embed([]), []);
  } finally {
    await e.close();
  }
});

test("a pinned sentence_bert_config.json's max_seq_length truncates, the closing [SEP] kept; a mean pooling config is accepted", async () => {
  const dir = copyModel(TINY, (d) => {
    addPinned(d, "sentence_bert_config.json", { max_seq_length: 16, do_lower_case: false });
    addPinned(d, "1_Pooling/config.json", { word_embedding_dimension: 32, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false });
  });
  try {
    const e = await openEmbedder({ modelDir: dir, threads: 1 });
    assert.equal(e.model.max_tokens, 16);
    assert.equal(e.model.files.length, 6);
    const long = EXPECTED.texts.at(-1).input_ids;
    assert.deepEqual(e.tokenize([EXPECTED.texts.at(-1).text]), [[...long.slice(0, 15), long.at(-1)]]);
    const [short] = await e.embed([EXPECTED.texts[4].text]); // 13 tokens: not truncated, PyTorch's vector
    assert.ok(maxDiff(short, EXPECTED.texts[4].vector) <= TOLERANCE);
    await e.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the model record names the pinned runtime", async () => {
  const T = await importRuntime();
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8"));
  const e = await openEmbedder({ modelDir: TINY, threads: 2 });
  await e.close();
  assert.equal(e.model.runtime["transformers.js"], lock.packages["node_modules/@huggingface/transformers"].version);
  assert.equal(e.model.runtime["transformers.js"], T.env.version);
  assert.equal(e.model.runtime.onnxruntime, lock.packages["node_modules/onnxruntime-node"].version);
  assert.deepEqual({ ...e.model.runtime, "transformers.js": null, onnxruntime: null }, { "transformers.js": null, onnxruntime: null, device: "cpu", dtype: "fp32", threads: 2 });
});

test("embed refuses what is not a list of strings, and embedding after close", async () => {
  const e = await openEmbedder({ modelDir: TINY, threads: 1 });
  for (const bad of ["one text", [1], [null], ["a", {}], undefined]) {
    await assert.rejects(e.embed(bad), { code: EMBED_CODES.INVALID_REQUEST }, JSON.stringify(bad));
  }
  assert.equal((await e.embed(["still works"])).length, 1);
  await e.close();
  await assert.rejects(e.embed(["x"]), { code: EMBED_CODES.CLOSED });
});

test("a model that differs from its manifest is refused before transformers.js is imported", async (t) => {
  const sha = (f) => [...MANIFEST.files, ...MANIFEST.weights].find((x) => x.path === f).sha256;
  const editManifest = (dir, edit) => {
    const m = JSON.parse(readFileSync(path.join(dir, "ragagent-model.json"), "utf8"));
    edit(m);
    writeFileSync(path.join(dir, "ragagent-model.json"), JSON.stringify(m));
  };
  const cases = [
    {
      name: "one byte of the weights changed (same size)",
      change: (dir) => {
        const f = path.join(dir, "onnx/model.onnx");
        const b = readFileSync(f);
        b[b.length - 10] ^= 0xff;
        writeFileSync(f, b);
      },
      message: new RegExp(`^onnx/model\\.onnx was refused: its sha256 is [0-9a-f]{64} \\(258297 bytes\\), the manifest pins ${sha("onnx/model.onnx")} \\(258297 bytes\\)\\. Nothing was loaded\\.$`),
      path: "onnx/model.onnx",
    },
    {
      name: "the tokenizer grew",
      change: (dir) => writeFileSync(path.join(dir, "tokenizer.json"), readFileSync(path.join(dir, "tokenizer.json"), "utf8") + " "),
      message: new RegExp(`^tokenizer\\.json was refused: its sha256 is [0-9a-f]{64} \\(\\d+ bytes\\), the manifest pins ${sha("tokenizer.json")}`),
      path: "tokenizer.json",
    },
    { name: "a file missing", change: (dir) => rmSync(path.join(dir, "config.json")), message: /^config\.json was refused: it is missing from / },
    { name: "no manifest", change: (dir) => rmSync(path.join(dir, "ragagent-model.json")), message: /ragagent-model\.json is missing/ },
    { name: "manifest not JSON", change: (dir) => writeFileSync(path.join(dir, "ragagent-model.json"), "{"), message: /not JSON/ },
    { name: "another format", change: (dir) => editManifest(dir, (m) => { m.format = "ragagent-model/2"; }), message: /format is "ragagent-model\/2"/ },
    { name: "a file without a pin", change: (dir) => editManifest(dir, (m) => { m.files[1].sha256 = null; }), message: /tokenizer\.json has no sha256 pin/ },
    { name: "an approximate size", change: (dir) => editManifest(dir, (m) => { m.weights[0].approximate = true; }), message: /onnx\/model\.onnx needs its exact size/ },
    { name: "a path outside the folder", change: (dir) => editManifest(dir, (m) => { m.files[0].path = "../config.json"; }), message: /"\.\.\/config\.json" is not a path inside the model folder/ },
    { name: "no such weights", change: (dir) => editManifest(dir, (m) => { m.weights[0].id = "int8"; }), message: /no weights "fp32" \(it has "int8"\)/ },
    {
      name: "a sentence-transformers pooling other than the mean",
      change: (dir) => addPinned(dir, "1_Pooling/config.json", { word_embedding_dimension: 32, pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }),
      message: /^ragagent-test\/tiny-embedder pools with pooling_mode_cls_token \(1_Pooling\/config\.json\); this embedder mean-pools only$/,
    },
    { name: "the tokenizer not listed", change: (dir) => editManifest(dir, (m) => { m.files = m.files.filter((f) => f.path !== "tokenizer.json"); }), message: /tokenizer\.json is not among the files/ },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const dir = copyModel(TINY, c.change);
      let imported = 0;
      try {
        await assert.rejects(openEmbedder({ modelDir: dir, loadRuntime: async () => { imported++; return importRuntime(); } }), (err) => {
          assert.equal(err.code, EMBED_CODES.INVALID_MODEL);
          assert.match(err.message, c.message);
          if (c.path) {
            assert.equal(err.path, c.path);
            assert.equal(err.expected_sha256, sha(c.path));
            assert.match(err.actual_sha256, /^[0-9a-f]{64}$/);
            assert.notEqual(err.actual_sha256, err.expected_sha256);
          }
          return true;
        });
        assert.equal(imported, 0, "transformers.js was not imported");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
  await t.test("the untouched copy opens (the refusals above are the changes')", async () => {
    const dir = copyModel(TINY, );
    let imported = 0;
    try {
      const e = await openEmbedder({ modelDir: dir, threads: 1, loadRuntime: async () => { imported++; return importRuntime(); } });
      await e.close();
      assert.equal(imported, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});


/** decode turns a response's base64 back into vectors of d components. */
function decode(f32, d) {
  const b = Buffer.from(f32, "base64");
  assert.equal(b.length % (4 * d), 0);
  return Array.from({ length: b.length / (4 * d) }, (_, i) => Array.from({ length: d }, (_, j) => b.readFloatLE((i * d + j) * 4)));
}

test("serve: a ready line, two requests answered in order, stdin's end exits 0", SERVE, async () => {
  const s = startServer(["--model", TINY, "--threads", "1"]);
  const ready = await s.next();
  assert.equal(ready.ready, true);
  assert.equal(ready.model.id, "ragagent-test/tiny-embedder");
  assert.equal(ready.model.dimensions, EXPECTED.dimensions);
  assert.equal(ready.model.max_tokens, EXPECTED.max_tokens);
  assert.equal(ready.model.files.length, 4);
  s.send({ id: 1, texts: TEXTS.slice(0, 3) });
  s.send({ id: 2, texts: TEXTS.slice(3) });
  const a = await s.next();
  const b = await s.next();
  assert.deepEqual([a.id, b.id], [1, 2]);
  assert.deepEqual([a.dimensions, b.dimensions], [EXPECTED.dimensions, EXPECTED.dimensions]);
  const vectors = [...decode(a.f32, a.dimensions), ...decode(b.f32, b.dimensions)];
  assert.equal(vectors.length, TEXTS.length);
  vectors.forEach((v, i) => assert.ok(maxDiff(v, EXPECTED.texts[i].vector) <= TOLERANCE, `text ${i}`));
  s.child.stdin.end();
  assert.deepEqual(await s.rest(), [], "nothing after the answers");
  assert.equal(await s.exited, 0, s.stderr());
});

test("serve: a malformed request gets an error line and the server keeps going", SERVE, async () => {
  const s = startServer(["--model", TINY, "--threads", "1"]);
  assert.equal((await s.next()).ready, true);
  s.send("this is not JSON");
  s.send({ id: 7, texts: ["fine", 42] });
  s.send({ texts: ["no id"] });
  s.send([1, 2]);
  s.send({ id: 8, texts: "not a list" });
  s.send({ id: 9, texts: [TEXTS[0]] });
  s.send({ id: "ten", texts: [] });
  const got = [];
  for (let i = 0; i < 7; i++) got.push(await s.next());
  assert.deepEqual(got.slice(0, 5).map((r) => [r.id, r.error?.code]), [
    [null, "invalid_request"], [7, "invalid_request"], [null, "invalid_request"], [null, "invalid_request"], [8, "invalid_request"],
  ]);
  assert.match(got[0].error.message, /one JSON object a line/);
  assert.equal(got[5].id, 9);
  assert.ok(maxDiff(decode(got[5].f32, got[5].dimensions)[0], EXPECTED.texts[0].vector) <= TOLERANCE);
  assert.deepEqual(got[6], { id: "ten", dimensions: EXPECTED.dimensions, f32: "" });
  s.child.stdin.end();
  assert.equal(await s.exited, 0, s.stderr());
});

test("serve: a changed model is an error line and exit 1", SERVE, async () => {
  const dir = copyModel(TINY, (d) => writeFileSync(path.join(d, "config.json"), "{}"));
  try {
    const s = startServer(["--model", dir]);
    const line = await s.next();
    assert.equal(line.error.code, "invalid_model");
    assert.match(line.error.message, /^config\.json was refused: its sha256 is /);
    assert.deepEqual(await s.rest(), []);
    assert.equal(await s.exited, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("serve: bad arguments are an error line and exit 1", SERVE, async () => {
  for (const args of [[], ["--model"], ["--modle", TINY], ["--model", TINY, "--threads", "0"]]) {
    const s = startServer(args);
    const line = await s.next();
    assert.equal(line.error.code, "invalid_request", JSON.stringify(args));
    assert.equal(await s.exited, 1);
  }
});

test("without @huggingface/transformers installed, the error names the package to install", SERVE, async () => {
  // The module and its imports copied where no node_modules is above them.
  const dir = mkdtempSync(path.join(tmpdir(), "ragagent-embed-noruntime-"));
  try {
    mkdirSync(path.join(dir, "lab"));
    mkdirSync(path.join(dir, "site", "common"), { recursive: true });
    for (const f of ["embed.mjs", "errors.js", "package.json"]) copyFileSync(path.join(root, "lab", f), path.join(dir, "lab", f));
    for (const f of ["package.json", "common/laberror.js"]) copyFileSync(path.join(root, "site", f), path.join(dir, "site", f));
    copyFileSync(path.join(root, "package.json"), path.join(dir, "package.json"));
    const s = startServer(["--model", TINY], { cwd: dir, script: path.join(dir, "lab/embed.mjs") });
    const line = await s.next();
    assert.equal(line.error.code, "runtime_missing");
    const pinned = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).devDependencies["@huggingface/transformers"];
    assert.match(line.error.message, new RegExp(`npm install @huggingface/transformers@${pinned.replaceAll(".", "\\.")}$`));
    assert.equal(await s.exited, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("vectorsBase64 is float32 little-endian, row after row", () => {
  const b = Buffer.from(vectorsBase64([Float32Array.of(1, -2), Float32Array.of(0.5, 3)]), "base64");
  assert.deepEqual([0, 4, 8, 12].map((o) => b.readFloatLE(o)), [1, -2, 0.5, 3]);
  assert.equal(b.readUInt32LE(0), 0x3f800000);
  assert.equal(vectorsBase64([]), "");
});
