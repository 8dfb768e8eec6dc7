// live.js is the node module's side of a live Gemini run: the key from the
// environment (as the command line reads it), and the engine's post hook
// (wasm/transport.go's fetchTransport), which sends the engine's request
// with the key as its x-goog-api-key header. The engine keeps the rest of
// the command line's caps: the endpoint (the Gemini API's, or a loopback
// test double's), the request allowance, the timeout (the run's remaining
// deadline, at most 45 s), the response cap and the recording. The key
// never enters the engine: every reply is redacted before it does, with
// the page's redaction (site/common/key.js, core/secret's rows).
import { KEY_HEADER, MIN_KEY, contains, redact } from "../site/common/key.js";
import { CODES, LabError } from "./errors.js";

// Go's unicode.IsSpace at either end, which strings.TrimSpace trims.
const EDGE_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** The response cap when the engine does not say (core/gemini's MaxResponseBytes). */
const RESPONSE_BYTES = 262144;

/**
 * keyFromEnv is the key as the command line reads it: GOOGLE_API_KEY, else
 * GEMINI_API_KEY, trimmed; one shorter than 16 characters is refused as
 * not a key, naming its variable, and no key at all with missing_api_key.
 *
 * @param {Record<string, string | undefined>} env
 */
export function keyFromEnv(env) {
  for (const name of ["GOOGLE_API_KEY", "GEMINI_API_KEY"]) {
    const key = String(env[name] ?? "").replace(EDGE_SPACE, "");
    if (key === "") continue;
    const length = [...key].length;
    if (length < MIN_KEY) {
      throw new LabError("missing_api_key", `${name} is not an API key: it is ${length} long, a key at least ${MIN_KEY} characters (Gemini's are 39); set the key, or unset ${name}`);
    }
    return key;
  }
  throw new LabError("missing_api_key", "policy gemini needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent");
}

/**
 * livePost is the engine's post(endpoint, body, {signal, timeoutMs}): a
 * POST with the key, no redirect followed (one reads as its 3xx status),
 * no retry, aborted at the engine's timeout or signal, the reply read up
 * to the cap plus one byte (so the engine sees it was over) and redacted.
 * A failure rejects with the engine's error kinds (URLError, TimeoutError).
 */
export function livePost(key, responseBytes = RESPONSE_BYTES) {
  return async (endpoint, body, { signal, timeoutMs } = {}) => {
    const signals = [signal].filter(Boolean);
    if (Number.isFinite(timeoutMs)) signals.push(AbortSignal.timeout(Math.max(0, timeoutMs)));
    const combined = signals.length ? AbortSignal.any(signals) : undefined;
    let res;
    try {
      res = await fetch(endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json", [KEY_HEADER]: key },
        body,
        redirect: "manual",
        signal: combined,
      });
    } catch (err) {
      const timedOut = err?.name === "TimeoutError" || (combined?.aborted && combined.reason?.name === "TimeoutError");
      throw { kind: timedOut ? "TimeoutError" : "URLError", message: redactText(String(err?.cause?.message ?? err?.message ?? err), key) };
    }
    try {
      return { status: res.status, body: redact(await readCapped(res, responseBytes + 1), key) };
    } catch (err) {
      const timedOut = err?.name === "TimeoutError" || combined?.reason?.name === "TimeoutError";
      throw { kind: timedOut ? "TimeoutError" : "URLError", message: redactText(String(err?.message ?? err), key) };
    }
  };
}

// readCapped reads at most limit bytes of a response body, then stops.
async function readCapped(res, limit) {
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks = [];
  let n = 0;
  while (n < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.length;
  }
  await reader.cancel().catch(() => {});
  const out = new Uint8Array(Math.min(n, limit));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, Math.min(c.length, out.length - at));
    out.set(part, at);
    at += part.length;
    if (at === out.length) break;
  }
  return out;
}

function redactText(text, key) {
  return new TextDecoder().decode(redact(new TextEncoder().encode(text), key));
}

/**
 * screenKey refuses to write text that still holds the key in any form
 * (the page's last check on a download; the command line's keyguard).
 */
export function screenKey(text, key, file) {
  if (contains(new TextEncoder().encode(text), key)) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${file} was not written: the recording holds the API key`);
  }
}
