// lab/index.d.ts names every export of the module, and declares nothing
// the module does not export: editors complete exactly the API there is.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import * as lab from "ragagent-lab";
import { root } from "./engine.mjs";

const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const dts = readFileSync(path.join(root, pkg.exports["."].types), "utf8");

test("the package's one entry point has its types beside it", () => {
  assert.equal(pkg.name, "ragagent-lab");
  assert.deepEqual(Object.keys(pkg.exports), ["."], "one ES module");
  assert.equal(pkg.exports["."].types.replace(/\.d\.ts$/, ".js"), pkg.exports["."].default);
});

test("the .d.ts declares every export, and only those", () => {
  // A function declared more than once is one export with overloads.
  const declared = [...new Set([...dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)].map((m) => m[1]))].sort();
  assert.deepEqual(declared, Object.keys(lab).sort());
});

test("each exported function's parameters are typed", () => {
  for (const [name, value] of Object.entries(lab)) {
    if (typeof value !== "function" || /^[A-Z]/.test(name)) continue;
    const m = dts.match(new RegExp(`^export declare function ${name}\\(([^)]*)\\)`, "m"));
    assert.ok(m, name);
    const params = m[1].split(",").filter((p) => p.trim() !== "");
    assert.ok(params.length >= value.length, `${name}: every required parameter is declared`);
    for (const p of params) assert.match(p, /:\s*\S/, `${name}: ${p.trim()} has a type`);
  }
});

test("the Lab and ServerLab classes' methods are declared", () => {
  for (const cls of ["Lab", "ServerLab"]) {
    const start = dts.indexOf(`export declare class ${cls} `);
    const body = dts.slice(start, dts.indexOf("\n}\n", start));
    const methods = Object.getOwnPropertyNames(lab[cls].prototype).filter((n) => n !== "constructor");
    assert.ok(methods.length >= 5, cls);
    for (const m of methods) assert.match(body, new RegExp(`^  ${m}\\(`, "m"), `${cls}.${m}`);
  }
});
