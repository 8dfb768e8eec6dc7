// worker/d1wire.mjs in node: the JS half of the D1 wire form, held to the
// same vectors as the Go half (internal/server/store/wire_test.go): it
// reads the batch Go writes (testdata/wire-batch.bin) as the statements of
// wire-batch.json, and writes for the rows of wire-results.json exactly
// wire-results.bin, which the Go half reads back. RAGAGENT_UPDATE=1
// rewrites wire-results.bin from this half.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { root } from "./engine.mjs";
import { decodeBatch, encodeResults } from "../../worker/d1wire.mjs";

const testdata = path.join(root, "internal", "server", "store", "testdata");
const read = (name) => readFileSync(path.join(testdata, name));

test("decodeBatch reads the batch the Go half writes", () => {
  const stmts = decodeBatch(new Uint8Array(read("wire-batch.bin")));
  assert.deepEqual(stmts, JSON.parse(read("wire-batch.json")));
});

test("decodeBatch refuses a batch cut short or with bytes left over", () => {
  const bin = new Uint8Array(read("wire-batch.bin"));
  assert.throws(() => decodeBatch(bin.subarray(0, bin.length - 3)), RangeError);
  const longer = new Uint8Array(bin.length + 1);
  longer.set(bin);
  assert.throws(() => decodeBatch(longer), /bytes after the batch/);
});

test("encodeResults writes the rows as the Go half reads them", () => {
  const got = encodeResults(JSON.parse(read("wire-results.json")));
  if (process.env.RAGAGENT_UPDATE === "1") writeFileSync(path.join(testdata, "wire-results.bin"), got);
  assert.deepEqual(Buffer.from(got).toString("hex"), read("wire-results.bin").toString("hex"));
});

test("encodeResults grows past its first buffer and refuses a blob", () => {
  const long = "é".repeat(10000);
  const got = encodeResults([[[long, long]]]);
  // 3 counts, then two strings of a tag, a length and 20,000 bytes each.
  assert.equal(got.length, 12 + 2 * (5 + 20000));
  assert.throws(() => encodeResults([[[new ArrayBuffer(2)]]]), /not a number, text or null/);
});
