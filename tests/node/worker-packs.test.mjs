// scripts/worker-packs.mjs, which writes the Worker's packs module, says
// whether the bundle it completes is within Cloudflare's 10 MiB script
// limit: a build over it warns that wrangler deploy refuses it and how to
// deploy instead (README, On Cloudflare Workers; the measure itself is
// TestTheWorkerBundleFitsCloudflare's, wrangler's own).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../scripts/worker-packs.mjs", import.meta.url));

function build(programBytes) {
  const out = mkdtempSync(path.join(tmpdir(), "worker-packs-"));
  writeFileSync(path.join(out, "app.wasm"), randomBytes(programBytes)); // random: gzip cannot shrink it
  const r = spawnSync(process.execPath, [script, out], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return { out, r };
}

test("a bundle within the limit says so", () => {
  const { out, r } = build(1 << 20);
  assert.match(r.stdout, /worker bundle: about \d+ KiB compressed, within Cloudflare's 10240 KiB script limit/);
  assert.equal(r.stderr, "");
  assert.match(readFileSync(path.join(out, "packs.mjs"), "utf8"), /export const packs = \[/);
});

test("a bundle over the limit warns that wrangler deploy refuses it, and how to deploy", () => {
  const { r } = build(11 << 20);
  assert.match(r.stderr, /OVER Cloudflare's 10240 KiB script limit/);
  assert.match(r.stderr, /wrangler deploy refuses it/);
  assert.match(r.stderr, /WORKER_PACKS= \(the seed only\)/);
});
