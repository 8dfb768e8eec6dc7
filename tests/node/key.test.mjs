// key.js in node: its redaction is core/secret's, row for row (the shared
// vectors in core/secret/testdata/redact.json, which core/secret's own test
// holds to the Go implementation), and send() redacts every reply, whatever
// its status, with the key as sent (trimmed), before anything else sees it.
// key.js imports nothing, so it runs here from its source; a small stand-in
// document and fetch are all it needs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { root, site } from "./engine.mjs";

const source = readFileSync(path.join(site, "common", "key.js"), "utf8");
const load = () => import(`data:text/javascript;base64,${Buffer.from(source).toString("base64")}#${Math.random()}`);
const vectors = JSON.parse(readFileSync(path.join(root, "core", "secret", "testdata", "redact.json"), "utf8"));
const bytes = (text, hex) => (hex !== undefined ? Uint8Array.from(Buffer.from(hex, "hex")) : new TextEncoder().encode(text ?? ""));
const KEY = "AIzaSyD-test_KEY/0123+x";

test("key.js redacts every row of core/secret's vectors exactly as the core does", async () => {
  const { redact, contains, MARK } = await load();
  assert.equal(vectors.format, "ragagent-redact-vectors/1");
  assert.equal(MARK, vectors.mark);
  assert.ok(vectors.vectors.length >= 30);
  for (const v of vectors.vectors) {
    const body = bytes(v.body, v.body_hex);
    assert.deepEqual(Buffer.from(redact(body, v.key)).toString("hex"), Buffer.from(bytes(v.redacted, v.redacted_hex)).toString("hex"), v.name);
    assert.equal(contains(body, v.key), v.contains, v.name);
  }
});

/** withKey loads a fresh key.js with a stand-in document, types key into its field and allows url. */
async function withKey(key, url) {
  const els = {};
  const el = (id) => (els[id] ??= { id, value: "", checked: false, textContent: "", listeners: {}, addEventListener(t, fn) { this.listeners[t] = fn; } });
  globalThis.document = { getElementById: el };
  globalThis.sessionStorage = { getItem: () => null, setItem() {}, removeItem() {} };
  const mod = await load();
  mod.init();
  el("run-key").value = key;
  el("run-key").listeners.input();
  mod.allow([url], 1 << 20);
  return mod;
}

/** replying makes fetch answer status with body and records each request's headers. */
function replying(status, body, seen) {
  globalThis.fetch = async (url, init) => {
    seen.push(init.headers);
    return new Response(body, { status });
  };
}

test("send redacts every reply, any status, matching the key as sent", async (t) => {
  t.after(() => { delete globalThis.document; delete globalThis.sessionStorage; delete globalThis.fetch; });
  const url = "http://127.0.0.1:9/v1beta/models/m:generateContent";
  const escaped = [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
  const encoded = [...new TextEncoder().encode(KEY)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
  for (const [name, typed, status, body] of [
    ["a 2xx body echoing the key in \\u escapes", KEY, 200, `{"candidates": [{"content": {"parts": [{"text": "you sent ${escaped}"}]}}]}`],
    ["a 403 echoing it URL-encoded", KEY, 403, `{"error": {"code": 403, "message": "key=${encoded} is not allowed"}}`],
    ["a key pasted with a trailing space, echoed as sent", `${KEY} `, 400, `{"error": {"message": "API key ${KEY} not valid"}}`],
    ["a 2xx echoing it verbatim", `\t${KEY}\n`, 200, `{"text": "${KEY}"}`],
  ]) {
    const seen = [];
    const key = await withKey(typed, url);
    replying(status, body, seen);
    const res = await key.send({ url, body: "{}" });
    const text = new TextDecoder().decode(res.body);
    assert.equal(res.status, status, name);
    assert.ok(text.includes("[redacted key]"), `${name}: ${text}`);
    assert.ok(!key.contains(res.body, KEY), `${name}: no form of the key is left`);
    assert.equal(seen[0]["x-goog-api-key"], KEY, `${name}: the header is the key trimmed`);
    assert.equal(key.hasKey(), true);
  }
  const blank = await withKey("  \t", url);
  assert.equal(blank.hasKey(), false, "white space alone is no key");
});

test("screen withholds a download that holds the key in any form", async (t) => {
  t.after(() => { delete globalThis.document; delete globalThis.sessionStorage; });
  const key = await withKey(` ${KEY} `, "http://127.0.0.1:9/x");
  assert.equal(key.screen(`{"trials": [{"question": "what is ${KEY}?"}]}`).startsWith("the file holds your API key"), true);
  assert.match(key.screen(`{"q": "${KEY.replace("/", "\\/")}"}`), /holds your API key .* so it was not saved/);
  assert.equal(key.screen(`{"trials": []}`), null);
  const none = await withKey("", "http://127.0.0.1:9/x");
  assert.equal(none.screen(`{"q": "${KEY}"}`), null, "no key, nothing to withhold");
});

test("a key shorter than MIN_KEY characters is refused at entry: not a key, never sent, never looked for", async (t) => {
  t.after(() => { delete globalThis.document; delete globalThis.sessionStorage; delete globalThis.fetch; });
  const url = "http://127.0.0.1:9/v1beta/models/m:generateContent";
  const short = await withKey(" x ", url);
  assert.equal(short.MIN_KEY, 16);
  assert.equal(short.hasKey(), false, "one character is no key");
  assert.match(document.getElementById("key-status").textContent, /not an API key: a key has at least 16 characters/);
  const seen = [];
  replying(200, "{}", seen);
  await assert.rejects(short.send({ url, body: "{}" }), (e) => e.kind === "URLError" && /nothing was sent/.test(e.message));
  assert.equal(seen.length, 0, "nothing was sent");
  assert.equal(short.screen(`{"x": "an x in every file"}`), null, "a download is never withheld for it");
  const fifteen = await withKey(KEY.slice(0, 15), url);
  assert.equal(fifteen.hasKey(), false);
  const sixteen = await withKey(KEY.slice(0, 16), url);
  assert.equal(sixteen.hasKey(), true);
  assert.equal(document.getElementById("key-status").textContent, "", "a key clears the note");
});
