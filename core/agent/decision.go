package agent

import (
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Action is what a decision proposes.
type Action string

// The four actions a model may propose.
const (
	Search Action = "search"
	Read   Action = "read"
	Answer Action = "answer"
	Stop   Action = "stop"
)

// Quote is a citation as the model proposes it.
type Quote struct {
	SourceID string `json:"source_id"`
	Quote    string `json:"quote"`
}

// Citation is an admitted quote with the URL of the passage it was read
// from; the URL comes from the validated record, never from the model.
type Citation struct {
	SourceID string `json:"source_id"`
	Quote    string `json:"quote"`
	URL      string `json:"url"`
}

// Decision is a validated model proposal. All six fields are always present.
type Decision struct {
	Action     Action  `json:"action"`
	Assessment string  `json:"assessment"`
	Query      string  `json:"query"`
	SourceID   string  `json:"source_id"`
	Answer     string  `json:"answer"`
	Citations  []Quote `json:"citations"`
}

const (
	maxDecisionString = 2000 // code points, as Python's len
	maxCitations      = 6
)

func refuse(code reason.Code, format string, args ...any) (Decision, error) {
	return Decision{}, reason.New(code, format, args...)
}

// ValidateDecision checks a decoded model reply in exactly the reference
// lab's order, because the first failing check names the reason a run
// reports: the key set, the action, the string fields, the assessment and
// the citation list, each citation, fields that do not belong to the action,
// and what the action itself needs.
func ValidateDecision(v any) (Decision, error) {
	o, ok := v.(*pyjson.Object)
	required := []string{"action", "assessment", "query", "source_id", "answer", "citations"}
	if !ok || !sameKeys(o, required...) {
		return refuse(reason.InvalidDecision, "a decision is an object with exactly the keys action, assessment, query, source_id, answer, citations")
	}
	get := func(k string) any { x, _ := o.Get(k); return x }
	action, _ := get("action").(string)
	switch Action(action) {
	case Search, Read, Answer, Stop:
	default:
		return refuse(reason.UnknownAction, "action %s is not search, read, answer or stop", pyjson.Dumps(get("action"), pyjson.Options{Unicode: true}))
	}
	strs := map[string]string{}
	for _, k := range required[1:5] {
		s, isStr := get(k).(string)
		if !isStr || pyjson.Len(s) > maxDecisionString {
			return refuse(reason.InvalidDecision, "%s must be a string of at most %d characters", k, maxDecisionString)
		}
		strs[k] = s
	}
	list, isList := get("citations").([]any)
	if pyjson.Blank(strs["assessment"]) || !isList || len(list) > maxCitations {
		return refuse(reason.InvalidDecision, "assessment must be non-blank and citations a list of at most %d", maxCitations)
	}
	quotes := make([]Quote, 0, len(list))
	for i, item := range list {
		c, isObj := item.(*pyjson.Object)
		if !isObj || !sameKeys(c, "source_id", "quote") {
			return refuse(reason.InvalidCitation, "citation %d must be an object with exactly source_id and quote", i+1)
		}
		var q Quote
		for _, k := range c.Keys() {
			x, _ := c.Get(k)
			s, isStr := x.(string)
			if !isStr || pyjson.Blank(s) || pyjson.Len(s) > maxDecisionString {
				return refuse(reason.InvalidCitation, "citation %d %s must be a non-blank string of at most %d characters", i+1, k, maxDecisionString)
			}
			if k == "source_id" {
				q.SourceID = s
			} else {
				q.Quote = s
			}
		}
		quotes = append(quotes, q)
	}
	d := Decision{Action: Action(action), Assessment: strs["assessment"], Query: strs["query"],
		SourceID: strs["source_id"], Answer: strs["answer"], Citations: quotes}
	switch {
	case d.Action != Search && d.Query != "",
		d.Action != Read && d.SourceID != "",
		d.Action != Answer && (d.Answer != "" || len(d.Citations) > 0):
		return refuse(reason.UnexpectedActionFields, "only the fields of a %s may be non-empty", d.Action)
	case d.Action == Search && pyjson.Blank(d.Query):
		return refuse(reason.InvalidQuery, "a search needs a non-blank query")
	case d.Action == Read && d.SourceID == "":
		return refuse(reason.InvalidSource, "a read needs a source_id")
	case d.Action == Answer && (pyjson.Blank(d.Answer) || len(d.Citations) == 0):
		return refuse(reason.MissingAnswerEvidence, "an answer needs non-blank text and at least one citation")
	}
	return d, nil
}

func sameKeys(o *pyjson.Object, keys ...string) bool {
	if o.Len() != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := o.Get(k); !ok {
			return false
		}
	}
	return true
}
