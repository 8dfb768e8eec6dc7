package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

// state is what the policy knows: the request's state JSON, read the way a
// model would read it.
type state struct {
	question, version string
	// subject is what the corpus is about, as the system text names it.
	subject       string
	fixed         bool
	queries       map[string]bool // keys of the queries searched so far
	order         []string        // the queries searched, in order
	candidates    []candidate     // issued, first issue only, in order
	passages      []passage       // read, in order
	read          map[string]bool
	usage, limits map[string]int
}

type candidate struct {
	id, query string
	rank      int
	search    int // 0 for the first search's candidates, 1 for the next...
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
		subject: agent.SubjectOf(p.System),
		queries: map[string]bool{}, read: map[string]bool{},
		usage: counters(get(root, "usage")), limits: counters(get(root, "limits")),
	}
	st.question, _ = get(root, "question").(string)
	st.version, _ = get(root, "version").(string)
	observations, _ := get(root, "observations").([]any)
	issued := map[string]bool{}
	searches := 0
	for _, raw := range observations {
		o, _ := raw.(*pyjson.Object)
		args, _ := get(o, "arguments").(*pyjson.Object)
		result, _ := get(o, "result").(*pyjson.Object)
		switch get(o, "tool") {
		case "search":
			q, _ := get(args, "query").(string)
			st.queries[agent.QueryKey(q)] = true
			st.order = append(st.order, q)
			cands, _ := get(result, "candidates").([]any)
			for _, c := range cands {
				co, _ := c.(*pyjson.Object)
				id, _ := get(co, "source_id").(string)
				if id == "" || issued[id] {
					continue
				}
				issued[id] = true
				st.candidates = append(st.candidates, candidate{id: id, query: q, rank: count(get(co, "rank")), search: searches})
			}
			searches++
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
