// Package policy holds the offline, handwritten-rules policy: a deterministic
// stand-in for the model that needs no key and no network. It is an
// model.Model like any other, so its proposals go through exactly the same
// validation and admission as a model's; it reads only what a model reads
// (the request's system text and state JSON), never the tools.
package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// DefaultMinCoverage is the share of the question's content terms that the
// quoted sentences must cover before the policy answers: more than half,
// with a margin, so that one matching clause of a two-part question is not
// enough.
const DefaultMinCoverage = 0.6

// maxText is the decision string cap in code points (agent's limit).
const maxText = 2000

// maxCitations is the decision's citation cap.
const maxCitations = 6

// Scripted is the rule-based policy. Its rules, in order:
//
//  1. search the question's content words: its terms minus common function
//     words, single letters, the corpus subject's names ("python" for
//     Python's documentation) and the version's numbers;
//  2. search them again with their other forms (key/keys), when some have
//     one the search matches apart from the word itself (TermKey): a
//     literal index matches words as written, a stemming one finds both
//     forms already, and a search that can find nothing new is not made;
//  3. read the unread candidates while the read allowance lasts and the
//     byte allowance has room for a passage as large as the largest read
//     so far: every candidate of those opening searches (the evidence the
//     fixed path reads too), later ones while the evidence is incomplete;
//     those whose source id names more content terms first, the rest in
//     the order issued (search by search, rank by rank);
//  4. while the evidence is incomplete (a question term or number no read
//     passage carries, or no passage about the question's names), search
//     again, when a read could follow: what nothing read carries with the
//     names, else alone, else the names alone, never a query searched
//     already;
//  5. answer by quoting the read sentences that carry the most question
//     terms (names count double; greedily, at most six) when one read
//     passage carries every name and number of the question with at least
//     FocusShare of its terms, and the quotes carry every name and number
//     and at least MinCoverage of the terms; otherwise stop, naming what
//     nothing read carries.
//
// A question's names are its distinctive terms (nameTerms): words that are
// not common English (django, numpy, dataframe), words written as names
// (PostgreSQL, TCP, Windows in mid-sentence), code identifiers
// (Path.write_text) and words mixing letters and digits; its numbers are
// dotted ones other than its version (Python 4.0). "Common English" is a
// built-in list of about 11,000 words (common-words.txt): language a model
// knows, not statistics of any corpus, which no model is shown.
//
// A tool action is only proposed while a later model call remains to answer
// or stop, and never past a visible allowance; a query is never proposed
// twice (by its sorted distinct terms, as the controller compares them) and
// a source never read twice. In fixed mode only rule 5 applies. Quotes are
// substrings of the read text as observed, so they pass the citation
// contract.
type Scripted struct {
	// MinCoverage is the share of content terms an answer must cover; zero
	// means DefaultMinCoverage.
	MinCoverage float64
	// TermKey is how the search tool matches a term, as a model's tool
	// description would say it: two terms with one key find the same
	// passages (retrieval.Spec.TermKey: the term itself under the seed's
	// tokenizer, its stem under a stemming one). Nil means words as
	// written, the seed's search.
	TermKey func(term string) string
}

// Decide proposes the next decision for the prompt. It never fails: an
// unreadable state gets a stop with its reason as the assessment.
func (s Scripted) Decide(_ context.Context, p model.Prompt, _ time.Duration) (model.Reply, error) {
	return model.Reply{Value: pyjson.ValueOf(s.Next(p))}, nil
}

// Next is the decision for a prompt.
func (s Scripted) Next(p model.Prompt) agent.Decision {
	st, err := readState(p)
	if err != nil {
		return stop("The request state could not be read (" + err.Error() + "); stopping.")
	}
	threshold := s.MinCoverage
	if threshold <= 0 {
		threshold = DefaultMinCoverage
	}
	key := s.TermKey
	if key == nil {
		key = func(t string) string { return t }
	}
	return decide(st, threshold, key)
}

func decide(st *state, minCoverage float64, key func(string) string) agent.Decision {
	q := analyse(st.question, st.version, st.subject)
	if len(q.content) == 0 {
		return stop("The question has no searchable words, so there is nothing to look up.")
	}
	ev := st.weigh(q)
	if st.fixed {
		return conclude(st, ev, minCoverage)
	}
	// A tool action needs a later call to answer or stop with, and a
	// search needs a read to follow it.
	canAct := st.limits["model_calls"]-st.usage["model_calls"]-1 >= 1
	canRead := canAct && st.readFits()
	canSearch := canRead && st.limits["model_calls"]-st.usage["model_calls"]-2 >= 1 && st.usage["searches"] < st.limits["searches"]
	opening := openingQueries(q, key)
	if len(st.queries) == 0 && !canSearch {
		return stop("No search and read are allowed before the call limit, so nothing can be read.")
	}
	for i, o := range opening {
		if len(st.order) == i && (i == 0 || len(st.passages) == 0) && canSearch && !st.queries[agent.QueryKey(o)] {
			if i == 0 {
				return search(o, "Nothing has been read yet; searching the question's content words: "+strings.Join(q.content, ", ")+".")
			}
			return search(o, "The index matches words as written; searching the content words with their other forms too: "+o+".")
		}
	}
	// The opening searches' candidates are read whatever the evidence (the
	// fixed path reads its search's too); later ones while it is incomplete.
	opened := 0
	for i, o := range opening {
		if i < len(st.order) && agent.QueryKey(st.order[i]) == agent.QueryKey(o) {
			opened = i + 1
		}
	}
	complete := ev.complete()
	if canRead {
		for _, c := range st.readingOrder(q) {
			if st.read[c.id] || (complete && c.search >= opened) {
				continue
			}
			why := "the opening searches' candidates are all read before answering"
			if !complete {
				why = ev.summary()
			}
			return read(c.id, fmt.Sprintf("Candidate %s (rank %d for %q) is unread; %s. Reading it.", c.id, c.rank, c.query, why))
		}
	}
	if canSearch && !complete {
		for _, r := range refinements(ev) {
			if !st.queries[agent.QueryKey(r)] {
				return search(r, fmt.Sprintf("Every candidate worth reading is read; %s. Searching: %s.", ev.summary(), r))
			}
		}
	}
	return conclude(st, ev, minCoverage)
}

