// Types of ragagent-lab (lab/index.js), for editors. Each method's value is
// what the command line's --json prints for the same inputs; the record
// shapes (trial results, checks) are the published record's, typed here
// as far as the checks below read them. See docs/node.md.

/** The node module's own error codes (beside the engine's reason codes). */
export declare const CODES: Readonly<{
  ENGINE_MISSING: "engine_missing";
  CLOSED: "lab_closed";
  INVALID_RECORDING: "invalid_recording";
  UNKNOWN_CASE: "unknown_case";
  INVALID_ARGUMENT: "invalid_argument";
  NOT_ON_SERVER: "not_on_server";
  SERVER_UNREACHABLE: "server_unreachable";
  SERVER_ERROR: "server_error";
  ENGINE_ERROR: "engine_error";
}>;

/** Every rejection: code is the reason code the command line would print (core/reason), or one of CODES. */
export declare class LabError extends Error {
  constructor(code: string, message: string, more?: { detail?: string; cause?: unknown });
  name: "LabError";
  code: string;
  detail?: string;
}

/** The site/ folder beside the module, where openLab looks for main.wasm by default. */
export declare const SITE: string;

export interface OpenOptions {
  /** A folder holding main.wasm and wasm_exec.js (and packs/), instead of the module's own site/. */
  site?: string;
}

export interface ServerOpenOptions extends OpenOptions {
  /** The team's server (`ragagent serve-api`, or its Worker): an http or https URL, no user name, query or fragment. */
  server: string | URL;
  /** Its bearer token (`ragagent tokens add` prints one): sent only in the Authorization header to that server, never in an error. */
  token: string;
}

/** openLab with server and token: a ServerLab whose retrieval and scripted eval run on that server (nothing is started until a call needs it). */
export declare function openLab(options: ServerOpenOptions): Promise<ServerLab>;
/** openLab starts and loads the engine (rejects with engine_missing when main.wasm is not built). */
export declare function openLab(options?: OpenOptions): Promise<Lab>;

export interface Usage { model_calls: number; searches: number; reads: number; source_bytes: number }
export interface Limits { model_calls: number; searches: number; reads: number; source_bytes: number; seconds: number }
export interface Citation { source_id: string; quote: string; url: string }
export interface Step {
  call: number;
  action: string;
  argument?: string;
  assessment?: string;
  outcome: string;
  reason?: string;
  detail?: string;
  observation?: number;
  usage: Usage;
  tokens?: Tokens;
}
export interface Observation {
  tool: "search" | "read" | string;
  arguments: Record<string, unknown>;
  result: { source_id?: string; version?: string; text?: string; url?: string; text_sha256?: string; [k: string]: unknown } | null;
  [k: string]: unknown;
}
export interface Result {
  status: "answered" | "incomplete" | "failed" | string;
  reason: string;
  detail?: string;
  answer: string;
  citations: Citation[];
  question: string;
  version: string;
  mode: "agent" | "fixed" | string;
  limits: Limits;
  usage: Usage;
  decisions: unknown[];
  observations: Observation[];
  steps: Step[];
  tokens?: Tokens;
  [k: string]: unknown;
}
export interface Why { code: string; detail: string }
export interface Checks {
  retrieval_targets_read: boolean | null;
  retrieval_reason: Why;
  answer_fixture_check: boolean;
  answer_reason: Why;
  outcome: "pass" | "fail" | "incomplete";
  outcome_reason: Why;
  trajectory: { queries: string[]; refined: boolean; within_limits: boolean };
  scope: string;
}
export interface Trial {
  id: string;
  case_id: string;
  split: string;
  repeat: number;
  mode: string;
  result: Result | null;
  error: string | null;
  error_detail?: string;
  checks: Checks | null;
  [k: string]: unknown;
}
export interface Tally { pass: number; fail: number; incomplete: number }

