// common/trials.js reads trial reports (the engine's report.Trial, as the
// replay and run exports return them) for the Runs and Compare views: the
// text a search looks through (the question, the answer and how it ended,
// and every step's content: decisions, assessments, queries, candidates,
// passages read, citations), and a trial's steps keyed by the model call
// they came from, so two trials can be aligned call by call.

/** searchText is everything a search across trials looks in, lower-cased. */
export function searchText(t) {
  const r = t.result;
  const parts = [t.id, t.case_id, t.mode, t.error, t.error_detail];
  if (r) {
    parts.push(r.question, r.answer, r.status, r.reason, r.detail);
    for (const s of r.steps || []) parts.push(s.action, s.argument, s.assessment, s.outcome, s.reason, s.detail);
    for (const o of r.observations || []) {
      if (o.tool === "search") parts.push(o.result.query, ...o.result.candidates.map((c) => c.source_id));
      else if (o.result) parts.push(o.result.source_id, o.result.url, o.result.text);
    }
    for (const c of r.citations || []) parts.push(c.source_id, c.quote);
  }
  if (t.checks) parts.push(t.checks.outcome, t.checks.answer_reason?.detail, t.checks.outcome_reason?.detail);
  return parts.filter((p) => typeof p === "string" && p).join("\n").toLowerCase();
}

/** matches says whether a trial's search text holds the phrase (quoted) or every word of a query. */
export function matches(text, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  const phrases = [];
  const rest = q.replace(/"([^"]+)"/g, (_, p) => { phrases.push(p); return " "; });
  return phrases.every((p) => text.includes(p)) && rest.split(/\s+/).filter(Boolean).every((w) => text.includes(w));
}

/** outcome is a trial's graded outcome, or how it ended when ungraded. */
export function outcome(t) {
  if (t.checks) return t.checks.outcome;
  if (t.key_refused) return "key";
  if (t.error) return "refused";
  return t.result ? t.result.status : "none";
}

/**
 * stepFacts is a step's comparable content: who decided it (call 0 is the
 * fixed path's own retrieval), the decision, its query, the candidates
 * its search returned, the passage it read, and how it was admitted.
 */
export function stepFacts(r, s) {
  const obs = s.observation >= 0 ? r.observations[s.observation] : null;
  return {
    call: s.call || 0,
    decision: s.action || "(refused reply)",
    query: s.action === "search" ? s.argument || "" : "",
    candidates: obs && obs.tool === "search" ? obs.result.candidates.map((c) => c.source_id) : null,
    read: s.action === "read" ? s.argument || "" : "",
    admitted: `${s.outcome}${s.reason ? `: ${s.reason}` : ""}`,
    assessment: s.assessment || "",
  };
}

/**
 * align pairs two trials' steps by the model call they came from (and,
 * within a call, in order), so call 3 of one faces call 3 of the other;
 * a step only one trial has faces nothing. Returns [{key, a, b}], a and b
 * stepFacts or null.
 */
export function align(ta, tb) {
  const group = (t) => {
    const m = new Map();
    const r = t?.result;
    for (const s of r?.steps || []) {
      const f = stepFacts(r, s);
      if (!m.has(f.call)) m.set(f.call, []);
      m.get(f.call).push(f);
    }
    return m;
  };
  const ga = group(ta);
  const gb = group(tb);
  const calls = [...new Set([...ga.keys(), ...gb.keys()])].sort((x, y) => x - y);
  const rows = [];
  for (const c of calls) {
    const la = ga.get(c) || [];
    const lb = gb.get(c) || [];
    for (let i = 0; i < Math.max(la.length, lb.length); i++) rows.push({ key: `${c}.${i}`, call: c, a: la[i] || null, b: lb[i] || null });
  }
  return rows;
}

/** FIELDS are the step facts a comparison shows and highlights when they differ. */
export const FIELDS = [["decision", "Decision"], ["query", "Query"], ["candidates", "Candidates"], ["read", "Passage read"], ["admitted", "Admitted"]];

/** factText writes one fact for reading. */
export function factText(v) {
  if (v === null || v === undefined) return "";
  return Array.isArray(v) ? v.join(", ") : String(v);
}

/** endingFacts is how a trial ended, field by field, for the comparison's last row. */
export function endingFacts(t) {
  const r = t?.result;
  if (!t) return null;
  return {
    ending: r ? `${r.status}: ${r.reason}` : `refused: ${t.error || "?"}`,
    answer: r?.answer || "",
    citations: (r?.citations || []).map((c) => c.source_id),
    outcome: outcome(t),
  };
}
