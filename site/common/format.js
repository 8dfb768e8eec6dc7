// format.js writes numbers, amounts, sizes and times for reading, the
// same way everywhere in the page (and in the cross-encoder's scorer,
// under node too). It imports nothing and touches no document, so node
// tests import it as it is.

/** DASH stands for a value that is not there. */
export const DASH = "–";

/** num formats a number to a fixed number of decimals (whole numbers as they are). */
export function num(x, digits) {
  if (x === null || x === undefined) return DASH;
  return digits === 0 ? String(x) : Number(x).toFixed(digits);
}

/** sig formats a score to significant digits, so a bm25 of -4.9e-6 is not shown as -0.0000. */
export function sig(x, digits) {
  return x === null || x === undefined ? DASH : Number(x).toPrecision(digits);
}

/** score formats a score for reading: four significant digits, and a tiny
 * one (a bm25 of -6.22481e-6) in exponent form rather than a run of zeros;
 * show the exact value beside it (scoreCell's title). */
export function score(x) {
  if (x === null || x === undefined) return DASH;
  const n = Number(x);
  if (n !== 0 && Math.abs(n) < 1e-3) return n.toExponential(2);
  return String(Number(n.toPrecision(4)));
}

/** seconds formats milliseconds as seconds for reading (ms below one second). */
export function seconds(ms) {
  if (ms === null || ms === undefined) return DASH;
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

/** usd formats an amount of US dollars to six significant digits, which
 * shows list-price estimates (and their sums) as they are. */
export function usd(x) {
  if (x === null || x === undefined) return DASH;
  if (x !== 0 && Math.abs(x) < 1e-6) return `$${x.toExponential(2)}`;
  return `$${Number(x.toPrecision(6))}`;
}

/** mb formats a byte count in MB (10^6 bytes, as the README and the
 * cross-encoder's sizes count) with one decimal; the callers write "MB".
 * Every size the page shows in MB is written here. */
export function mb(n) {
  return (n / 1e6).toFixed(1);
}

/** mib formats a byte count in MiB (2^20 bytes) with one decimal, for the
 * engine's input cap, which is a whole number of MiB (64); the callers
 * write "MiB". */
export function mib(n) {
  return (n / 1048576).toFixed(1);
}

/** count writes a count of things for reading, thousands separated
 * ("12,352"), the one way the page writes a count. */
export function count(n) {
  return typeof n === "number" ? n.toLocaleString("en") : String(n);
}

/** plural is "1 thing" or "n things" (n written by count: "12,352 passages");
 * every count of things the page shows goes through it, so none reads
 * "1 trials". */
export function plural(n, word) {
  return `${count(n)} ${word}${n === 1 ? "" : "s"}`;
}

/** refusal is an engine error for reading: its message, which already
 * begins with its reason code when it has one ("invalid_cases: ..."), so
 * the code is never written twice; the code is added only to a message
 * that does not name it. */
export function refusal(err) {
  const message = String(err?.message ?? err);
  if (!err?.code || message.includes(err.code)) return message;
  return `${err.code}: ${err.detail || message}`;
}

/** stamp is a timestamp usable in a file name. */
export function stamp(date = new Date()) {
  return date.toISOString().replace(/[:.]/g, "-");
}
