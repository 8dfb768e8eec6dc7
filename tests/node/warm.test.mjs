// warm() repeats the start-up work on throwaway labs so the browser caches
// optimised code (wasm/warm.go): it checks its bounds and leaves the
// session exactly as it was.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { startEngine } from "./engine.mjs";

let api;
before(async () => { ({ api } = await startEngine()); });

test("warm refuses a round count outside 1 to 50", async () => {
  for (const bad of [0, -1, 51, undefined, "3"]) {
    await assert.rejects(api.warm(bad, 0), /warm: rounds must be from 1 to 50/, `rounds ${bad}`);
  }
});

test("warm runs its rounds, replays on every 5th, and leaves the session alone", async () => {
  const before = await api.replay({});
  const recording = await api.recording();
  const res = await api.warm(2, 3); // rounds 3 and 4: the second one replays
  assert.equal(res.rounds, 2);
  assert.equal(typeof res.elapsed_ms, "number");
  const after = await api.replay({});
  assert.deepEqual(after.trials, before.trials);
  assert.deepEqual(after.summary, before.summary);
  assert.deepEqual(await api.recording(), recording);
});
