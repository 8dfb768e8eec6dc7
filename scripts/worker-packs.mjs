// Writes the Worker's packs module (worker/build/packs.mjs) and copies
// each pack's gzip passages file beside it: node scripts/worker-packs.mjs
// OUTDIR PACKDIR... Each PACKDIR holds manifest.json and
// passages.sqlite.gz; the manifest goes in as text, the passages as a
// Data module (an ArrayBuffer, inflated by the run object that opens it).
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { gzipSync } from "node:zlib";

// LIMIT is Cloudflare's compressed script limit on the paid plan (10 MiB):
// wrangler deploy refuses a larger Worker. TestTheWorkerBundleFitsCloudflare
// measures the bundle as wrangler does (deploy --dry-run).
const LIMIT = 10 << 20;

const [out, ...dirs] = process.argv.slice(2);
if (!out) {
  console.error("usage: node scripts/worker-packs.mjs OUTDIR [PACKDIR...]");
  process.exit(2);
}
mkdirSync(join(out, "packs"), { recursive: true });
const lines = [];
const entries = [];
let bytes = 0;
dirs.forEach((dir, i) => {
  const manifest = readFileSync(join(dir, "manifest.json"), "utf8");
  const id = JSON.parse(manifest).id;
  if (typeof id !== "string" || !/^[a-z0-9][a-z0-9.-]*$/.test(id)) {
    console.error(`${dir}: the manifest's id is not a pack id`);
    process.exit(1);
  }
  const name = `${id}.passages.sqlite.gz`;
  copyFileSync(join(dir, "passages.sqlite.gz"), join(out, "packs", name));
  bytes += statSync(join(out, "packs", name)).size;
  lines.push(`import p${i} from "./packs/${name}";`);
  entries.push(`  { manifest: ${JSON.stringify(manifest)}, passages: p${i} },`);
  console.log(`worker pack ${id} (${basename(dir)}): ${statSync(join(out, "packs", name)).size} bytes gzip`);
});
writeFileSync(join(out, "packs.mjs"), `${lines.join("\n")}\nexport const packs = [\n${entries.join("\n")}\n];\n`);
console.log(`worker packs: ${dirs.length}, ${bytes} bytes gzip`);
// About what wrangler will measure: the program and scripts gzipped, the
// packs as they are (already gzip).
let total = bytes;
for (const f of ["app.wasm", "wasm_exec.js", "worker.mjs", "d1wire.mjs", "r2.mjs", "packs.mjs"]) {
  try { total += gzipSync(readFileSync(join(out, f))).length; } catch { /* not built yet */ }
}
const kib = (n) => `${Math.round(n / 1024)} KiB`;
if (total >= LIMIT) {
  console.warn(`worker bundle: about ${kib(total)} compressed, OVER Cloudflare's ${kib(LIMIT)} script limit: ` +
    "fine under wrangler dev and workerd, but wrangler deploy refuses it. To deploy, build with WORKER_PACKS= " +
    "(the seed only) and upload the packs to R2 (POST /v1/corpora; README, On Cloudflare Workers).");
} else {
  console.log(`worker bundle: about ${kib(total)} compressed, within Cloudflare's ${kib(LIMIT)} script limit`);
}
