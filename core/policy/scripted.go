// Package policy holds the offline, handwritten-rules policy: a deterministic
// stand-in for the model that needs no key and no network. It is an
// model.Model like any other, so its proposals go through exactly the same
// validation and admission as a model's; it reads only what a model reads
// (the request's system text and state JSON), never the tools.
package policy

import (
	"context"
	"fmt"
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
//  1. search the question's content words (its terms minus common function
//     words, "python" and the version's numbers);
//  2. read the unread candidates in the order they were issued (search by
//     search, rank by rank) while the read allowance lasts, the byte
//     allowance has room for a passage as large as the largest read so far,
//     and some question term is still uncovered;
//  3. search once more with the question terms no read passage covers yet,
//     unless those exact terms were searched already;
//  4. answer by quoting the read sentences that cover the most question
//     terms (greedily, at most six) when they cover at least MinCoverage of
//     them; otherwise stop, naming the terms nothing read covers.
//
// A tool action is only proposed while a later model call remains to answer
// or stop, and never past a visible allowance; a query is never proposed
// twice (by its sorted distinct terms, as the controller compares them) and
// a source never read twice. In fixed mode only rule 4 applies. Quotes are
// substrings of the read text as observed, so they pass the citation
// contract.
type Scripted struct {
	// MinCoverage is the share of content terms an answer must cover; zero
	// means DefaultMinCoverage.
	MinCoverage float64
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
	return decide(st, threshold)
}

func decide(st *state, minCoverage float64) agent.Decision {
	content := st.contentTerms()
	if len(content) == 0 {
		return stop("The question has no searchable words, so there is nothing to look up.")
	}
	cov := st.coverage(content)
	if st.fixed {
		return conclude(st, content, cov, minCoverage)
	}
	// A tool action needs a later call to answer or stop with.
	canAct := st.limits["model_calls"]-st.usage["model_calls"]-1 >= 1
	canSearch := canAct && st.usage["searches"] < st.limits["searches"]
	if len(st.queries) == 0 {
		if !canSearch {
			return stop("No search is allowed before the call limit, so nothing can be read.")
		}
		q := strings.Join(content, " ")
		return search(q, fmt.Sprintf("Nothing has been read yet; searching the question's content words: %s.", strings.Join(content, ", ")))
	}
	if len(cov.missing) == 0 && len(st.passages) > 0 {
		return conclude(st, content, cov, minCoverage)
	}
	if canAct && st.readFits() {
		for _, c := range st.candidates {
			if !st.read[c.id] {
				return read(c.id, fmt.Sprintf("Candidate %s (rank %d for %q) is unread and %s; reading it.",
					c.id, c.rank, c.query, cov.summary(len(content))))
			}
		}
	}
	if canSearch && len(cov.missing) > 0 {
		q := strings.Join(cov.missing, " ")
		if !st.queries[agent.QueryKey(q)] {
			return search(q, fmt.Sprintf("Every candidate has been read or cannot be; %s. Searching the uncovered terms: %s.",
				cov.summary(len(content)), strings.Join(cov.missing, ", ")))
		}
	}
	return conclude(st, content, cov, minCoverage)
}

// conclude answers from the best-covering read sentences or stops.
func conclude(st *state, content []string, cov coverage, minCoverage float64) agent.Decision {
	if len(st.passages) == 0 {
		return stop(fmt.Sprintf("No passage of version %s was read, so no question term (%s) is supported by evidence.",
			st.version, strings.Join(content, ", ")))
	}
	picks, covered := st.pick(content)
	share := float64(covered) / float64(len(content))
	if len(picks) == 0 || share < minCoverage {
		return stop(fmt.Sprintf("The read passages cover %d of %d question terms; nothing read mentions %s. Stopping rather than guessing.",
			covered, len(content), strings.Join(cov.missing, ", ")))
	}
	answer := make([]string, len(picks))
	quotes := make([]agent.Quote, len(picks))
	for i, p := range picks {
		answer[i] = p.text
		quotes[i] = agent.Quote{SourceID: p.source, Quote: p.text}
	}
	assessment := fmt.Sprintf("The read passages cover %d of %d question terms", covered, len(content))
	if len(cov.missing) > 0 {
		assessment += "; not covered: " + strings.Join(cov.missing, ", ")
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
