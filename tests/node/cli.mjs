// cli.mjs builds the command line (cmd/ragagent, and the loopback fake
// Gemini API, cmd/fakegemini) once per test file and runs it, so the node
// module's values can be compared with what `ragagent ... --json` prints
// for the same inputs.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { root } from "./engine.mjs";

const run = promisify(execFile);
let built;

/**
 * build compiles bin/ragagent and bin/fakegemini into a temporary folder
 * (once), or, when RAGAGENT_BIN names a folder (make test-node builds bin/
 * once for every test file), returns that folder.
 */
export function build() {
  built ??= (async () => {
    const prebuilt = process.env.RAGAGENT_BIN;
    if (prebuilt) {
      for (const name of ["ragagent", "fakegemini"]) {
        if (!existsSync(path.join(prebuilt, name))) throw new Error(`RAGAGENT_BIN=${prebuilt} holds no ${name}: make build, or unset it to build here`);
      }
      return prebuilt;
    }
    const dir = mkdtempSync(path.join(tmpdir(), "ragagent-cli-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    for (const name of ["ragagent", "fakegemini"]) {
      await run(process.env.GO ?? "go", ["build", "-o", path.join(dir, name), `./cmd/${name}`], { cwd: root });
    }
    return dir;
  })();
  return built;
}

/**
 * ragagent runs the command line with args (and env added to a clean
 * environment without keys) and returns its stdout parsed as JSON.
 */
export async function ragagent(args, env = {}) {
  const dir = await build();
  const clean = { ...process.env };
  delete clean.GOOGLE_API_KEY;
  delete clean.GEMINI_API_KEY;
  const { stdout } = await run(path.join(dir, "ragagent"), args, { cwd: root, env: { ...clean, ...env }, maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

/**
 * fakeGemini starts the loopback fake Gemini API (the scripted policy's
 * answers) and returns its endpoint URL and a stop function.
 */
export async function fakeGemini() {
  const dir = await build();
  const child = spawn(path.join(dir, "fakegemini"), ["--quiet"], { stdio: ["ignore", "pipe", "inherit"] });
  const base = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
    child.on("exit", (code) => reject(new Error(`fakegemini exited with ${code}`)));
  });
  return {
    endpoint: `${base}/v1beta/models/gemini-3.8-flash:generateContent`,
    stop: () => new Promise((resolve) => { child.once("exit", resolve); child.kill("SIGTERM"); }),
  };
}

/**
 * withoutPriceHint drops the front end's hint from each price's source
 * ("; override with --price" on the command line's run and eval, none on
 * its replay, the node module's own sentence in its engine): the one
 * thing each front end says in its own words.
 */
export function withoutPriceHint(value) {
  return JSON.parse(JSON.stringify(value, (k, v) => (k === "source" && typeof v === "string" ? v.replace(/; (change it in the price fields|override with --price|the shipped list price \(the command line's --price changes it\))$/, "") : v)));
}

/**
 * withoutTimes drops what a clock measured (an eval experiment's seconds
 * and mean_seconds per path), which two runs of the same input never share.
 */
export function withoutTimes(value) {
  return JSON.parse(JSON.stringify(value, (k, v) => (k === "seconds" || k === "mean_seconds" ? undefined : v)));
}
