// key.js is the only module that ever holds the Gemini key. It owns the key
// field's value, the "remember for this tab" choice (sessionStorage) and
// the Forget button,
// sends each live request with the key as its x-goog-api-key header (and
// only to an endpoint this page allows), removes the key, in any form, from
// every reply body before anything else sees it, and is the last check on
// every file the page offers for download. Other modules ask hasKey() and
// hand send() the request; the key string never leaves this module.

const KEY_STORAGE = "ragagent.key";

/** KEY_HEADER is the one request header that carries the key. */
export const KEY_HEADER = "x-goog-api-key";

let apiKey = "";
let allowed = new Set();
let responseBytes = 0;
const listeners = [];

/** init binds the key field and the remember box, restoring a remembered key. */
export function init() {
  const input = document.getElementById("run-key");
  const remember = document.getElementById("run-remember");
  let remembered = null;
  try {
    remembered = sessionStorage.getItem(KEY_STORAGE);
  } catch { /* storage blocked: nothing was remembered */ }
  if (remembered) {
    apiKey = remembered;
    input.value = remembered;
    remember.checked = true;
  }
  // keep remembers the key in this tab's storage (null: forgets it); with
  // storage blocked nothing is remembered, and the page goes on.
  const keep = (key) => {
    try {
      if (key === null) sessionStorage.removeItem(KEY_STORAGE);
      else sessionStorage.setItem(KEY_STORAGE, key);
    } catch { /* storage blocked: nothing is remembered */ }
  };
  input.addEventListener("input", () => {
    apiKey = input.value;
    document.getElementById("key-status").textContent = "";
    if (remember.checked) keep(apiKey);
    for (const fn of listeners) fn();
  });
  remember.addEventListener("change", () => keep(remember.checked ? apiKey : null));
  document.getElementById("key-forget").addEventListener("click", () => {
    apiKey = "";
    input.value = "";
    remember.checked = false;
    keep(null);
    document.getElementById("key-status").textContent = "The key is forgotten: gone from this page's memory and this tab's storage.";
    for (const fn of listeners) fn();
  });
}

/** hasKey says whether a key was entered (never what it is): white space alone is none. */
export function hasKey() {
  return asSent(apiKey) !== "";
}

/** onChange calls fn after each edit of the key. */
export function onChange(fn) {
  listeners.push(fn);
}

/**
 * allow sets where send() may go (the live endpoints) and the reply cap
 * (the engine's response_bytes; one byte more is read so the engine sees
 * that a reply was over it).
 */
export function allow(endpoints, maxResponseBytes) {
  allowed = new Set(endpoints);
  responseBytes = maxResponseBytes;
}

/**
 * send POSTs body to url with the key as its header and resolves to
 * {status, body} (a Uint8Array of at most the cap plus one byte). A
 * redirect is not followed and reads as status 300. An endpoint this page
 * does not allow is refused before anything is sent: the rejection then
 * carries the engine's error kind.
 */
export async function send({ url, body, signal }) {
  if (!allowed.has(url)) {
    throw { kind: "URLError", message: "the engine asked for an endpoint this page does not allow" };
  }
  // The key as sent: fetch would trim a header value itself; trimming it
  // here first makes what is sent and what is redacted one string.
  const sent = asSent(apiKey);
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", [KEY_HEADER]: sent },
    body,
    redirect: "manual",
    credentials: "omit",
    cache: "no-store",
    referrerPolicy: "no-referrer",
    signal,
  });
  if (res.type === "opaqueredirect") return { status: 300, body: new Uint8Array(0) };
  // Any reply can echo the key (an error about it, a model asked to repeat
  // its request): every body, whatever its status, is redacted before the
  // engine, a run's detail or the console can see it.
  return { status: res.status, body: redact(await readCapped(res, responseBytes + 1), sent) };
}

/**
 * screen is the last check on a file the page offers for download (dom.js
 * calls it on every one): the reason it is withheld when it still holds
 * the key in any form, else null.
 */
export function screen(text) {
  if (!contains(new TextEncoder().encode(text), apiKey)) return null;
  return "the file holds your API key (typed into a question, or echoed by a reply in a form the redaction missed), so it was not saved";
}

// The key's redaction is core/secret's, ported byte for byte, and held to
// the same rows (core/secret/testdata/redact.json, tested natively and in
// tests/node): the key as sent (trimmed as Go's strings.TrimSpace trims),
// each of its characters written as itself, as a JSON escape (\u0041,
// \/, \n, the backslash doubled any number of times, a surrogate pair
// above U+FFFF) or percent-encoded (%41, + for a space), in any mix.

/** MARK replaces the key where it was found (core/secret's Mark). */
export const MARK = "[redacted key]";
const MARK_BYTES = new TextEncoder().encode(MARK);

// Go's unicode.IsSpace, which strings.TrimSpace trims (String.prototype.trim
// differs: it trims U+FEFF and keeps U+0085).
const EDGE_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** asSent is the key as sent: trimmed of white space. */
function asSent(key) {
  return key.replace(EDGE_SPACE, "");
}

