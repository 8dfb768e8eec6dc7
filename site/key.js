// key.js is the only module that ever holds the Gemini key. It owns the key
// field's value, the "remember for this tab" choice (sessionStorage) and
// the Forget button,
// sends each live request with the key as its x-goog-api-key header (and
// only to an endpoint this page allows), and removes the key from any reply
// body before anything else sees it. Other modules ask hasKey() and hand
// send() the request; the key string never leaves this module.

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
  input.addEventListener("input", () => {
    apiKey = input.value;
    document.getElementById("key-status").textContent = "";
    if (remember.checked) sessionStorage.setItem(KEY_STORAGE, apiKey);
    for (const fn of listeners) fn();
  });
  remember.addEventListener("change", () => {
    if (remember.checked) sessionStorage.setItem(KEY_STORAGE, apiKey);
    else sessionStorage.removeItem(KEY_STORAGE);
  });
  document.getElementById("key-forget").addEventListener("click", () => {
    apiKey = "";
    input.value = "";
    remember.checked = false;
    try { sessionStorage.removeItem(KEY_STORAGE); } catch { /* storage blocked: nothing was remembered */ }
    document.getElementById("key-status").textContent = "The key is forgotten: gone from this page's memory and this tab's storage.";
    for (const fn of listeners) fn();
  });
}

/** hasKey says whether a key was entered (never what it is). */
export function hasKey() {
  return apiKey !== "";
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
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", [KEY_HEADER]: apiKey },
    body,
    redirect: "manual",
    credentials: "omit",
    cache: "no-store",
    referrerPolicy: "no-referrer",
    signal,
  });
  if (res.type === "opaqueredirect") return { status: 300, body: new Uint8Array(0) };
  let bytes = await readCapped(res, responseBytes + 1);
  if (!res.ok) bytes = redact(bytes); // an error body that echoes the key must not reach the engine
  return { status: res.status, body: bytes };
}

/** redact replaces every occurrence of the key in a reply body, as the
 * native transport does, so the engine, a run's detail and the console
 * never see it. Only error bodies can echo a request header back. */
function redact(bytes) {
  if (!apiKey) return bytes;
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (!text.includes(apiKey)) return bytes;
  return new TextEncoder().encode(text.split(apiKey).join("[redacted]"));
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
