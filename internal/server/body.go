package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// MaxBody caps a request body. A run's request is a question of at most
// 512 code points (2 KiB of UTF-8, 3 KiB escaped) and a few short fields;
// 16 KiB leaves room without letting a client make the server buffer much.
const MaxBody = 16 << 10

// runSpec is a run's request with every default filled in: the engine's
// run request and the service's own fields, what is stored with the run
// and what a queued run starts from, after a restart too.
type runSpec struct {
	Run          engine.RunRequest
	Strategy     string // reject or enqueue
	Stream       bool
	OnDisconnect string // continue or cancel
}

// Value is the spec as JSON in a fixed key order (the run's fields, then
// the service's), written with pyjson so a question's lone surrogate
// escapes survive the round trip exactly as the core decoded them.
func (s runSpec) Value() *pyjson.Object {
	return s.Run.Spec().Set("strategy", s.Strategy).Set("stream", s.Stream).Set("on_disconnect", s.OnDisconnect)
}

// JSON is Value as text.
func (s runSpec) JSON() string { return pyjson.Dumps(s.Value(), pyjson.Options{Strict: true}) }

// readBody reads a JSON request body under the cap: 415 for another media
// type, 413 over the cap.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	return readBodyUpTo(w, r, MaxBody)
}

// readBodyUpTo is readBody under another cap (an experiment's request
// carries a question set).
func readBodyUpTo(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *apiError) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be application/json")
	}
	if cs, ok := params["charset"]; ok && !equalFoldASCII(cs, "utf-8") {
		return nil, refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be UTF-8")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, refuse(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body is over %d bytes", max))
	}
	if err != nil {
		return nil, refuse(http.StatusBadRequest, CodeMalformedJSON, "the body could not be read")
	}
	return data, nil
}

func equalFoldASCII(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// decodeObject decodes a body strictly: RFC 8259 JSON (no NaN or
// Infinity, which Python's decoder would take), valid UTF-8, exactly one
// value, an object, and no key repeated at any depth (Python keeps the
// last, encoding/json too: either way one of the two is silently lost).
// The values are pyjson's, so the core checks their types exactly as it
// checks a recorded trial's.
func decodeObject(data []byte) (*pyjson.Object, *apiError) {
	bad := func(format string, a ...any) (*pyjson.Object, *apiError) {
		return nil, refuse(http.StatusBadRequest, CodeMalformedJSON, fmt.Sprintf(format, a...))
	}
	if !utf8.Valid(data) {
		return bad("the body is not valid UTF-8")
	}
	if err := strictJSON(data); err != nil {
		return bad("the body is not JSON: %v", err)
	}
	v, err := pyjson.Decode(string(data))
	if err != nil {
		return bad("the body is not JSON: %v", err)
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return bad("the body must be a JSON object")
	}
	return o, nil
}

// strictJSON walks the tokens of one JSON value, refusing a repeated key
// in any object and anything after the value.
func strictJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return errors.New("unexpected end")
			}
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, key: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				if top.keys[t] {
					return fmt.Errorf("the key %q is repeated", t)
				}
				top.keys[t] = true
				top.key = false
				continue
			}
			if top != nil && top.object {
				top.key = true
			}
		default:
			if top != nil && top.object {
				top.key = true
			}
		}
		if len(stack) == 0 {
			if dec.More() {
				return errors.New("extra data after the value")
			}
			if _, err := dec.Token(); err != io.EOF {
				return errors.New("extra data after the value")
			}
			return nil
		}
	}
}

// serviceFields are the service's own fields of a run's request, checked
// in this order after the engine's.
var serviceFields = []string{"strategy", "stream", "on_disconnect"}

// parseSpec checks a run's request: the run's own fields by the engine's
// parser (an unknown field first, then the task in the core's order:
// limits, question, version, mode, a wrong type getting the same code as a
// wrong value as for a recorded trial; then the policy and the corpus),
// then the service's fields. An absent field takes its default; null is a
// value (and refused) everywhere but limits, where it means the defaults.
func parseSpec(o *pyjson.Object, runs engine.RunParser) (runSpec, *apiError) {
	runs.Own = serviceFields
	run, err := runs.Parse(o)
	if err != nil {
		code, ok := reason.Of(err)
		message := reason.DetailOf(err)
		if !ok {
			code, message = CodeInvalidField, err.Error()
		}
		return runSpec{}, refuse(http.StatusBadRequest, code, message)
	}
	s := runSpec{Run: run}
	get := func(k string, def any) any {
		if v, ok := o.Get(k); ok {
			return v
		}
		return def
	}
	invalid := func(format string, a ...any) (runSpec, *apiError) {
		return runSpec{}, refuse(http.StatusBadRequest, CodeInvalidField, fmt.Sprintf(format, a...))
	}
	var ok bool
	if s.Strategy, ok = get("strategy", "reject").(string); !ok || (s.Strategy != "reject" && s.Strategy != "enqueue") {
		return invalid("strategy must be \"reject\" or \"enqueue\"")
	}
	if s.Stream, ok = get("stream", false).(bool); !ok {
		return invalid("stream must be true or false")
	}
	if s.OnDisconnect, ok = get("on_disconnect", "continue").(string); !ok || (s.OnDisconnect != "continue" && s.OnDisconnect != "cancel") {
		return invalid("on_disconnect must be \"continue\" or \"cancel\"")
	}
	if s.OnDisconnect == "cancel" && !s.Stream {
		return invalid("on_disconnect \"cancel\" applies to a streamed run (stream true)")
	}
	return s, nil
}

// corpusNamed is the corpus a run's request names ("" when it names none,
// or names it with something not a string, which parseSpec refuses).
func corpusNamed(o *pyjson.Object) string {
	v, _ := o.Get("corpus")
	id, _ := v.(string)
	return id
}

// specOf reads a stored spec back, with the parser parser gives for the
// corpus it names.
func specOf(text string, parser func(corpus string) (engine.RunParser, error)) (runSpec, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return runSpec{}, err
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return runSpec{}, errors.New("the stored spec is not an object")
	}
	runs, err := parser(corpusNamed(o))
	if err != nil {
		return runSpec{}, err
	}
	s, aerr := parseSpec(o, runs)
	if aerr != nil {
		return runSpec{}, fmt.Errorf("the stored spec is refused: %s: %s", aerr.code, aerr.message)
	}
	return s, nil
}