/** characters is the key as sent, one {cp, raw} per code point (raw its UTF-8
 * bytes; a lone surrogate is U+FFFD, as Go sees it), or null for no key. */
function characters(key) {
  const k = asSent(key);
  if (k === "") return null;
  const enc = new TextEncoder();
  return [...k].map((ch) => {
    let cp = ch.codePointAt(0);
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    return { cp, raw: enc.encode(String.fromCodePoint(cp)) };
  });
}

/** redact returns bytes with every occurrence of key, in any of its forms,
 * replaced by MARK: bytes itself when there is none (or no key). */
export function redact(bytes, key) {
  const chars = characters(key);
  if (!chars) return bytes;
  const parts = [];
  let last = 0;
  for (let i = 0; i < bytes.length;) {
    const end = match(bytes, i, chars);
    if (end < 0) {
      i++;
      continue;
    }
    parts.push(bytes.subarray(last, i), MARK_BYTES);
    i = last = end;
  }
  if (!parts.length) return bytes;
  parts.push(bytes.subarray(last));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** contains says whether bytes hold key in any of its forms. */
export function contains(bytes, key) {
  const chars = characters(key);
  if (!chars) return false;
  for (let i = 0; i < bytes.length; i++) if (match(bytes, i, chars) >= 0) return true;
  return false;
}

// match returns where an occurrence of the key starting at b[at] ends, or -1.
function match(b, at, chars) {
  let i = at;
  for (const c of chars) {
    const n = char(b, i, c);
    if (n === 0) return -1;
    i += n;
  }
  return i;
}

// char returns how many bytes at b[at] spell the character c, or 0.
function char(b, at, c) {
  const { raw } = c;
  if (b.length - at >= raw.length) {
    let k = 0;
    while (k < raw.length && b[at + k] === raw[k]) k++;
    if (k === raw.length) return raw.length;
  }
  if (at >= b.length) return 0;
  if (b[at] === 0x5c) return jsonEscape(b, at, c.cp); // backslash
  if (b[at] === 0x25 || b[at] === 0x2b) return percent(b, at, raw, c.cp); // % or +
  return 0;
}

// jsonEscape matches a JSON escape of cp at b[at]: \uXXXX (a surrogate pair
// above U+FFFF) or a short escape, its backslash doubled any number of times.
function jsonEscape(b, at, cp) {
  let n = 0;
  while (at + n < b.length && b[at + n] === 0x5c) n++;
  if (at + n < b.length && shortEscape(b[at + n]) === cp) return n + 1;
  const u = hex4u(b, at, n);
  if (u < 0) return 0;
  if (cp <= 0xffff && u === cp) return n + 5;
  if (cp > 0xffff && u === 0xd800 + ((cp - 0x10000) >> 10)) {
    const lo = hex4u(b, at + n + 5, n);
    if (lo >= 0 && lo === 0xdc00 + ((cp - 0x10000) & 0x3ff)) return 2 * (n + 5);
  }
  return 0;
}

// shortEscape is the character a two-character escape \c stands for, or -1.
function shortEscape(c) {
  switch (c) {
    case 0x2f: case 0x22: case 0x5c: return c; // slash, quote, backslash
    case 0x62: return 0x08; // b
    case 0x66: return 0x0c; // f
    case 0x6e: return 0x0a; // n
    case 0x72: return 0x0d; // r
    case 0x74: return 0x09; // t
  }
  return -1;
}

// hex4u reads n backslashes at b[at], then uXXXX; -1 when they are not there.
function hex4u(b, at, n) {
  if (b.length - at < n + 5 || b[at + n] !== 0x75) return -1; // u
  for (let k = 0; k < n; k++) if (b[at + k] !== 0x5c) return -1;
  let r = 0;
  for (let k = at + n + 1; k < at + n + 5; k++) {
    const h = hexDigit(b[k]);
    if (h < 0) return -1;
    r = (r << 4) | h;
  }
  return r;
}

// percent matches cp's UTF-8 bytes each written as itself or as %XX, or a
// space written as +.
function percent(b, at, raw, cp) {
  if (cp === 0x20 && b[at] === 0x2b) return 1;
  let i = at;
  for (const want of raw) {
    if (i < b.length && b[i] === want) i++;
    else if (i + 2 < b.length && b[i] === 0x25) {
      const hi = hexDigit(b[i + 1]), lo = hexDigit(b[i + 2]);
      if (hi < 0 || lo < 0 || ((hi << 4) | lo) !== want) return 0;
      i += 3;
    } else return 0;
  }
  return i - at;
}

function hexDigit(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** readCapped reads at most cap bytes of a response body. */
async function readCapped(res, cap) {
  const reader = res.body.getReader();
  const chunks = [];
  let n = 0;
  while (n < cap) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.byteLength;
  }
  if (n >= cap) reader.cancel().catch(() => {});
  const out = new Uint8Array(Math.min(n, cap));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, Math.min(c.byteLength, out.length - at));
    out.set(part, at);
    at += part.byteLength;
    if (at >= out.length) break;
  }
  return out;
}
