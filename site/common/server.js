// server.js is the only module that ever holds the team server's token,
// as key.js alone holds the Gemini key. It owns the Team server box (the
// server's URL, the token field, "Remember for this tab" in
// sessionStorage, Forget), connects (the server's packs, GET /v1/corpora),
// reconnects on load to a server remembered for the tab, and runs a
// retrieval or a scripted agent experiment there, through the client the node
// module uses too (serverlab.js: the token only in the bearer
// header of requests to that server, no redirect, no cookie, no
// referrer). Other modules ask connection() and hand retrieval() or
// evaluate() the experiment; the token string never leaves this module and the client it
// made, never enters the address, a status line, the console or a
// download (screen).

import { $, h, clear } from "./dom.js";
import { plural, refusal } from "./format.js";
import { call } from "../engine/client.js";
import { ServerLab, serverOf } from "./serverlab.js";

const SERVER_STORAGE = "ragagent.server";

let token = "";
let lab = null; // the ServerLab of the connection, which holds the token too
let connected = null; // {server, corpora} of the connection, or null
let attempt = 0; // the latest connect's number: an older one's answer is dropped
let blocked = null; // the last origin the page's CSP refused a connection to
const listeners = [];

/** init binds the Team server box; a server and token remembered for the
 * tab are restored and connected to again, so a reload keeps the connection. */
export function init() {
  const url = $("#srv-url");
  const input = $("#srv-token");
  const remember = $("#srv-remember");
  let kept = null;
  try {
    kept = JSON.parse(sessionStorage.getItem(SERVER_STORAGE) || "null");
  } catch { /* storage blocked or not JSON: nothing was remembered */ }
  if (kept && typeof kept.url === "string" && typeof kept.token === "string") {
    url.value = kept.url;
    token = kept.token;
    input.value = kept.token;
    remember.checked = true;
  }
  // keep remembers the server and the token in this tab's storage (false:
  // forgets them); with storage blocked nothing is remembered.
  const keep = (on) => {
    try {
      if (on) sessionStorage.setItem(SERVER_STORAGE, JSON.stringify({ url: url.value, token }));
      else sessionStorage.removeItem(SERVER_STORAGE);
    } catch { /* storage blocked: nothing is remembered */ }
  };
  // A connection is to the server and token it was made with: an edit ends it.
  const edited = () => {
    if (remember.checked) keep(true);
    if (lab) disconnect("Edited: connect again to use this server and token.");
  };
  url.addEventListener("input", edited);
  input.addEventListener("input", () => {
    token = input.value;
    edited();
  });
  remember.addEventListener("change", () => keep(remember.checked));
  document.addEventListener("securitypolicyviolation", (e) => {
    try {
      blocked = new URL(e.blockedURI).origin;
    } catch { /* not a URL: not a connection */ }
  });
  $("#srv-form").addEventListener("submit", (e) => {
    e.preventDefault();
    connect();
  });
  $("#srv-forget").addEventListener("click", () => {
    token = "";
    input.value = "";
    remember.checked = false;
    keep(false);
    disconnect("The token is forgotten: gone from this page's memory and this tab's storage.");
  });
  if (remember.checked) connect(true);
}

/** connection is the server connected to ({server, corpora}: its URL, no token, and its packs), or null. */
export function connection() {
  return connected;
}

/** onChange calls fn after each connection or disconnection. */
export function onChange(fn) {
  listeners.push(fn);
}

function changed() {
  for (const fn of listeners) fn();
}

/** show writes the box's status: a sentence, or an element; kind "ok", "error" or "" (in progress). */
function show(what, kind = "") {
  const status = $("#srv-status");
  clear(status).append(what);
  status.className = kind === "error" ? "message error" : "help";
  document.body.dataset.server = kind === "ok" ? "connected" : kind === "error" ? "refused" : kind === "off" ? "none" : "connecting";
}

function disconnect(why) {
  attempt++;
  const old = lab;
  lab = null;
  connected = null;
  old?.close();
  show(why, "off");
  changed();
}

/** safe is a message with the token, should a server echo it, replaced. */
function safe(text) {
  const t = token.trim();
  return t && String(text).includes(t) ? String(text).split(t).join("[token]") : String(text);
}

/**
 * connect reads the box, makes the client and asks the server for its
 * packs: connected, they are listed; refused, the server's code and
 * message are shown (never the token). remembered says the server and
 * token came from this tab's storage (a reload), which the status says.
 */
