// Package evaluate grades finished runs against authored cases, independently
// of the controller: labels never reach the model or select an action. It
// checks retrieval (were the target sources read), the answer (cited targets,
// required and forbidden patterns, or an explicit model stop when the corpus
// cannot support an answer) and the trajectory (queries, refinement, limits).
package evaluate

import (
	"fmt"
	"regexp"

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

// Checks are a trial's grades, in the published record's shape.
type Checks struct {
	// RetrievalTargetsRead is nil for a case with no target sources.
	RetrievalTargetsRead *bool      `json:"retrieval_targets_read"`
	AnswerFixtureCheck   bool       `json:"answer_fixture_check"`
	Outcome              Outcome    `json:"outcome"`
	Trajectory           Trajectory `json:"trajectory"`
	Scope                string     `json:"scope"`
}

// Grade checks a result against its case.
func Grade(c *Case, r *agent.Result) Checks {
	read, readURLs := map[string]bool{}, map[string]bool{}
	queries := []string{}
	for _, o := range r.Observations {
		if rr, ok := o.Read(); ok {
			read[rr.SourceID] = true
			readURLs[rr.URL] = true
		}
		if sr, ok := o.Search(); ok {
			queries = append(queries, sr.Query)
		}
	}
	cited, citedURLs := map[string]bool{}, map[string]bool{}
	for _, c := range r.Citations {
		cited[c.SourceID] = true
		citedURLs[c.URL] = true
	}
	subset := func(ids, urls map[string]bool) bool {
		for _, s := range c.Sources {
			if !ids[s] {
				return false
			}
		}
		for _, u := range c.TargetURLs {
			if !urls[u] {
				return false
			}
		}
		return true
	}
	var checks Checks
	var answer bool
	if len(c.Sources) > 0 || len(c.TargetURLs) > 0 {
		retrieval := subset(read, readURLs)
		checks.RetrievalTargetsRead = &retrieval
		answer = r.Status == agent.Answered && subset(cited, citedURLs) && allMatch(c.answer, r.Answer) && !anyMatch(c.forbidden, r.Answer)
	} else {
		// Only an explicit model abstention passes, never exhaustion.
		answer = r.Status == agent.Incomplete && r.Reason == reason.ModelStopped
	}
	checks.AnswerFixtureCheck = answer
	switch {
	case answer:
		checks.Outcome = Pass
	case r.Status == agent.Incomplete:
		checks.Outcome = IncompleteRun
	default:
		checks.Outcome = Fail
	}
	u, l := r.Usage, r.Limits
	checks.Trajectory = Trajectory{Queries: queries, Refined: len(queries) > 1,
		WithinLimits: u.ModelCalls <= l.ModelCalls && u.Searches <= l.Searches && u.Reads <= l.Reads && u.SourceBytes <= l.SourceBytes}
	checks.Scope = Scope
	return checks
}

func allMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if !re.MatchString(s) {
			return false
		}
	}
	return true
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
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
