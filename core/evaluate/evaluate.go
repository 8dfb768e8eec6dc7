// Package evaluate grades finished runs against authored cases, independently
// of the controller: labels never reach the model or select an action. It
// checks retrieval (were the target sources read), the answer (cited targets,
// required and forbidden patterns, or an explicit model stop when the corpus
// cannot support an answer) and the trajectory (queries, refinement, limits).
package evaluate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/reason"
)

// CasesFormat is the cases file's format tag.
const CasesFormat = "ragagent-cases/1"

// Scope says what the checks do and do not establish.
const Scope = "Source targets, answer patterns and explicit abstention on authored fixtures; human semantic review is separate."

// Case is one authored question with its grading labels.
type Case struct {
	ID       string   `json:"id"`
	Split    string   `json:"split"`
	Question string   `json:"question"`
	Version  string   `json:"version"`
	Sources  []string `json:"sources"`
	// TargetURLs are target passages named by URL (for a pack whose ids a
	// case author does not pick): each must be read, and cited in an
	// answer, by some passage with that URL (a passage split in parts
	// shares its URL).
	TargetURLs        []string `json:"target_urls,omitempty"`
	AnswerPatterns    []string `json:"answer_patterns"`
	ForbiddenPatterns []string `json:"forbidden_patterns"`
	Note              string   `json:"note,omitempty"`

	answer, forbidden []*regexp.Regexp
}

// Cases is a validated cases file.
type Cases struct {
	Format string `json:"format"`
	Cases  []Case `json:"cases"`
	byID   map[string]int
}

// ParseCases reads and validates a cases file. Patterns are RE2 syntax,
// matched case-insensitively (Python's re.I), with Python's Unicode meaning
// for \s \w \d and their negations (see compilePattern); a pattern RE2
// would match differently from Python (\b, back-references, look-arounds)
// is refused when the file loads, never matched differently.
func ParseCases(data []byte) (*Cases, error) {
	var cs Cases
	if err := jsonfile.Decode(data, &cs); err != nil {
		return nil, fmt.Errorf("cases: not a valid cases file: %w", err)
	}
	if cs.Format != CasesFormat {
		return nil, fmt.Errorf("cases: format is %q, want %q", cs.Format, CasesFormat)
	}
	cs.byID = map[string]int{}
	for i := range cs.Cases {
		c := &cs.Cases[i]
		where := fmt.Sprintf("cases: case %d (%q)", i+1, c.ID)
		if c.ID == "" {
			return nil, fmt.Errorf("%s: id is empty", where)
		}
		if _, dup := cs.byID[c.ID]; dup {
			return nil, fmt.Errorf("%s: id repeats", where)
		}
		if c.Split != "development" && c.Split != "held-out" {
			return nil, fmt.Errorf("%s: split %q is not development or held-out", where, c.Split)
		}
		if !corpus.ValidVersion(c.Version) {
			return nil, fmt.Errorf("%s: version %q is not of the form 3.12", where, c.Version)
		}
		for _, u := range c.TargetURLs {
			if !corpus.ValidURL(u) {
				return nil, fmt.Errorf("%s: target URL %q is not an absolute https URL", where, u)
			}
		}
		var err error
		if c.answer, err = compile(c.AnswerPatterns); err != nil {
			return nil, fmt.Errorf("%s: answer pattern: %w", where, err)
		}
		if c.forbidden, err = compile(c.ForbiddenPatterns); err != nil {
			return nil, fmt.Errorf("%s: forbidden pattern: %w", where, err)
		}
		cs.byID[c.ID] = i
	}
	return &cs, nil
}

func compile(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		re, err := compilePattern(p)
		if err != nil {
			return nil, err
		}
		out[i] = re
	}
	return out, nil
}

// Case returns the case with the given id.
func (cs *Cases) Case(id string) (*Case, bool) {
	i, ok := cs.byID[id]
	if !ok {
		return nil, false
	}
	return &cs.Cases[i], true
}

// Outcome is a trial's grade.
type Outcome string

// The three outcomes.
const (
	Pass          Outcome = "pass"
	Fail          Outcome = "fail"
	IncompleteRun Outcome = "incomplete"
)