async function connect(remembered = false) {
  const url = $("#srv-url").value.trim();
  const n = ++attempt;
  const old = lab;
  lab = null;
  connected = null;
  old?.close();
  changed();
  let base;
  try {
    base = serverOf(url, token.trim(), "Team server");
  } catch (err) {
    show(`Not connected: ${safe(err.message)}.`, "error");
    return;
  }
  show(remembered ? `Reconnecting to ${base.origin}, remembered for this tab…` : `Connecting to ${base.origin}…`);
  blocked = null;
  // The question sets are read by this page's engine, as the node module's
  // are by its local one: casesJSON is the conversion the command line makes.
  const client = new ServerLab(base, token.trim(), async () => ({
    readCases: async (text) => JSON.parse(await call("casesJSON", [text])),
    close: async () => {},
  }));
  try {
    const corpora = await client.corpora();
    if (n !== attempt) return client.close();
    lab = client;
    connected = { server: client.server, corpora };
    show(h("span", {}, `${remembered ? "Reconnected" : "Connected"} to ${client.server}${remembered ? " (remembered for this tab)" : ""}: ${plural(corpora.length, "pack")} offered there, `,
      ...corpora.flatMap((c, i) => [i ? ", " : "", h("code", {}, c.id), ` (${c.origin === "uploaded" ? "your upload" : "built in"})`]), "."), "ok");
    changed();
  } catch (err) {
    client.close();
    const why = await refused(err, base);
    if (n !== attempt) return;
    show(remembered ? `${why} (The server and token were remembered for this tab: edit them, or Forget the token.)` : why, "error");
  }
}

/** refused words why a connection failed: the server's code and message, or why it could not be reached. */
async function refused(err, base) {
  // The browser reports a CSP's refusal after the fetch has failed: a moment is given for it to arrive.
  if (err.code === "server_unreachable" && blocked !== base.origin) await new Promise((resolve) => setTimeout(resolve, 200));
  if (err.code === "server_unreachable" && blocked === base.origin) {
    return `Not connected: this page's Content-Security-Policy does not let it connect to ${base.origin}. Serve the page with that origin allowed (serve --api-origin ${base.origin}).`;
  }
  if (err.code === "server_unreachable") {
    return `Not connected: ${safe(err.message)}. A server that does not allow this page's origin (serve-api --allow-origin ${location.origin}) looks the same to a page.`;
  }
  return `Refused by ${base.origin}: ${refusal(plain(err))}${err.detail ? ` (${err.detail})` : ""}`;
}

/** plain is a refusal as the page words it (format.js's refusal): its code and its message, the token replaced. */
function plain(err) {
  return Object.assign(new Error(safe(err.message)), { code: err.code });
}

/**
 * retrieval runs a retrieval experiment on the server connected to
 * (serverlab.js's retrievalText: corpus, cases, configs, k, onCase,
 * onState, signal) and resolves with the result's text as the server sent
 * it. A refusal rejects with the server's code and message.
 */
export function retrieval(options) {
  return experiment((client) => client.retrievalText(options));
}

/**
 * evaluate runs a scripted agent experiment on the server connected to
 * (serverlab.js's evalText: corpus, cases, config, policy, onTrial,
 * onState, signal) and resolves with the result's text as the server sent
 * it (`ragagent eval --json`'s, its seconds the server's). A refusal
 * rejects with the server's code and message.
 */
export function evaluate(options) {
  return experiment((client) => client.evalText(options));
}

/** experiment runs one call of the connection's client, its refusals worded without the token. */
async function experiment(run) {
  if (!lab) throw Object.assign(new Error("not connected to a team server"), { code: "not_connected" });
  const client = lab;
  try {
    return await run(client);
  } catch (err) {
    if (err.code === "lab_closed") {
      throw Object.assign(new Error("the connection ended (the server or token was edited or forgotten) before the experiment did; it goes on on the server"), { code: "disconnected" });
    }
    throw plain(err);
  }
}

/**
 * screen is a download's check beside key.js's: the reason it is withheld
 * when it holds the token, else null.
 */
export function screen(text) {
  const t = token.trim();
  if (t.length < 8 || !String(text).includes(t)) return null;
  return "the file holds your team server's token, so it was not saved";
}
