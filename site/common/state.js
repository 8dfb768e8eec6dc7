// state.js is the one owner of the page's state: every field the views
// share or keep between events is declared here, once, and the objects are
// sealed so an undeclared field is an error, not a silent new global.
//
// Not page state, on purpose: the Gemini key (key.js alone holds it), the
// team server's token and connection (server.js alone holds them), the
// engine client's pending calls and in-flight fetches (engine/client.js's own
// plumbing), and what the DOM already holds (form values, which view is
// shown).

/**
 * A live flow's progress: plan shown and confirmed, then one request batch
 * in flight (flow.js).
 * @typedef {object} FlowState
 * @property {boolean} confirmed  the plan was shown and allows sending
 * @property {null | {id: (number|null), stopRequested: boolean}} running
 *   the run in progress: the engine's run id once it is known, and whether
 *   Stop came before it was
 */

/**
 * @typedef {object} PageState
 * @property {object|null} info  load()'s result: passages, cases, versions,
 *   limits, modes, policies and the engine's constants (model, endpoints,
 *   default version, caps, prices); null until the engine is ready
 * @property {Map<string, object>} passages  info's passages by source_id
 * @property {{run: string, listwise: string}|null} endpoints  where live
 *   requests go: the constants' endpoints, or a loopback override
 *   (endpoints.js); null until the engine is ready
 * @property {string} engineTag  main.wasm's ETag: which engine build the
 *   browser's code cache holds (startup.js)
 * @property {Object<string, number|object>} timings  start-up stages (ms
 *   since navigation) and replay and warm-up figures, and the last
 *   cross-encoder scoring's timings, for the tests and the benchmark
 *   (window.ragagentPage.timings)
 * @property {object|null} bundled  the replay report of the bundled recording
 * @property {object|null} loaded  the replay report of a loaded recording
 * @property {object|null} published  the published record's outcomes (site/published.json), shown before the engine is ready
 * @property {boolean} traceShown  the Trace view has shown a trial
 * @property {{source: string, caseID: string, repeat: number}|null} traceAt  the trace shown
 * @property {number} recordedRuns  live runs in this session's recording
 * @property {FlowState} run  the Run view's live run
 * @property {{report: object|null, loading: Promise|null}} rerank  the
 *   reranking lab's replay, and that replay while it runs
 * @property {FlowState} rerankLive  the Rerank view's live rerank
 * @property {FlowState} agentLive  the Experiments view's live Gemini eval
 * @property {{host: {url: string, test: boolean}|null, plan: object|null, run: object|null, running: boolean}} crossEncoder
 *   the cross-encoder in this browser (crossencoder.js): where its files
 *   come from, the engine's plan (model and calls), the last accepted
 *   scoring, and whether one is running
 * @property {CorpusState} corpus  the corpus the Corpus, Run and
 *   Experiments views use (corpus/picker.js)
 * @property {ExperimentState} experiments  the Experiments view's question
 *   set, configurations and last result (experiments/view.js)
 * @property {{kept: Array<object>, error: string}} runs  the runs kept in
 *   this browser, newest first, as common/runs.js last read them, and why
 *   none could be read (IndexedDB refused); the Runs and Compare views
 *   list them
 * @property {{byRef: Map<string, object>, error: string, loaded: boolean}} annotations
 *   the person's annotations by ref ("<kind>:<id>") as common/annotations.js
 *   last read or wrote them, why none could be read (IndexedDB refused), and
 *   whether they have been read yet
 */

/**
 * The Experiments view's state (experiments/view.js).
 * @typedef {object} ExperimentState
 * @property {Array<object>|null} builtins  the engine's retrieval
 *   configurations ({name, description, tokenizer, ...}: the specs, in --list order); null until asked
 * @property {string} builtinsError  why they could not be had
 * @property {Array<object>} specs  the person's own configurations (JSON
 *   specs), kept in localStorage
 * @property {string|null} casesText  the question set file's text, or null
 *   for the corpus's authored questions
 * @property {string} casesName  that file's name
 * @property {Array<object>|null} casesQuestions  its cases as the engine read them
 * @property {number|null} setKey  the key of the person's question set in
 *   use (common/sets.js), whose ragagent-cases/1 text is casesText; null
 *   for a file or the authored questions
 * @property {null | {id: (number|string|null), cancel: boolean, abort: (AbortController|null)}} running  the
 *   experiment under way: the engine's job id (on a team server, the
 *   server's experiment id) once known, whether Cancel came, and for one
 *   on a team server the controller whose abort cancels it there
 * @property {string|null} text  the last result as the engine wrote it
 *   (what the download saves)
 * @property {object|null} result  that result parsed
 * @property {object|null} ran  what it was run on: {corpus, order, questions, server
 *   (the team server's URL, or null: this browser)}
 * @property {boolean} agentRunning  an agent experiment (the engine's eval) is under way
 * @property {AbortController|null} agentAbort  the agent experiment running on the team server's cancel (null: none, or one in this browser)
 * @property {{id: number|null, cancel: boolean}|null} agentJob  the agent experiment running in this browser: the engine's job id once named, and whether Cancel came
 */

/**
 * The corpus picker's choice (corpus/picker.js).
 * @typedef {object} CorpusState
 * @property {string} id  the chosen pack's id ("seed", "python-3.11",
 *   "documents")
 * @property {object|null} info  the chosen pack's packInfo() (manifest,
 *   search_k, cases, pages, text_bytes, passage_bytes); null for the seed
 *   until asked, or while a pack loads
 * @property {Array<object>} cases  the chosen pack's authored cases
 * @property {Array<object>} shipped  the manifests of the packs the site
 *   offers (packs/index.json)
 * @property {object|null} documents  what this browser keeps of the
 *   person's documents ({files, passages}), null when nothing
 * @property {boolean} loading  a pack is being fetched or opened
 */

const flow = () => Object.seal({ confirmed: false, running: null });

/** @type {PageState} */
export const state = Object.seal({
  info: null,
  passages: new Map(),
  endpoints: null,
  engineTag: "",
  timings: {},
  bundled: null,
  loaded: null,
  published: null,
  traceShown: false,
  traceAt: null,
  recordedRuns: 0,
  run: flow(),
  rerank: Object.seal({ report: null, loading: null }),
  rerankLive: flow(),
  agentLive: flow(),
  crossEncoder: Object.seal({ host: null, plan: null, run: null, running: false }),
  corpus: Object.seal({ id: "seed", info: null, cases: [], shipped: [], documents: null, loading: false }),
  runs: Object.seal({ kept: [], error: "" }),
  annotations: Object.seal({ byRef: new Map(), error: "", loaded: false }),
  experiments: Object.seal({ builtins: null, builtinsError: "", specs: [], casesText: null, casesName: "", casesQuestions: null, setKey: null, running: null, text: null, result: null, ran: null, agentRunning: false, agentAbort: null, agentJob: null }),
});

/** setInfo keeps load()'s result and what is derived from it. */
export function setInfo(info, endpoints) {
  state.info = info;
  state.endpoints = endpoints;
  for (const p of info.passages) state.passages.set(p.source_id, p);
}
