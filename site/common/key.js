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
    document.getElementById("key-status").textContent = tooShort(apiKey)
      ? `That is not an API key: a key has at least ${MIN_KEY} characters (Gemini's have 39), so it is not used.`
      : "";
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

/** hasKey says whether a key was entered (never what it is): white space
 * alone is none, and so is anything shorter than MIN_KEY characters. */
export function hasKey() {
  return usable(apiKey) !== "";
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
  // here first makes what is sent and what is redacted one string. A key
  // too short to be one is never sent.
  const sent = usable(apiKey);
  if (sent === "") {
    throw { kind: "URLError", message: `no API key (a key has at least ${MIN_KEY} characters); nothing was sent` };
  }
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
// each of its characters written as itself (ASCII letters in either case),
// as a JSON escape (\u0041, \/, \n, the backslash doubled any number of
// times, a surrogate pair above U+FFFF), percent-encoded (%41, + for a
// space) or as an HTML reference (&#65;, &#x41;, &amp;, &sol;), in any mix,
// with white space between characters; and the key's bytes anywhere in
// base64 text (either alphabet, padded or not, any alignment, in lines).
// A key shorter than MIN_KEY characters is not a key: the field refuses it
// (hasKey is false, send refuses), and nothing looks for it.

/** MARK replaces the key where it was found (core/secret's Mark). */
export const MARK = "[redacted key]";
const MARK_BYTES = new TextEncoder().encode(MARK);

/** MIN_KEY is the fewest characters a key has (core/secret's MinKey). */
export const MIN_KEY = 16;

// Go's unicode.IsSpace, which strings.TrimSpace trims (String.prototype.trim
// differs: it trims U+FEFF and keeps U+0085).
const EDGE_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** asSent is the key as sent: trimmed of white space. */
function asSent(key) {
  return key.replace(EDGE_SPACE, "");
}

/** tooShort says whether a typed key is something but not a key. */
function tooShort(key) {
  const n = [...asSent(key)].length;
  return n > 0 && n < MIN_KEY;
}

/** usable is the key as sent, or "" when there is none or it is too short. */
function usable(key) {
  return tooShort(key) ? "" : asSent(key);
}

const utf8 = (cp) => new TextEncoder().encode(String.fromCodePoint(cp));

/** patterns are what to look for (core/secret's patterns): the key's
 * characters, {cp, raw} each (raw its UTF-8 bytes; a lone surrogate is
 * U+FFFD, as Go sees it), letters folded, then the base64 digits its bytes
 * always produce; null for no key. */
function patterns(key) {
  const k = usable(key);
  if (k === "") return null;
  const cps = [...k].map((ch) => {
    const cp = ch.codePointAt(0);
    return cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp;
  });
  const out = [{ chars: cps.map((cp) => ({ cp, raw: utf8(cp) })), fold: true }];
  const bytes = new TextEncoder().encode(String.fromCodePoint(...cps));
  const seen = new Set();
  for (const url of [false, true]) {
    for (const run of base64Runs(bytes, url)) {
      if (seen.has(run)) continue;
      seen.add(run);
      out.push({ chars: [...run].map((ch) => ({ cp: ch.charCodeAt(0), raw: Uint8Array.of(ch.charCodeAt(0)) })), fold: false });
    }
  }
  return out;
}

// base64Runs are the digits that encode the key's bytes alone when they
// start at byte offset 0, 1 and 2 of a 3-byte group (core/secret's).
function base64Runs(bytes, url) {
  const out = [];
  for (let o = 0; o < 3; o++) {
    let bin = "\0".repeat(o);
    for (const b of bytes) bin += String.fromCharCode(b);
    let digits = btoa(bin).replace(/=+$/, "");
    if (url) digits = digits.replace(/\+/g, "-").replace(/\//g, "_");
    out.push(digits.slice(Math.floor((8 * o + 5) / 6), Math.floor((8 * o + 8 * bytes.length) / 6)));
  }
  return out;
}

/** redact returns bytes with every occurrence of key, in any of its forms,
 * replaced by MARK: bytes itself when there is none (or no key). */
export function redact(bytes, key) {
  const ps = patterns(key);
  if (!ps) return bytes;
  const parts = [];
  let last = 0;
  for (let i = 0; i < bytes.length;) {
    const end = matchAny(bytes, i, ps);
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
  const ps = patterns(key);
  if (!ps) return false;
  for (let i = 0; i < bytes.length; i++) if (matchAny(bytes, i, ps) >= 0) return true;
  return false;
}

function matchAny(b, at, ps) {
  for (const p of ps) {
    const end = match(b, at, p);
    if (end >= 0) return end;
  }
  return -1;
}

// match returns where an occurrence of p starting at b[at] ends, or -1;
// white space may come before each character after the first that is not
// white space, looked for only when the character is not right there.
function match(b, at, p) {
  let i = at;
  for (let j = 0; j < p.chars.length; j++) {
    const c = p.chars[j];
    let n = char(b, i, c, p.fold);
    if (n === 0 && j > 0 && !isSpace(c.cp)) {
      const k = skipSpace(b, i, c, p.fold);
      if (k > i) {
        i = k;
        n = char(b, k, c, p.fold);
      }
    }
    if (n === 0) return -1;
    i += n;
  }
  return i;
}

// SPACES are the white space that may split an echo, in core/secret's order.
const SPACES = [0x20, 0x0a, 0x0d, 0x09, 0x0c, 0x0b].map((cp) => ({ cp, raw: Uint8Array.of(cp) }));
const isSpace = (cp) => SPACES.some((s) => s.cp === cp);

// skipSpace returns where the white space at b[i] ends, or where c is spelled first.
function skipSpace(b, i, c, fold) {
  while (i < b.length && char(b, i, c, fold) === 0) {
    let n = 0;
    for (const s of SPACES) if ((n = char(b, i, s, false)) > 0) break;
    if (n === 0) return i;
    i += n;
  }
  return i;
}

const isLetter = (cp) => (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
const lower = (cp) => (cp >= 0x41 && cp <= 0x5a ? cp + 0x20 : cp);
// same says whether cp is r, or with fold the other case of an ASCII letter r.
const same = (cp, r, fold) => cp === r || (fold && isLetter(r) && lower(cp) === lower(r));

// char returns how many bytes at b[at] spell the character c, or 0: an
// escape, a percent-encoding or a reference first, else c itself.
function char(b, at, c, fold) {
  if (at >= b.length) return 0;
  let n = 0;
  if (b[at] === 0x5c) n = jsonEscape(b, at, c.cp, fold); // backslash
  else if (b[at] === 0x25 || b[at] === 0x2b) n = percent(b, at, c, fold); // % or +
  else if (b[at] === 0x26) n = htmlReference(b, at, c.cp, fold); // &
  if (n > 0) return n;
  const { raw } = c;
  if (raw.length === 1) return same(b[at], c.cp, fold) ? 1 : 0;
  if (b.length - at < raw.length) return 0;
  for (let k = 0; k < raw.length; k++) if (b[at + k] !== raw[k]) return 0;
  return raw.length;
}

// jsonEscape matches a JSON escape of cp at b[at]: \uXXXX (a surrogate pair
// above U+FFFF) or a short escape, its backslash doubled any number of times.
function jsonEscape(b, at, cp, fold) {
  let n = 0;
  while (at + n < b.length && b[at + n] === 0x5c) n++;
  if (at + n < b.length && shortEscape(b[at + n]) === cp) return n + 1;
  const u = hex4u(b, at, n);
  if (u < 0) return 0;
  if (cp <= 0xffff && same(u, cp, fold)) return n + 5;
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

// percent matches c's UTF-8 bytes each written as %XX or as itself, or a
// space written as +.
function percent(b, at, c, fold) {
  if (c.cp === 0x20 && b[at] === 0x2b) return 1;
  const { raw } = c;
  let i = at;
  for (const want of raw) {
    if (i + 2 < b.length && b[i] === 0x25 && escaped(b[i + 1], b[i + 2], want, fold && raw.length === 1)) i += 3;
    else if (i < b.length && b[i] === want) i++;
    else return 0;
  }
  return i - at;
}

// escaped says whether %hl is the byte want.
function escaped(h, l, want, fold) {
  const hi = hexDigit(h), lo = hexDigit(l);
  return hi >= 0 && lo >= 0 && same((hi << 4) | lo, want, fold);
}

// htmlReference matches an HTML reference to cp at b[at]: &#65; or &#x41;
// (the semicolon optional) or a named one (case-sensitive).
function htmlReference(b, at, cp, fold) {
  if (b.length - at < 3) return 0;
  if (b[at + 1] === 0x23) { // #
    let i = at + 2, base = 10;
    if (b[i] === 0x78 || b[i] === 0x58) { i = at + 3; base = 16; } // x or X
    const start = i;
    let v = 0;
    while (i < b.length && i - start < 8) {
      const d = hexDigit(b[i]);
      if (d < 0 || d >= base) break;
      v = v * base + d;
      i++;
    }
    if (i === start || !same(v, cp, fold)) return 0;
    if (i < b.length && b[i] === 0x3b) i++; // ;
    return i - at;
  }
  let end = at + 1;
  while (end < b.length && end - at < 20 && isLetter(b[end])) end++;
  if (end === at + 1 || end >= b.length || b[end] !== 0x3b) return 0;
  const name = String.fromCharCode(...b.subarray(at + 1, end));
  return Object.hasOwn(ENTITIES, name) && same(ENTITIES[name].codePointAt(0), cp, fold) ? end - at + 1 : 0;
}

// ENTITIES are HTML's named references for the ASCII characters that have
// one, and white space (core/secret's entities).
const ENTITIES = {
  amp: "&", AMP: "&", lt: "<", LT: "<", gt: ">", GT: ">", quot: '"', QUOT: '"', apos: "'",
  sol: "/", bsol: "\\", plus: "+", equals: "=", lowbar: "_", UnderBar: "_", period: ".", colon: ":",
  comma: ",", excl: "!", num: "#", dollar: "$", percnt: "%", lpar: "(", rpar: ")", ast: "*",
  midast: "*", semi: ";", quest: "?", commat: "@", lsqb: "[", lbrack: "[", rsqb: "]", rbrack: "]",
  Hat: "^", grave: "`", DiacriticalGrave: "`", lcub: "{", lbrace: "{", rcub: "}", rbrace: "}",
  verbar: "|", vert: "|", VerticalLine: "|", Tab: "\t", NewLine: "\n",
};

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
