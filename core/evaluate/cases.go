package evaluate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// CasesFormat is the cases file's format tag.
const CasesFormat = "ragagent-cases/1"

// The bounds of a question set, whatever reads it (the command line's
// --cases, the page's file input, the node API): a set is authored by a
// person, so these are far above any real one and far below what would
// make a run of it take hours.
const (
	// MaxCasesBytes is the largest question set read, 8 MiB.
	MaxCasesBytes = 8 << 20
	// MaxCases is the most cases in a set.
	MaxCases = 5000
	// MaxQuestionChars is the controller's cap on a question, in code
	// points: a longer one could never run.
	MaxQuestionChars = 512
	// MaxIDChars bounds a case id, in code points.
	MaxIDChars = 200
	// MaxTargets bounds the sources plus target URLs of one case.
	MaxTargets = 100
	// MaxPatterns bounds the answer plus forbidden patterns of one case.
	MaxPatterns = 100
	// MaxTextChars bounds a pattern, a target and the note, in code points.
	MaxTextChars = 2000
)

// TSVSplit is the split of every case of a TSV question set, which has
// no split column: a set somebody brings was not tuned on here, so its
// figures are held-out ones.
const TSVSplit = "held-out"

// Case is one authored question with its grading labels.
type Case struct {
	ID       string `json:"id"`
	Split    string `json:"split"`
	Question string `json:"question"`
	// Version is the documentation version the question asks about; a
	// case that names none takes its pack's default version (WithVersion).
	Version string   `json:"version"`
	Sources []string `json:"sources"`
	// TargetURLs are target passages named by URL (for a pack whose ids a
	// case author does not pick): each must be read, and cited in an
	// answer, by some passage with that URL (a passage split in parts
	// shares its URL). A URL without a #fragment is a page: every passage
	// of that page matches it.
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

// Answerable reports whether the documents can answer the case: it names
// a target (a source or a target URL). A case with none is unanswerable,
// and only an explicit stop passes it.
func (c *Case) Answerable() bool { return len(c.Sources)+len(c.TargetURLs) > 0 }

// Matches reports whether a passage is one of the case's targets: its
// source id is one of Sources, or its URL or one of its aliases is one of
// TargetURLs, or it is on a page-level target's page (a target URL
// without a #fragment).
func (c *Case) Matches(p corpus.Passage) bool {
	for _, s := range c.Sources {
		if s == p.SourceID {
			return true
		}
	}
	for _, u := range c.TargetURLs {
		for _, url := range p.URLs() {
			if MatchesURL(u, url) {
				return true
			}
		}
	}
	return false
}

// MatchesURL reports whether a passage URL matches a target URL: with a
// #fragment only that exact URL, without one every URL of that page.
func MatchesURL(target, url string) bool {
	if strings.Contains(target, "#") {
		return url == target
	}
	page, _, _ := strings.Cut(url, "#")
	return page == target
}

// PageLevel reports whether a target URL names a whole page (it has no
// #fragment).
func PageLevel(target string) bool { return !strings.Contains(target, "#") }

// ParseCases reads and validates a question set: a ragagent-cases/1 JSON
// file or a TSV (see parseTSV), told apart by the first byte that is not
// white space ('{' is JSON). Patterns are RE2 syntax, matched
// case-insensitively (Python's re.I), with Python's Unicode meaning for
// \s \w \d and their negations (see compilePattern); a pattern RE2 would
// match differently from Python (\b, back-references, look-arounds) is
// refused when the file loads, never matched differently.
//
// Every refusal is one line, a reason.InvalidCases error naming the case
// (its position and id, or the TSV line) and the field. A case that names
// no version keeps Version "" until WithVersion gives it the pack's.
func ParseCases(data []byte) (*Cases, error) { return ParseCasesAt(data, "") }

// ParseCasesAt is ParseCases for a pack whose passages' URLs all begin
// with base (the page's own documents: https://your-documents.invalid/):
// a target that is not an absolute URL is the path and anchor of a file
// under it, as the page shows it ("notes/kettle.md#kettle", a leading "/"
// or "./" allowed), and is read as base joined with it, so the target the
// page displays is one the set may name. With base "" every target must
// be an absolute https URL.
func ParseCasesAt(data []byte, base string) (*Cases, error) {
	if len(data) > MaxCasesBytes {
		return nil, reason.New(reason.InvalidCases, "the question set is %d bytes, over the %d-byte cap", len(data), MaxCasesBytes)
	}
	if !utf8.Valid(data) {
		return nil, reason.New(reason.InvalidCases, "the question set is not UTF-8 text")
	}
	var cs *Cases
	var err error
	if trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(trimmed) > 0 && trimmed[0] == '{' {
		cs, err = parseJSON(data)
	} else {
		cs, err = parseTSV(string(data))
	}
	if err != nil {
		return nil, err
	}
	if base != "" {
		cs.resolve(base)
	}
	if err := cs.validate(); err != nil {
		return nil, err
	}
	return cs, nil
}

// resolve reads each target that names no scheme as a file under base.
func (cs *Cases) resolve(base string) {
	for i := range cs.Cases {
		for j, u := range cs.Cases[i].TargetURLs {
			if u == "" || u == "-" || strings.Contains(u, "://") {
				continue
			}
			cs.Cases[i].TargetURLs[j] = base + strings.TrimPrefix(strings.TrimPrefix(u, "./"), "/")
		}
	}
}

// rawCases is the JSON file with each case undecoded, so a case's unknown
// key is reported with the case's position and id.
type rawCases struct {
	Format string            `json:"format"`
	Cases  []json.RawMessage `json:"cases"`
}

func parseJSON(data []byte) (*Cases, error) {
	var raw rawCases
	if err := jsonfile.Decode(data, &raw); err != nil {
		return nil, reason.New(reason.InvalidCases, "not a valid %s file: %v", CasesFormat, err)
	}
	if raw.Format != CasesFormat {
		return nil, reason.New(reason.InvalidCases, "format: %q, want %q", raw.Format, CasesFormat)
	}
	if raw.Cases == nil {
		return nil, reason.New(reason.InvalidCases, "cases: absent or null, want a list")
	}
	if len(raw.Cases) > MaxCases {
		return nil, reason.New(reason.InvalidCases, "cases: %d cases, over the cap of %d", len(raw.Cases), MaxCases)
	}
	cs := &Cases{Format: raw.Format, Cases: make([]Case, len(raw.Cases))}
	for i, r := range raw.Cases {
		if err := jsonfile.Decode(r, &cs.Cases[i]); err != nil {
			return nil, reason.New(reason.InvalidCases, "%s: %v", caseWhere(i, idOf(r)), err)
		}
	}
	return cs, nil
}

// idOf is a raw case's id, for naming a case that does not decode.
func idOf(r json.RawMessage) string {
	v, err := pyjson.Decode(string(r))
	if err != nil {
		return ""
	}
	o, ok := v.(*pyjson.Object)
	if !ok {
		return ""
	}
	id, _ := o.Get("id")
	s, _ := id.(string)
	return s
}

func caseWhere(i int, id string) string {
	return fmt.Sprintf("case %d (%q)", i+1, clip(id))
}

// clip shortens a value quoted in an error, so the message stays one
// readable line.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:60]) + "…"
}

