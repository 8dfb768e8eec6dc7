// The packed package (npm pack) installs offline into an empty project,
// from an empty cache with the registry unreachable, runs no install
// script, and is imported there by its name: the engine it ships replays
// the bundled comparison and knows the shipped packs.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { root } from "./engine.mjs";

const run = promisify(execFile);
const tmp = mkdtempSync(path.join(tmpdir(), "ragagent-pack-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

// Nothing may come from the network or a cache: the registry is a closed
// loopback port and the cache an empty folder.
const npmEnv = { ...process.env, npm_config_registry: "http://127.0.0.1:9/", npm_config_cache: path.join(tmp, "cache"), npm_config_update_notifier: "false", npm_config_audit: "false", npm_config_fund: "false" };

test("npm pack, then npm install --offline of the tarball, then import it by name", async () => {
  const { stdout: packed } = await run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: root, env: npmEnv, maxBuffer: 16 << 20 });
  const [info] = JSON.parse(packed);
  const files = info.files.map((f) => f.path).sort();
  for (const f of ["lab/index.js", "lab/index.d.ts", "lab/assert.js", "lab/embed.mjs", "site/main.wasm", "site/wasm_exec.js", "site/common/key.js", "site/common/laberror.js", "site/common/serverlab.js", "site/packs/index.json", "docs/node.md", "package.json"]) {
    assert.ok(files.includes(f), `the tarball ships ${f}`);
  }
  assert.ok(!files.some((f) => f.startsWith("tests/") || f.startsWith("core/") || f.startsWith("site/vendor/")), "only what the module uses");

  const app = path.join(tmp, "app");
  mkdirSync(app);
  writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  await run("npm", ["install", "--offline", path.join(tmp, info.filename)], { cwd: app, env: npmEnv });
  assert.deepEqual(readdirSync(path.join(app, "node_modules")).filter((d) => !d.startsWith(".")), ["ragagent-lab"], "nothing else is installed");
  const installed = JSON.parse(readFileSync(path.join(app, "node_modules", "ragagent-lab", "package.json"), "utf8"));
  assert.equal(installed.dependencies, undefined, "no dependencies");
  for (const s of ["preinstall", "install", "postinstall", "prepare"]) assert.equal(installed.scripts?.[s], undefined, `no ${s} script`);

  writeFileSync(path.join(app, "check.mjs"), `
    import { openLab, assertReplay } from "ragagent-lab";
    const lab = await openLab();
    const replayed = await lab.replay();
    assertReplay(replayed);
    console.log(JSON.stringify({ summary: replayed.summary, packs: await lab.packs() }));
    await lab.close();`);
  const { stdout } = await run(process.execPath, ["check.mjs"], { cwd: app });
  assert.deepEqual(JSON.parse(stdout), {
    summary: { fixed: { pass: 4, fail: 2, incomplete: 2 }, agent: { pass: 4, fail: 3, incomplete: 1 } },
    packs: ["seed", "python-3.11", "sqlite-3.40"],
  });

  // The embedder ships too, but its runtime (transformers.js) is a
  // devDependency: installed offline it says what to install, and loads nothing.
  const embed = await run(process.execPath, [path.join(app, "node_modules", "ragagent-lab", "lab", "embed.mjs"), "serve", "--model", path.join(root, "tests", "fixtures", "tiny-embedder")], { cwd: app })
    .then(() => assert.fail("the embedder started without its runtime"), (err) => err);
  assert.equal(embed.code, 1);
  const line = JSON.parse(embed.stdout);
  assert.equal(line.error.code, "runtime_missing");
  assert.match(line.error.message, /npm install @huggingface\/transformers@/);
});

test("npm pack refuses a checkout without the built engine", async () => {
  const bare = path.join(tmp, "bare");
  mkdirSync(path.join(bare, "scripts"), { recursive: true });
  writeFileSync(path.join(bare, "scripts", "prepack.mjs"), readFileSync(path.join(root, "scripts", "prepack.mjs")));
  await assert.rejects(run(process.execPath, [path.join(bare, "scripts", "prepack.mjs")]), (err) => /site\/main\.wasm, site\/wasm_exec\.js, site\/packs\/index\.json missing: .*run make wasm first/.test(err.stderr));
});