/** `ragagent replay --json`. */
export interface Replayed { trials: Trial[]; summary: { fixed: Tally; agent: Tally } }

export interface Tokens { prompt: number; candidates: number; thoughts: number; total: number }

/** `ragagent run --json`. */
export interface RunOutput {
  policy: string;
  /** The file a live run's recording was written to (RunOptions.record), else null. */
  recording: string | null;
  result: Result;
  tokens: Tokens & { replies: number; estimated_usd: number | null };
  note: string;
}

export interface RunOptions {
  question: string;
  /** A pack id (seed, python-3.11, ...) or a pack folder's path; default seed. */
  corpus?: string;
  version?: string;
  mode?: "agent" | "fixed";
  /** Partial limits (model_calls, searches, reads, source_bytes, seconds); null or absent: the defaults. */
  limits?: Partial<Limits> | null;
  /** scripted (offline rules, the default) or gemini (live, the key from the environment). */
  policy?: "scripted" | "gemini";
  /** A live run's endpoint: the Gemini API's (the default) or a loopback test double's. */
  endpoint?: string;
  /** With gemini, a file the lab's recording is written to (never overwritten, mode 0600). */
  record?: string;
  /** Where the key is read from (GOOGLE_API_KEY, else GEMINI_API_KEY); default process.env. */
  env?: Record<string, string | undefined>;
  /** Sees each step as it is final. */
  onStep?: (step: Step, observation: Observation | null) => void;
}

export interface ReplayOptions {
  /** ragagent-recording/1 text; default the bundled 16-trial comparison. */
  recording?: string;
  /** Only this case's trials. */
  caseId?: string;
  onTrial?: (done: number, total: number, id: string) => void;
}

export declare class Lab {
  private constructor();
  /** The engine's description (passages, cases, versions, limits, policies). */
  readonly info: Record<string, unknown>;
  /** How long openLab took, in milliseconds. */
  readonly openMs: number;
  replay(options?: ReplayOptions): Promise<Replayed>;
  run(options: RunOptions): Promise<RunOutput>;
  /** `ragagent eval --json`: the pack's authored cases (or the question set `cases` holds, as `--cases`) on both paths (scripted, or replay of a recording made over the pack). */
  eval(options?: { corpus?: string; policy?: "scripted" | "replay"; recording?: string; config?: string | Record<string, unknown>; cases?: string; onTrial?: (done: number, total: number, id: string) => void }): Promise<Evaluated>;
  /**
   * `ragagent retrieval --json`: a question set ranked under each configuration, the first the baseline.
   * `models` are model folders (`--model DIR`): a vector branch's embedder and a cross-encoder second
   * stage's scorer run under node with lab/embed.mjs, from the folder whose ragagent-model.json names the
   * configuration's model, and are closed when the call ends; `vectors` are where a vector branch's
   * vectors file is looked for (`--vectors DIR`). `signal`, once aborted, stops the ranking (rejects with cancelled).
   */
  retrieval(options?: { corpus?: string; cases?: string; configs?: Array<string | Record<string, unknown>>; k?: number; onCase?: (done: number, total: number, config: string) => void; models?: string[]; vectors?: string[]; gemini?: string; signal?: AbortSignal }): Promise<Compared>;
  /**
   * `ragagent tune --json`: a retrieval configuration chosen for the pack from the question set, with its
   * cross-validated estimate (95% intervals) and paired differences against seed and the pack's default.
   */
  tune(options?: { corpus?: string; cases?: string; folds?: number; onCase?: (done: number, total: number, config: string) => void }): Promise<Tuned>;
  /** The session's recording (every live run of this lab) as ragagent-recording/1 text. */
  recording(): Promise<{ trials: number; exchanges: number; text: string }>;
  /** A question set's text (JSON or TSV) read as `--cases` reads it: its ragagent-cases/1 object, no pack's defaults filled in. */
  readCases(text: string): Promise<CaseSet>;
  /** The pack ids a corpus may name: the engine's and those shipped beside it. */
  packs(): Promise<string[]>;
  /** Ends the engine and releases its timers; later calls reject with lab_closed. */
  close(): Promise<void>;
}

