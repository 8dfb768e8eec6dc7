package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/store"
)

// FocusShare is the share of the question's content terms that the passage
// carrying its names must cover itself: half, so a passage that mentions
// Django in passing (a "see also" line) does not count as one about the
// question's Django.
const FocusShare = 0.5

// related reports whether a question term and a passage term are the same
// word up to a simple suffix: equal, or one a prefix of the other when the
// shorter has at least four letters (overwrite/overwritten, write/writes),
// or sharing at least their first five letters with only an English
// ending after them (encoding/encoded, configure/configuration; not
// install/instance, whose "ll" and "nce" are no endings).
func related(q, p string) bool {
	if q == p {
		return true
	}
	short, long := q, p
	if len(short) > len(long) {
		short, long = long, short
	}
	if len(short) >= 4 && strings.HasPrefix(long, short) {
		return true
	}
	n := 0
	for n < len(short) && short[n] == long[n] {
		n++
	}
	return n >= 5 && ending(short[n:]) && ending(long[n:])
}

// ending reports whether s is an English inflection or derivation suffix
// (or what is left of one once a shared letter is taken: encod|ing,
// encod|ed).
func ending(s string) bool {
	switch s {
	case "", "e", "s", "es", "d", "ed", "en", "ten", "ing", "ings", "er", "ers", "or", "ors", "ion", "ions", "ation", "ations", "ition", "itions", "ance", "ence", "ness", "ure",
		"ment", "ments", "ly", "able", "ible", "al", "ally", "ity", "ive", "y", "ies", "ied", "ise", "ize", "ised", "ized":
		return true
	}
	return false
}

// marks are which of a question's content terms and literals a text
// carries.
type marks struct {
	terms, literals []bool
}

// mark is what text carries of q.
func (q terms) mark(text string) marks {
	words := store.Terms(text)
	m := marks{terms: make([]bool, len(q.content)), literals: make([]bool, len(q.literals))}
	for i, t := range q.content {
		for _, w := range words {
			if related(t, w) {
				m.terms[i] = true
				break
			}
		}
	}
	for i, lit := range q.literals {
		m.literals[i] = carriesLiteral(text, lit)
	}
	return m
}

// or adds what other carries.
func (m marks) or(other marks) {
	for i := range m.terms {
		m.terms[i] = m.terms[i] || other.terms[i]
	}
	for i := range m.literals {
		m.literals[i] = m.literals[i] || other.literals[i]
	}
}

func (m marks) covered() int {
	n := 0
	for _, c := range m.terms {
		if c {
			n++
		}
	}
	return n
}

// named reports whether m carries every name and literal of q.
func (m marks) named(q terms) bool {
	for i, t := range q.content {
		if !m.terms[i] && q.isName(t) {
			return false
		}
	}
	for _, c := range m.literals {
		if !c {
			return false
		}
	}
	return true
}

func (q terms) isName(t string) bool {
	for _, n := range q.names {
		if n == t {
			return true
		}
	}
	return false
}

// missing lists the content terms m lacks, then the literals it lacks.
func (m marks) missing(q terms) []string {
	var out []string
	for i, t := range q.content {
		if !m.terms[i] {
			out = append(out, t)
		}
	}
	for i, lit := range q.literals {
		if !m.literals[i] {
			out = append(out, lit)
		}
	}
	return out
}

// missingNames lists the names and literals m lacks.
func (m marks) missingNames(q terms) []string {
	var out []string
	for i, t := range q.content {
		if !m.terms[i] && q.isName(t) {
			out = append(out, t)
		}
	}
	for i, lit := range q.literals {
		if !m.literals[i] {
			out = append(out, lit)
		}
	}
	return out
}

// evidence is what the read passages carry of a question.
type evidence struct {
	q terms
	// all is what the passages carry together.
	all marks
	// focus is the read passage (index in state.passages) that carries
	// every name and literal and at least FocusShare of the content terms,
	// covering the most; -1 when none does. A question without names or
	// literals needs none (focus -1, focused true).
	focus   int
	focused bool
}

