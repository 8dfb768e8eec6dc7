// bench-node.mjs measures the node module (make bench-node; not a test):
// opening the engine (openLab) and replaying the bundled 16 trials, first
// (a fresh node process: the module compiled, started and loaded) and warm
// (again in the same process: the compiled module kept, a new engine
// started; a second replay on the same lab), side by side with the native
// command line's replay (ragagent replay --json, a built binary) in the
// same run. Medians of RUNS (default 5) fresh processes, with the load
// average before and after.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const RUNS = Number(process.env.RUNS || 5);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// One fresh process: open, replay, replay again, close, open again, replay.
const CHILD = `
  const t0 = performance.now();
  const { openLab } = await import("ragagent-lab");
  const t1 = performance.now();
  const lab = await openLab();
  const t2 = performance.now();
  const a = await lab.replay();
  const t3 = performance.now();
  await lab.replay();
  const t4 = performance.now();
  await lab.close();
  const t5 = performance.now();
  const again = await openLab();
  const t6 = performance.now();
  await again.replay();
  const t7 = performance.now();
  await again.close();
  if (a.trials.length !== 16) throw new Error("not the 16 trials");
  console.log(JSON.stringify({ import: t1 - t0, open: t2 - t1, replay: t3 - t2, replayWarm: t4 - t3, openWarm: t6 - t5, replayNewLab: t7 - t6, firstTotal: t3 - t0 }));`;

const before = loadavg();
const bin = mkdtempSync(path.join(tmpdir(), "ragagent-bench-"));
execFileSync(process.env.GO ?? "go", ["build", "-o", path.join(bin, "ragagent"), "./cmd/ragagent"], { cwd: root });
const rows = [];
const native = [];
for (let i = 0; i < RUNS; i++) {
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", CHILD], { cwd: root, encoding: "utf8" });
  rows.push(JSON.parse(out));
  const t = performance.now();
  execFileSync(path.join(bin, "ragagent"), ["replay", "--json"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  native.push(performance.now() - t);
}
rmSync(bin, { recursive: true, force: true });
const after = loadavg();

const m = (k) => median(rows.map((r) => r[k]));
const ms = (x) => `${Math.round(x)} ms`;
const runs = (k) => rows.map((r) => Math.round(r[k])).join(", ");
console.log(`Node ${process.version}, ${RUNS} fresh processes; load average ${before} before, ${after} after (${execFileSync("nproc", { encoding: "utf8" }).trim()} cores).\n`);
console.log("| node module | median | runs |");
console.log("|---|---|---|");
console.log(`| import ragagent-lab | ${ms(m("import"))} | ${runs("import")} |`);
console.log(`| openLab, first in the process (compile, start, load) | ${ms(m("open"))} | ${runs("open")} |`);
console.log(`| replay 16 trials, first on the lab | ${ms(m("replay"))} | ${runs("replay")} |`);
console.log(`| import + open + first replay (a fresh test file) | ${ms(m("firstTotal"))} | ${runs("firstTotal")} |`);
console.log(`| replay 16 trials again, same lab (warm) | ${ms(m("replayWarm"))} | ${runs("replayWarm")} |`);
console.log(`| openLab again, same process (warm: module compiled) | ${ms(m("openWarm"))} | ${runs("openWarm")} |`);
console.log(`| replay 16 trials on that new lab | ${ms(m("replayNewLab"))} | ${runs("replayNewLab")} |`);
console.log(`| native: ragagent replay --json, whole process | ${ms(median(native))} | ${native.map(Math.round).join(", ")} |`);
console.log(`\nA fresh test file's first replay against the native command line's: ${(m("firstTotal") / median(native)).toFixed(1)}x; a warm replay against it: ${(m("replayWarm") / median(native)).toFixed(2)}x.`);