// openingQueries are the searches a run starts with: the question's content
// words, then, when some of them have another form (key/keys) that the
// search matches apart from the words (key), the words with those forms,
// since a literal index matches words as written.
func openingQueries(q terms, key func(string) string) []string {
	out := []string{strings.Join(q.content, " ")}
	if f := withForms(q, key); len(f) > len(q.content) {
		out = append(out, strings.Join(f, " "))
	}
	return out
}

// refinements are the next queries to try, best first: what nothing read
// carries with the question's names, which anchor it to the question's
// topic ("several results" alone finds trace.results, not asyncio); what
// nothing read carries alone; the names alone.
func refinements(ev evidence) []string {
	missing := ev.all.missing(ev.q)
	names := ev.names()
	var out []string
	add := func(terms []string) {
		if len(terms) > 0 {
			out = append(out, strings.Join(terms, " "))
		}
	}
	if len(missing) > 0 {
		anchored := append([]string{}, missing...)
		for _, n := range names {
			if !contains(anchored, n) {
				anchored = append(anchored, n)
			}
		}
		add(anchored)
		add(missing)
	}
	if !ev.focused {
		add(names)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// conclude answers from the best-covering read sentences or stops.
func conclude(st *state, ev evidence, minCoverage float64) agent.Decision {
	q := ev.q
	if len(st.passages) == 0 {
		return stop(fmt.Sprintf("No passage of version %s was read, so no question term (%s) is supported by evidence.",
			st.version, strings.Join(q.content, ", ")))
	}
	if !ev.focused {
		absent := ev.all.missingNames(q)
		what := "no read passage carries " + strings.Join(ev.names(), ", ") + " together with half the question's terms"
		if len(absent) > 0 {
			what = "nothing read mentions " + strings.Join(absent, ", ")
		}
		return stop(fmt.Sprintf("The question is about %s, but %s. Stopping rather than answering from passages about something else.",
			strings.Join(ev.names(), ", "), what))
	}
	picks, got := st.pick(ev)
	covered := got.covered()
	share := float64(covered) / float64(len(q.content))
	if len(picks) == 0 || share < minCoverage || !got.named(q) {
		missing := got.missing(q)
		return stop(fmt.Sprintf("The read sentences cover %d of %d question terms; nothing read says enough about %s. Stopping rather than guessing.",
			covered, len(q.content), strings.Join(missing, ", ")))
	}
	answer := make([]string, len(picks))
	quotes := make([]agent.Quote, len(picks))
	for i, p := range picks {
		answer[i] = p.text
		quotes[i] = agent.Quote{SourceID: p.source, Quote: p.text}
	}
	assessment := fmt.Sprintf("The read passages cover %d of %d question terms", covered, len(q.content))
	if missing := got.missing(q); len(missing) > 0 {
		assessment += "; not covered: " + strings.Join(missing, ", ")
	}
	assessment += fmt.Sprintf(". Answering with the %d read sentence(s) that cover the most of them.", len(picks))
	return agent.Decision{Action: agent.Answer, Assessment: clip(assessment), Answer: strings.Join(answer, " "),
		Citations: quotes}
}

func search(q, assessment string) agent.Decision {
	return agent.Decision{Action: agent.Search, Assessment: clip(assessment), Query: clip(q), Citations: []agent.Quote{}}
}

func read(source, assessment string) agent.Decision {
	return agent.Decision{Action: agent.Read, Assessment: clip(assessment), SourceID: source, Citations: []agent.Quote{}}
}

func stop(assessment string) agent.Decision {
	return agent.Decision{Action: agent.Stop, Assessment: clip(assessment), Citations: []agent.Quote{}}
}

// clip keeps s within the decision string cap.
func clip(s string) string {
	if pyjson.Len(s) <= maxText {
		return s
	}
	r := []rune(s)
	return string(r[:maxText-1]) + "…"
}

// readingOrder is the candidates in the order to read them: search by
// search, and within a search those whose source id names more of the
// question's content terms first, then by rank. The id is metadata, not
// evidence, but it is what a reader chooses by when the allowance cannot
// cover every candidate.
func (st *state) readingOrder(q terms) []candidate {
	out := append([]candidate{}, st.candidates...)
	score := func(c candidate) int {
		return q.mark(strings.NewReplacer(".", " ", "-", " ", "_", " ").Replace(c.id)).covered()
	}
	sort.SliceStable(out, func(i, j int) bool {
		return score(out[i]) > score(out[j])
	})
	return out
}
