// errors.js turns what the engine rejects with into the node module's
// LabError: an Error whose code is the reason code the command line would
// print (the engine's own, core/reason), or one of the module's codes for
// what the command line reports without one (CODES).

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

/** LabError is every rejection of the node module. */
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

/**
 * fromEngine maps an engine rejection (wasm/bridge.go's jsError) to a
 * LabError: RunRefused carries its reason code; RecordingError is an
 * invalid recording; the engine's sentence for a case filter that keeps
 * no trial (engine.NoCaseError's) an unknown case.
 */
export function fromEngine(err) {
  if (err instanceof LabError) return err;
  const message = String(err?.message ?? err);
  if (typeof err?.code === "string" && err.code !== "") {
    return new LabError(err.code, message, { detail: err.detail, cause: err });
  }
  if (err?.name === "RecordingError") return new LabError(CODES.INVALID_RECORDING, message, { cause: err });
  if (/^no trial has case /.test(message)) return new LabError(CODES.UNKNOWN_CASE, message, { cause: err });
  return new LabError(CODES.ENGINE_ERROR, message, { cause: err });
}