// Trajectory is what the run did, kept beside the grade.
type Trajectory struct {
	Queries      []string `json:"queries"`
	Refined      bool     `json:"refined"`
	WithinLimits bool     `json:"within_limits"`
}

// Checks are a trial's grades, in the published record's shape, with the
// reason for each beside it (the reasons are additions: the published
// record has only the values).
type Checks struct {
	// RetrievalTargetsRead is nil for a case with no target sources.
	RetrievalTargetsRead *bool      `json:"retrieval_targets_read"`
	RetrievalReason      Why        `json:"retrieval_reason"`
	AnswerFixtureCheck   bool       `json:"answer_fixture_check"`
	AnswerReason         Why        `json:"answer_reason"`
	Outcome              Outcome    `json:"outcome"`
	OutcomeReason        Why        `json:"outcome_reason"`
	Trajectory           Trajectory `json:"trajectory"`
	Scope                string     `json:"scope"`
}

// Why is the reason a check has its value: a code (core/reason's check
// codes) for machines and a sentence for people naming the sources and
// patterns involved.
type Why struct {
	Code   reason.Code `json:"code"`
	Detail string      `json:"detail"`
}

// Grade checks a result against its case and says why each check has its
// value.
func Grade(c *Case, r *agent.Result) Checks {
	// A passage counts for a target by its source id or by its URL (cases
	// over a pack name their targets by URL).
	read := map[string]bool{}
	var readOrder []string
	queries := []string{}
	for _, o := range r.Observations {
		if rr, ok := o.Read(); ok {
			if !read[rr.SourceID] {
				readOrder = append(readOrder, rr.SourceID)
			}
			read[rr.SourceID], read[rr.URL] = true, true
		}
		if sr, ok := o.Search(); ok {
			queries = append(queries, sr.Query)
		}
	}
	cited := map[string]bool{}
	var citedOrder []string
	for _, c := range r.Citations {
		if !cited[c.SourceID] {
			citedOrder = append(citedOrder, c.SourceID)
		}
		cited[c.SourceID], cited[c.URL] = true, true
	}
	var checks Checks
	if targets := c.targets(); len(targets) > 0 {
		missing := missingFrom(targets, read)
		retrieval := len(missing) == 0
		checks.RetrievalTargetsRead = &retrieval
		checks.RetrievalReason = retrievalWhy(targets, missing, readOrder)
		checks.AnswerReason = c.answerWhy(r, targets, missingFrom(targets, cited), citedOrder)
	} else {
		checks.RetrievalReason = Why{reason.NoTargets, "The case has no target source: the corpus cannot answer it, so only an explicit stop passes."}
		checks.AnswerReason = abstentionWhy(r)
	}
	answer := checks.AnswerReason.Code == reason.AnswerMet || checks.AnswerReason.Code == reason.Abstained
	checks.AnswerFixtureCheck = answer
	switch {
	case answer:
		checks.Outcome = Pass
		checks.OutcomeReason = Why{reason.OutcomePass, "Pass: the answer check was met."}
	case r.Status == agent.Incomplete:
		checks.Outcome = IncompleteRun
		checks.OutcomeReason = Why{reason.OutcomeIncomplete, fmt.Sprintf("Incomplete: the run ended without an answer (%s), and the answer check was not met.", r.Reason)}
	case r.Status == agent.Failed:
		checks.Outcome = Fail
		checks.OutcomeReason = Why{reason.OutcomeFailedRun, fmt.Sprintf("Fail: the run failed (%s), so the answer check was not met.", r.Reason)}
	default:
		checks.Outcome = Fail
		checks.OutcomeReason = Why{reason.OutcomeWrong, fmt.Sprintf("Fail: the run answered (%s), but the answer check was not met.", r.Reason)}
	}
	u, l := r.Usage, r.Limits
	checks.Trajectory = Trajectory{Queries: queries, Refined: len(queries) > 1,
		WithinLimits: u.ModelCalls <= l.ModelCalls && u.Searches <= l.Searches && u.Reads <= l.Reads && u.SourceBytes <= l.SourceBytes}
	checks.Scope = Scope
	return checks
}

// targets are the case's target passages: source ids, then URLs.
func (c *Case) targets() []string {
	return append(append([]string(nil), c.Sources...), c.TargetURLs...)
}

