// modelhost.mjs serves a model folder on loopback laid out as the Hugging
// Face hub serves files (/{model}/resolve/{revision}/{path}), with the
// folder's ragagent-model.json manifest at /ragagent-model.json, CORS for
// any origin (as the hub sends), and each .onnx file behind a redirect to
// /cdn/... (as the hub redirects large files to its CDN). The tests and the
// benchmark start it; run alone it serves the tests' tiny cross-encoder for
// a demo of the page without a network:
//
//   node scripts/modelhost.mjs [--dir tests/fixtures/tiny-cross-encoder] [--port 0]
//
// then serve the page with `--connect <its URL>` and open
// /?modelHost=<its URL>#rerank (the page takes a model host only on loopback).
import http from "node:http";
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const TINY = path.join(root, "tests", "fixtures", "tiny-cross-encoder");

/**
 * startModelHost serves dir on 127.0.0.1. tamper is a set of paths whose
 * bytes are served changed (the last byte flipped); requests lists every
 * request's path. Resolves with {url, manifest, requests, stop}.
 */
export function startModelHost({ dir = TINY, port = 0, tamper = new Set() } = {}) {
  const manifest = JSON.parse(readFileSync(path.join(dir, "ragagent-model.json"), "utf8"));
  const prefix = `/${manifest.model}/resolve/${encodeURIComponent(manifest.revision)}/`;
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    requests.push(url.pathname);
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader("Access-Control-Expose-Headers", "Content-Length");
    let rel = null;
    if (url.pathname === "/ragagent-model.json") rel = "ragagent-model.json";
    else if (url.pathname.startsWith(prefix)) {
      rel = url.pathname.slice(prefix.length);
      if (rel.endsWith(".onnx")) {
        res.writeHead(302, { Location: `/cdn/${rel}` });
        return res.end();
      }
    } else if (url.pathname.startsWith("/cdn/")) rel = url.pathname.slice(5);
    const file = rel && path.join(dir, rel);
    if (!file || !file.startsWith(dir + path.sep) || rel.includes("..") || !existsSync(file)) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      return res.end("not found");
    }
    let body = readFileSync(file);
    if (tamper.has(rel)) {
      body = Buffer.from(body);
      body[body.length - 1] ^= 1;
    }
    res.writeHead(200, { "Content-Type": rel.endsWith(".json") ? "application/json" : "application/octet-stream", "Content-Length": body.length });
    res.end(req.method === "HEAD" ? undefined : body);
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      resolve({ url, manifest, requests, stop: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) });
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const arg = (name, def) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : def;
  };
  const host = await startModelHost({ dir: path.resolve(arg("--dir", TINY)), port: Number(arg("--port", 0)) });
  console.log(`serving ${host.manifest.model} at ${host.url}`);
}
