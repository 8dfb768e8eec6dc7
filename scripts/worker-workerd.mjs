// worker-workerd.mjs runs the built Worker (worker/build) in workerd
// through Miniflare's API, without wrangler dev: the same workerd binary
// and the same local D1 and Durable Object storage as `wrangler dev
// --local --persist-to STATE`, but no proxy worker in front of it and no
// debugger session attached to it (wrangler dev always opens one, for
// the Worker's console; docs/worker.md, "Where workerd's CPU goes").
// make bench-server runs the 200-client scenario this way too, beside
// wrangler dev, to tell the Worker's own cost from the dev tool's.
//
//   node scripts/worker-workerd.mjs --config wrangler.toml --vars .dev.vars --state STATE --port PORT [--inspector-port N]
//
// The bindings are read from the wrangler.toml given (its main, its
// [vars], its D1 database's id and its Durable Object binding: the subset
// worker/wrangler.toml uses); .dev.vars overrides [vars], as under
// wrangler dev. It prints "ready <url>" once the Worker answers, and
// stops on SIGTERM or SIGINT.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { Log, LogLevel, Miniflare } from "miniflare";

const { values: args } = parseArgs({
  options: {
    config: { type: "string" },
    vars: { type: "string" },
    state: { type: "string" },
    port: { type: "string", default: "0" },
    log: { type: "string", default: "warn" },
    // A DevTools port on the Worker (profiling; off by default, as it is
    // what makes wrangler dev slow when a session is attached).
    "inspector-port": { type: "string" },
  },
});
if (!args.config || !args.state) {
  console.error("usage: node scripts/worker-workerd.mjs --config wrangler.toml [--vars .dev.vars] --state DIR [--port N] [--log warn|info]");
  process.exit(2);
}

// toml reads the few forms worker/wrangler.toml holds: [section] and
// [[array]] headers, key = "string" or key = [ "a", "b" ] lines, comments.
function toml(text) {
  const out = {};
  let at = out;
  for (let line of text.split("\n")) {
    line = line.replace(/\s+#.*$/, "").trim();
    if (line === "" || line.startsWith("#")) continue;
    let m;
    if ((m = line.match(/^\[\[(.+)\]\]$/))) {
      let o = out;
      const keys = m[1].split(".");
      for (const k of keys.slice(0, -1)) o = o[k] ??= {};
      at = {};
      (o[keys.at(-1)] ??= []).push(at);
    } else if ((m = line.match(/^\[(.+)\]$/))) {
      at = out;
      for (const k of m[1].split(".")) at = at[k] ??= {};
    } else if ((m = line.match(/^([\w-]+)\s*=\s*(.+)$/))) {
      at[m[1]] = JSON.parse(m[2]);
    }
  }
  return out;
}

// devVars reads a .dev.vars file: KEY="value" (JSON-quoted) or KEY=value lines.
function devVars(file) {
  const out = {};
  if (!file) return out;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = line.match(/^\s*([\w]+)\s*=\s*(.*?)\s*$/);
    if (m) out[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2];
  }
  return out;
}

const config = toml(fs.readFileSync(args.config, "utf8"));
const root = path.dirname(path.resolve(args.config));
const main = path.resolve(root, config.main);
const level = { warn: LogLevel.WARN, info: LogLevel.INFO, log: LogLevel.INFO, debug: LogLevel.DEBUG }[args.log] ?? LogLevel.WARN;
const rules = (config.rules ?? []).map((r) => ({ type: r.type, include: r.globs, fallthrough: r.fallthrough }));

const mf = new Miniflare({
  host: "127.0.0.1",
  // Offline: the default Request.cf, not the one Miniflare would fetch.
  cf: false,
  port: Number(args.port),
  ...(args["inspector-port"] ? { inspectorPort: Number(args["inspector-port"]) } : {}),
  log: new Log(level),
  modules: true,
  scriptPath: main,
  modulesRoot: path.dirname(main),
  modulesRules: rules,
  compatibilityDate: config.compatibility_date,
  bindings: { ...(config.vars ?? {}), ...devVars(args.vars) },
  d1Databases: Object.fromEntries((config.d1_databases ?? []).map((d) => [d.binding, d.database_id])),
  durableObjects: Object.fromEntries(
    (config.durable_objects?.bindings ?? []).map((b) => [b.name, { className: b.class_name, useSQLite: true }]),
  ),
  // wrangler dev --persist-to STATE keeps its state under STATE/v3.
  d1Persist: path.join(args.state, "v3", "d1"),
  durableObjectsPersist: path.join(args.state, "v3", "do"),
});

const url = await mf.ready;
console.log("ready " + url.origin);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await mf.dispose();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
