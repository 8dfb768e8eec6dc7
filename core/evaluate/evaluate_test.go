package evaluate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/fixtures"
)

func cases(t *testing.T) *Cases {
	t.Helper()
	cs, err := ParseCases(fixtures.Cases)
	require.NoError(t, err)
	return cs
}

func readObs(ids ...string) []agent.Observation {
	var out []agent.Observation
	q := "q"
	for _, id := range ids {
		id := id
		out = append(out, agent.Observation{Tool: agent.Search, Arguments: agent.Arguments{Query: &q}, Result: &agent.SearchResult{Query: q}})
		out = append(out, agent.Observation{Tool: agent.Read, Arguments: agent.Arguments{SourceID: &id}, Result: &agent.ReadResult{SourceID: id}})
	}
	return out
}

// TestGrade has one row per guard, in the grader's order: retrieval, then
// the answer (answered, targets cited, required patterns, forbidden
// patterns) or the abstention, then the outcome; each row names the reason
// codes the checks carry and a phrase their sentences must contain.
func TestGrade(t *testing.T) {
	cs := cases(t)
	yes, no := true, false
	for _, c := range []struct {
		name      string
		caseID    string
		result    agent.Result
		retrieval *bool
		answer    bool
		outcome   Outcome
		codes     [3]reason.Code // retrieval, answer, outcome
		says      string         // in the answer's sentence
	}{
		{"cited, matching answer", "overwrite", agent.Result{Status: agent.Answered, Reason: reason.CitationContractPassed, Answer: "It overwrites the file.",
			Citations: []agent.Citation{{SourceID: "path-write"}}, Observations: readObs("path-write")}, &yes, true, Pass,
			[3]reason.Code{reason.TargetsRead, reason.AnswerMet, reason.OutcomePass}, "cites path-write, matches every required pattern (\u201coverwrit\u201d)"},
		{"target not read", "overwrite", agent.Result{Status: agent.Incomplete, Reason: reason.ModelStopped}, &no, false, IncompleteRun,
			[3]reason.Code{reason.TargetsNotRead, reason.NotAnswered, reason.OutcomeIncomplete}, "ended incomplete (model_stopped); the case needs an answer citing path-write"},
		{"failed run", "overwrite", agent.Result{Status: agent.Failed, Reason: reason.DuplicateQuery, Observations: readObs("path-read")}, &no, false, Fail,
			[3]reason.Code{reason.TargetsNotRead, reason.NotAnswered, reason.OutcomeFailedRun}, "ended failed (duplicate_query)"},
		{"target read but not cited", "serialize-and-save", agent.Result{Status: agent.Answered, Answer: "ensure_ascii=False then write_text with utf-8",
			Citations: []agent.Citation{{SourceID: "json-text"}}, Observations: readObs("json-text", "path-write")}, &yes, false, Fail,
			[3]reason.Code{reason.TargetsRead, reason.TargetNotCited, reason.OutcomeWrong}, "does not cite path-write (it cites json-text)"},
		{"missing a pattern", "serialize-and-save", agent.Result{Status: agent.Answered, Answer: "ensure_ascii=False and save it",
			Citations: []agent.Citation{{SourceID: "json-text"}, {SourceID: "path-write"}}, Observations: readObs("json-text", "path-write")}, &yes, false, Fail,
			[3]reason.Code{reason.TargetsRead, reason.PatternMissing, reason.OutcomeWrong}, "required patterns \u201cwrite_text\u201d, \u201cutf-?8\u201d"},
		{"forbidden claim", "overwrite", agent.Result{Status: agent.Answered, Answer: "It overwrites, or appends to the file.",
			Citations: []agent.Citation{{SourceID: "path-write"}}, Observations: readObs("path-write")}, &yes, false, Fail,
			[3]reason.Code{reason.TargetsRead, reason.ForbiddenMatched, reason.OutcomeWrong}, "at \u201cappends to\u201d"},
		{"every unmet condition is named, the first is the code", "serialize-and-save", agent.Result{Status: agent.Answered, Answer: "ensure_ascii=True",
			Observations: readObs("json-text")}, &no, false, Fail,
			[3]reason.Code{reason.TargetsNotRead, reason.TargetNotCited, reason.OutcomeWrong}, "it cites none). The answer does not match the required patterns"},
		{"unsupported: explicit stop passes", "unsupported", agent.Result{Status: agent.Incomplete, Reason: reason.ModelStopped}, nil, true, Pass,
			[3]reason.Code{reason.NoTargets, reason.Abstained, reason.OutcomePass}, "as expected"},
		{"unsupported: exhaustion is not abstention", "unsupported", agent.Result{Status: agent.Incomplete, Reason: reason.ModelCallLimit}, nil, false, IncompleteRun,
			[3]reason.Code{reason.NoTargets, reason.AbstentionExpected, reason.OutcomeIncomplete}, "running out is not abstaining"},
		{"unsupported: an answer fails", "unsupported", agent.Result{Status: agent.Answered, Reason: reason.CitationContractPassed, Answer: "No backups."}, nil, false, Fail,
			[3]reason.Code{reason.NoTargets, reason.AbstentionExpected, reason.OutcomeWrong}, "An explicit stop was expected (the corpus cannot answer this case), but the run answered."},
		{"unsupported: a failed run", "unsupported", agent.Result{Status: agent.Failed, Reason: reason.InvalidCitation}, nil, false, Fail,
			[3]reason.Code{reason.NoTargets, reason.AbstentionExpected, reason.OutcomeFailedRun}, "but the run failed with invalid_citation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kase, ok := cs.Case(c.caseID)
			require.True(t, ok)
			c.result.Limits = agent.DefaultLimits()
			got := Grade(kase, &c.result, nil)
			assert.Equal(t, c.retrieval, got.RetrievalTargetsRead)
			assert.Equal(t, c.answer, got.AnswerFixtureCheck)
			assert.Equal(t, c.outcome, got.Outcome)
			assert.Equal(t, c.codes, [3]reason.Code{got.RetrievalReason.Code, got.AnswerReason.Code, got.OutcomeReason.Code})
			assert.Contains(t, got.AnswerReason.Detail, c.says)
			for _, why := range []Why{got.RetrievalReason, got.AnswerReason, got.OutcomeReason} {
				assert.NotEmpty(t, why.Detail, "every reason has a sentence")
			}
			assert.Equal(t, Scope, got.Scope)
		})
	}
}

