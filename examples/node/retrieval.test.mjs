// A retrieval threshold on your own question set: rank its questions over a
// pack (here the Python 3.11 documentation shipped with the lab; a pack
// folder's path works too) and fail CI when the configuration's recall@10
// drops below what you accept. The failure gives the value with its 95% CI
// and the questions whose targets fell out of the top 10.
import { test, after } from "node:test";
import { readFileSync } from "node:fs";
import { openLab, assertMetric } from "ragagent-lab";

const cases = readFileSync(new URL("python-questions.tsv", import.meta.url), "utf8");
const lab = await openLab();
after(() => lab.close());

test("the default configuration finds a target for most questions", async () => {
  const compared = await lab.retrieval({ corpus: "python-3.11", cases, configs: ["proximity", "seed"] });
  assertMetric(compared, { metric: "recall@10", min: 0.5 });
  assertMetric(compared, { metric: "mrr@10", min: 0.25, config: "seed" });
});
