// app.js is the page's entry: it wires the modules together. The engine
// runs in a worker (engine/: client.js is its client); each view is a
// folder of its own modules (replay/, trace/, run/, rerank/, recordings/,
// corpus/, experiments/, runs/, compare/), its view.js exporting mount; what several views use is in
// common/, where key.js alone holds the Gemini key, server.js alone the
// team server's token, and state.js owns the
// page's state. Everything that comes from a recording, a passage or a
// model is inserted as text, never as HTML (common/dom.js).

import { ready, call, connect, events, FETCH, LEDGER } from "./engine/client.js";
import { screenDownloads } from "./common/dom.js";
import * as key from "./common/key.js";
import * as server from "./common/server.js";
import { liveEndpoints } from "./common/endpoints.js";
import * as nav from "./common/nav.js";
import { state, setInfo } from "./common/state.js";
import { showProgress, showStartFailure, primeCodeCache, whenIdle } from "./engine/startup.js";
import * as corpusPicker from "./corpus/picker.js";
import * as documents from "./corpus/documents.js";
import * as corpusView from "./corpus/view.js";
import * as experimentsView from "./experiments/view.js";
import * as runsView from "./runs/view.js";
import * as compareView from "./compare/view.js";
import * as recordingsView from "./recordings/view.js";
import * as replayView from "./replay/view.js";
import * as rerankView from "./rerank/view.js";
import * as runView from "./run/view.js";
import * as traceView from "./trace/view.js";
import { mountForm as mountAddToSet } from "./common/addtoset.js";

performance.mark("shell-start");

connect({ progress: showProgress, send: key.send });
key.init();
server.init();
// No file the page offers holds the key or the team server's token.
screenDownloads((text) => key.screen(text) ?? server.screen(text));

mountAddToSet();
const trace = traceView.mount();
const replay = replayView.mount({ openTrace: trace.open });
// The published outcomes, at once: a small static file, no engine needed.
fetch("published.json").then((r) => (r.ok ? r.json() : Promise.reject(new Error(`published.json: HTTP ${r.status}`))))
  .then(replay.showPublished).catch(() => { document.body.dataset.published = "failed"; });
const compare = compareView.mount();
const runs = runsView.mount({ openTrace: trace.open, openCompare: compare.open });
const recordings = recordingsView.mount({ openTrace: trace.open, enableLoaded: (...a) => { trace.enableLoaded(...a); runs.refresh(); compare.refresh(); } });
const run = runView.mount({ onRecorded: recordings.setCount });
const rerank = rerankView.mount();
const corpus = corpusView.mount();
const docs = documents.mount();
const experiments = experimentsView.mount();

// One key box serves the Run, Rerank and Experiments views: it moves to the view shown.
nav.onView((name) => {
  if (name === "rerank") rerank.borrowKeyBox();
  else if (name === "experiments") experiments.borrowKeyBox();
  else run.reclaimKeyBox();
  if (name === "rerank" && state.info) rerank.load();
});
nav.start();
performance.mark("shell-rendered");

/** showConstants fills the page's mentions of engine constants ([data-constant="name"]). */
function showConstants(constants) {
  for (const el of document.querySelectorAll("[data-constant]")) el.textContent = String(constants[el.dataset.constant]);
}

// body[data-views="ready"] once every view has its first content (the
// corpus opened, the replay done, the lists filled), whether or not each
// step succeeded: until then style.css keeps back the parts of the views
// the engine fills, so their filling moves nothing on the first screen.
let picked = Promise.resolve();
ready.then((info) => {
  setInfo(info, liveEndpoints(info.constants, location.href));
  key.allow([state.endpoints.run, state.endpoints.listwise], info.constants.caps.response_bytes);
  showConstants(info.constants);
  corpus.ready(info);
  run.ready(info);
  rerank.ready(info);
  // The corpus picker opens the corpus chosen last time beside the replay.
  picked = corpusPicker.ready().then(docs.ready).then(experiments.ready).catch(showStartFailure);
  return replay.replay();
}).then(() => {
  trace.ready();
  runs.ready();
  compare.ready();
  whenIdle(primeCodeCache);
}).catch(showStartFailure).finally(() => picked.finally(() => { document.body.dataset.views = "ready"; }));

// For the browser tests and the benchmark: start-up marks and timings, and
// the engine client (call with its stand-ins, as the views call it).
window.ragagentPage = { timings: state.timings, engineReady: ready, call, events, FETCH, LEDGER };
