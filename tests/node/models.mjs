// models.mjs holds what the model runner's tests share (embed.test.mjs,
// score.test.mjs): a model folder copied to change, and `node
// lab/embed.mjs serve` started with its stdout read a line at a time.
import { after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";
import { root } from "./engine.mjs";

/** SCRIPT is the model runner. */
export const SCRIPT = path.join(root, "lab/embed.mjs");

/** SERVE bounds a serve test: a server that stops answering fails it. */
export const SERVE = { timeout: 60_000 };

/** copyModel copies the model folder from to a temporary folder and lets change() alter it. */
export function copyModel(from, change) {
  const dir = mkdtempSync(path.join(tmpdir(), "ragagent-model-test-"));
  cpSync(from, dir, { recursive: true });
  change?.(dir);
  return dir;
}

// Servers a failed test left running are ended, so the run still finishes.
const children = new Set();
after(() => children.forEach((c) => c.kill()));

/** startServer spawns `node lab/embed.mjs serve`, with next() reading its stdout a line at a time. */
export function startServer(args, { cwd = root, script = SCRIPT } = {}) {
  const child = spawn(process.execPath, [script, "serve", ...args], { cwd, stdio: ["pipe", "pipe", "pipe"] });
  children.add(child);
  child.on("exit", () => children.delete(child));
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child, exited, stderr: () => stderr,
    async next() {
      const { value, done } = await lines.next();
      assert.ok(!done, `the server closed stdout early; stderr: ${stderr}`);
      return JSON.parse(value); // every stdout line is a protocol line: JSON
    },
    send: (value) => child.stdin.write(typeof value === "string" ? `${value}\n` : `${JSON.stringify(value)}\n`),
    async rest() {
      const out = [];
      for (let r = await lines.next(); !r.done; r = await lines.next()) out.push(r.value);
      return out;
    },
  };
}
