package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// TestValidateDecisionCheckOrder has one row per check, in the reference
// order. Several rows fail more than one check on purpose: the first
// failing check must name the reason.
func TestValidateDecisionCheckOrder(t *testing.T) {
	long := strings.Repeat("x", 2001)
	for _, c := range []struct {
		name string
		text string
		want reason.Code
	}{
		{"not an object", `"search"`, reason.InvalidDecision},
		{"missing key", `{"action": "stop", "assessment": "a", "query": "", "source_id": "", "answer": ""}`, reason.InvalidDecision},
		{"extra key, even with an unknown action", `{"action": "fly", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": [], "x": 1}`, reason.InvalidDecision},
		{"unknown action before a non-string field", `{"action": "fly", "assessment": 1, "query": "", "source_id": "", "answer": "", "citations": []}`, reason.UnknownAction},
		{"action of another type", `{"action": ["search"], "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": []}`, reason.UnknownAction},
		{"assessment not a string", `{"action": "stop", "assessment": null, "query": "", "source_id": "", "answer": "", "citations": []}`, reason.InvalidDecision},
		{"answer over 2000 characters", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "` + long + `", "citations": []}`, reason.InvalidDecision},
		{"blank assessment", `{"action": "stop", "assessment": " \u3000 ", "query": "", "source_id": "", "answer": "", "citations": []}`, reason.InvalidDecision},
		{"citations not a list", `{"action": "stop", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": {}}`, reason.InvalidDecision},
		{"seven citations", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": [` + strings.Repeat(`{"source_id": "s", "quote": "q"},`, 6) + `{"source_id": "s", "quote": "q"}]}`, reason.InvalidDecision},
		{"citation not an object", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": ["s"]}`, reason.InvalidCitation},
		{"citation missing its quote", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": [{"source_id": "s"}]}`, reason.InvalidCitation},
		{"citation quote blank, on a stop", `{"action": "stop", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": [{"source_id": "s", "quote": " "}]}`, reason.InvalidCitation},
		{"citation quote over 2000 characters", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": [{"source_id": "s", "quote": "` + long + `"}]}`, reason.InvalidCitation},
		{"query on a read", `{"action": "read", "assessment": "a", "query": "q", "source_id": "s", "answer": "", "citations": []}`, reason.UnexpectedActionFields},
		{"source on a search", `{"action": "search", "assessment": "a", "query": "q", "source_id": "s", "answer": "", "citations": []}`, reason.UnexpectedActionFields},
		{"citations on a stop", `{"action": "stop", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": [{"source_id": "s", "quote": "q"}]}`, reason.UnexpectedActionFields},
		{"answer on a search with a blank query", `{"action": "search", "assessment": "a", "query": " ", "source_id": "", "answer": "x", "citations": []}`, reason.UnexpectedActionFields},
		{"blank query", `{"action": "search", "assessment": "a", "query": "\t\n", "source_id": "", "answer": "", "citations": []}`, reason.InvalidQuery},
		{"empty source", `{"action": "read", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": []}`, reason.InvalidSource},
		{"blank answer", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": " ", "citations": [{"source_id": "s", "quote": "q"}]}`, reason.MissingAnswerEvidence},
		{"answer without citations", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": []}`, reason.MissingAnswerEvidence},
		{"valid search", `{"action": "search", "assessment": "a", "query": "q", "source_id": "", "answer": "", "citations": []}`, ""},
		{"valid read of a blank-looking source", `{"action": "read", "assessment": "a", "query": "", "source_id": " ", "answer": "", "citations": []}`, ""},
		{"valid answer, 2000 non-ASCII characters", `{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "` + strings.Repeat("é", 2000) + `", "citations": [{"source_id": "s", "quote": "q"}]}`, ""},
		{"valid stop", `{"action": "stop", "assessment": "a", "query": "", "source_id": "", "answer": "", "citations": []}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := pyjson.Decode(c.text)
			require.NoError(t, err)
			d, err := ValidateDecision(v)
			if c.want == "" {
				require.NoError(t, err)
				assert.True(t, pyjson.Equal(v, pyjson.ValueOf(d)), "a valid decision keeps every field")
				return
			}
			code, ok := reason.Of(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.want, code)
		})
	}
}

// FuzzValidateDecision: any model text either fails to decode or yields a
// decision or a coded refusal, never a panic; an accepted decision obeys
// every field rule.
func FuzzValidateDecision(f *testing.F) {
	for _, s := range []string{
		`{"action": "search", "assessment": "a", "query": "q", "source_id": "", "answer": "", "citations": []}`,
		`{"action": "answer", "assessment": "a", "query": "", "source_id": "", "answer": "x", "citations": [{"source_id": "s", "quote": "q"}]}`,
		`{"action": "stop", "assessment": NaN, "query": "", "source_id": "", "answer": "", "citations": null}`,
		`[]`, `"stop"`, `{"action": "read", "action": "stop"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := pyjson.Decode(text)
		if err != nil {
			return
		}
		d, err := ValidateDecision(v)
		if err != nil {
			_, ok := reason.Of(err)
			require.True(t, ok, "refusals carry a code: %v", err)
			return
		}
		require.Contains(t, []Action{Search, Read, Answer, Stop}, d.Action)
		require.False(t, pyjson.Blank(d.Assessment))
		require.LessOrEqual(t, len(d.Citations), 6)
		if d.Action == Answer {
			require.NotEmpty(t, d.Citations)
		} else {
			require.Empty(t, d.Answer)
			require.Empty(t, d.Citations)
		}
	})
}

func TestLimitsFromJSON(t *testing.T) {
	for _, c := range []struct {
		text string
		want Limits
		err  bool
	}{
		{`null`, DefaultLimits(), false},
		{`{}`, DefaultLimits(), false},
		{`{"reads": 6, "seconds": 1}`, Limits{9, 3, 6, 4096, 1}, false},
		{`{"reads": 7}`, Limits{}, true},
		{`{"reads": 0}`, Limits{}, true},
		{`{"reads": 2.0}`, Limits{}, true},
		{`{"reads": true}`, Limits{}, true},
		{`{"reads": "2"}`, Limits{}, true},
		{`{"reads": 99999999999999999999}`, Limits{}, true},
		{`{"tokens": 5}`, Limits{}, true},
		{`[9, 3]`, Limits{}, true},
	} {
		t.Run(c.text, func(t *testing.T) {
			v, err := pyjson.Decode(c.text)
			require.NoError(t, err)
			got, err := LimitsFromJSON(v)
			if c.err {
				code, _ := reason.Of(err)
				assert.Equal(t, reason.InvalidLimits, code)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParseLimits(t *testing.T) {
	l, err := ParseLimits("model_calls=5, searches=2")
	require.NoError(t, err)
	assert.Equal(t, Limits{5, 2, 4, 4096, 180}, l)
	assert.Equal(t, "model_calls=5,searches=2,reads=4,source_bytes=4096,seconds=180", l.String())
	again, err := ParseLimits(l.String())
	require.NoError(t, err)
	assert.Equal(t, l, again)
	for _, bad := range []string{"reads", "reads=x", "tokens=5", "reads=7", "seconds=0", "reads=1.5",
		"model_calls=3,model_calls=1", "reads=2, reads=2"} {
		_, err := ParseLimits(bad)
		assert.Error(t, err, bad)
	}
	// A repeated name is refused, never silently the last value.
	_, err = ParseLimits("model_calls=3,model_calls=1")
	assert.ErrorContains(t, err, "model_calls is given twice")
}

func TestSchemaAndPolicyAreTheReferenceOnes(t *testing.T) {
	assert.Equal(t, `{"type": "object", "additionalProperties": false, "properties": {"action": {"type": "string", "enum": ["search", "read", "answer", "stop"]}, "assessment": {"type": "string"}, "query": {"type": "string"}, "source_id": {"type": "string"}, "answer": {"type": "string"}, "citations": {"type": "array", "items": {"type": "object", "additionalProperties": false, "properties": {"source_id": {"type": "string"}, "quote": {"type": "string"}}, "required": ["source_id", "quote"]}}}, "required": ["action", "assessment", "query", "source_id", "answer", "citations"]}`,
		pyjson.Dumps(Schema(), pyjson.Options{}))
	assert.Equal(t, 12, strings.Count(SystemPrompt, "\n")+1, "the policy text is byte-checked against the reference by the conformance recordings")
	assert.True(t, strings.HasSuffix(Instruction(Fixed), "\nFixed mode: choose only answer or stop. Retrieval is finished."))
	assert.Equal(t, SystemPrompt, Instruction(Agent))
}

// TestPolicyText: the reference text goes out byte for byte (its sha256 is
// the reference POLICY's, and its fixed-mode text's); any other subject
// keeps every rule and names only its own subject; the subject reads back.
func TestPolicyText(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	assert.Equal(t, "9bb4bb17eafca306aace6559663495b1618d8a80a3f4ef606fb88f824a9beb18", sum(SystemPrompt), "the reference POLICY")
	assert.Equal(t, "7cf8a5a264650407e1569ee0043179df5bb15f46a4120d5e2f9bd019a575d0eb", sum(InstructionFor("", Fixed)))
	assert.Equal(t, SystemPrompt, Policy(""))
	assert.Equal(t, SystemPrompt, Policy(PythonSubject))
	for _, row := range []struct{ subject, first, back string }{
		{"Kettle manual", `You answer questions about the documents titled "Kettle manual" using ONLY tool observations.`, "Kettle manual"},
		{"SQLite  documentation\n(3.45)", `You answer questions about the documents titled "SQLite documentation (3.45)" using ONLY tool observations.`, "SQLite documentation (3.45)"},
		{"Your documents", `You answer questions about the documents titled "Your documents" using ONLY tool observations.`, "Your documents"},
	} {
		for _, mode := range []Mode{Agent, Fixed} {
			text := InstructionFor(row.subject, mode)
			first, rest, _ := strings.Cut(text, "\n")
			assert.Equal(t, row.first, first)
			_, seedRest, _ := strings.Cut(InstructionFor("", mode), "\n")
			assert.Equal(t, seedRest, rest, "the same rules, the same fixed-mode sentence")
			assert.NotContains(t, text, "Python")
			assert.Equal(t, row.back, SubjectOf(text))
		}
	}
	assert.Equal(t, PythonSubject, SubjectOf(SystemPrompt))
	assert.Equal(t, PythonSubject, SubjectOf(Instruction(Fixed)))
	assert.Equal(t, "", SubjectOf("something else"))
}
