// The second stage's cross-encoder scorer (lab/embed.mjs's openScorer) on
// the tests' tiny cross-encoder (tests/fixtures/tiny-cross-encoder), no
// network: transformers.js gives PyTorch's pair token ids exactly and its
// raw logits within TOLERANCE for the reranking lab's 16 calls (their
// texts from the engine's crossEncoderPlan) and the tokenizer's corner
// pairs, in one batch and in batches of 3; a pair over the model's context
// is truncated on the passage's side, not refused; a changed file, or a
// folder of the other kind, is refused with invalid_model before
// transformers.js is imported; `node lab/embed.mjs serve` on the folder
// answers {id, query, texts} with scores in order, a request for the other
// kind with an error line, and exits 0 at stdin's end.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openScorer, openEmbedder, openAny, importRuntime, EMBED_CODES, KINDS, SCORE_BATCH } from "../../lab/embed.mjs";
import { startEngine, releaseTimers, root } from "./engine.mjs";
import { copyModel, SERVE, startServer } from "./models.mjs";

const TINY = path.join(root, "tests/fixtures/tiny-cross-encoder");
const EMBEDDER = path.join(root, "tests/fixtures/tiny-embedder");
const EXPECTED = JSON.parse(readFileSync(path.join(TINY, "expected.json"), "utf8"));
const MANIFEST = JSON.parse(readFileSync(path.join(TINY, "ragagent-model.json"), "utf8"));

// TOLERANCE bounds |transformers.js - PyTorch| per logit. Both compute in
// float32 (epsilon 1.2e-7) and the logits are of order 1 to 5, a sum over
// two layers of 32-wide attention and feed-forward; ONNX Runtime orders its
// sums differently and padding a pair to its batch's longest changes its
// attention sums by rounding only. The largest difference seen on this
// machine is 1.5e-5 (a corner pair with a 100-character word, alone or
// batched); the reranking lab's scorer allows 1e-4 for the same model
// (tests/node/crossencoder.test.mjs), and so does this one: still far
// below what a real mistake makes (a dropped [SEP] or a token type of 0 for
// the passage moves a logit by more than 1e-2).
const TOLERANCE = 1e-4;

let plan;
before(async () => {
  const { api } = await startEngine();
  plan = await api.crossEncoderPlan(readFileSync(path.join(TINY, "ragagent-model.json"), "utf8"));
});
after(releaseTimers);

/** unpadded drops the [PAD] (id 0) PyTorch's batched ids end with. */
const unpadded = (ids) => ids.slice(0, ids.findLastIndex((id) => id !== 0) + 1);


test("the tiny cross-encoder's raw logits and pair token ids from openScorer are PyTorch's", async () => {
  const s = await openScorer({ modelDir: TINY, threads: 1 });
  const small = await openScorer({ modelDir: TINY, threads: 1, batch: 3 });
  try {
    assert.equal(s.model.id, "ragagent-test/tiny-cross-encoder");
    assert.equal(s.model.revision, MANIFEST.revision);
    assert.equal(s.model.kind, KINDS.CROSS_ENCODER);
    assert.equal(s.model.dimensions, 1);
    assert.equal(s.model.max_tokens, 512);
    assert.equal(s.model.truncation, "only_second");
    assert.equal(s.model.logit, "raw");
    assert.deepEqual(s.model.files, [...MANIFEST.files, MANIFEST.weights[0]].map(({ path: p, sha256, bytes }) => ({ path: p, sha256, bytes })));
    assert.deepEqual({ ...s.model.runtime, "transformers.js": null, onnxruntime: null }, { "transformers.js": null, onnxruntime: null, device: "cpu", dtype: "fp32", threads: 1 });

    assert.equal(plan.calls.length, EXPECTED.calls.length);
    let worst = 0;
    let spread = 0;
    for (const [i, call] of plan.calls.entries()) {
      const want = EXPECTED.calls[i];
      assert.equal(call.id, want.id);
      const { question } = call.request;
      const texts = call.request.candidates.map((c) => c.text);
      assert.deepEqual(s.tokenize(question, texts), want.input_ids.map(unpadded), `${call.id}: pair token ids`);
      // One call's pairs in one batch (SCORE_BATCH holds them), then three a pass.
      assert.ok(texts.length <= SCORE_BATCH);
      for (const [name, got] of [["one batch", await s.score(question, texts)], ["batches of 3", await small.score(question, texts)]]) {
        assert.equal(got.length, texts.length, `${call.id} (${name})`);
        got.forEach((x, j) => {
          assert.equal(typeof x, "number");
          worst = Math.max(worst, Math.abs(x - want.logits[j]));
          assert.ok(Math.abs(x - want.logits[j]) <= TOLERANCE, `${call.id} pair ${j + 1} (${name}): ${x} vs PyTorch ${want.logits[j]}`);
        });
      }
      spread = Math.max(spread, Math.max(...want.logits) - Math.min(...want.logits));
    }
    for (const pair of EXPECTED.pairs) {
      assert.deepEqual(s.tokenize(pair.question, [pair.passage]), [pair.input_ids], `token ids of ${JSON.stringify(pair.question)}`);
      const [x] = await s.score(pair.question, [pair.passage]);
      worst = Math.max(worst, Math.abs(x - pair.logit));
      assert.ok(Math.abs(x - pair.logit) <= TOLERANCE, `${pair.question}: ${x} vs ${pair.logit}`);
    }
    // The logits differ from pair to pair by far more than the tolerance (a model that gave one number would pass only by luck).
    assert.ok(spread > 1, `spread ${spread}`);
    assert.deepEqual(await s.score("q", []), []);
    console.log(`# largest |logit - PyTorch's| over ${plan.pairs} call pairs and ${EXPECTED.pairs.length} corner pairs: ${worst.toExponential(2)}`);
  } finally {
    await s.close();
    await small.close();
  }
});

