// The node module (lab/index.js, the package's one entry point) returns
// exactly what the command line's --json prints for the same inputs, and
// rejects with the command line's reason codes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openLab, LabError } from "ragagent-lab";
import { root, bundled } from "./engine.mjs";
import { build, ragagent, fakeGemini, withoutPriceHint } from "./cli.mjs";

const OVERWRITE = "In Python 3.12, does Path.write_text append to an existing file or overwrite it?";
const KEY = "fake-key-for-the-loopback-double";

let lab;
let tmp;
before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "ragagent-lab-"));
  [lab] = await Promise.all([openLab(), build()]);
});
after(async () => {
  await lab?.close();
  rmSync(tmp, { recursive: true, force: true });
});

// changed is the bundled recording with one recorded request edited, so
// that trial's replay no longer matches it.
function changed() {
  const file = JSON.parse(bundled());
  const t = file.trials.find((x) => x.id === "overwrite-agent-1");
  t.exchanges[1].request.contents[0].parts[0].text += " (edited)";
  return JSON.stringify(file, null, 2);
}

test("replay returns what ragagent replay --json prints: bundled, one case, a loaded file", async () => {
  const file = path.join(tmp, "changed.json");
  writeFileSync(file, changed());
  for (const [name, opts, args] of [
    ["bundled", {}, []],
    ["one case", { caseId: "newline-version" }, ["--case", "newline-version"]],
    ["a loaded file", { recording: readFileSync(file, "utf8") }, ["--recording", file]],
  ]) {
    const [got, want] = await Promise.all([lab.replay(opts), ragagent(["replay", "--json", ...args])]);
    assert.deepEqual(withoutPriceHint(got), withoutPriceHint(want), name);
  }
});

test("the loaded file's edited request is a request mismatch on that trial alone", async () => {
  const rep = await lab.replay({ recording: changed() });
  const mismatched = rep.trials.filter((t) => t.result?.reason === "replay_request_mismatch").map((t) => t.id);
  assert.deepEqual(mismatched, ["overwrite-agent-1"]);
});

test("errors reject with a LabError whose code names the reason", async () => {
  const cases = [
    ["a malformed recording", () => lab.replay({ recording: "{" }), "invalid_recording", /not valid JSON/],
    ["a case no trial has", () => lab.replay({ caseId: "nope" }), "unknown_case", /no trial has case "nope"/],
    ["a recording that is not text", () => lab.replay({ recording: 42 }), "invalid_argument", /recording must be/],
    ["an unknown corpus", () => lab.run({ question: OVERWRITE, corpus: "no-such-pack" }), "unknown_corpus", /neither a pack \(seed, python-3\.11, sqlite-3\.40\)/],
    ["a refused question", () => lab.run({ question: "" }), "invalid_question", /question/],
    ["bad limits", () => lab.run({ question: OVERWRITE, limits: { model_calls: 0 } }), "invalid_limits", /model_calls/],
    ["no key", () => lab.run({ question: OVERWRITE, policy: "gemini", env: {} }), "missing_api_key", /GOOGLE_API_KEY or GEMINI_API_KEY/],
    ["a key too short to be one", () => lab.run({ question: OVERWRITE, policy: "gemini", env: { GEMINI_API_KEY: "short" } }), "missing_api_key",
      /^GEMINI_API_KEY is not an API key: it is 5 long, a key at least 16 characters/],
  ];
  for (const [name, fn, code, message] of cases) {
    await assert.rejects(fn, (err) => {
      assert.ok(err instanceof LabError, `${name}: a LabError`);
      assert.equal(err.code, code, name);
      assert.match(err.message, message, name);
      return true;
    });
  }
});