// TestRetrievalReasonNamesTheSources: which target was missed, and what was
// read instead.
func TestRetrievalReasonNamesTheSources(t *testing.T) {
	kase, ok := cases(t).Case("serialize-and-save")
	require.True(t, ok)
	r := agent.Result{Status: agent.Incomplete, Limits: agent.DefaultLimits(), Observations: readObs("json-text", "path-read")}
	assert.Equal(t, Why{reason.TargetsNotRead, "Did not read path-write (read: json-text, path-read)."}, Grade(kase, &r, nil).RetrievalReason)
	r.Observations = readObs("path-write", "json-text")
	assert.Equal(t, Why{reason.TargetsRead, "Read every target source: json-text, path-write."}, Grade(kase, &r, nil).RetrievalReason)
	r.Observations = nil
	assert.Equal(t, "Did not read json-text, path-write (read: none).", Grade(kase, &r, nil).RetrievalReason.Detail)
}

func TestTrajectory(t *testing.T) {
	cs := cases(t)
	kase, _ := cs.Case("overwrite")
	r := agent.Result{Status: agent.Incomplete, Limits: agent.DefaultLimits(), Observations: readObs("path-write", "path-read"),
		Usage: agent.Usage{ModelCalls: 9, Searches: 3, Reads: 5}}
	got := Grade(kase, &r, nil)
	assert.Equal(t, []string{"q", "q"}, got.Trajectory.Queries)
	assert.True(t, got.Trajectory.Refined)
	assert.False(t, got.Trajectory.WithinLimits, "5 reads exceed the 4 allowed")
}

// TestPatternsFollowPythonUnicodeClasses: every row's expectation is what
// CPython's re.search(pattern, text, re.I) returns.
func TestPatternsFollowPythonUnicodeClasses(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		match         bool
	}{
		{`appends\s+to`, "x appends\u00a0to y", true},
		{`ensure_ascii\s*=\s*False`, "ensure_ascii\u202f=\u202fFalse", true},
		{`\w+_ascii`, "é_ascii", true},
		{`^\w$`, "é", true},
		{`\d`, "٣", true},
		{`\D`, "٣", false},
		{`\S`, "\u3000", false},
		{`[\s,]x`, ",x", true},
		{`[\s,]x`, "\u2028x", true},
		{`[\d]`, "٣", true},
		{`a\Wb`, "a\u00a0b", true},
		{`a\Wb`, "aéb", false},
		{`UTF-?8`, "utf8", true},
		{`ÉCOLE`, "école", true},
		{`\x1c`, "\x1c", true},
	} {
		t.Run(c.pattern+" "+c.text, func(t *testing.T) {
			re, err := compilePattern(c.pattern)
			require.NoError(t, err)
			assert.Equal(t, c.match, re.MatchString(c.text))
		})
	}
	for _, bad := range []string{`\bword\b`, `a\B`, `[\S]`, `[^\W]`, `(a)\1`, `(?=x)`} {
		_, err := compilePattern(bad)
		assert.Error(t, err, bad)
	}
}

// TestForbiddenClaimWithUnicodeSpaces: a model may put a no-break space
// inside the claim; the reference still catches it, and so must we.
func TestForbiddenClaimWithUnicodeSpaces(t *testing.T) {
	kase, ok := cases(t).Case("overwrite")
	require.True(t, ok)
	for answer, pass := range map[string]bool{
		"Path.write_text appends\u00a0to nothing: an existing file is overwritten.": false,
		"Path.write_text reappends to nothing: an existing file is overwritten.":    true,
		"It is overwritten; it never éappends to anything.":                         true,
	} {
		r := agent.Result{Status: agent.Answered, Answer: answer, Limits: agent.DefaultLimits(),
			Citations: []agent.Citation{{SourceID: "path-write"}}, Observations: readObs("path-write")}
		assert.Equal(t, pass, Grade(kase, &r, nil).AnswerFixtureCheck, answer)
	}
}
