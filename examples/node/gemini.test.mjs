// A live Gemini run, tested offline: the lab sends the agent's requests to
// a loopback stand-in for the Gemini API (any endpoint on 127.0.0.1 is
// allowed, the real API's otherwise) with the key from the environment,
// under the same caps as the command line, and checks the answer's
// citations. The stand-in answers with the decisions a model would.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { openLab, assertCitations } from "ragagent-lab";

const decisions = [
  { action: "search", assessment: "Look it up.", query: "write_text overwrite existing file", source_id: "", answer: "", citations: [] },
  { action: "read", assessment: "Read the method.", query: "", source_id: "path-write", answer: "", citations: [] },
  { action: "answer", assessment: "The passage says so.", query: "", source_id: "", answer: "It overwrites the file.",
    citations: [{ source_id: "path-write", quote: "An existing file is overwritten." }] },
];

let server;
let endpoint;
const seen = [];
before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers["x-goog-api-key"]);
    req.resume().on("end", () => {
      const text = JSON.stringify(decisions[Math.min(seen.length, decisions.length) - 1]);
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP" }],
        usageMetadata: { promptTokenCount: 400, candidatesTokenCount: 40, totalTokenCount: 440 } }));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${server.address().port}/v1beta/models/gemini-3.8-flash:generateContent`;
});
after(() => server.close());

const lab = await openLab();
after(() => lab.close());

test("a Gemini run answers with valid citations", async () => {
  const env = { GEMINI_API_KEY: "a-test-key-of-16-or-more" };
  const out = await lab.run({ question: "In Python 3.12, does Path.write_text overwrite an existing file?", policy: "gemini", endpoint, env });
  assert.equal(out.result.status, "answered", out.result.detail);
  assertCitations(out);
  assert.equal(out.tokens.total, 3 * 440);
  assert.deepEqual(seen, [env.GEMINI_API_KEY, env.GEMINI_API_KEY, env.GEMINI_API_KEY], "each request carried the key");
});
