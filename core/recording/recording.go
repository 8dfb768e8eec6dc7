// Package recording reads and writes ragagent-recording/1 files (every model
// exchange of a batch of trials) and replays them: a recorded reply is only
// handed out for a request equal to the one it answered, so a changed
// question, prompt, schema or observation is caught, never papered over.
package recording

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// Format is the format tag every recording carries.
const Format = "ragagent-recording/1"

// File is a recording: provider settings and the trials, in order (and in
// the key order Write gives them, after "format").
type File struct {
	Model      string  `json:"model"`
	Endpoint   string  `json:"endpoint"`
	Config     any     `json:"config"` // as recorded; informational
	RecordedAt string  `json:"recorded_at"`
	Trials     []Trial `json:"trials"`
}

// Trial is one run's inputs and its model exchanges. Question, Version, Mode
// and Limits are kept as decoded (nil when absent) so that a wrong type is
// refused by the controller with the same code a wrong value gets.
type Trial struct {
	ID             string     `json:"id"`
	CaseID         string     `json:"case_id"`
	Split          string     `json:"split"`
	Repeat         int        `json:"repeat"`
	Mode           any        `json:"mode"`
	Question       any        `json:"question"`
	Version        any        `json:"version"`
	Limits         any        `json:"limits"`
	Exchanges      []Exchange `json:"exchanges"`
	ElapsedSeconds *float64   `json:"elapsed_seconds,omitempty"`
	// Retrieval names the retrieval configuration the run's searches
	// ranked by; absent means "seed", so every recording made before
	// configurations existed replays as it was made.
	Retrieval *Retrieval `json:"retrieval,omitempty"`
}

// Retrieval is a recorded run's retrieval configuration: its name and the
// sha256 of its canonical settings (core/retrieval's Spec.SHA256).
type Retrieval struct {
	Name       string `json:"name"`
	SpecSHA256 string `json:"spec_sha256"`
}

// Exchange is one model request with either its response or the error kind
// (and HTTP status, when there was one) of a failed attempt. SentAt, when
// the recording kept it, is when the request was sent (RFC 3339); a trace
// viewer draws its waterfall from it.
//
// A pending exchange is the write-ahead record of a request about to be
// sent: {"request", "sent_at", "error": "ReplyNotRecorded", "pending":
// true}. The attempt's outcome replaces it once the reply is in, keeping
// sent_at; one left in a file means the recording process stopped while it
// waited, and it replays as that error kind (gemini.NotRecorded).
type Exchange struct {
	Request    any
	Response   any
	Error      string
	HTTPStatus int
	Pending    bool
	SentAt     string
}

// MarshalPyJSON writes the request, when it was sent (if known), then
// either the error (and the HTTP status, when there was one) or the
// response, null included; an attempt sent but not yet answered is written
// as pending. A custom shape because which keys appear depends on Error
// (an error wins over a response, as in the reference replay), which
// struct tags cannot state.
func (ex Exchange) MarshalPyJSON() any {
	o := pyjson.NewObject("request", ex.Request)
	if ex.SentAt != "" {
		o.Set("sent_at", ex.SentAt)
	}
	if ex.Pending {
		return o.Set("error", ex.Error).Set("pending", true)
	}
	if ex.Error != "" {
		o.Set("error", ex.Error)
		if ex.HTTPStatus != 0 {
			o.Set("http_status", ex.HTTPStatus)
		}
		return o
	}
	return o.Set("response", ex.Response)
}

// ParseError is a recording that cannot be used, with where and why.
type ParseError struct {
	Where string
	Msg   string
}

func (e *ParseError) Error() string {
	if e.Where == "" {
		return "recording: " + e.Msg
	}
	return "recording: " + e.Where + ": " + e.Msg
}

// Parse reads a recording. Unknown keys are ignored; a file that is not
// JSON, has another format tag, or whose trials or exchanges lack what
// replay needs is refused with a one-line ParseError.
func Parse(data []byte) (*File, error) {
	root, err := jsonfile.Value(data)
	if err != nil {
		return nil, &ParseError{Msg: "not valid JSON (" + err.Error() + "); is the file truncated?"}
	}
	o, ok := root.(*pyjson.Object)
	if !ok {
		return nil, &ParseError{Msg: "the top level is not an object"}
	}
	if f, _ := o.Get("format"); f != Format {
		return nil, &ParseError{Msg: fmt.Sprintf("format is %s, want %q", short(f), Format)}
	}
	file := &File{}
	file.Model, _ = str(o, "model")
	file.Endpoint, _ = str(o, "endpoint")
	file.Config, _ = o.Get("config")
	file.RecordedAt, _ = str(o, "recorded_at")
	raw, _ := o.Get("trials")
	trials, ok := raw.([]any)
	if !ok {
		return nil, &ParseError{Msg: "trials is not a list"}
	}
	seen := map[string]int{}
	for i, t := range trials {
		trial, err := parseTrial(t, i)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[trial.ID]; dup {
			return nil, &ParseError{Where: fmt.Sprintf("trial %d", i+1), Msg: fmt.Sprintf("id %q repeats trial %d", trial.ID, j+1)}
		}
		seen[trial.ID] = i
		file.Trials = append(file.Trials, trial)
	}
	return file, nil
}