// weigh is the evidence of the read passages for q.
func (st *state) weigh(q terms) evidence {
	ev := evidence{q: q, all: marks{terms: make([]bool, len(q.content)), literals: make([]bool, len(q.literals))}, focus: -1}
	best := -1
	for i, p := range st.passages {
		m := q.mark(p.text)
		ev.all.or(m)
		n := m.covered()
		if m.named(q) && float64(n) >= FocusShare*float64(len(q.content)) && n > best {
			ev.focus, best = i, n
		}
	}
	ev.focused = ev.focus >= 0 || (len(q.names) == 0 && len(q.literals) == 0)
	return ev
}

// complete reports whether the passages carry every term and literal and
// a passage is about the question's names.
func (ev evidence) complete() bool {
	return ev.focused && len(ev.all.missing(ev.q)) == 0
}

// summary says what the passages carry, for an assessment.
func (ev evidence) summary() string {
	total := len(ev.q.content)
	missing := ev.all.missing(ev.q)
	s := fmt.Sprintf("the read passages cover all %d question terms", total)
	if len(missing) > 0 {
		s = fmt.Sprintf("the read passages cover %d of %d question terms (missing: %s)",
			ev.all.covered(), total, strings.Join(missing, ", "))
	}
	if !ev.focused {
		s += fmt.Sprintf(" and no read passage carries all of %s with half the question's terms", strings.Join(ev.names(), ", "))
	}
	return s
}

// names are the question's names and literals.
func (ev evidence) names() []string {
	return append(append([]string{}, ev.q.names...), ev.q.literals...)
}

// sentence is a quotable span of a read passage.
type sentence struct {
	source, text string
	marks        marks
}

// sentences splits a passage after ., ! or ? followed by white space. Each
// piece is trimmed, so it is an exact substring of the passage; pieces with
// no terms, or longer than a quote may be, are dropped.
func sentences(p passage, q terms) []sentence {
	var out []sentence
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(store.Terms(s)) == 0 || pyjson.Len(s) > maxText {
			return
		}
		out = append(out, sentence{source: p.id, text: s, marks: q.mark(s)})
	}
	start := 0
	for i := 0; i+1 < len(p.text); i++ {
		c, next := p.text[i], p.text[i+1]
		if (c == '.' || c == '!' || c == '?') && (next == ' ' || next == '\n' || next == '\t' || next == '\r') {
			add(p.text[start : i+1])
			start = i + 1
		}
	}
	add(p.text[start:])
	return out
}

// pick chooses read sentences greedily by what each adds that the chosen
// ones lack: a content term counts one, a name or literal two, so the
// sentences that carry what the question is about come first (ties go to
// the earlier read, then the earlier sentence); at most maxCitations, the
// answer within maxText. It returns them in reading order (passage by passage, sentence
// by sentence), so the answer reads as the sources do, and what they carry
// together.
func (st *state) pick(ev evidence) ([]sentence, marks) {
	q := ev.q
	var pool []sentence
	for _, p := range st.passages {
		pool = append(pool, sentences(p, q)...)
	}
	got := marks{terms: make([]bool, len(q.content)), literals: make([]bool, len(q.literals))}
	gain := func(s sentence) int {
		g := 0
		for j, c := range s.marks.terms {
			if c && !got.terms[j] {
				g++
				if q.isName(q.content[j]) {
					g++
				}
			}
		}
		for j, c := range s.marks.literals {
			if c && !got.literals[j] {
				g += 2
			}
		}
		return g
	}
	used := make([]bool, len(pool))
	var chosen []int
	length := 0
	for len(chosen) < maxCitations {
		best, most := -1, 0
		for i, s := range pool {
			if used[i] {
				continue
			}
			if g := gain(s); g > most {
				best, most = i, g
			}
		}
		if best < 0 {
			break
		}
		extra := pyjson.Len(pool[best].text)
		if len(chosen) > 0 {
			extra++ // the joining space
		}
		if length+extra > maxText {
			break
		}
		used[best] = true
		length += extra
		chosen = append(chosen, best)
		got.or(pool[best].marks)
	}
	sort.Ints(chosen)
	picks := make([]sentence, len(chosen))
	for i, c := range chosen {
		picks[i] = pool[c]
	}
	return picks, got
}
