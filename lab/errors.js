// errors.js turns what the engine rejects with into the node module's
// LabError: an Error whose code is the reason code the command line would
// print (the engine's own, core/reason), or one of the module's codes for
// what the command line reports without one (CODES).

// CODES and LabError are site/common/laberror.js's: one class for the
// local lab, the server lab and the page's server client.
import { CODES, LabError } from "../site/common/laberror.js";

export { CODES, LabError };

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
