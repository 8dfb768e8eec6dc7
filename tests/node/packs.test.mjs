// Corpus packs through the JS API: the Python 3.11 pack's bytes loaded as
// the page hands them over (the manifest's text and the uncompressed
// passages file, its sha256 checked with the platform's SubtleCrypto),
// searched with snippets, a passage read, its cases listed, run over with
// the scripted policy, and a changed passages file refused.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import path from "node:path";
import { startEngine, root } from "./engine.mjs";

const dir = path.join(root, "fixtures", "packs", "python-3.11");
const manifest = readFileSync(path.join(dir, "manifest.json"), "utf8");
const passages = new Uint8Array(gunzipSync(readFileSync(path.join(dir, JSON.parse(manifest).passages_file))));

let api;
before(async () => { ({ api } = await startEngine()); });

test("the seed is the only pack before any is loaded", async () => {
  const packs = await api.packs();
  assert.equal(packs[0].manifest.id, "seed");
  assert.equal(packs[0].manifest.search_k, 2);
});

test("a changed passages file is refused, naming the mismatch", async () => {
  const changed = passages.slice();
  changed[changed.length - 100] ^= 1;
  await assert.rejects(api.loadPack(manifest, changed), /the passages file hashes to/);
});

test("the Python pack loads from bytes, is searched with snippets and run over", async () => {
  const info = await api.loadPack(manifest, passages);
  assert.equal(info.manifest.id, "python-3.11");
  assert.equal(info.manifest.passages, 12352);
  assert.equal(info.search_k, 3);
  assert.ok(info.cases >= 34);

  // No timing asserted: the pack opened once keeps the time its opening
  // took; a second opening would measure its own.
  assert.ok(info.open_ms > 0);
  const again = await api.loadPack(manifest, passages);
  assert.equal(again.open_ms, info.open_ms, "the same bytes again are not opened again");

  const res = await api.search({ corpus: "python-3.11", query: "write text to a file", version: "3.11" });
  assert.equal(res.corpus, "python-3.11");
  assert.equal(res.k, 3, "an absent k is the pack's");
  assert.equal(res.hits[0].source_id, "library.pathlib.pathlib.path.write_text");
  assert.equal(res.hits[0].url, "https://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text");
  assert.match(res.hits[0].snippet, /⟦write⟧_⟦text⟧/);

  const p = await api.passage({ corpus: "python-3.11", source_id: res.hits[0].source_id });
  assert.match(p.text, /An existing file of the same name is overwritten/);
  assert.equal(p.text_sha256, res.hits[0].text_sha256, "the passage read is the one the search issued");
  const cases = await api.packCases("python-3.11");
  assert.equal(cases.length, info.cases);

  const { result } = api.run({ corpus: "python-3.11", question: "How do I parse a TOML file in Python 3.11?", version: "3.11",
    mode: "agent", limits: null, policy: "scripted", hasKey: false }, {});
  const report = await result;
  assert.equal(report.result.status, "answered");
  assert.equal(report.case_id, "tomllib");
  assert.equal(report.checks.outcome, "pass");
  const reads = report.result.observations.filter((o) => o.tool === "read").map((o) => o.result.url);
  assert.ok(reads.includes("https://docs.python.org/3.11/library/tomllib.html#tomllib.load"), reads.join(" "));
});
