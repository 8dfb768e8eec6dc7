package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// The service's own refusal codes, beside the core's (invalid_limits,
// invalid_question, invalid_version, invalid_mode, batch_request_limit,
// missing_api_key), which it uses where they apply. api/openapi.json lists
// them all.
const (
	CodeUnauthorized         reason.Code = "unauthorized"
	CodeMissingScope         reason.Code = "missing_scope"
	CodeNotFound             reason.Code = "not_found"
	CodeMethodNotAllowed     reason.Code = "method_not_allowed"
	CodeBodyTooLarge         reason.Code = "body_too_large"
	CodeUnsupportedMediaType reason.Code = "unsupported_media_type"
	CodeMalformedJSON        reason.Code = "malformed_json"
	CodeUnknownParameter     reason.Code = "unknown_parameter"
	CodeInvalidParameter     reason.Code = "invalid_parameter"
	CodeAtCapacity           reason.Code = "at_capacity"
	CodeQueueFull            reason.Code = "queue_full"
	CodeRequestLimit         reason.Code = "request_limit"
	CodeTooManyStreams       reason.Code = "too_many_streams"
	CodeMalformedRequest     reason.Code = "malformed_request"
	CodeHeadersTooLarge      reason.Code = "headers_too_large"
	CodeAlreadyFinished      reason.Code = "already_finished"
	CodeNoRecording          reason.Code = "no_recording"
	CodeInternal             reason.Code = "internal_error"
	CodeUnavailable          reason.Code = "unavailable"
	CodeInvalidPack          reason.Code = "invalid_pack"
	CodeCorpusExists         reason.Code = "corpus_exists"
	CodeCorpusQuota          reason.Code = "corpus_quota"
	CodeBuiltInCorpus        reason.Code = "built_in_corpus"
)

// A run request's shape is refused by the engine's parser, with its codes.
const (
	CodeUnknownField  = engine.UnknownField
	CodeInvalidPolicy = engine.InvalidPolicy
	CodeUnknownCorpus = engine.UnknownCorpus
	CodeInvalidField  = engine.InvalidField
)

// apiError is a refusal: its HTTP status, code and message, and for a 429
// when to come back.
type apiError struct {
	status     int
	code       reason.Code
	message    string
	retryAfter int // seconds; 0: no Retry-After
}

func refuse(status int, code reason.Code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

// errorBody is {"code", "message"}: a refusal's body inside "error", and a
// run's error once a fault ended it.
type errorBody struct {
	Code    reason.Code `json:"code"`
	Message string      `json:"message"`
}

// write sends the refusal as {"error": {"code", "message"}}.
func (e *apiError) write(w http.ResponseWriter) {
	h := w.Header()
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if e.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="ragagent"`)
	}
	writeJSON(w, e.status, struct {
		Error errorBody `json:"error"`
	}{errorBody{e.code, e.message}})
}

// writeJSON sends v as JSON (no HTML escaping: the bodies are data, not
// markup, and stay byte-comparable with the command line's).
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error": {"code": "internal_error", "message": "the response could not be encoded"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(data)
	w.Write([]byte("\n"))
}

func marshal(v any) ([]byte, error) {
	var b jsonBuffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.trimmed(), nil
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

// trimmed drops the encoder's trailing newline.
func (j *jsonBuffer) trimmed() []byte {
	if n := len(j.b); n > 0 && j.b[n-1] == '\n' {
		return j.b[:n-1]
	}
	return j.b
}
