// serverlab.js is the client of a team's server (the server edition,
// `ragagent serve-api`) that the node module's server lab (lab/server.js,
// openLab({server, token})) and the page (common/server.js, the one
// module that holds the page's token) share: one client, so the page's
// "on the server" experiment and a CI job's get the same value by the
// same requests. A retrieval comparison and a scripted agent experiment
// (`ragagent eval --cases`) run there as experiments (POST
// /v1/experiments, their progress from the experiment's SSE events, their
// value the exact bytes GET /v1/experiments/{id}/result sends); a refusal
// rejects with a LabError whose code and message are the server's. The
// token goes only into the Authorization header of requests to that
// server, never into a message. It uses only what browsers and node both
// have (fetch, AbortController, TextDecoder, a stream's reader) and
// imports only laberror.js, so it runs in both as it is. See docs/node.md,
// "Against a team's server", and docs/page.md, "A team's server".
import { CODES, LabError } from "./laberror.js";

// RECONNECTS is how many times in a row (with no event between) an
// experiment's event stream that broke before its end event is resumed
// (Last-Event-ID) before the call gives up with server_unreachable.
const RECONNECTS = 5;

// POLL_MS is how often an experiment is read when the server refuses it
// a stream (too_many_streams).
const POLL_MS = 250;

/**
 * serverOf checks a server's URL and token and returns the server's base
 * URL (its path ending in "/", the API's paths resolved under it).
 * Neither value is echoed in a refusal: a URL may carry a secret too.
 * what names the caller in the messages ("openLab" in node).
 */
