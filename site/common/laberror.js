// laberror.js is the error the node module (lab/) and the server client
// it shares with the page (common/serverlab.js) reject with: an Error
// whose code is the reason code the command line would print (the
// engine's own, core/reason, or a server's error code), or one of CODES
// for what the command line reports without one. It lives in site/ so
// the page imports it as it is; lab/errors.js re-exports it. It imports
// nothing and touches no document.

/**
 * CODES are the node module's own error codes, for failures the engine
 * gives no reason code to (the command line prints these as a sentence).
 */
export const CODES = Object.freeze({
  /** site/main.wasm (or wasm_exec.js) is missing: run make wasm. */
  ENGINE_MISSING: "engine_missing",
  /** The lab was closed. */
  CLOSED: "lab_closed",
  /** A recording that is not ragagent-recording/1 text. */
  INVALID_RECORDING: "invalid_recording",
  /** A case filter that keeps no trial. */
  UNKNOWN_CASE: "unknown_case",
  /** An argument of the wrong type, or an unreadable file. */
  INVALID_ARGUMENT: "invalid_argument",
  /** A local-only call (replay, run, eval, tune, recording) on a server lab. */
  NOT_ON_SERVER: "not_on_server",
  /** A server lab's server could not be reached, or its stream kept breaking. */
  SERVER_UNREACHABLE: "server_unreachable",
  /** A server's answer that is not the API's (no error body, not JSON). */
  SERVER_ERROR: "server_error",
  /** Anything else the engine refused. */
  ENGINE_ERROR: "engine_error",
});

/** LabError is every rejection of the node module and of the server client. */
export class LabError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{detail?: string, cause?: unknown}} [more]
   */
  constructor(code, message, more = {}) {
    super(message, more.cause === undefined ? undefined : { cause: more.cause });
    this.name = "LabError";
    this.code = code;
    if (more.detail !== undefined) this.detail = more.detail;
  }
}
