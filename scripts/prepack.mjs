// prepack.mjs runs before `npm pack`: the package ships the built engine
// (site/main.wasm, site/wasm_exec.js and site/packs/, made by `make wasm`,
// never committed), so a tarball without it is refused.
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const missing = ["site/main.wasm", "site/wasm_exec.js", "site/packs/index.json"].filter((f) => {
  try {
    return !statSync(path.join(root, f)).isFile();
  } catch {
    return true;
  }
});
if (missing.length) {
  console.error(`npm pack: ${missing.join(", ")} missing: the package ships the built engine; run make wasm first`);
  process.exit(1);
}
