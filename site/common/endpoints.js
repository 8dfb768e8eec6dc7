// endpoints.js decides where the page's live requests go: the engine's own
// endpoints (load()'s constants), or, for a test, a fake Gemini on this
// machine named by ?endpoint=. Pure: it reads only its arguments.

/** isLoopbackHost is true for localhost, ::1 and 127.0.0.0/8. */
export function isLoopbackHost(host) {
  host = host.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * liveEndpoints is {run, listwise}: the agent's and the listwise
 * reranker's endpoints. An ?endpoint= override is honoured only when the
 * page itself is served from loopback and the URL is on loopback (plain
 * http(s), no user, query or fragment); the engine checks it again. A bare
 * origin gets the API's path, as the engine resolves it, and the listwise
 * model has its own path on the same origin.
 */
export function liveEndpoints(constants, pageURL) {
  const out = { run: constants.endpoint, listwise: constants.listwise_endpoint };
  const page = new URL(pageURL);
  const override = page.searchParams.get("endpoint");
  if (!override) return out;
  try {
    const u = new URL(override);
    if (isLoopbackHost(page.hostname) && isLoopbackHost(u.hostname) && /^https?:$/.test(u.protocol) && !u.username && !u.search && !u.hash) {
      out.run = u.pathname === "/" ? `${u.origin}${new URL(constants.endpoint).pathname}` : u.href;
      out.listwise = `${u.origin}${new URL(constants.listwise_endpoint).pathname}`;
    }
  } catch { /* not a URL: keep the real endpoints */ }
  return out;
}

/**
 * modelHost is where the cross-encoder's files come from: the hub, or, for
 * a test or a demo without a network, a model host on this machine named by
 * ?modelHost= (scripts/modelhost.mjs). Like ?endpoint=, it is honoured only
 * when the page itself is served from loopback and the host is a bare
 * loopback origin; a test host's manifest names its model (test: true).
 */
export function modelHost(hub, pageURL) {
  const page = new URL(pageURL);
  const override = page.searchParams.get("modelHost");
  if (override) {
    try {
      const u = new URL(override);
      if (isLoopbackHost(page.hostname) && isLoopbackHost(u.hostname) && /^https?:$/.test(u.protocol) && !u.username && !u.search && !u.hash && u.pathname === "/") {
        return { url: u.origin, test: true };
      }
    } catch { /* not a URL: the hub */ }
  }
  return { url: hub, test: false };
}
