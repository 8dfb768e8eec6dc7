// The D1 wire form's JS half (the Go half, with the form itself, is
// internal/server/store/wire.go): a batch of statements arrives from the Go
// program as one Uint8Array and its rows go back as one, instead of a JS
// value made, read and finalized per argument and per column. Every count
// and length is a little-endian uint32, strings are UTF-8, a value is
// 0 (null), 1 and a float64, or 2 and a string.

const NULL = 0;
const NUMBER = 1;
const STRING = 2;

// Text Go sends that is not UTF-8 becomes U+FFFD, as a Go string given
// to syscall/js does.
const decoder = new TextDecoder("utf-8");
const encoder = new TextEncoder();

// decodeBatch reads a batch: [sql, args] pairs.
export function decodeBatch(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const u32 = () => {
    const n = view.getUint32(at, true);
    at += 4;
    return n;
  };
  const string = () => {
    const n = u32();
    if (at + n > bytes.byteLength) throw new RangeError("d1 wire: a string past the end");
    const s = decoder.decode(bytes.subarray(at, at + n));
    at += n;
    return s;
  };
  const stmts = [];
  for (let i = u32(); i > 0; i--) {
    const sql = string();
    const args = [];
    for (let j = u32(); j > 0; j--) {
      const tag = bytes[at++];
      if (tag === NULL) args.push(null);
      else if (tag === NUMBER) {
        args.push(view.getFloat64(at, true));
        at += 8;
      } else if (tag === STRING) args.push(string());
      else throw new RangeError("d1 wire: an argument tagged " + tag);
    }
    stmts.push([sql, args]);
  }
  if (at !== bytes.byteLength) throw new RangeError("d1 wire: bytes after the batch");
  return stmts;
}

// encodeResults writes each statement's rows (arrays of column values:
// null, number or string; anything else is refused) as one Uint8Array.
export function encodeResults(results) {
  let buf = new Uint8Array(4096);
  let view = new DataView(buf.buffer);
  let at = 0;
  const room = (n) => {
    if (at + n <= buf.byteLength) return;
    let size = buf.byteLength * 2;
    while (size < at + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(buf.subarray(0, at));
    buf = grown;
    view = new DataView(buf.buffer);
  };
  const u32 = (n) => {
    room(4);
    view.setUint32(at, n, true);
    at += 4;
  };
  u32(results.length);
  for (const rows of results) {
    u32(rows.length);
    for (const row of rows) {
      u32(row.length);
      for (const v of row) {
        if (v === null || v === undefined) {
          room(1);
          buf[at++] = NULL;
        } else if (typeof v === "number") {
          room(9);
          buf[at++] = NUMBER;
          view.setFloat64(at, v, true);
          at += 8;
        } else if (typeof v === "string") {
          // At most 3 bytes a UTF-16 unit; the length goes in once known.
          room(5 + 3 * v.length);
          buf[at] = STRING;
          const { written } = encoder.encodeInto(v, buf.subarray(at + 5));
          view.setUint32(at + 1, written, true);
          at += 5 + written;
        } else {
          throw new TypeError("d1: a column value that is not a number, text or null");
        }
      }
    }
  }
  return buf.subarray(0, at);
}
