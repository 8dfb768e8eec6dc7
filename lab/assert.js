// assert.js holds the lab's checks for CI, each in two forms: a plain
// function returning the problems as sentences a person can act on (which
// trial or case, which step, what changed), for any runner, and an assert*
// function throwing node:assert's AssertionError with those sentences (what
// node:test, Jest, Vitest and Mocha all report as a failure).
import { AssertionError } from "node:assert";

const MAX_LISTED = 10;

/** label names a trial as the command line's tables do: case / repeat, path. */
function label(t) {
  return `trial ${t.id} (${t.case_id} / ${t.repeat}, ${t.mode} path)`;
}

/** stepLine is one step as the command line's trace shows it. */
function stepLine(s) {
  const action = s.action || "(reply refused)";
  const arg = s.argument ? ` ${JSON.stringify(s.argument)}` : "";
  return `${action}${arg} ${s.outcome}${s.reason ? `: ${s.reason}` : ""}`;
}

function trialsOf(value, fn) {
  if (Array.isArray(value?.trials)) return value.trials;
  if (value?.result !== undefined && value?.policy !== undefined) {
    return [{ id: "run", case_id: "(question)", repeat: 1, mode: value.result?.mode ?? "agent", result: value.result, checks: null }];
  }
  throw new TypeError(`${fn}: give what replay() or run() returned (an object with trials, or a run's {policy, result})`);
}

function fail(problems, what, fn) {
  if (problems.length === 0) return;
  const shown = problems.slice(0, MAX_LISTED);
  const more = problems.length > shown.length ? `\n  … and ${problems.length - shown.length} more` : "";
  throw new AssertionError({ message: `${what}:\n  ${shown.join("\n  ")}${more}`, operator: fn, stackStartFn: fail });
}

/**
 * outcomesOf is a replay's outcomes as a stored expectation: per trial id,
 * how it ended, its fixture outcome, its steps (as the trace shows them)
 * and its cited sources. Store it (JSON) beside the recording; compare a
 * later replay with it by replayProblems / assertReplay.
 *
 * @param {{trials: object[]}} replayed
 */
export function outcomesOf(replayed) {
  const out = {};
  for (const t of trialsOf(replayed, "outcomesOf")) {
    const r = t.result;
    out[t.id] = {
      case_id: t.case_id,
      repeat: t.repeat,
      mode: t.mode,
      status: r ? r.status : null,
      reason: r ? r.reason : null,
      error: t.error ?? null,
      outcome: t.checks ? t.checks.outcome : null,
      citations: r ? r.citations.map((c) => c.source_id) : [],
      steps: r ? (r.steps ?? []).map(stepLine) : [],
    };
  }
  return out;
}

/**
 * replayProblems lists what is wrong with a replay: a trial whose model
 * requests no longer equal the recorded ones (replay_request_mismatch) or
 * ran past them (replay_exhausted), and, given an expectation (outcomesOf
 * of an earlier replay, or that replay itself), every trial whose ending,
 * fixture outcome, steps or citations changed, or that is new or gone.
 *
 * @param {{trials: object[]}} replayed
 * @param {object} [expected]
 * @returns {string[]}
 */
