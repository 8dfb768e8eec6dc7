package otlp

import (
	"time"

	"github.com/ragagentlab/ragagent/core/reason"
)

// Verdicts an annotation may give (or none).
const (
	VerdictCorrect = "correct"
	VerdictWrong   = "wrong"
	VerdictPartly  = "partly"
)

// AnnotationEvent names the span event an annotation becomes.
const AnnotationEvent = "ragagent.annotation"

// Annotation is a person's judgement of a trial, made in the page (the
// Trace view's annotation form) and kept there: a verdict, a note, and the
// passage that answers the question (its URL, so it can later become a
// question set's target). It is carried into the export as an event on the
// trial's run span so an observability tool shows it with the trace, as
// Phoenix and Langfuse show human annotations; its time is when it was
// made, by the clock of whoever made it.
type Annotation struct {
	// Trial is the recorded trial's id (report.Trial.ID) it annotates.
	Trial string `json:"trial"`
	// Author is who made it: "user" for the page's person.
	Author string `json:"author"`
	// Verdict is correct, wrong, partly or "" (no verdict).
	Verdict string `json:"verdict,omitempty"`
	Note    string `json:"note,omitempty"`
	// PassageURL is the answering passage's URL (a passage the run was
	// shown or read, or one typed); PassageID its source id when it was
	// one of the run's.
	PassageURL string `json:"passage_url,omitempty"`
	PassageID  string `json:"passage_id,omitempty"`
	// Time is when it was made, RFC 3339.
	Time string `json:"time"`
}

// annotationEvents checks the annotations against the export's trials and
// groups them, as span events, by trial id (in the order given).
func annotationEvents(notes []Annotation, trials map[string]bool) (map[string][]event, error) {
	out := map[string][]event{}
	for i, a := range notes {
		switch a.Verdict {
		case "", VerdictCorrect, VerdictWrong, VerdictPartly:
		default:
			return nil, reason.New(reason.InvalidAnnotation, "annotation %d: verdict %q is not %s, %s, %s or none", i+1, a.Verdict, VerdictCorrect, VerdictWrong, VerdictPartly)
		}
		if a.Author == "" {
			return nil, reason.New(reason.InvalidAnnotation, "annotation %d: no author", i+1)
		}
		at, err := time.Parse(time.RFC3339Nano, a.Time)
		if err != nil {
			return nil, reason.New(reason.InvalidAnnotation, "annotation %d: time %q is not RFC 3339", i+1, a.Time)
		}
		if !trials[a.Trial] {
			return nil, reason.New(reason.InvalidAnnotation, "annotation %d: the export holds no trial %q", i+1, a.Trial)
		}
		attrs := []keyValue{str("ragagent.annotation.author", a.Author)}
		for _, kv := range [][2]string{{"verdict", a.Verdict}, {"note", a.Note}, {"passage_url", a.PassageURL}, {"passage_id", a.PassageID}} {
			if kv[1] != "" {
				attrs = append(attrs, str("ragagent.annotation."+kv[0], kv[1]))
			}
		}
		out[a.Trial] = append(out[a.Trial], event{TimeUnixNano: nanos(at), Name: AnnotationEvent, Attributes: attrs})
	}
	return out, nil
}
