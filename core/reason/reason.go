// Package reason is the one vocabulary of outcome codes. The strings are the
// reference lab's own, so a result here and a result there can be compared
// by value.
package reason

import (
	"errors"
	"fmt"
	"strings"
)

// Code names why a run ended, or why it was refused before it started.
type Code string

// Codes a finished run reports (status answered, incomplete or failed).
const (
	CitationContractPassed     Code = "citation_contract_passed"
	ModelStopped               Code = "model_stopped"
	SearchLimit                Code = "search_limit"
	ReadOrByteLimit            Code = "read_or_byte_limit"
	ModelCallLimit             Code = "model_call_limit"
	Deadline                   Code = "deadline"
	InvalidDecision            Code = "invalid_decision"
	UnknownAction              Code = "unknown_action"
	InvalidCitation            Code = "invalid_citation"
	UnexpectedActionFields     Code = "unexpected_action_fields"
	InvalidQuery               Code = "invalid_query"
	InvalidSource              Code = "invalid_source"
	MissingAnswerEvidence      Code = "missing_answer_evidence"
	UnreadOrChangedCitation    Code = "unread_or_changed_citation"
	DuplicateQuery             Code = "duplicate_query"
	DuplicateRead              Code = "duplicate_read"
	UnissuedSource             Code = "unissued_source"
	ChangedRead                Code = "changed_read"
	FixedPolicyToolRequest     Code = "fixed_policy_tool_request"
	UnfinishedModelReply       Code = "unfinished_model_reply"
	InvalidModelJSON           Code = "invalid_model_json"
	ReplayExhausted            Code = "replay_exhausted"
	ReplayRequestMismatch      Code = "replay_request_mismatch"
	BatchRequestLimit          Code = "batch_request_limit"
	ProviderInputBytesLimit    Code = "provider_input_bytes_limit"
	ProviderResponseBytesLimit Code = "provider_response_bytes_limit"
	MissingAPIKey              Code = "missing_api_key"
	// Cancelled is ours: the person running the agent stopped it.
	Cancelled Code = "cancelled"
)

// Codes that refuse a run before it starts; they are errors, not results.
const (
	InvalidLimits   Code = "invalid_limits"
	InvalidQuestion Code = "invalid_question"
	InvalidVersion  Code = "invalid_version"
	InvalidMode     Code = "invalid_mode"
	// InvalidRequestAllowance refuses a batch whose request allowance is
	// not a whole number from 1 to 200, before anything is sent.
	InvalidRequestAllowance Code = "invalid_request_allowance"
)

// transportPrefix starts the code of a failed model request; the kind
// (HTTPError, URLError or TimeoutError) follows the colon.
const transportPrefix = "model_transport_failed:"

// Transport returns model_transport_failed:<kind>.
func Transport(kind string) Code { return Code(transportPrefix + kind) }

// TransportKind returns the kind of a model_transport_failed code.
func (c Code) TransportKind() (string, bool) {
	return strings.CutPrefix(string(c), transportPrefix)
}

// Error carries a Code through Go's error plumbing, with an optional detail
// for people (which field, which exchange) that never replaces the code.
// A record that keeps a refusal writes it as {"code", "detail"}.
type Error struct {
	Code   Code   `json:"code"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// New returns an *Error for code with a formatted detail (may be empty).
func New(code Code, format string, args ...any) error {
	detail := format
	if len(args) > 0 {
		detail = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Detail: detail}
}

// Of returns the code an error carries, if it carries one.
func Of(err error) (Code, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return "", false
}

// DetailOf returns the detail an error carries, if any.
func DetailOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return ""
}