/** A ragagent-cases/1 question set. */
export interface CaseSet {
  format: "ragagent-cases/1";
  cases: Array<{ id: string; split: "development" | "held-out"; question: string; version: string; sources: string[] | null; target_urls?: string[]; answer_patterns: string[] | null; forbidden_patterns: string[] | null; note?: string }>;
}

/** A pack a server offers the token (GET /v1/corpora). */
export interface ServerCorpus {
  id: string;
  title: string;
  language: string;
  versions: string[];
  default_version: string;
  search_k: number;
  passages: number;
  origin: "built_in" | "uploaded" | string;
  sha256: string;
  /** An upload's size as kept. */
  bytes?: number;
}

export interface ServerRetrievalOptions {
  /** A pack id the server offers (a built-in or the token's upload); default seed. */
  corpus?: string;
  /** A question set's text (JSON or TSV), read locally and sent as its ragagent-cases/1 object; default the pack's own. */
  cases?: string;
  /** Names ("all" too) and specs (objects, or their JSON text), the first the baseline. */
  configs?: Array<string | Record<string, unknown>>;
  k?: number;
  /** The server's progress events: rankings kept of those to make. */
  onCase?: (done: number, total: number) => void;
  /** The experiment's state as its events say it (its queued and started events), each once, queued never after running. */
  onState?: (state: "queued" | "running", id: string) => void;
  /** Once aborted, cancels the experiment on the server; the call rejects with cancelled. */
  signal?: AbortSignal;
}

export interface ServerEvalOptions {
  /** A pack id the server offers (a built-in or the token's upload); default seed. */
  corpus?: string;
  /** A question set's text (JSON or TSV), read locally and sent as its ragagent-cases/1 object; default the pack's own. */
  cases?: string;
  /** The configuration the runs search under: a built-in's name or a spec (an object, or its JSON text); default the pack's. */
  config?: string | Record<string, unknown>;
  /** Only scripted runs on a server (another policy is the server's unsupported_policy). */
  policy?: "scripted";
  /** The server's progress events: trials graded of those to run. */
  onTrial?: (done: number, total: number) => void;
  /** The experiment's state as its events say it (its queued and started events), each once, queued never after running. */
  onState?: (state: "queued" | "running", id: string) => void;
  /** Once aborted, cancels the experiment on the server; the call rejects with cancelled. */
  signal?: AbortSignal;
}

/**
 * A lab whose calls run on a team's server (openLab({ server, token })). Its values are a local lab's for
 * the same inputs; a refusal rejects with the server's code and message. The local-only calls reject with
 * not_on_server.
 */
export declare class ServerLab {
  private constructor();
  /** The server's base URL. */
  readonly server: string;
  /** `ragagent retrieval --json`, run on the server as an experiment: the server's result bytes, parsed. */
  retrieval(options?: ServerRetrievalOptions): Promise<Compared>;
  /** The same experiment, its result as the server sent it (what `ragagent retrieval --json` prints), as text. */
  retrievalText(options?: ServerRetrievalOptions): Promise<string>;
  /** `ragagent eval --cases --json` (the scripted policy), run on the server as an agent experiment: the server's result bytes, parsed (its seconds the server's). */
  eval(options?: ServerEvalOptions): Promise<Evaluated>;
  /** The same experiment, its result as the server sent it (what `ragagent eval --json` prints), as text. */
  evalText(options?: ServerEvalOptions): Promise<string>;
  /** The set's ragagent-cases/1 object, read by the local engine (started for it). */
  readCases(text: string): Promise<CaseSet>;
  /** The packs the server offers the token. */
  corpora(): Promise<ServerCorpus[]>;
  /** Their ids. */
  packs(): Promise<string[]>;
  /** Uploads a pack folder (`ragagent corpus build`'s) as the token's own: the server's 201 answer. */
  uploadCorpus(options: { folder: string }): Promise<ServerCorpus & Record<string, unknown>>;
  /** Uploads a pack already archived (a gzip'd tar of its manifest.json and passages file): the server's 201 answer. */
  uploadArchive(body: Uint8Array): Promise<ServerCorpus & Record<string, unknown>>;
  /** Rejects with not_on_server. */
  replay(options?: unknown): Promise<never>;
  /** Rejects with not_on_server. */
  run(options?: unknown): Promise<never>;
  /** Rejects with not_on_server. */
  tune(options?: unknown): Promise<never>;
  /** Rejects with not_on_server. */
  recording(): Promise<never>;
  /** Aborts the open requests and streams (their calls reject with lab_closed; no experiment is cancelled) and ends the local engine. */
  close(): Promise<void>;
}

