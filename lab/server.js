// server.js: the node module's lab against a team's server (the server
// edition, `ragagent serve-api`), so a CI job gates on the shared
// server's figures with the same calls and values as a local lab. The
// client itself (retrieval and eval as experiments, their SSE progress, the
// server's refusals as LabErrors, the token only in the Authorization
// header) is site/common/serverlab.js, the one the page uses too; this
// module adds what only node does: uploading a pack folder, and the
// local-only calls' refusals. See docs/node.md, "Against a team's
// server".
import { readFile } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { CODES, LabError } from "./errors.js";
import { ServerLab as Client, serverOf } from "../site/common/serverlab.js";

export { serverOf };

/**
 * ServerLab is a lab whose calls run on a team's server: the shared
 * client's retrieval, eval (the scripted policy), readCases, corpora,
 * packs and close, with
 * uploadCorpus (a pack folder read from disk), and the local lab's other
 * calls refused with not_on_server.
 */
export class ServerLab extends Client {
  /**
   * uploadCorpus uploads a pack folder (`ragagent corpus build`'s:
   * manifest.json and the passages file it names) to the server as the
   * token's own (POST /v1/corpora: a gzip'd tar of the two files) and
   * returns the server's answer ({id, passages, sha256, origin, bytes,
   * ...}). The server checks the pack; its refusal (invalid_pack,
   * corpus_exists, corpus_quota, ...) rejects with its code.
   *
   * @param {{folder: string}} options
   */
  async uploadCorpus({ folder } = {}) {
    if (typeof folder !== "string" || folder === "") {
      throw new LabError(CODES.INVALID_ARGUMENT, "uploadCorpus: folder must be a pack folder's path");
    }
    const manifestPath = path.join(folder, "manifest.json");
    let manifest;
    try {
      manifest = await readFile(manifestPath);
    } catch (err) {
      throw new LabError(CODES.INVALID_ARGUMENT, `uploadCorpus: ${manifestPath}: ${err.message}`, { cause: err });
    }
    let name;
    try {
      name = JSON.parse(manifest.toString("utf8")).passages_file;
    } catch (err) {
      throw new LabError(CODES.INVALID_ARGUMENT, `uploadCorpus: ${manifestPath}: not valid JSON: ${err.message}`, { cause: err });
    }
    if (typeof name !== "string" || name === "" || path.basename(name) !== name || name.startsWith(".")) {
      throw new LabError(CODES.INVALID_ARGUMENT, `uploadCorpus: ${manifestPath}: not a ragagent-corpus/1 manifest (passages_file a plain file name)`);
    }
    let passages;
    try {
      passages = await readFile(path.join(folder, name));
    } catch (err) {
      throw new LabError(CODES.INVALID_ARGUMENT, `uploadCorpus: ${path.join(folder, name)}: ${err.message}`, { cause: err });
    }
    return this.uploadArchive(gzipSync(tar([["manifest.json", manifest], [name, passages]])));
  }

  /** replay is local only: it rejects with not_on_server. */
  async replay() { throw localOnly("replay"); }
  /** run is local only: it rejects with not_on_server. */
  async run() { throw localOnly("run"); }
  /** tune is local only: it rejects with not_on_server. */
  async tune() { throw localOnly("tune"); }
  /** recording is local only: it rejects with not_on_server. */
  async recording() { throw localOnly("recording"); }
}

/**
 * tar writes files ([name, bytes] pairs) as a ustar archive: one 512-byte
 * header and the data padded to 512 bytes each, then two zero blocks.
 */
export function tar(files) {
  const blocks = [];
  for (const [name, data] of files) {
    const h = Buffer.alloc(512);
    const put = (text, at, len) => h.write(text, at, len, "ascii");
    const octal = (n, len) => n.toString(8).padStart(len - 1, "0");
    if (Buffer.byteLength(name) > 100) throw new LabError(CODES.INVALID_ARGUMENT, `uploadCorpus: ${name}: a name over 100 bytes`);
    h.write(name, 0, 100, "utf8");
    put(octal(0o644, 8), 100, 8);
    put(octal(0, 8), 108, 8);
    put(octal(0, 8), 116, 8);
    put(octal(data.length, 12), 124, 12);
    put(octal(0, 12), 136, 12);
    put("        ", 148, 8);
    put("0", 156, 1);
    put("ustar\u000000", 257, 8);
    let sum = 0;
    for (const b of h) sum += b;
    put(`${octal(sum, 7)}\u0000 `, 148, 8);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function localOnly(name) {
  return new LabError(CODES.NOT_ON_SERVER, `${name} runs in this process only: a server lab runs retrieval, eval (scripted), corpora and uploadCorpus (open a local lab with openLab() for ${name})`);
}