func parseTrial(v any, i int) (Trial, error) {
	where := fmt.Sprintf("trial %d", i+1)
	o, ok := v.(*pyjson.Object)
	if !ok {
		return Trial{}, &ParseError{Where: where, Msg: "not an object"}
	}
	var t Trial
	if t.ID, ok = str(o, "id"); !ok || t.ID == "" {
		return Trial{}, &ParseError{Where: where, Msg: "id must be a non-empty string"}
	}
	where = fmt.Sprintf("trial %d (%s)", i+1, t.ID)
	t.CaseID, _ = str(o, "case_id")
	t.Split, _ = str(o, "split")
	if r, present := o.Get("repeat"); present && r != nil {
		n, _ := r.(pyjson.Number)
		if t.Repeat, ok = n.Int(); !ok {
			return Trial{}, &ParseError{Where: where, Msg: "repeat must be a whole number"}
		}
	}
	t.Question, _ = o.Get("question")
	t.Version, _ = o.Get("version")
	t.Mode, _ = o.Get("mode")
	t.Limits, _ = o.Get("limits")
	if e, present := o.Get("elapsed_seconds"); present && e != nil {
		n, isNum := e.(pyjson.Number)
		if !isNum {
			return Trial{}, &ParseError{Where: where, Msg: "elapsed_seconds must be a number"}
		}
		f := n.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Trial{}, &ParseError{Where: where, Msg: "elapsed_seconds must be a finite number"}
		}
		t.ElapsedSeconds = &f
	}
	if r, present := o.Get("retrieval"); present && r != nil {
		ro, isObj := r.(*pyjson.Object)
		if !isObj {
			return Trial{}, &ParseError{Where: where, Msg: "retrieval must be an object {name, spec_sha256}"}
		}
		var rec Retrieval
		if rec.Name, ok = str(ro, "name"); !ok || rec.Name == "" {
			return Trial{}, &ParseError{Where: where, Msg: "retrieval name must be a non-empty string"}
		}
		if rec.SpecSHA256, ok = str(ro, "spec_sha256"); !ok || rec.SpecSHA256 == "" {
			return Trial{}, &ParseError{Where: where, Msg: "retrieval spec_sha256 must be a non-empty string"}
		}
		t.Retrieval = &rec
	}
	raw, _ := o.Get("exchanges")
	list, ok := raw.([]any)
	if !ok {
		return Trial{}, &ParseError{Where: where, Msg: "exchanges is not a list"}
	}
	for j, x := range list {
		ex, err := parseExchange(x)
		if err != nil {
			return Trial{}, &ParseError{Where: fmt.Sprintf("%s exchange %d", where, j+1), Msg: err.Error()}
		}
		t.Exchanges = append(t.Exchanges, ex)
	}
	return t, nil
}

func parseExchange(v any) (Exchange, error) {
	o, ok := v.(*pyjson.Object)
	if !ok {
		return Exchange{}, fmt.Errorf("not an object")
	}
	var ex Exchange
	var present bool
	if ex.Request, present = o.Get("request"); !present {
		return Exchange{}, fmt.Errorf("has no request")
	}
	if p, present := o.Get("pending"); present {
		if ex.Pending, ok = p.(bool); !ok {
			return Exchange{}, fmt.Errorf("pending must be true or false")
		}
	}
	if at, present := o.Get("sent_at"); present && at != nil {
		if ex.SentAt, ok = at.(string); !ok {
			return Exchange{}, fmt.Errorf("sent_at must be a string")
		}
	}
	if e, present := o.Get("error"); present {
		// As in the reference replay, an error wins over a response.
		if ex.Error, ok = e.(string); !ok || ex.Error == "" {
			return Exchange{}, fmt.Errorf("error must be a non-empty string")
		}
		if s, present := o.Get("http_status"); present && s != nil {
			n, _ := s.(pyjson.Number)
			if ex.HTTPStatus, ok = n.Int(); !ok {
				return Exchange{}, fmt.Errorf("http_status must be a whole number")
			}
		}
		return ex, nil
	}
	if ex.Response, present = o.Get("response"); !present {
		return Exchange{}, fmt.Errorf("has neither a response nor an error")
	}
	return ex, nil
}

func str(o *pyjson.Object, key string) (string, bool) {
	v, _ := o.Get(key)
	s, ok := v.(string)
	return s, ok
}

func short(v any) string {
	s := pyjson.Dumps(v, pyjson.Options{Unicode: true})
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// Write writes the file as indented JSON with every non-ASCII character
// escaped (as Python's json.dump(indent=2) does), so a recording is plain
// ASCII and a lone surrogate in a model reply survives.
func (f *File) Write(w io.Writer) error {
	text, err := pyjson.Marshal(struct {
		Format string `json:"format"`
		*File
	}{Format, f}, pyjson.Options{Indent: 2})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text+"\n")
	return err
}

// Bytes is the recording as ragagent-recording/1 text (what Write writes).
func (f *File) Bytes() ([]byte, error) {
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