/** A stored expectation: per trial id, how it ended, its outcome, steps and cited sources. */
export interface Outcome {
  case_id: string;
  repeat: number;
  mode: string;
  status: string | null;
  reason: string | null;
  error: string | null;
  outcome: string | null;
  citations: string[];
  steps: string[];
}
export type Outcomes = Record<string, Outcome>;

type Trials = { trials: Trial[] } | RunOutput;

export declare function outcomesOf(replayed: { trials: Trial[] }): Outcomes;
export declare function replayProblems(replayed: { trials: Trial[] }, expected?: Outcomes | Replayed): string[];
export declare function assertReplay(replayed: { trials: Trial[] }, expected?: Outcomes | Replayed): void;
export declare function citationProblems(value: Trials): string[];
export declare function assertCitations(value: Trials): void;
export declare function unanswerableProblems(value: { trials: Trial[] } | { cases: Array<{ id: string; mode: string; checks: Checks | null; question?: string }> }): string[];
export declare function assertUnanswerableDeclined(value: { trials: Trial[] } | { cases: Array<{ id: string; mode: string; checks: Checks | null; question?: string }> }): void;

/** `ragagent eval --json`. */
export interface Evaluated {
  corpus: string;
  search_k: number;
  policy: string;
  cases: Array<{ id: string; mode: string; question: string; target_read: boolean | null; outcome: string; reason: string; checks: Checks | null; usage?: Usage }>;
  summary: { fixed: Tally; agent: Tally; target_read: { fixed: number; agent: number }; answerable_cases: number; unanswerable_cases: number; trials: number };
}

export interface Metric { value: number; ci95: [number, number] }
/** `ragagent retrieval --json`, as far as metricProblems reads it. */
/** An estimate as `retrieval --json` gives it: the value and its 95% interval. */
export interface Estimated {
  value: number;
  ci95: [number, number];
}

/** What `ragagent tune --json` prints. */
export interface Tuned {
  corpus: string;
  cases: number;
  answerable: number;
  space: number;
  folds: number;
  chosen: Record<string, unknown> & { name: string };
  estimate: { "mrr@10": Estimated; "recall@10": Estimated };
  in_sample: { "mrr@10": Estimated; "recall@10": Estimated };
  against: Array<{ name: string; metric: string; difference: number; ci95: [number, number]; p_value: number }>;
  fold_choices: string[];
  warning?: string;
}

export interface Compared {
  corpus?: string;
  k?: number;
  cases?: number;
  answerable?: number;
  configs: Array<{ name: string; spec?: unknown; metrics: Record<string, Metric>; cases: Array<{ id: string; rank: number | null }> }>;
  comparisons?: Array<{ a: string; b: string; metric: string; difference: number; ci95: [number, number]; p_value: number }>;
}
export interface MetricWant { min: number; metric?: string; config?: string }
export declare function metricProblems(compared: Compared, want: MetricWant): string[];
export declare function assertMetric(compared: Compared, want: MetricWant): void;