test("a pair longer than the model's context is truncated on the passage's side, not refused", async () => {
  const s = await openScorer({ modelDir: TINY, threads: 1 });
  try {
    const files = (n) => Array(n).fill("file").join(" "); // "file" is one token
    // [CLS] q [SEP] + passage + [SEP]: 4 specials and query, so 508 passage tokens fit in 512.
    const [long] = s.tokenize("q", [files(600)]);
    const [fits] = s.tokenize("q", [files(508)]);
    assert.equal(long.length, 512);
    assert.deepEqual(long, fits, "the passage cut from its end, the closing [SEP] kept");
    assert.equal(long.at(-1), fits.at(-1));
    // An empty passage is a pair too, [CLS] q [SEP] [SEP], as Python's tokenizers make it.
    const [empty] = s.tokenize("q", [""]);
    assert.equal(empty.length, 4);
    assert.equal(empty[2], empty[3]);
    assert.equal(long.at(-1), empty[3]);
    assert.ok(Number.isFinite((await s.score("q", [""]))[0]));
    const [a, b, c, d] = await s.score("q", [files(600), files(508), files(507), "short"]);
    assert.equal(a, b, "the long passage scores as its first 508 tokens");
    assert.notEqual(b, c, "one token fewer is another pair");
    assert.ok(Number.isFinite(d));
    // The query is never cut: one that leaves no room for a passage is refused.
    await assert.rejects(s.score(files(509), ["x"]), (err) => err.code === EMBED_CODES.QUERY_TOO_LONG && /the query has 509 tokens/.test(err.message));
    assert.equal((await s.score(files(508), ["x"])).length, 1, "a query leaving one passage token is scored");
  } finally {
    await s.close();
  }
});

test("score refuses what is not a query and a list of strings, and scoring after close", async () => {
  const s = await openScorer({ modelDir: TINY, threads: 1 });
  for (const [query, texts] of [[null, ["a"]], [1, ["a"]], ["q", "a"], ["q", [1]], ["q", ["a", null]], ["q", undefined]]) {
    await assert.rejects(s.score(query, texts), { code: EMBED_CODES.INVALID_REQUEST }, JSON.stringify([query, texts]));
  }
  assert.equal((await s.score("still", ["works"])).length, 1);
  await s.close();
  await assert.rejects(s.score("q", ["x"]), { code: EMBED_CODES.SCORER_CLOSED });
});