test("a missing engine is engine_missing, naming make wasm", async () => {
  await assert.rejects(openLab({ site: tmp }), (err) => err.code === "engine_missing" && /main\.wasm is missing \(run make wasm/.test(err.message));
});

test("run with the scripted policy returns what ragagent run --json prints: the seed, a pack id, a pack folder", async () => {
  const folder = path.join(root, "fixtures", "packs", "sqlite-3.40");
  const cases = [
    [{ question: OVERWRITE }, ["--question", OVERWRITE]],
    [{ question: OVERWRITE, mode: "fixed", limits: { searches: 1 } }, ["--question", OVERWRITE, "--mode", "fixed", "--limits", "searches=1"]],
    [{ question: "How do I parse a TOML file in Python 3.11?", corpus: "python-3.11" }, ["--question", "How do I parse a TOML file in Python 3.11?", "--corpus", "python-3.11"]],
    [{ question: "How do I create a full-text index?", corpus: folder }, ["--question", "How do I create a full-text index?", "--corpus", folder]],
  ];
  for (const [opts, args] of cases) {
    const [got, want] = await Promise.all([lab.run(opts), ragagent(["run", "--json", ...args])]);
    assert.deepEqual(withoutPriceHint(got), withoutPriceHint(want), args.join(" "));
  }
});

test("a Gemini run against the loopback fake returns what ragagent run --policy gemini --json prints, and its recording replays", async (t) => {
  const fake = await fakeGemini();
  t.after(fake.stop);
  const record = path.join(tmp, "live.json");
  const steps = [];
  const got = await lab.run({ question: OVERWRITE, policy: "gemini", endpoint: fake.endpoint, record, env: { GOOGLE_API_KEY: KEY }, onStep: (s) => steps.push(s) });
  const want = await ragagent(["run", "--json", "--policy", "gemini", "--endpoint", fake.endpoint, "--question", OVERWRITE, "--record", path.join(tmp, "cli.json")],
    { GOOGLE_API_KEY: KEY });
  assert.equal(got.recording, record);
  assert.equal(want.recording, path.join(tmp, "cli.json"));
  assert.deepEqual(withoutPriceHint({ ...got, recording: null }), withoutPriceHint({ ...want, recording: null }));
  assert.equal(got.result.status, "answered");
  assert.equal(steps.length, got.result.steps.length, "every step was reported as it ended");
  const text = readFileSync(record, "utf8");
  assert.ok(!text.includes(KEY), "the recording holds no key");
  const replayed = await lab.replay({ recording: text });
  assert.equal(replayed.trials.at(-1).result.answer, got.result.answer);
  await assert.rejects(lab.run({ question: OVERWRITE, policy: "gemini", endpoint: fake.endpoint, record, env: { GOOGLE_API_KEY: KEY } }),
    (err) => err.code === "invalid_argument" && /exists: a recording is never overwritten; nothing was sent/.test(err.message), "a recording is never overwritten");
});

test("a live run only goes to the Gemini API or loopback", async () => {
  await assert.rejects(lab.run({ question: OVERWRITE, policy: "gemini", endpoint: "https://example.com/v1beta/models/x:generateContent", env: { GOOGLE_API_KEY: KEY } }),
    (err) => err instanceof LabError && /loopback/.test(err.message));
});

test("close releases the engine's timers: node exits at once after a live run", async (t) => {
  const fake = await fakeGemini();
  t.after(fake.stop);
  const script = `
    import { openLab } from "ragagent-lab";
    const lab = await openLab();
    const out = await lab.run({ question: ${JSON.stringify(OVERWRITE)}, policy: "gemini", endpoint: ${JSON.stringify(fake.endpoint)}, env: { GOOGLE_API_KEY: ${JSON.stringify(KEY)} } });
    await lab.close();
    console.log(out.result.status === "answered" ? "answered" : JSON.stringify([out.result.reason, out.result.detail]));`;
  const { execFile } = await import("node:child_process");
  const began = performance.now();
  const stdout = await new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: root, timeout: 40000 }, (err, out) => (err ? reject(err) : resolve(out)));
  });
  assert.equal(stdout.trim(), "answered");
  // The run's stopped 45 s call timeouts would otherwise hold the process.
  assert.ok(performance.now() - began < 40000);
  const closed = await openLab();
  await closed.close();
  await closed.close();
  await assert.rejects(closed.replay(), (err) => err.code === "lab_closed");
});