export function replayProblems(replayed, expected) {
  const trials = trialsOf(replayed, "replayProblems");
  const problems = [];
  for (const t of trials) {
    const r = t.result;
    if (r && (r.reason === "replay_request_mismatch" || r.reason === "replay_exhausted")) {
      const call = (r.usage?.model_calls ?? 0) + (r.reason === "replay_request_mismatch" ? 0 : 1);
      const what = r.reason === "replay_request_mismatch"
        ? "its request no longer equals the recorded one (the prompt, the tools' results or the model settings changed since it was recorded)"
        : "it asked for more model calls than were recorded";
      problems.push(`${label(t)}: model call ${call}: ${r.reason}: ${what}${r.detail ? `; ${r.detail}` : ""}`);
    }
  }
  if (expected === undefined) return problems;
  const want = Array.isArray(expected?.trials) ? outcomesOf(expected) : expected;
  if (want === null || typeof want !== "object") throw new TypeError("replayProblems: the expectation must be outcomesOf(...) or a replay's value");
  const got = outcomesOf({ trials });
  for (const [id, w] of Object.entries(want)) {
    const g = got[id];
    const name = `trial ${id} (${w.case_id} / ${w.repeat}, ${w.mode} path)`;
    if (!g) {
      problems.push(`${name}: expected, but the recording no longer has it`);
      continue;
    }
    const changes = [];
    for (const field of ["status", "reason", "error", "outcome"]) {
      if (g[field] !== w[field]) changes.push(`${field} was ${w[field]}, now ${g[field]}`);
    }
    const n = Math.max(g.steps.length, w.steps.length);
    for (let i = 0; i < n; i++) {
      if (g.steps[i] !== w.steps[i]) {
        changes.push(`step ${i + 1} was ${w.steps[i] === undefined ? "absent" : `"${w.steps[i]}"`}, now ${g.steps[i] === undefined ? "absent" : `"${g.steps[i]}"`}`);
        break;
      }
    }
    if (JSON.stringify(g.citations) !== JSON.stringify(w.citations)) {
      changes.push(`citations were [${w.citations.join(", ")}], now [${g.citations.join(", ")}]`);
    }
    if (changes.length) problems.push(`${name}: ${changes.join("; ")}`);
  }
  for (const [id, g] of Object.entries(got)) {
    if (!(id in want)) problems.push(`trial ${id} (${g.case_id} / ${g.repeat}, ${g.mode} path): not in the expectation (store a new one with outcomesOf)`);
  }
  return problems;
}

/**
 * assertReplay throws an AssertionError listing replayProblems.
 *
 * @param {{trials: object[]}} replayed
 * @param {object} [expected]
 */
export function assertReplay(replayed, expected) {
  fail(replayProblems(replayed, expected), "the recording does not replay as expected", "assertReplay");
}

/**
 * citationProblems lists every trial that answered without valid
 * citations: none at all, or one whose source was not read in that trial,
 * whose URL is not the read passage's, or whose quote is not in the text
 * read. An answer that is not the citation contract's (a reason other
 * than citation_contract_passed) is one too.
 *
 * @param {{trials: object[]} | {policy: string, result: object}} value replay()'s or run()'s value
 * @returns {string[]}
 */
export function citationProblems(value) {
  const problems = [];
  for (const t of trialsOf(value, "citationProblems")) {
    const r = t.result;
    if (!r || r.status !== "answered") continue;
    const read = new Map();
    for (const o of r.observations ?? []) {
      if (o.tool === "read" && o.result && typeof o.result.text === "string") read.set(o.result.source_id, o.result);
    }
    const where = `${label(t)}: the answer ${JSON.stringify(clip(r.answer))}`;
    if (r.reason !== "citation_contract_passed") problems.push(`${where} ended ${r.reason}, not citation_contract_passed`);
    if (!r.citations?.length) {
      problems.push(`${where} cites nothing`);
      continue;
    }
    r.citations.forEach((c, i) => {
      const p = read.get(c.source_id);
      const n = `citation ${i + 1} (${c.source_id})`;
      if (!p) problems.push(`${where}: ${n} names a passage the trial never read (read: ${[...read.keys()].join(", ") || "none"})`);
      else if (c.url !== undefined && p.url !== undefined && c.url !== p.url) problems.push(`${where}: ${n} gives the URL ${c.url}, the passage read is ${p.url}`);
      else if (!p.text.includes(c.quote)) problems.push(`${where}: ${n} quotes ${JSON.stringify(clip(c.quote))}, which is not in the passage read`);
    });
  }
  return problems;
}

/**
 * assertCitations throws an AssertionError listing citationProblems.
 *
 * @param {{trials: object[]} | {policy: string, result: object}} value
 */
export function assertCitations(value) {
  fail(citationProblems(value), "an answer without valid citations", "assertCitations");
}

/**
 * unanswerableProblems lists every case the documents cannot answer (no
 * targets: checks.retrieval_reason no_targets) that was answered rather
 * than declined, from replay()'s trials or eval()'s cases.
 *
 * @param {{trials: object[]} | {cases: object[]}} value
 * @returns {string[]}
 */