// missingFrom lists the targets not in set, in the case's order.
func missingFrom(sources []string, set map[string]bool) []string {
	var out []string
	for _, s := range sources {
		if !set[s] {
			out = append(out, s)
		}
	}
	return out
}

func retrievalWhy(targets, missing, read []string) Why {
	if len(missing) == 0 {
		return Why{reason.TargetsRead, fmt.Sprintf("Read every target source: %s.", strings.Join(targets, ", "))}
	}
	return Why{reason.TargetsNotRead, fmt.Sprintf("Did not read %s (read: %s).", strings.Join(missing, ", "), listOrNone(read))}
}

// answerWhy checks the answer of a case with targets in the grader's order
// (answered, targets cited, required patterns, forbidden patterns); the
// code is the first unmet condition, the sentence names every one.
func (c *Case) answerWhy(r *agent.Result, targets, uncited, cited []string) Why {
	if r.Status != agent.Answered {
		return Why{reason.NotAnswered, fmt.Sprintf("No answer to check: the run ended %s (%s); the case needs an answer citing %s.",
			r.Status, r.Reason, strings.Join(targets, ", "))}
	}
	var code reason.Code
	var why []string
	unmet := func(cd reason.Code, sentence string) {
		if code == "" {
			code = cd
		}
		why = append(why, sentence)
	}
	if len(uncited) > 0 {
		unmet(reason.TargetNotCited, fmt.Sprintf("The answer does not cite %s (it cites %s).", strings.Join(uncited, ", "), listOrNone(cited)))
	}
	var absent []string
	for i, re := range c.answer {
		if !re.MatchString(r.Answer) {
			absent = append(absent, quote(c.AnswerPatterns[i]))
		}
	}
	if len(absent) > 0 {
		unmet(reason.PatternMissing, fmt.Sprintf("The answer does not match the required pattern%s %s.", plural(len(absent)), strings.Join(absent, ", ")))
	}
	for i, re := range c.forbidden {
		if at := re.FindStringIndex(r.Answer); at != nil {
			unmet(reason.ForbiddenMatched, fmt.Sprintf("The answer matches the forbidden pattern %s at %s.",
				quote(c.ForbiddenPatterns[i]), quote(strings.TrimSpace(r.Answer[at[0]:at[1]]))))
		}
	}
	if code != "" {
		return Why{code, strings.Join(why, " ")}
	}
	required := "no required pattern"
	if len(c.AnswerPatterns) > 0 {
		qs := make([]string, len(c.AnswerPatterns))
		for i, p := range c.AnswerPatterns {
			qs[i] = quote(p)
		}
		required = "every required pattern (" + strings.Join(qs, ", ") + ")"
	}
	return Why{reason.AnswerMet, fmt.Sprintf("The answer cites %s, matches %s and no forbidden pattern.", strings.Join(targets, ", "), required)}
}

// abstentionWhy grades a case with no target: only the model's own stop passes.
func abstentionWhy(r *agent.Result) Why {
	const expected = "An explicit stop was expected (the corpus cannot answer this case)"
	switch {
	case r.Status == agent.Incomplete && r.Reason == reason.ModelStopped:
		return Why{reason.Abstained, "The model stopped explicitly (model_stopped), as expected: the corpus cannot answer this case."}
	case r.Status == agent.Answered:
		return Why{reason.AbstentionExpected, expected + ", but the run answered."}
	case r.Status == agent.Incomplete:
		return Why{reason.AbstentionExpected, fmt.Sprintf("%s, but the run ended incomplete with %s: running out is not abstaining.", expected, r.Reason)}
	}
	return Why{reason.AbstentionExpected, fmt.Sprintf("%s, but the run failed with %s.", expected, r.Reason)}
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

func quote(s string) string { return "“" + s + "”" }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Tally counts outcomes for one path.
type Tally struct {
	Pass       int `json:"pass"`
	Fail       int `json:"fail"`
	Incomplete int `json:"incomplete"`
}

// Add counts one outcome.
func (t *Tally) Add(o Outcome) {
	switch o {
	case Pass:
		t.Pass++
	case Fail:
		t.Fail++
	case IncompleteRun:
		t.Incomplete++
	}
}