export function serverOf(server, token, what = "openLab") {
  if (typeof server !== "string" && !(server instanceof URL)) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: server must be the server's URL (http or https)`);
  }
  let url;
  try {
    url = new URL(String(server));
  } catch {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: server is not a URL (give http://host:port or https://host)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: server must be an http or https URL, not ${url.protocol}`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: server must not carry a user name or password; give the token as token`);
  }
  if (url.search !== "" || url.hash !== "") {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: server must not carry a query or a fragment`);
  }
  // A bearer token is printable ASCII without spaces; anything else could
  // not be sent as a header (and fetch's refusal would quote it).
  if (typeof token !== "string" || !/^[\x21-\x7e]{1,4096}$/.test(token)) {
    throw new LabError(CODES.INVALID_ARGUMENT, `${what}: token must be the server's bearer token (\`ragagent tokens add\` prints one), printable with no spaces`);
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  return url;
}

/**
 * ServerLab is a lab whose calls run on a team's server. Its methods may
 * run concurrently; close() aborts its open requests and streams (it
 * cancels no experiment: an experiment is the server's, and a signal
 * cancels one). A question set is read by the local engine (the command
 * line's parser: a TSV becomes the same ragagent-cases/1 object), which
 * is started the first time a call brings a set.
 */
export class ServerLab {
  #base;
  #token;
  #openEngine;
  #engine = null;
  #closed = false;
  // #inflight are the controllers of the open requests and calls, which
  // close() aborts (each removed when its request is read to its end).
  #inflight = new Set();

  /**
   * @param {URL} base the server (serverOf's)
   * @param {string} token
   * @param {() => Promise<{readCases(text: string): Promise<object>, close(): Promise<void>}>} openEngine
   *   starts the local engine (node: a local lab; the page: its worker's casesJSON)
   */
  constructor(base, token, openEngine) {
    this.#base = base;
    this.#token = token;
    this.#openEngine = openEngine;
    /** The server's URL the calls go to (no token in it). */
    this.server = base.href;
  }

  /**
   * retrieval runs `ragagent retrieval`'s comparison on the server and
   * returns what `ragagent retrieval --json` prints (the server's result
   * bytes, parsed): the same object a local lab's retrieval returns for
   * the same inputs. See retrievalText for the options.
   *
   * @param {import("../../lab/index.js").ServerRetrievalOptions} [options]
   */
  async retrieval(options) {
    return JSON.parse(await this.retrievalText(options));
  }

  /**
   * retrievalText runs `ragagent retrieval`'s comparison on the server
   * and returns the result's bytes as the server sent them (what
   * `ragagent retrieval --json` prints), as text. corpus is a pack id the
   * server offers (a built-in or the token's upload; default seed), cases
   * a question set's text (JSON or TSV; default the pack's own), configs
   * names or specs (an object, or its JSON text), k the depth.
   * onCase(done, total) sees the server's progress events and
   * onState(state, id) the experiment's state as its events say it
   * ("queued", then "running": its queued and started events, each
   * once); signal, once aborted, cancels the experiment on the server
   * and rejects with code cancelled.
   *
   * @param {import("../../lab/index.js").ServerRetrievalOptions} [options]
   */
  async retrievalText({ corpus = "seed", cases, configs, k, onCase, onState, signal, ...rest } = {}) {
    this.#open();
    for (const name of ["models", "vectors", "gemini"]) {
      if (rest[name] !== undefined) {
        throw new LabError(CODES.NOT_ON_SERVER, `retrieval: ${name}: it runs in this process; a server lab ranks the server's offline configurations only (use a local lab: openLab())`);
      }
    }
    const unknown = Object.keys(rest).filter((k) => !["models", "vectors", "gemini"].includes(k));
    if (unknown.length > 0) throw new LabError(CODES.INVALID_ARGUMENT, `retrieval: unknown option ${unknown[0]}`);
    if (typeof corpus !== "string" || corpus === "") {
      throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: corpus must be a pack id the server offers");
    }
    if (cases !== undefined && typeof cases !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: cases must be the question set's text (a string)");
    }
    if (configs !== undefined && !Array.isArray(configs)) {
      throw new LabError(CODES.INVALID_ARGUMENT, "retrieval: configs must be a list of configurations' names and specs");
    }
    this.#checkHooks("retrieval", { onCase, onState }, signal);
    const body = { kind: "retrieval", corpus };
    if (cases !== undefined) body.cases = await this.readCases(cases);
    if (configs !== undefined) body.configs = configs.map(configRef);
    if (k !== undefined) body.k = k;
    return this.#experiment(body, { onProgress: onCase, onState, signal });
  }

  /**
   * eval runs `ragagent eval --cases`' agent experiment on the server and
   * returns what `ragagent eval --json` prints (the server's result
   * bytes, parsed): the same object a local lab's eval returns for the
   * same inputs, but for the measured durations (experiment.paths[]'s
   * seconds and mean_seconds are the server's). See evalText for the
   * options.
   *
   * @param {import("../../lab/index.js").ServerEvalOptions} [options]
   */
  async eval(options) {
    return JSON.parse(await this.evalText(options));
  }

  /**
   * evalText runs an agent experiment on the server (POST /v1/experiments,
   * kind agent) and returns its result's bytes as the server sent them
   * (what `ragagent eval --json` prints), as text. corpus is a pack id the
   * server offers (default seed), cases a question set's text (JSON or
   * TSV; default the pack's own), config a configuration's name or spec
   * (an object, or its JSON text; default the pack's), policy "scripted"
   * (the server runs no other: its refusal, unsupported_policy, rejects).
   * onTrial(done, total) sees the server's progress events (a trial
   * graded each), onState(state, id) the experiment's queued and running
   * states once each; signal, once aborted, cancels the experiment on the
   * server and rejects with code cancelled.
   *
   * @param {import("../../lab/index.js").ServerEvalOptions} [options]
   */
  async evalText({ corpus = "seed", cases, config, policy = "scripted", onTrial, onState, signal, ...rest } = {}) {
    this.#open();
    if (rest.recording !== undefined) {
      throw new LabError(CODES.NOT_ON_SERVER, "eval: recording: a replay runs in this process; a server lab runs the scripted policy only (use a local lab: openLab())");
    }
    const unknown = Object.keys(rest).filter((k) => k !== "recording");
    if (unknown.length > 0) throw new LabError(CODES.INVALID_ARGUMENT, `eval: unknown option ${unknown[0]}`);
    if (typeof corpus !== "string" || corpus === "") {
      throw new LabError(CODES.INVALID_ARGUMENT, "eval: corpus must be a pack id the server offers");
    }
    if (cases !== undefined && typeof cases !== "string") {
      throw new LabError(CODES.INVALID_ARGUMENT, "eval: cases must be the question set's text (a string)");
    }
    if (typeof policy !== "string") throw new LabError(CODES.INVALID_ARGUMENT, "eval: policy must be a policy's name (scripted)");
    this.#checkHooks("eval", { onTrial, onState }, signal);
    const body = { kind: "agent", corpus, policy };
    if (cases !== undefined) body.cases = await this.readCases(cases);
    if (config !== undefined) body.config = configRef(config);
    return this.#experiment(body, { onProgress: onTrial, onState, signal });
  }

  // #checkHooks refuses callbacks that are not functions and a signal
  // that is not an AbortSignal, naming the call.
  #checkHooks(what, hooks, signal) {
    for (const [name, fn] of Object.entries(hooks)) {
      if (fn !== undefined && typeof fn !== "function") throw new LabError(CODES.INVALID_ARGUMENT, `${what}: ${name} must be a function`);
    }
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new LabError(CODES.INVALID_ARGUMENT, `${what}: signal must be an AbortSignal`);
    }
  }

  // #experiment admits an experiment (POST /v1/experiments with body),
  // follows its events to their end (onProgress(done, total) each
  // progress, onState each state once) and returns its result's bytes;
  // the signal cancels it on the server; a failed end rejects with the
  // experiment's error.
  async #experiment(body, { onProgress, onState, signal }) {
    if (signal?.aborted) throw cancelled();

    const x = await this.#json("POST", "v1/experiments", { body: JSON.stringify(body), type: "application/json" });
    const paths = {
      events: relative(x.links?.events, `v1/experiments/${x.id}/events`),
      cancel: relative(x.links?.cancel, `v1/experiments/${x.id}/cancel`),
      result: relative(x.links?.result, `v1/experiments/${x.id}/result`),
      self: relative(x.links?.self, `v1/experiments/${x.id}`),
    };
    // Each state once, in the order the experiment's events say them (a
    // courtesy: one that throws does not end the call); queued never
    // after running.
    let said = "";
    const state = (s) => {
      if (s === said || !["queued", "running"].includes(s) || (s === "queued" && said === "running")) return;
      said = s;
      try { onState?.(s, x.id); } catch { /* ignored */ }
    };
    // The call's own requests end on the lab's close or the signal.
    const call = new AbortController();
    this.#inflight.add(call);
    let cancelling = null;
    const onAbort = () => {
      call.abort();
      // The cancel is sent whatever the stream does; its refusal (409
      // already_finished: it ended meanwhile) changes nothing here.
      cancelling ??= this.#send("POST", paths.cancel, {}, () => {}).catch(() => {});
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (signal?.aborted) onAbort();
      const end = await this.#follow(paths, call.signal, onProgress, state);
      if (end.state === "succeeded") {
        return await this.#send("GET", paths.result, { signal: call.signal }, (r) => r.text());
      }
      if (end.state === "cancelled") throw cancelled();
      const e = end.error ?? {};
      throw new LabError(typeof e.code === "string" ? e.code : CODES.SERVER_ERROR, typeof e.message === "string" ? e.message : `the experiment ended ${end.state}`);
    } catch (err) {
      if (signal?.aborted) {
        await cancelling;
        throw cancelled();
      }
      if (this.#closed) throw closed();
      throw err;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#inflight.delete(call);
    }
  }

  /**
   * readCases reads a question set's text (ragagent-cases/1 JSON or the
   * TSV) with the local engine, as the command line reads --cases, and
   * returns its ragagent-cases/1 object: what retrieval sends the server.
   * A set the parser refuses rejects with invalid_cases before anything
   * is sent.
   *
   * @param {string} text
   */
  async readCases(text) {
    this.#open();
    this.#engine ??= this.#openEngine();
    const lab = await this.#engine;
    this.#open();
    return lab.readCases(text);
  }

  /**
   * corpora lists the packs the server offers this token (GET
   * /v1/corpora): the built-in ones and the token's uploads, each
   * {id, title, language, versions, default_version, search_k, passages,
   * origin, sha256, bytes?}.
   */
  async corpora() {
    this.#open();
    return (await this.#json("GET", "v1/corpora")).corpora;
  }

  /** packs lists the pack ids a corpus may name on the server. */
  async packs() {
    return (await this.corpora()).map((c) => c.id);
  }

  /**
   * uploadArchive uploads a pack as the token's own (POST /v1/corpora):
   * body is a gzip'd tar of its manifest.json and the passages file it
   * names. It returns the server's answer ({id, passages, sha256, origin,
   * bytes, ...}); the server checks the pack, and its refusal
   * (invalid_pack, corpus_exists, corpus_quota, ...) rejects with its code.
   *
   * @param {Uint8Array} body
   */
  async uploadArchive(body) {
    this.#open();
    return this.#json("POST", "v1/corpora", { body, type: "application/gzip" });
  }

  /**
   * close aborts the lab's open requests and event streams (their calls
   * reject with lab_closed; the server's experiments go on) and ends the
   * local engine if one was started. Calling it again does nothing.
   */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const c of this.#inflight) c.abort();
    this.#inflight.clear();
    const engine = this.#engine;
    this.#engine = null;
    if (engine !== null) await engine.then((lab) => lab.close(), () => {});
  }

  #open() {
    if (this.#closed) throw closed();
  }

  // #follow reads the experiment's events until its end event, resuming
  // a broken stream from the last event seen, and returns the end's data
  // ({state, progress, error?}). Progress events reach onCase, the
  // queued and started events' states reach state.
  async #follow(paths, signal, onCase, state) {
    let last = null;
    let broken = 0;
    const seen = (id) => {
      broken = 0; // a stream that delivers is not a broken one
      if (id !== undefined) last = id;
    };
    for (;;) {
      const headers = last === null ? {} : { "Last-Event-ID": last };
      let end = null;
      try {
        end = await this.#send("GET", paths.events, { signal, headers, accept: "text/event-stream" }, (r) => readEvents(r.body, signal, seen, onCase, state));
      } catch (err) {
        // The token's streams are all open (other calls of this lab, or
        // other clients): the experiment itself is read instead.
        if (err.code === "too_many_streams") return this.#poll(paths, signal, onCase, state);
        if (err.code !== CODES.SERVER_UNREACHABLE) throw err;
      }
      if (end !== null) return end;
      // Resumed after the last event seen, the stream sends the rest
      // (the end too, when the experiment ended meanwhile).
      if (++broken > RECONNECTS) {
        throw new LabError(CODES.SERVER_UNREACHABLE, `the experiment's event stream broke ${broken} times in a row before its end event`);
      }
      await pause(100 * broken, signal);
    }
  }

  // #poll reads the experiment every POLL_MS until it ends, telling
  // onCase of each new progress and state of its state: #follow's
  // stand-in when the server has no stream left for the token.
  async #poll(paths, signal, onCase, state) {
    let seen = -1;
    for (;;) {
      const x = await this.#json("GET", paths.self, { signal });
      state(x.state);
      if (x.progress?.done > seen && x.progress.done > 0) {
        seen = x.progress.done;
        try { onCase?.(x.progress.done, x.progress.total); } catch { /* ignored */ }
      }
      if (!["queued", "running"].includes(x.state)) return { state: x.state, progress: x.progress, error: x.error };
      await pause(POLL_MS, signal);
    }
  }

  // #json sends a request and returns its JSON answer.
  #json(method, where, options = {}) {
    return this.#send(method, where, options, async (r) => {
      const text = await r.text();
      try {
        return JSON.parse(text);
      } catch {
        throw new LabError(CODES.SERVER_ERROR, `${method} ${where}: the server answered ${r.status} with a body that is not JSON`);
      }
    });
  }

  // #send sends one request with the token to the server (no redirect
  // followed: the token goes to this server only; in a browser no cookie
  // and no referrer either) and returns what use makes of its 2xx
  // response; any other rejects with the server's error code and message.
  // The request is aborted by signal or close() until use is done with it.
  async #send(method, where, { body, type, headers = {}, signal, accept = "application/json" }, use) {
    if (this.#closed) throw closed();
    const url = new URL(where, this.#base);
    const c = new AbortController();
    const abort = () => c.abort();
    this.#inflight.add(c);
    signal?.addEventListener("abort", abort, { once: true });
    if (signal?.aborted) c.abort();
    try {
      let r;
      try {
        r = await fetch(url, {
          method,
          body,
          redirect: "error",
          credentials: "omit",
          referrerPolicy: "no-referrer",
          signal: c.signal,
          headers: { ...headers, Authorization: `Bearer ${this.#token}`, Accept: accept, ...(type === undefined ? {} : { "Content-Type": type }) },
        });
      } catch (err) {
        if (this.#closed) throw closed();
        if (err?.name === "AbortError") throw err;
        const why = err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(err);
        throw new LabError(CODES.SERVER_UNREACHABLE, `${method} ${url.origin}${url.pathname}: the server could not be reached (${why})`);
      }
      if (r.ok) return await use(r);
      const text = await r.text().catch(() => "");
      let e;
      try {
        e = JSON.parse(text)?.error;
      } catch { /* not JSON */ }
      if (typeof e?.code === "string" && typeof e?.message === "string") {
        throw new LabError(e.code, e.message, { detail: `${method} ${url.pathname}: ${r.status}` });
      }
      throw new LabError(CODES.SERVER_ERROR, `${method} ${url.pathname}: the server answered ${r.status} without an error body`);
    } finally {
      this.#inflight.delete(c);
      signal?.removeEventListener("abort", abort);
    }
  }
}

/**
 * readEvents reads an experiment's event stream: each event's id goes to
 * seen, each progress to onCase and each queued or started event's state
 * to state (courtesies: one that throws does not end the call), and the
 * end event's data is returned; null when the stream ends or breaks
 * before it (the caller resumes it).
 */
async function readEvents(body, signal, seen, onCase, state) {
  try {
    for await (const ev of events(body)) {
      seen(ev.id);
      if (!["progress", "end", "queued", "started"].includes(ev.event)) continue;
      let data;
      try {
        data = JSON.parse(ev.data);
      } catch {
        throw new LabError(CODES.SERVER_ERROR, `the server sent an ${ev.event} event that is not JSON`);
      }
      if (ev.event === "end") return data;
      state(data.state);
      if (ev.event !== "progress") continue;
      try { onCase?.(data.progress?.done, data.progress?.total); } catch { /* ignored */ }
    }
  } catch (err) {
    if (err instanceof LabError || signal.aborted) throw err;
  }
  return null;
}

/**
 * configRef is one configuration as the server's ConfigRef takes it: a
 * name as it is, a spec object as it is, a spec's JSON text parsed.
 */
function configRef(c) {
  if (typeof c === "string") {
    if (!c.trimStart().startsWith("{")) return c;
    try {
      return JSON.parse(c);
    } catch (err) {
      throw new LabError("invalid_config", `a configuration spec that is not valid JSON: ${err.message}`);
    }
  }
  if (c !== null && typeof c === "object" && !Array.isArray(c)) return c;
  throw new LabError("invalid_config", "a configuration is a built-in's name (a string) or a spec (an object or its JSON text)");
}

// relative is a link the server sent (an absolute path) as a path under
// the base, or the documented path when it sent none.
function relative(link, fallback) {
  return typeof link === "string" && link.startsWith("/") ? link.slice(1) : fallback;
}

/**
 * events parses a text/event-stream body (a ReadableStream of bytes, read
 * with its reader: browsers and node both have one) into {id, event,
 * data} events (comments, such as the server's keep-alives, skipped).
 */
async function* events(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ev = {};
  let data = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line === "") {
          if (data.length > 0 || ev.event !== undefined) yield { ...ev, data: data.join("\n") };
          ev = {};
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "event") ev.event = value;
        else if (field === "id") ev.id = value;
      }
    }
  } finally {
    // Done with early (the end event) or broken: the stream is let go.
    reader.cancel().catch(() => {});
  }
}

function cancelled() {
  return new LabError("cancelled", "the experiment was cancelled (the signal was aborted)");
}

function closed() {
  return new LabError(CODES.CLOSED, "the lab is closed: open another with openLab()");
}

// pause waits ms, or until the signal aborts.
function pause(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
