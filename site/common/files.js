// files.js reads a file the person gives the page (picked or dropped),
// bounded as the command line bounds the files it opens: one over the
// engine's cap (constants.max_input_bytes) is refused before anything is
// read, one that cannot be read (moved, changed or removed since it was
// chosen, not readable, a folder) is named as such, and text must be UTF-8,
// as the engine's strict reader wants it.

import { mib, plural } from "./format.js";

/** FileRefused is why a file given to the page was not read. */
export class FileRefused extends Error {
  constructor(message) {
    super(message);
    this.name = "FileRefused";
  }
}

/**
 * readText reads file (a File or Blob with a name) as UTF-8 text of at
 * most maxBytes bytes, or rejects with a FileRefused saying why, having
 * read nothing when the file is over the cap.
 */
export async function readText(file, maxBytes) {
  const name = file && typeof file.name === "string" && file.name ? file.name : "The file";
  if (!file || typeof file.size !== "number" || typeof file.slice !== "function") throw new FileRefused(`${name} is not a file`);
  if (file.size > maxBytes) {
    throw new FileRefused(`${name} is ${mib(file.size)} MiB (${file.size} bytes), over the cap of ${maxBytes} bytes (${mib(maxBytes)} MiB) on a file the lab reads; it was not read`);
  }
  let bytes;
  try {
    // One byte past the cap tells a file that grew since it was chosen.
    bytes = new Uint8Array(await file.slice(0, maxBytes + 1).arrayBuffer());
  } catch (err) {
    throw new FileRefused(`${name} could not be read (${err && err.name ? err.name : "an error"}): it may be a folder, unreadable, or moved or changed since it was chosen`);
  }
  if (bytes.length > maxBytes) throw new FileRefused(`${name} grew past the cap of ${maxBytes} bytes since it was chosen; it was not read`);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new FileRefused(`${name} is not UTF-8 text`);
  }
}

/**
 * dropped is the one file a drop carries, or a FileRefused: a drop of
 * several files, of a folder or of no file at all is refused.
 */
export function dropped(dataTransfer) {
  const files = [...(dataTransfer?.files || [])];
  if (files.length !== 1) return new FileRefused(files.length ? `${plural(files.length, "file")} were dropped; drop one recording at a time` : "Nothing that is a file was dropped");
  const entry = dataTransfer.items?.[0]?.webkitGetAsEntry?.();
  if (entry && entry.isDirectory) return new FileRefused(`${files[0].name} is a folder, not a recording file`);
  return files[0];
}
