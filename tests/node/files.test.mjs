// files.js in node: a file given to the page is read whole up to the
// engine's input cap, refused unread above it, and named clearly when it
// cannot be read, is not UTF-8, grew since it was chosen, or a drop holds
// a folder or several files. It touches no document, so it runs here as
// the page has it (site/package.json makes the page's .js files modules).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readText, dropped, FileRefused } from "../../site/common/files.js";
const CAP = 64;

/** fake is a File-like whose size may differ from its bytes and whose read may fail. */
function fake(name, size, { bytes = new Uint8Array(size), fail, onRead } = {}) {
  return {
    name, size,
    slice(start, end) {
      onRead?.();
      return { arrayBuffer: async () => { if (fail) throw fail; return bytes.slice(start, end).buffer; } };
    },
  };
}

test("readText reads a file whole up to the cap and refuses, unread, one over it", async () => {
  const text = "x".repeat(CAP);
  assert.equal(await readText(new File([text], "at-cap.json"), CAP), text, "a real File at the cap");
  let reads = 0;
  await assert.rejects(readText(fake("big.json", CAP + 1, { onRead: () => reads++ }), CAP), (err) => {
    assert.ok(err instanceof FileRefused);
    assert.equal(err.message, `big.json is 0.0 MiB (${CAP + 1} bytes), over the cap of ${CAP} bytes (0.0 MiB) on a file the lab reads; it was not read`);
    return true;
  });
  assert.equal(reads, 0, "nothing was read");
  const huge = 64 * 1048576;
  await assert.rejects(readText(fake("dump.json", 200 * 1048576), huge), /dump\.json is 200\.0 MiB \(209715200 bytes\), over the cap of 67108864 bytes \(64\.0 MiB\)/);
});

test("readText names each file it cannot read", async () => {
  for (const [name, file, want] of [
    ["unreadable", fake("gone.json", 10, { fail: new DOMException("the file changed", "NotReadableError") }), /^gone\.json could not be read \(NotReadableError\): it may be a folder, unreadable, or moved or changed since it was chosen$/],
    ["removed", fake("moved.json", 10, { fail: new DOMException("not found", "NotFoundError") }), /^moved\.json could not be read \(NotFoundError\)/],
    ["grew past the cap since it was chosen", fake("growing.json", 10, { bytes: new Uint8Array(CAP + 5) }), /^growing\.json grew past the cap of 64 bytes since it was chosen; it was not read$/],
    ["not UTF-8", fake("latin1.json", 3, { bytes: Uint8Array.from([0x7b, 0xe9, 0x7d]) }), /^latin1\.json is not UTF-8 text$/],
    ["not a file", null, /^The file is not a file$/],
    ["a plain object", { name: "x.json" }, /^x\.json is not a file$/],
  ]) {
    await assert.rejects(readText(file, CAP), (err) => err instanceof FileRefused && want.test(err.message), name);
  }
  assert.equal(await readText(fake("bom.json", 5, { bytes: Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) }), CAP), "\ufeff{}",
    "a byte-order mark is kept, so the engine refuses it as the command line does");
});

test("dropped is the one file a drop carries, or why not", () => {
  const file = new File(["{}"], "one.json");
  const entry = (isDirectory) => ({ webkitGetAsEntry: () => ({ isDirectory }) });
  assert.equal(dropped({ files: [file], items: [entry(false)] }), file);
  assert.equal(dropped({ files: [file] }), file, "no entries to ask: the file");
  for (const [name, dt, want] of [
    ["two files", { files: [file, file] }, "2 files were dropped; drop one recording at a time"],
    ["a folder", { files: [new File([], "docs")], items: [entry(true)] }, "docs is a folder, not a recording file"],
    ["no file", { files: [] }, "Nothing that is a file was dropped"],
    ["no data", null, "Nothing that is a file was dropped"],
  ]) {
    const got = dropped(dt);
    assert.ok(got instanceof FileRefused, name);
    assert.equal(got.message, want, name);
  }
});
