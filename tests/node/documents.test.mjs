// A person's documents through the JS API: files built into the pack
// "documents" (each unreadable one named), loaded again from the kept
// manifest and passages as the page does on a later visit, searched, a
// passage read in full, the pack's cases, and the pack removed.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startEngine } from "./engine.mjs";

let api;
before(async () => { ({ api } = await startEngine()); });

const enc = new TextEncoder();
const files = () => [
  { path: "notes/kettle.md", bytes: enc.encode("# Kettle\n\nDescale the kettle with citric acid every month.\n") },
  { path: "notes/garden.md", bytes: enc.encode("# Garden\n\nWater the tomatoes at dawn, never at noon.\n") },
  { path: "notes/photo.png", bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]) },
  { path: "notes/old.txt", bytes: new Uint8Array([0x63, 0x61, 0x66, 0xe9]) },
];

test("documents are built into a pack with progress, each unreadable file named", async () => {
  const progress = [];
  const res = await api.buildPack(files(), (done, total) => progress.push(`${done}/${total}`));
  assert.deepEqual(progress, ["1/4", "2/4", "3/4", "4/4"]);
  assert.equal(res.info.manifest.id, "documents");
  assert.equal(res.info.manifest.passages, 2);
  assert.equal(res.documents, 2);
  assert.deepEqual(res.skipped.map((s) => `${s.path}: ${s.reason}`).sort(), [
    "notes/old.txt: not UTF-8 text",
    "notes/photo.png: not HTML, Markdown, reStructuredText, plain text or JSON Lines passages (by its extension)",
  ]);
  const hits = await api.search({ corpus: "documents", query: "descale kettle", version: "1.0" });
  assert.equal(hits.hits[0].source_id, "notes.kettle.kettle");
  assert.match(hits.hits[0].snippet, /⟦Descale⟧ the ⟦kettle⟧/);
  const p = await api.passage({ corpus: "documents", source_id: "notes.kettle.kettle" });
  assert.equal(p.text, "Descale the kettle with citric acid every month.");
  assert.equal(p.url, "https://your-documents.invalid/notes/kettle.md#kettle");

  // What the page keeps opens again as it was built.
  await api.removePack("documents");
  await assert.rejects(api.search({ corpus: "documents", query: "kettle" }), /no corpus pack "documents"/);
  const info = await api.loadPack(res.manifest, res.passages);
  assert.equal(info.manifest.passages_sha256, res.info.manifest.passages_sha256);
  const again = await api.search({ corpus: "documents", query: "tomatoes dawn", version: "1.0" });
  assert.equal(again.hits[0].source_id, "notes.garden.garden");
  assert.deepEqual(await api.packCases("documents"), []);
});

test("a drop with nothing readable builds nothing and keeps the pack before", async () => {
  await api.buildPack(files().slice(0, 2));
  const res = await api.buildPack([{ path: "x.bin", bytes: new Uint8Array([0, 1, 2]) }]);
  assert.equal(res.info, null);
  assert.equal(res.skipped.length, 1);
  const hits = await api.search({ corpus: "documents", query: "kettle", version: "1.0" });
  assert.equal(hits.hits[0].source_id, "notes.kettle.kettle");
});

test("malformed calls are refused, not crashes", async () => {
  await assert.rejects(api.buildPack("not an array"), /give an array of \{path, bytes\}/);
  await assert.rejects(api.buildPack([{ bytes: new Uint8Array(1) }]), /file 1 has no path/);
  await assert.rejects(api.buildPack([]), /no file given/);
  await assert.rejects(api.passage({ corpus: "seed" }), /give \{corpus, source_id\}/);
  await assert.rejects(api.passage({ corpus: "seed", source_id: "nowhere" }), /no passage "nowhere"/);
  await assert.rejects(api.removePack("seed"), /built in/);
  await assert.rejects(api.packCases(3), /give a pack id/);
  const seed = await api.passage({ corpus: "seed", source_id: "path-write" });
  assert.equal(seed.version, "3.12");
  assert.ok((await api.packCases("seed")).length >= 4);
});
