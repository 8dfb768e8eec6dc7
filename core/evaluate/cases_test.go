package evaluate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/fixtures"
)

// set wraps case objects in a ragagent-cases/1 file.
func set(cases ...string) string {
	return `{"format": "ragagent-cases/1", "cases": [` + strings.Join(cases, ", ") + `]}`
}

const okCase = `{"id": "a", "split": "development", "question": "q?", "version": "3.12", "sources": ["s"], "answer_patterns": [], "forbidden_patterns": []}`

// TestParseCasesRefusals: every malformed set is refused with one line, an
// invalid_cases error naming the case and the field at fault.
func TestParseCasesRefusals(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"format", `{"format": "x", "cases": []}`, `format: "x"`},
		{"no cases list", `{"format": "ragagent-cases/1"}`, "cases: absent"},
		{"not json", `{"format": `, "not a valid ragagent-cases/1 file"},
		{"unknown top key", `{"format": "ragagent-cases/1", "cases": [], "extra": 1}`, `unknown field "extra"`},
		{"unknown case key", set(okCase, `{"id": "b", "split": "development", "question": "q", "target": "x"}`), `case 2 ("b"): unknown field "target"`},
		{"miscased key", set(`{"ID": "b", "split": "development", "question": "q"}`), `case 1 (""): unknown field "ID"`},
		{"wrong type", set(`{"id": "b", "split": "development", "question": 3}`), `case 1 ("b"):`},
		{"empty id", set(`{"id": "", "split": "development", "question": "q"}`), `case 1 (""): id: empty`},
		{"id with a space", set(`{"id": "a b", "split": "development", "question": "q"}`), `case 1 ("a b"): id: has white space`},
		{"repeated id", set(okCase, okCase), `case 2 ("a"): id: repeats`},
		{"bad split", set(`{"id": "a", "split": "test", "question": "q"}`), `case 1 ("a"): split: "test"`},
		{"blank question", set(`{"id": "a", "split": "held-out", "question": " \u00a0"}`), `case 1 ("a"): question: blank`},
		{"long question", set(`{"id": "a", "split": "held-out", "question": "` + strings.Repeat("é", 513) + `"}`), `case 1 ("a"): question: 513 characters`},
		{"bad version", set(`{"id": "a", "split": "development", "question": "q", "version": "3"}`), `case 1 ("a"): version: "3"`},
		{"bad url", set(`{"id": "a", "split": "development", "question": "q", "target_urls": ["http://x/y"]}`), `case 1 ("a"): target_urls: "http://x/y"`},
		{"empty source", set(`{"id": "a", "split": "development", "question": "q", "sources": [""]}`), `case 1 ("a"): sources:`},
		{"patterns without target", set(`{"id": "a", "split": "development", "question": "q", "answer_patterns": ["x"]}`), `case 1 ("a"): answer_patterns: given without a source`},
		{"bad pattern", set(`{"id": "a", "split": "development", "question": "q", "sources": ["s"], "answer_patterns": ["(?=x)"]}`), `case 1 ("a"): answer_patterns:`},
		{"bad forbidden", set(`{"id": "a", "split": "development", "question": "q", "forbidden_patterns": ["\\bx"]}`), `case 1 ("a"): forbidden_patterns:`},
		{"too many targets", set(`{"id": "a", "split": "development", "question": "q", "sources": [` + strings.TrimSuffix(strings.Repeat(`"s",`, MaxTargets+1), ",") + `]}`), `target_urls: 101 targets`},
		{"too large", `{"format": "ragagent-cases/1", "cases": []}` + strings.Repeat(" ", MaxCasesBytes), "over the 8388608-byte cap"},
		{"not utf-8", "a\tq\t-\n\xff", "not UTF-8"},
		{"tsv two columns", "a\tq?\n", "line 1: 2 tab-separated columns, want 3"},
		{"tsv four columns", "a\tq\t-\n\nb\tq\t-\tx\n", "line 3: 4 tab-separated columns"},
		{"tsv no tab", "just some words\n", "neither a ragagent-cases/1 JSON file nor a TSV"},
		{"tsv empty targets", "a\tq?\t \n", `line 1 (case "a"): target_urls: empty`},
		{"tsv dash beside urls", "a\tq?\t- https://x.org/a.html\n", `line 1 (case "a"): target_urls: - stands alone`},
		{"tsv bad url", "a\tq?\tftp://x.org/a\n", `case 1 ("a"): target_urls: "ftp://x.org/a"`},
		{"tsv repeated id", "a\tq?\t-\na\tr?\t-\n", `case 2 ("a"): id: repeats`},
		{"tsv blank question", "a\t \t-\n", `case 1 ("a"): question: blank`},
		{"tsv only comments", "# nothing\n\n", "no cases"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCases([]byte(c.text))
			require.Error(t, err)
			code, ok := reason.Of(err)
			assert.True(t, ok, "a reason code: %v", err)
			assert.Equal(t, reason.InvalidCases, code)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestParseCasesTooManyCases(t *testing.T) {
	var b strings.Builder
	for i := range MaxCases + 1 {
		fmt.Fprintf(&b, "c%d\tq?\t-\n", i)
	}
	_, err := ParseCases([]byte(b.String()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the cap of 5000 cases")
}

// TestParseTSV: the three-column form, with a header, comments, CRLF line
// ends, page-level and fragment targets and an unanswerable case.
func TestParseTSV(t *testing.T) {
	text := "\ufeffid\tquestion\ttarget_urls\r\n# a comment\r\n" +
		"over\tDoes write_text overwrite?\thttps://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text  https://docs.python.org/3.11/library/io.html\r\n" +
		"\r\n" +
		"django\tHow do I add a Django model field?\t-\r\n"
	cs, err := ParseCases([]byte(text))
	require.NoError(t, err)
	require.Len(t, cs.Cases, 2)
	c := cs.Cases[0]
	assert.Equal(t, "over", c.ID)
	assert.Equal(t, "Does write_text overwrite?", c.Question)
	assert.Equal(t, TSVSplit, c.Split)
	assert.Equal(t, "", c.Version, "the pack's default, given by WithVersion")
	assert.Equal(t, []string{"https://docs.python.org/3.11/library/pathlib.html#pathlib.Path.write_text", "https://docs.python.org/3.11/library/io.html"}, c.TargetURLs)
	assert.True(t, c.Answerable())
	assert.False(t, cs.Cases[1].Answerable())
	assert.Empty(t, cs.Cases[1].TargetURLs)
	assert.Equal(t, 1, cs.Answerable())
	cs.WithVersion("3.11")
	assert.Equal(t, "3.11", cs.Cases[0].Version)
	got, ok := cs.Case("django")
	require.True(t, ok)
	assert.Equal(t, "3.11", got.Version)
}

// TestJSONCaseWithoutVersionTakesTheDefault: version is optional; a given
// one is kept.
func TestJSONCaseWithoutVersionTakesTheDefault(t *testing.T) {
	cs, err := ParseCases([]byte(set(`{"id": "a", "split": "development", "question": "q"}`, `{"id": "b", "split": "held-out", "question": "q", "version": "3.13"}`)))
	require.NoError(t, err)
	cs.WithVersion("3.12")
	assert.Equal(t, "3.12", cs.Cases[0].Version)
	assert.Equal(t, "3.13", cs.Cases[1].Version)
}

// TestTheShippedSetsParse: every shipped cases file still reads.
func TestTheShippedSetsParse(t *testing.T) {
	for name, data := range map[string][]byte{"cases.json": fixtures.Cases, "python-3.11-cases.json": fixtures.PythonCases} {
		cs, err := ParseCases(data)
		require.NoError(t, err, name)
		assert.NotEmpty(t, cs.Cases)
	}
}

func TestMatches(t *testing.T) {
	const page = "https://docs.python.org/3.11/library/pathlib.html"
	c := Case{Sources: []string{"path-write"}, TargetURLs: []string{page, "https://docs.python.org/3.11/library/json.html#json.dumps"}}
	for _, row := range []struct {
		p    corpus.Passage
		want bool
	}{
		{corpus.Passage{SourceID: "path-write", URL: "https://elsewhere.org/"}, true},
		{corpus.Passage{SourceID: "x", URL: page}, true},
		{corpus.Passage{SourceID: "x", URL: page + "#pathlib.Path.read_text"}, true},
		{corpus.Passage{SourceID: "x", URL: page + "x#y"}, false},
		{corpus.Passage{SourceID: "x", URL: "https://docs.python.org/3.11/library/json.html#json.dumps"}, true},
		{corpus.Passage{SourceID: "x", URL: "https://docs.python.org/3.11/library/json.html#json.loads"}, false},
		{corpus.Passage{SourceID: "x", URL: "https://docs.python.org/3.11/library/json.html"}, false},
		// A passage named by one of its aliases matches as by its URL.
		{corpus.Passage{SourceID: "x", URL: "https://docs.python.org/3.11/library/json.html#json.dump",
			Aliases: []string{"https://docs.python.org/3.11/library/json.html#json.dumps"}}, true},
		{corpus.Passage{SourceID: "x", URL: "https://docs.python.org/3.11/library/json.html#json.dump",
			Aliases: []string{"https://docs.python.org/3.11/library/json.html#json.load"}}, false},
	} {
		assert.Equal(t, row.want, c.Matches(row.p), "%+v", row.p)
	}
}

// TestGradePageLevelTarget: a page-level target is read (and cited) by
// any passage of its page.
func TestGradePageLevelTarget(t *testing.T) {
	const page = "https://docs.python.org/3.11/library/pathlib.html"
	cs, err := ParseCases([]byte(set(`{"id": "a", "split": "development", "question": "q", "target_urls": ["` + page + `"], "answer_patterns": ["overwrit"]}`)))
	require.NoError(t, err)
	q, id := "q", "p7"
	obs := []agent.Observation{
		{Tool: agent.Search, Arguments: agent.Arguments{Query: &q}, Result: &agent.SearchResult{Query: q}},
		{Tool: agent.Read, Arguments: agent.Arguments{SourceID: &id}, Result: &agent.ReadResult{SourceID: id, URL: page + "#pathlib.Path.write_text"}},
	}
	r := agent.Result{Status: agent.Answered, Answer: "It overwrites.", Limits: agent.DefaultLimits(), Observations: obs,
		Citations: []agent.Citation{{SourceID: id, URL: page + "#pathlib.Path.write_text"}}}
	got := Grade(&cs.Cases[0], &r, nil)
	require.NotNil(t, got.RetrievalTargetsRead)
	assert.True(t, *got.RetrievalTargetsRead)
	assert.Equal(t, Pass, got.Outcome)
	r.Observations[1].Result = &agent.ReadResult{SourceID: id, URL: "https://docs.python.org/3.11/library/io.html#io.open"}
	r.Citations[0].URL = "https://docs.python.org/3.11/library/io.html#io.open"
	got = Grade(&cs.Cases[0], &r, nil)
	assert.False(t, *got.RetrievalTargetsRead)
	assert.Equal(t, reason.TargetNotCited, got.AnswerReason.Code)
}

// TestGradeByAlias: a target naming a passage by an alias is read and
// cited when the passage is, though a run's records carry its URL alone.
func TestGradeByAlias(t *testing.T) {
	const page = "https://docs.python.org/3.11/library/re.html"
	cs, err := ParseCases([]byte(set(`{"id": "a", "split": "development", "question": "q", "target_urls": ["` + page + `#re.IGNORECASE"], "answer_patterns": ["case"]}`)))
	require.NoError(t, err)
	id := "re-i"
	r := agent.Result{Status: agent.Answered, Answer: "Ignore case.", Limits: agent.DefaultLimits(),
		Observations: []agent.Observation{{Tool: agent.Read, Arguments: agent.Arguments{SourceID: &id}, Result: &agent.ReadResult{SourceID: id, URL: page + "#re.I"}}},
		Citations:    []agent.Citation{{SourceID: id, URL: page + "#re.I"}}}
	aliases := func(sourceID string) []string {
		if sourceID == id {
			return []string{page + "#re.IGNORECASE"}
		}
		return nil
	}
	got := Grade(&cs.Cases[0], &r, aliases)
	require.NotNil(t, got.RetrievalTargetsRead)
	assert.True(t, *got.RetrievalTargetsRead)
	assert.Equal(t, Pass, got.Outcome)
	got = Grade(&cs.Cases[0], &r, nil)
	assert.False(t, *got.RetrievalTargetsRead, "without the alias the target is not read")
}

// FuzzParseCases: the reader never panics, and a set it accepts has
// unique non-empty ids, valid splits, versions and URLs, and answer
// patterns only on answerable cases.
func FuzzParseCases(f *testing.F) {
	f.Add(fixtures.Cases)
	f.Add(fixtures.PythonCases)
	f.Add([]byte("a\tq?\thttps://x.org/p.html https://x.org/q.html#y\nb\tr?\t-\n"))
	f.Add([]byte("id\tquestion\ttargets\n# c\n\n"))
	f.Add([]byte(set(okCase)))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ParseCases(data)
		if err != nil {
			code, ok := reason.Of(err)
			if !ok || code != reason.InvalidCases || strings.Contains(err.Error(), "\n") {
				t.Fatalf("refusal is not a one-line invalid_cases: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, c := range cs.Cases {
			if c.ID == "" || seen[c.ID] || (c.Split != "development" && c.Split != "held-out") || pyjson.Blank(c.Question) {
				t.Fatalf("accepted a bad case %+v", c)
			}
			seen[c.ID] = true
			if c.Version != "" && !corpus.ValidVersion(c.Version) {
				t.Fatalf("accepted version %q", c.Version)
			}
			for _, u := range c.TargetURLs {
				if !corpus.ValidURL(u) {
					t.Fatalf("accepted URL %q", u)
				}
			}
			if !c.Answerable() && len(c.AnswerPatterns) > 0 {
				t.Fatalf("answer patterns on an unanswerable case %q", c.ID)
			}
			if got, ok := cs.Case(c.ID); !ok || got.ID != c.ID {
				t.Fatalf("case %q not found by id", c.ID)
			}
		}
	})
}