// parseTSV reads the three-column form: one case a line, id, question and
// the target URLs separated by spaces (or "-" for a question the
// documents cannot answer), tab-separated. Blank lines and lines starting
// with '#' are skipped, as is a first line "id<TAB>question<TAB>...". A
// TSV case names no version (it takes the pack's), no pattern, and its
// split is TSVSplit.
func parseTSV(text string) (*Cases, error) {
	cs := &Cases{Format: CasesFormat, Cases: []Case{}}
	lines := strings.Split(strings.TrimPrefix(text, "\ufeff"), "\n")
	header := true
	for n, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if header && len(cols) >= 2 && strings.EqualFold(strings.TrimSpace(cols[0]), "id") && strings.EqualFold(strings.TrimSpace(cols[1]), "question") {
			header = false
			continue
		}
		header = false
		where := fmt.Sprintf("line %d", n+1)
		if len(cols) != 3 {
			if n == 0 && len(cols) == 1 {
				return nil, reason.New(reason.InvalidCases, "neither a %s JSON file nor a TSV of id, question and target URLs (line 1 has no tab)", CasesFormat)
			}
			return nil, reason.New(reason.InvalidCases, "%s: %d tab-separated columns, want 3 (id, question, target URLs or -)", where, len(cols))
		}
		if len(cs.Cases) == MaxCases {
			return nil, reason.New(reason.InvalidCases, "%s: over the cap of %d cases", where, MaxCases)
		}
		c := Case{ID: strings.TrimSpace(cols[0]), Question: strings.TrimSpace(cols[1]), Split: TSVSplit,
			Sources: []string{}, AnswerPatterns: []string{}, ForbiddenPatterns: []string{}}
		targets := strings.Fields(cols[2])
		switch {
		case len(targets) == 1 && targets[0] == "-":
		case len(targets) == 0:
			return nil, reason.New(reason.InvalidCases, "%s (case %q): target_urls: empty; give the target URLs, or - for a question the documents cannot answer", where, clip(c.ID))
		default:
			for _, t := range targets {
				if t == "-" {
					return nil, reason.New(reason.InvalidCases, "%s (case %q): target_urls: - stands alone (the documents cannot answer), not beside URLs", where, clip(c.ID))
				}
			}
			c.TargetURLs = targets
		}
		cs.Cases = append(cs.Cases, c)
	}
	if len(cs.Cases) == 0 {
		return nil, reason.New(reason.InvalidCases, "the question set has no cases")
	}
	return cs, nil
}