export function unanswerableProblems(value) {
  const rows = Array.isArray(value?.trials) ? value.trials : Array.isArray(value?.cases) ? value.cases : null;
  if (rows === null) throw new TypeError("unanswerableProblems: give what replay() or eval() returned (an object with trials or cases)");
  const problems = [];
  for (const row of rows) {
    const c = row.checks;
    if (!c || c.retrieval_reason?.code !== "no_targets") continue;
    const answered = row.result ? row.result.status === "answered" : c.answer_reason?.code === "abstention_expected";
    if (!answered) continue;
    const name = row.result ? label(row) : `case ${row.id} (${row.mode} path)`;
    const answer = row.result ? ` ${JSON.stringify(clip(row.result.answer))}, citing ${row.result.citations.map((x) => x.source_id).join(", ") || "nothing"}` : "";
    const question = row.question ?? row.result?.question;
    problems.push(`${name}: the documents cannot answer ${question ? JSON.stringify(clip(question)) : "it"}, but it answered${answer} (${c.answer_reason?.code ?? "answered"})`);
  }
  return problems;
}

/**
 * assertUnanswerableDeclined throws an AssertionError listing
 * unanswerableProblems.
 *
 * @param {{trials: object[]} | {cases: object[]}} value
 */
export function assertUnanswerableDeclined(value) {
  fail(unanswerableProblems(value), "a question the documents cannot answer was answered", "assertUnanswerableDeclined");
}

/**
 * metricProblems checks that a configuration's metric in retrieval()'s
 * value is at least min: the configuration named (default: the first, the
 * baseline), the metric (default mrr@10). The problem gives the value
 * with its 95% CI, how many answerable cases it rests on, and the cases
 * with no target in the top k, so a person sees what to look at.
 *
 * @param {{configs: object[], k?: number, answerable?: number}} compared
 * @param {{metric?: string, min: number, config?: string}} want
 * @returns {string[]}
 */
export function metricProblems(compared, { metric = "mrr@10", min, config } = {}) {
  if (!Array.isArray(compared?.configs)) throw new TypeError("metricProblems: give what retrieval() returned (an object with configs)");
  if (typeof min !== "number" || !Number.isFinite(min)) throw new TypeError("metricProblems: min must be a finite number");
  const c = config === undefined ? compared.configs[0] : compared.configs.find((x) => x.name === config);
  if (!c) return [`no configuration ${JSON.stringify(config)} was compared (compared: ${compared.configs.map((x) => x.name).join(", ")})`];
  const m = c.metrics?.[metric];
  if (!m) return [`configuration ${c.name} has no metric ${metric} (it has ${Object.keys(c.metrics ?? {}).join(", ")})`];
  if (m.value >= min) return [];
  const [lo, hi] = m.ci95 ?? [NaN, NaN];
  const missed = (c.cases ?? []).filter((x) => x.rank === null).map((x) => x.id);
  const listed = missed.slice(0, MAX_LISTED).join(", ") + (missed.length > MAX_LISTED ? `, … (${missed.length - MAX_LISTED} more)` : "");
  const k = compared.k ?? 10;
  return [`${c.name}: ${metric} is ${fmt(m.value)} (95% CI ${fmt(lo)} to ${fmt(hi)}, ${compared.answerable ?? c.cases?.length ?? "?"} answerable cases), below ${min}` +
    (missed.length ? `; no target in the top ${k} for ${missed.length}: ${listed}` : "") +
    (lo < min && hi >= min ? "; the interval spans the threshold, so more cases would tell a real drop from noise" : "")];
}

/**
 * assertMetric throws an AssertionError giving metricProblems.
 *
 * @param {{configs: object[]}} compared
 * @param {{metric?: string, min: number, config?: string}} want
 */
export function assertMetric(compared, want) {
  fail(metricProblems(compared, want), "a retrieval metric fell below its threshold", "assertMetric");
}

function fmt(x) {
  return Number.isFinite(x) ? x.toFixed(3) : String(x);
}

function clip(s, n = 80) {
  const t = String(s ?? "").replace(/\s+/g, " ").trim();
  return t.length <= n ? t : `${t.slice(0, n - 1)}…`;
}
