// Writes the Worker's packs module (worker/build/packs.mjs) and copies
// each pack's gzip passages file beside it: node scripts/worker-packs.mjs
// OUTDIR PACKDIR... Each PACKDIR holds manifest.json and
// passages.sqlite.gz; the manifest goes in as text, the passages as a
// Data module (an ArrayBuffer, inflated by the run object that opens it).
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

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
