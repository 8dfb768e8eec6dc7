// A replay regression test: the recording still replays (every request the
// agent makes equals the recorded one) to the outcomes stored beside it,
// and every answer cites passages it read. Copy it and point it at your
// own recording; UPDATE=1 node --test stores its outcomes as the expectation.
import { test, after } from "node:test";
import { readFileSync, writeFileSync } from "node:fs";
import { openLab, outcomesOf, assertReplay, assertCitations } from "ragagent-lab";

const here = (name) => new URL(name, import.meta.url);
const recording = readFileSync(here("../../recordings/agent-comparison.json"), "utf8");
const expectation = here("agent-comparison.outcomes.json");

const lab = await openLab();
after(() => lab.close());

test("the recorded comparison replays to its stored outcomes, every answer cited", async () => {
  const replayed = await lab.replay({ recording });
  if (process.env.UPDATE) writeFileSync(expectation, JSON.stringify(outcomesOf(replayed), null, 2) + "\n");
  assertReplay(replayed, JSON.parse(readFileSync(expectation, "utf8")));
  assertCitations(replayed);
});
