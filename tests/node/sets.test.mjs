// site/common/sets.js's files, under node: a question set made in the page
// is written as the ragagent-cases/1 JSON and the three-column TSV the
// command line reads (read back here by the built engine's questionSet,
// which reads a set as `ragagent retrieval --cases` does), each case's id
// made once from its question and unique in its set, a set a TSV cannot
// carry refused with why, an imported file's cases kept as read, and a
// set's name checked.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { startEngine, site, releaseTimers } from "./engine.mjs";

let sets, api, info;

before(async () => {
  sets = await import(pathToFileURL(path.join(site, "common", "sets.js")).href);
  ({ api, info } = await startEngine());
});
after(releaseTimers);

/** a set of the seed: a passage's URL, its page, and a question the documents cannot answer. */
function seedSet() {
  const url = info.passages.find((p) => p.url && p.url.includes("#")).url;
  const set = { pack: "seed", name: "mine", time: "2026-12-07T00:00:00.000Z", cases: [] };
  for (const c of [
    { question: "How do I overwrite a file with text?", targets: [url], split: "development", version: info.passages[0].version },
    { question: "How do I overwrite a file with text?", targets: [url.split("#")[0]] },
    { question: "What is the capital of France?", targets: [] },
  ]) set.cases.push(sets.makeCase(set, c));
  return { set, url };
}

test("caseID is the question's words, unique in the set", () => {
  assert.equal(sets.caseID("How do I write text to a file?", []), "how-do-i-write-text-to-a-file");
  assert.equal(sets.caseID("How do I write text to a file?", ["how-do-i-write-text-to-a-file"]), "how-do-i-write-text-to-a-file-2");
  assert.equal(sets.caseID("¿?", []), "question");
  assert.ok(sets.caseID("a ".repeat(100), []).length <= 48);
});

test("toJSON writes ragagent-cases/1 in the set's order, the targets in target_urls, and the engine reads it as the command line does", async () => {
  const { set, url } = seedSet();
  const text = sets.toJSON(set);
  const file = JSON.parse(text);
  assert.equal(file.format, "ragagent-cases/1");
  assert.deepEqual(file.cases.map((c) => c.id), ["how-do-i-overwrite-a-file-with-text", "how-do-i-overwrite-a-file-with-text-2", "what-is-the-capital-of-france"]);
  assert.deepEqual(file.cases.map((c) => c.target_urls), [[url], [url.split("#")[0]], []]);
  assert.deepEqual(file.cases.map((c) => c.split), ["development", "held-out", "held-out"]);
  assert.equal(file.cases[0].version, info.passages[0].version);
  assert.ok(!("version" in file.cases[1]), "a case without a version takes the pack's default");
  const read = await api.questionSet({ corpus: "seed", text });
  assert.deepEqual(read.map((c) => c.id), file.cases.map((c) => c.id));
  // Imported again, it is the same set.
  assert.deepEqual(sets.fromCases(read).map((c) => [c.id, c.question, c.split, c.targets]), set.cases.map((c) => [c.id, c.question, c.split, c.targets]));
});

test("toTSV writes the three columns the engine reads, and refuses what a TSV cannot carry", async () => {
  const { set, url } = seedSet();
  const tsv = sets.toTSV(set);
  assert.equal(tsv.split("\n")[0], "id\tquestion\ttarget_urls");
  assert.equal(tsv.split("\n")[3], "what-is-the-capital-of-france\tWhat is the capital of France?\t-");
  const read = await api.questionSet({ corpus: "seed", text: tsv });
  assert.deepEqual(read.map((c) => c.target_urls ?? []), [[url], [url.split("#")[0]], []]);
  const withSource = { ...set, cases: [{ ...set.cases[0], sources: ["x"] }] };
  assert.throws(() => sets.toTSV(withSource), /case how-do-i-overwrite-a-file-with-text has sources, which a TSV cannot carry: export it as JSON/);
});

test("checkName refuses an empty, long, control or repeated name", () => {
  assert.equal(sets.checkName("  mine  "), "mine");
  assert.throws(() => sets.checkName(" "), /give the set a name/);
  assert.throws(() => sets.checkName("x".repeat(sets.MAX_NAME_CHARS + 1)), /over the cap/);
  assert.throws(() => sets.checkName("a\tb"), /control character/);
  assert.throws(() => sets.checkName("mine", [{ name: "mine" }]), /already has a set named mine/);
});