// validate checks every case, compiles its patterns and indexes the ids.
func (cs *Cases) validate() error {
	cs.byID = map[string]int{}
	for i := range cs.Cases {
		c := &cs.Cases[i]
		where := caseWhere(i, c.ID)
		bad := func(field, format string, args ...any) error {
			return reason.New(reason.InvalidCases, "%s: %s: %s", where, field, fmt.Sprintf(format, args...))
		}
		switch {
		case c.ID == "":
			return bad("id", "empty")
		case utf8.RuneCountInString(c.ID) > MaxIDChars:
			return bad("id", "over %d characters", MaxIDChars)
		case strings.ContainsFunc(c.ID, isControlOrSpace):
			return bad("id", "has white space or a control character")
		}
		if _, dup := cs.byID[c.ID]; dup {
			return bad("id", "repeats an earlier case's")
		}
		if c.Split != "development" && c.Split != "held-out" {
			return bad("split", "%q is not development or held-out", clip(c.Split))
		}
		switch n := utf8.RuneCountInString(c.Question); {
		case pyjson.Blank(c.Question):
			return bad("question", "blank")
		case n > MaxQuestionChars:
			return bad("question", "%d characters, over the controller's %d", n, MaxQuestionChars)
		}
		if c.Version != "" && !corpus.ValidVersion(c.Version) {
			return bad("version", "%q is not of the form 3.12 (leave it out for the pack's default)", clip(c.Version))
		}
		if n := len(c.Sources) + len(c.TargetURLs); n > MaxTargets {
			return bad("target_urls", "%d targets, over the cap of %d", n, MaxTargets)
		}
		for _, s := range c.Sources {
			if s == "" || utf8.RuneCountInString(s) > MaxTextChars {
				return bad("sources", "%q is not a source id", clip(s))
			}
		}
		for _, u := range c.TargetURLs {
			if utf8.RuneCountInString(u) > MaxTextChars || !corpus.ValidURL(u) {
				return bad("target_urls", "%q is not an absolute https URL", clip(u))
			}
		}
		if !c.Answerable() && len(c.AnswerPatterns) > 0 {
			return bad("answer_patterns", "given without a source or target URL; a question the documents cannot answer names neither (only an explicit stop passes it)")
		}
		if n := len(c.AnswerPatterns) + len(c.ForbiddenPatterns); n > MaxPatterns {
			return bad("answer_patterns", "%d patterns, over the cap of %d", n, MaxPatterns)
		}
		if utf8.RuneCountInString(c.Note) > MaxTextChars {
			return bad("note", "over %d characters", MaxTextChars)
		}
		var err error
		if c.answer, err = compile(c.AnswerPatterns); err != nil {
			return bad("answer_patterns", "%v", err)
		}
		if c.forbidden, err = compile(c.ForbiddenPatterns); err != nil {
			return bad("forbidden_patterns", "%v", err)
		}
		cs.byID[c.ID] = i
	}
	return nil
}

func isControlOrSpace(r rune) bool {
	return r < 0x20 || r == 0x7f || r == ' ' || r == '\u0085' || r == '\u00a0' || r == '\u2028' || r == '\u2029'
}

func compile(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		if utf8.RuneCountInString(p) > MaxTextChars {
			return nil, fmt.Errorf("%q is over %d characters", clip(p), MaxTextChars)
		}
		re, err := compilePattern(p)
		if err != nil {
			return nil, err
		}
		out[i] = re
	}
	return out, nil
}

// WithVersion gives every case that names no version the pack's default
// version v.
func (cs *Cases) WithVersion(v string) {
	for i := range cs.Cases {
		if cs.Cases[i].Version == "" {
			cs.Cases[i].Version = v
		}
	}
}

// Case returns the case with the given id.
func (cs *Cases) Case(id string) (*Case, bool) {
	i, ok := cs.byID[id]
	if !ok {
		return nil, false
	}
	return &cs.Cases[i], true
}

// Answerable counts the cases the documents can answer.
func (cs *Cases) Answerable() int {
	n := 0
	for i := range cs.Cases {
		if cs.Cases[i].Answerable() {
			n++
		}
	}
	return n
}
