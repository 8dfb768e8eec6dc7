// Package evaluate grades finished runs against authored cases, independently
// of the controller: labels never reach the model or select an action. It
// checks retrieval (were the target sources read), the answer (cited targets,
// required and forbidden patterns, or an explicit model stop when the corpus
// cannot support an answer) and the trajectory (queries, refinement, limits).
package evaluate

import (
	"fmt"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Scope says what the checks do and do not establish.
const Scope = "Source targets, answer patterns and explicit abstention on authored fixtures; human semantic review is separate."

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
// value; aliases (nil for none) name the passages' other URLs.
func Grade(c *Case, r *agent.Result, aliases Aliases) Checks {
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
			mark(read, rr.SourceID, rr.URL, aliases)
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
		mark(cited, c.SourceID, c.URL, aliases)
	}
	var checks Checks
	if targets := c.targets(); len(targets) > 0 {
		missing := c.missingFrom(read)
		retrieval := len(missing) == 0
		checks.RetrievalTargetsRead = &retrieval
		checks.RetrievalReason = retrievalWhy(targets, missing, readOrder)
		checks.AnswerReason = c.answerWhy(r, targets, c.missingFrom(cited), citedOrder)
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

// missingFrom lists the case's targets no passage in set meets, in the
// case's order: set holds the passages' source ids and URLs, and each
// URL's page (without its #fragment) after a pagePrefix, which a
// page-level target URL matches.
func (c *Case) missingFrom(set map[string]bool) []string {
	var out []string
	for _, s := range c.Sources {
		if !set[s] {
			out = append(out, s)
		}
	}
	for _, u := range c.TargetURLs {
		if PageLevel(u) && !set[pagePrefix+u] || !PageLevel(u) && !set[u] {
			out = append(out, u)
		}
	}
	return out
}

// pagePrefix marks a page in a set of ids and URLs (a URL cannot start
// with a control character).
const pagePrefix = "\x00page:"

// mark puts a passage's source id, URL, aliases and page in set.
func mark(set map[string]bool, sourceID, url string, aliases Aliases) {
	page, _, _ := strings.Cut(url, "#")
	set[sourceID], set[url], set[pagePrefix+page] = true, true, true
	if aliases != nil {
		for _, a := range aliases(sourceID) {
			set[a] = true
		}
	}
}

// Aliases gives a passage's aliases by its source id (tools.Library's
// Aliases): a run's records carry a read passage's URL alone, and a
// target may name the passage by another of its anchors. nil is none.
type Aliases func(sourceID string) []string

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