test("a changed cross-encoder, or a folder of the other kind, is refused with invalid_model before transformers.js is imported", async (t) => {
  const sha = (f) => [...MANIFEST.files, ...MANIFEST.weights].find((x) => x.path === f).sha256;
  const cases = [
    {
      name: "one byte of the weights changed (same size)",
      open: openScorer,
      change: (dir) => {
        const f = path.join(dir, "onnx/model.onnx");
        const b = readFileSync(f);
        b[b.length - 10] ^= 0xff;
        writeFileSync(f, b);
      },
      message: new RegExp(`^onnx/model\\.onnx was refused: its sha256 is [0-9a-f]{64} \\(201820 bytes\\), the manifest pins ${sha("onnx/model.onnx")} \\(201820 bytes\\)\\. Nothing was loaded\\.$`),
      path: "onnx/model.onnx",
    },
    {
      name: "the tokenizer changed",
      open: openScorer,
      change: (dir) => writeFileSync(path.join(dir, "tokenizer.json"), readFileSync(path.join(dir, "tokenizer.json"), "utf8").replace("[UNK]", "[UNX]")),
      message: /^tokenizer\.json was refused: its sha256 is [0-9a-f]{64} /,
      path: "tokenizer.json",
    },
    {
      name: "openScorer on a sentence encoder's folder",
      open: openScorer, dir: EMBEDDER,
      message: /^ragagent-test\/tiny-embedder is not a cross-encoder \(config\.json's architectures name no ForSequenceClassification\)/,
    },
    {
      name: "openEmbedder on a cross-encoder's folder",
      open: openEmbedder,
      message: /^ragagent-test\/tiny-cross-encoder is a cross-encoder .*open it with openScorer$/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const dir = c.dir ?? copyModel(TINY, c.change);
      let imported = 0;
      try {
        await assert.rejects(c.open({ modelDir: dir, loadRuntime: async () => { imported++; return importRuntime(); } }), (err) => {
          assert.equal(err.code, EMBED_CODES.INVALID_MODEL);
          assert.match(err.message, c.message);
          if (c.path) {
            assert.equal(err.path, c.path);
            assert.equal(err.expected_sha256, sha(c.path));
            assert.notEqual(err.actual_sha256, err.expected_sha256);
          }
          return true;
        });
        assert.equal(imported, 0, "transformers.js was not imported");
      } finally {
        if (!c.dir) rmSync(dir, { recursive: true, force: true });
      }
    });
  }
  await t.test("the untouched copy opens (the refusals above are the changes'), as openAny's scorer too", async () => {
    const dir = copyModel(TINY, );
    let imported = 0;
    try {
      const s = await openAny({ modelDir: dir, threads: 1, loadRuntime: async () => { imported++; return importRuntime(); } });
      assert.equal(s.model.kind, KINDS.CROSS_ENCODER);
      assert.equal(typeof s.score, "function");
      await s.close();
      assert.equal(imported, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});


test("serve on a cross-encoder: a ready line of dimensions 1, score requests answered in order, an embed request refused and the server goes on, stdin's end exits 0", SERVE, async () => {
  const s = startServer(["--model", TINY, "--threads", "1"]);
  const ready = await s.next();
  assert.equal(ready.ready, true);
  assert.equal(ready.model.id, "ragagent-test/tiny-cross-encoder");
  assert.equal(ready.model.kind, "cross-encoder");
  assert.equal(ready.model.dimensions, 1);
  assert.equal(ready.model.max_tokens, 512);
  assert.equal(ready.model.truncation, "only_second");
  assert.equal(ready.model.files.length, 4);
  const [one, two] = plan.calls;
  s.send({ id: 1, query: one.request.question, texts: one.request.candidates.map((c) => c.text) });
  s.send({ id: 2, query: two.request.question, texts: two.request.candidates.map((c) => c.text) });
  s.send({ id: 3, texts: ["an embedding request"] });
  s.send({ id: 4, query: "q", texts: "not a list" });
  s.send({ id: 5, query: EXPECTED.pairs[0].question, texts: [EXPECTED.pairs[0].passage] });
  const got = [];
  for (let i = 0; i < 5; i++) got.push(await s.next());
  assert.deepEqual(got.map((r) => r.id), [1, 2, 3, 4, 5]);
  for (const [r, want] of [[got[0], EXPECTED.calls[0].logits], [got[1], EXPECTED.calls[1].logits], [got[4], [EXPECTED.pairs[0].logit]]]) {
    assert.deepEqual(Object.keys(r), ["id", "scores"]);
    assert.equal(r.scores.length, want.length);
    r.scores.forEach((x, j) => assert.ok(Math.abs(x - want[j]) <= TOLERANCE, `request ${r.id} pair ${j + 1}: ${x} vs ${want[j]}`));
  }
  assert.equal(got[2].error.code, EMBED_CODES.WRONG_KIND);
  assert.match(got[2].error.message, /^ragagent-test\/tiny-cross-encoder is a cross-encoder: it scores \{"query", "texts"\} pairs and embeds nothing/);
  assert.equal(got[3].error.code, EMBED_CODES.INVALID_REQUEST);
  s.child.stdin.end();
  assert.deepEqual(await s.rest(), [], "nothing after the answers");
  assert.equal(await s.exited, 0, s.stderr());
});

test("serve on a sentence encoder refuses a score request with an error line and goes on", SERVE, async () => {
  const s = startServer(["--model", EMBEDDER, "--threads", "1"]);
  const ready = await s.next();
  assert.equal(ready.model.kind, "embedder");
  s.send({ id: 1, query: "q", texts: ["a"] });
  s.send({ id: 2, texts: ["a"] });
  const [refused, embedded] = [await s.next(), await s.next()];
  assert.deepEqual(refused, { id: 1, error: { code: EMBED_CODES.WRONG_KIND, message: "ragagent-test/tiny-embedder is a sentence encoder: it embeds texts and scores no pairs (a request with a query needs a cross-encoder's folder)" } });
  assert.equal(embedded.id, 2);
  assert.equal(embedded.dimensions, ready.model.dimensions);
  assert.equal(Buffer.from(embedded.f32, "base64").length, 4 * ready.model.dimensions);
  s.child.stdin.end();
  assert.equal(await s.exited, 0, s.stderr());
});
