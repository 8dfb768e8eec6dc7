package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/store"
)

// state is what the policy knows: the request's state JSON, read the way a
// model would read it.
type state struct {
	question, version string
	fixed             bool
	queries           map[string]bool // keys of the queries searched so far
	candidates        []candidate     // issued, first issue only, in order
	passages          []passage       // read, in order
	read              map[string]bool
	usage, limits     map[string]int
}

type candidate struct {
	id, query string
	rank      int
}

type passage struct {
	id, text string
}

// readState decodes the prompt's state text. Fields of the wrong type are
// treated as absent: the policy must not fail on any input.
func readState(p model.Prompt) (*state, error) {
	v, err := pyjson.Decode(p.State)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	root, ok := v.(*pyjson.Object)
	if !ok {
		return nil, errors.New("not an object")
	}
	st := &state{
		fixed:   strings.Contains(p.System, strings.TrimSpace(agent.FixedModeSentence)),
		queries: map[string]bool{}, read: map[string]bool{},
		usage: counters(get(root, "usage")), limits: counters(get(root, "limits")),
	}
	st.question, _ = get(root, "question").(string)
	st.version, _ = get(root, "version").(string)
	observations, _ := get(root, "observations").([]any)
	issued := map[string]bool{}
	for _, raw := range observations {
		o, _ := raw.(*pyjson.Object)
		args, _ := get(o, "arguments").(*pyjson.Object)
		result, _ := get(o, "result").(*pyjson.Object)
		switch get(o, "tool") {
		case "search":
			q, _ := get(args, "query").(string)
			st.queries[agent.QueryKey(q)] = true
			cands, _ := get(result, "candidates").([]any)
			for _, c := range cands {
				co, _ := c.(*pyjson.Object)
				id, _ := get(co, "source_id").(string)
				if id == "" || issued[id] {
					continue
				}
				issued[id] = true
				st.candidates = append(st.candidates, candidate{id: id, query: q, rank: count(get(co, "rank"))})
			}
		case "read":
			id, _ := get(result, "source_id").(string)
			text, _ := get(result, "text").(string)
			if id == "" {
				continue
			}
			st.read[id] = true
			st.passages = append(st.passages, passage{id: id, text: text})
		}
	}
	return st, nil
}

func get(o *pyjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

func count(v any) int {
	n, _ := v.(pyjson.Number)
	i, _ := n.Int()
	return i
}

func counters(v any) map[string]int {
	o, _ := v.(*pyjson.Object)
	m := map[string]int{}
	for _, k := range o.Keys() {
		m[k] = count(get(o, k))
	}
	return m
}

// functionWords are question words that carry no topic: searching or
// covering them says nothing about the evidence.
const functionWords = `a about all also am an and any are as at be been but by can could did do
does doing for from had has have how i if in into is it its me my no not of on or our should so some
than that the their them then there these they this those to was we were what when where which while
who whom whose why will with would you your`

// contentTerms are the question's terms without function words, "python"
// (every passage is Python documentation) and the version's own numbers
// (the version filter already applies them). A question of nothing else
// keeps all its terms.
func (st *state) contentTerms() []string {
	skip := map[string]bool{"python": true}
	for _, w := range strings.Fields(functionWords) {
		skip[w] = true
	}
	for _, t := range store.Terms(st.version) {
		skip[t] = true
	}
	all := store.Terms(st.question)
	var out []string
	for _, t := range all {
		if !skip[t] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// related reports whether a question term and a passage term are the same
// word up to a simple suffix: equal, or one a prefix of the other when the
// shorter has at least four letters (overwrite/overwritten, write/writes),
// or sharing their first five letters (encoding/encoded).
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
	return len(short) >= 5 && short[:5] == long[:5]
}

// covers reports which of terms the text covers.
func covers(text string, terms []string) []bool {
	words := store.Terms(text)
	out := make([]bool, len(terms))
	for i, t := range terms {
		for _, w := range words {
			if related(t, w) {
				out[i] = true
				break
			}
		}
	}
	return out
}

// coverage is which content terms the read passages cover.
type coverage struct {
	covered []string
	missing []string
}

func (c coverage) summary(total int) string {
	if len(c.missing) == 0 {
		return fmt.Sprintf("the read passages cover all %d question terms", total)
	}
	return fmt.Sprintf("the read passages cover %d of %d question terms (missing: %s)",
		len(c.covered), total, strings.Join(c.missing, ", "))
}

func (st *state) coverage(content []string) coverage {
	got := make([]bool, len(content))
	for _, p := range st.passages {
		for i, c := range covers(p.text, content) {
			got[i] = got[i] || c
		}
	}
	var cov coverage
	for i, t := range content {
		if got[i] {
			cov.covered = append(cov.covered, t)
		} else {
			cov.missing = append(cov.missing, t)
		}
	}
	return cov
}

// readFits reports whether another read is within the visible allowances.
// The size of an unread candidate is not shown to the model, so the byte
// allowance must have room for a passage as large as the largest read so
// far (any room at all before the first read).
func (st *state) readFits() bool {
	if st.usage["reads"] >= st.limits["reads"] {
		return false
	}
	room := st.limits["source_bytes"] - st.usage["source_bytes"]
	largest := 1
	for _, p := range st.passages {
		largest = max(largest, len(p.text))
	}
	return room >= largest
}

// sentence is a quotable span of a read passage.
type sentence struct {
	source, text string
	covers       []bool
}

// sentences splits a passage after ., ! or ? followed by white space. Each
// piece is trimmed, so it is an exact substring of the passage; pieces with
// no terms, or longer than a quote may be, are dropped.
func sentences(p passage, content []string) []sentence {
	var out []sentence
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(store.Terms(s)) == 0 || pyjson.Len(s) > maxText {
			return
		}
		out = append(out, sentence{source: p.id, text: s, covers: covers(s, content)})
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

// pick chooses read sentences greedily by how many still-uncovered content
// terms each adds (ties go to the earlier read, then the earlier sentence),
// while the answer stays within the caps. It returns them in reading order
// (passage by passage, sentence by sentence), so the answer reads as the
// sources do, and how many content terms they cover together.
func (st *state) pick(content []string) ([]sentence, int) {
	var pool []sentence
	for _, p := range st.passages {
		pool = append(pool, sentences(p, content)...)
	}
	got := make([]bool, len(content))
	used := make([]bool, len(pool))
	var chosen []int
	length, covered := 0, 0
	for len(chosen) < maxCitations {
		best, gain := -1, 0
		for i, s := range pool {
			if used[i] {
				continue
			}
			g := 0
			for j, c := range s.covers {
				if c && !got[j] {
					g++
				}
			}
			if g > gain {
				best, gain = i, g
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
		for j, c := range pool[best].covers {
			if c && !got[j] {
				got[j] = true
				covered++
			}
		}
	}
	sort.Ints(chosen)
	picks := make([]sentence, len(chosen))
	for i, c := range chosen {
		picks[i] = pool[c]
	}
	return picks, covered
}
