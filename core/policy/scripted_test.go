package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
)

func openLibrary(t testing.TB) *tools.Library {
	t.Helper()
	snap, err := corpus.Parse(fixtures.Snapshot)
	require.NoError(t, err)
	lib, err := tools.Open(snap)
	require.NoError(t, err)
	t.Cleanup(func() { lib.Close() })
	return lib
}

func run(t testing.TB, lib tools.Tools, task agent.Task) *agent.Result {
	t.Helper()
	ctrl := agent.Controller{Tools: lib, Model: Scripted{}}
	res, err := ctrl.Run(context.Background(), task)
	require.NoError(t, err)
	return res
}

// checkInvariants holds for every scripted run: it ends by the policy's own
// choice (an answer that passed the contract, or a stop), never by a
// refusal of something it proposed, and never repeats a query or a read.
func checkInvariants(t testing.TB, res *agent.Result) {
	t.Helper()
	switch res.Reason {
	case reason.CitationContractPassed, reason.ModelStopped:
	case reason.ReadOrByteLimit:
		// A candidate's size is shown to no model, so a read may find less
		// byte allowance left than the passage needs; the read count
		// itself is visible and never exceeded.
		// so the refusal must have come from the bytes.
		assert.Less(t, res.Usage.Reads, res.Limits.Reads, "refused by the read count, which the policy can see")
	default:
		assert.Fail(t, "unexpected ending", "the run ended with %s (%s)", res.Reason, res.Detail)
	}
	keys, reads := map[string]bool{}, map[string]bool{}
	for _, d := range res.Decisions {
		switch d.Action {
		case agent.Search:
			k := agent.QueryKey(d.Query)
			assert.False(t, keys[k], "query %q repeats an earlier one", d.Query)
			keys[k] = true
		case agent.Read:
			assert.False(t, reads[d.SourceID], "read of %s repeats", d.SourceID)
			reads[d.SourceID] = true
		}
	}
}

// TestTheFourCases runs the scripted policy on each authored case and path
// and checks the outcome the rules lead to, with the reasons in the notes.
func TestTheFourCases(t *testing.T) {
	lib := openLibrary(t)
	cases, err := evaluate.ParseCases(fixtures.Cases)
	require.NoError(t, err)
	rows := []struct {
		caseID  string
		mode    agent.Mode
		reason  reason.Code
		outcome evaluate.Outcome
		calls   int
		queries []string
		note    string
	}{
		{"overwrite", agent.Fixed, reason.CitationContractPassed, evaluate.Pass, 1, nil,
			"path-write carries Path, write_text and 6 of 7 terms; the quote says it is overwritten"},
		{"overwrite", agent.Agent, reason.CitationContractPassed, evaluate.Pass, 6,
			[]string{"path write text append existing file overwrite", "path write text append existing file overwrite appends files", "append path write text overwrite"},
			"the content words, their other forms, two reads, a search for the one uncovered term with the names, then the answer"},
		{"serialize-and-save", agent.Fixed, reason.ModelStopped, evaluate.IncompleteRun, 1, nil,
			"serialize is a name of the question (not common English) that no passage carries: a stop, where the old rules quoted a wrong answer"},
		{"serialize-and-save", agent.Agent, reason.ModelStopped, evaluate.IncompleteRun, 6,
			[]string{"serialize object non ascii characters kept json save string utf 8 file", "serialize object non ascii characters kept json save string utf 8 file objects character saves strings files", "serialize object kept save ascii json utf"},
			"no search finds a passage that says serialize"},
		{"newline-version", agent.Fixed, reason.ModelStopped, evaluate.IncompleteRun, 1, nil,
			"nothing in 3.13 mentions UTF-8"},
		{"newline-version", agent.Agent, reason.ModelStopped, evaluate.IncompleteRun, 5,
			[]string{"path read text newline control select utf 8", "path read text newline control select utf 8 controls selects", "control select utf 8"},
			"nothing in 3.13 mentions control, select or UTF-8"},
		{"unsupported", agent.Fixed, reason.ModelStopped, evaluate.Pass, 1, nil,
			"no passage mentions backup: an explicit stop passes"},
		{"unsupported", agent.Agent, reason.ModelStopped, evaluate.Pass, 6,
			[]string{"many days path write text retain backup copies", "many days path write text retain backup copies day retains copy", "many days retain backup copies"},
			"the refinement finds nothing that mentions backup, so it stops"},
	}
	for _, row := range rows {
		t.Run(row.caseID+"/"+string(row.mode), func(t *testing.T) {
			c, ok := cases.Case(row.caseID)
			require.True(t, ok)
			res := run(t, lib, agent.Task{Question: c.Question, Version: c.Version, Mode: row.mode, Limits: agent.DefaultLimits()})
			checkInvariants(t, res)
			checks := evaluate.Grade(c, res, nil)
			assert.Equal(t, row.reason, res.Reason, row.note)
			assert.Equal(t, row.outcome, checks.Outcome, row.note)
			assert.Equal(t, row.calls, res.Usage.ModelCalls, row.note)
			if row.mode == agent.Agent {
				assert.Equal(t, row.queries, checks.Trajectory.Queries, row.note)
			}
			for _, cite := range res.Citations {
				assert.NotEmpty(t, cite.URL)
			}
			if res.Reason == reason.ModelStopped {
				last := res.Decisions[len(res.Decisions)-1]
				assert.Contains(t, last.Assessment, "nothing read mentions", "a stop names what is missing")
				assert.Contains(t, last.Assessment, "Stopping rather than")
			}
		})
	}
}

// TestLimits: the policy proposes no tool action past a visible allowance
// or on the last model call. One row per allowance.
func TestLimits(t *testing.T) {
	lib := openLibrary(t)
	q := "In Python 3.12, does Path.write_text append to an existing file or overwrite it?"
	rows := []struct {
		name   string
		limits string
		reason reason.Code
		calls  int
		reads  int
	}{
		{"one model call: no room for a search", "model_calls=1", reason.ModelStopped, 1, 0},
		{"two model calls: no room for a search and a read", "model_calls=2", reason.ModelStopped, 1, 0},
		{"three model calls: search, read, answer", "model_calls=3", reason.CitationContractPassed, 3, 1},
		{"one search: no refinement", "searches=1", reason.CitationContractPassed, 4, 2},
		{"one read", "reads=1", reason.CitationContractPassed, 4, 1},
		{"bytes for one passage only", "source_bytes=300", reason.CitationContractPassed, 4, 1},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			limits, err := agent.ParseLimits(row.limits)
			require.NoError(t, err)
			res := run(t, lib, agent.Task{Question: q, Version: "3.12", Mode: agent.Agent, Limits: limits})
			checkInvariants(t, res)
			assert.Equal(t, row.reason, res.Reason)
			assert.Equal(t, row.calls, res.Usage.ModelCalls)
			assert.Equal(t, row.reads, res.Usage.Reads)
		})
	}
}

// TestTooFewBytesForAnyPassage documents the one allowance the policy
// cannot see: a candidate's size. With room for no passage at all, its
// first read is refused by the controller, which is what admission is for.
func TestTooFewBytesForAnyPassage(t *testing.T) {
	lib := openLibrary(t)
	limits, err := agent.ParseLimits("source_bytes=100")
	require.NoError(t, err)
	res := run(t, lib, agent.Task{Question: "Does Path.write_text overwrite a file?", Version: "3.12", Mode: agent.Agent, Limits: limits})
	assert.Equal(t, reason.ReadOrByteLimit, res.Reason)
	assert.Equal(t, 0, res.Usage.SourceBytes)
}

// TestNoSearchableWords: a question with no [a-z0-9] term gets a stop.
func TestNoSearchableWords(t *testing.T) {
	res := run(t, openLibrary(t), agent.Task{Question: "¿…?", Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()})
	assert.Equal(t, reason.ModelStopped, res.Reason)
	assert.Equal(t, 1, res.Usage.ModelCalls)
	assert.Contains(t, res.Decisions[0].Assessment, "no searchable words")
}

// TestUnreadableState: a state that is not the controller's still gets a
// valid decision.
func TestUnreadableState(t *testing.T) {
	for _, state := range []string{"", "[]", "{", `{"question": 7, "observations": {}}`, `null`} {
		d := Scripted{}.Next(model.Prompt{State: state})
		_, err := agent.ValidateDecision(pyjson.ValueOf(d))
		assert.NoError(t, err, state)
	}
}

func TestRelated(t *testing.T) {
	rows := []struct {
		a, b string
		want bool
	}{
		{"overwrite", "overwritten", true},
		{"file", "files", true},
		{"encoding", "encoded", true},
		{"utf", "utf", true},
		{"8", "8", true},
		{"dump", "dumps", true},
		{"add", "added", false}, // three letters are too few to stem
		{"write", "written", false},
		{"text", "json", false},
		{"configure", "configuration", true},
		{"serialize", "serialization", true},
		{"install", "instance", false}, // "insta" is shared, "ll" and "nce" are no endings
		{"permission", "permitted", false},
		{"define", "definition", true},
	}
	for _, row := range rows {
		assert.Equal(t, row.want, related(row.a, row.b), "%s ~ %s", row.a, row.b)
		assert.Equal(t, row.want, related(row.b, row.a), "%s ~ %s", row.b, row.a)
	}
}

func TestSentencesAreExactSubstrings(t *testing.T) {
	p := passage{id: "x", text: "  First one. Second one!  Third? json.dumps(obj) returns a str.\nLast line without stop"}
	got := sentences(p, terms{content: []string{"one"}})
	texts := make([]string, len(got))
	for i, s := range got {
		texts[i] = s.text
		assert.True(t, strings.Contains(p.text, s.text))
	}
	assert.Equal(t, []string{"First one.", "Second one!", "Third?", "json.dumps(obj) returns a str.", "Last line without stop"}, texts)
}

// FuzzScripted runs the policy on arbitrary questions in both modes: it
// never panics, never repeats a query or read, never cites what fails the
// contract, and so always ends by its own answer or stop (or, in fixed
// mode, the controller's own search of a question with no terms).
func FuzzScripted(f *testing.F) {
	for _, q := range []string{
		"In Python 3.12, does Path.write_text append to an existing file or overwrite it?",
		"In Python 3.12, how can I serialize an object with non-ASCII characters kept in JSON and save that string to a UTF-8 file?",
		"For Python 3.13 Path.read_text, what does newline control and how do I select UTF-8?",
		"In Python 3.12, how many days does Path.write_text retain backup copies?",
		"???", "a", "json json json", "İstanbul KELVIN \u212a encoding", "text. text! text?",
	} {
		f.Add(q, "3.12", uint8(9), uint8(3), uint8(4), uint16(4096))
		f.Add(q, "3.13", uint8(2), uint8(1), uint8(1), uint16(300))
	}
	f.Add("json dumps write text file", "3.12", uint8(9), uint8(3), uint8(4), uint16(400))
	lib := openLibrary(f)
	f.Fuzz(func(t *testing.T, question, version string, calls, searches, reads uint8, bytes uint16) {
		limits := agent.Limits{ModelCalls: 1 + int(calls)%12, Searches: 1 + int(searches)%4, Reads: 1 + int(reads)%6,
			SourceBytes: 1 + int(bytes)%8192, Seconds: 180}
		for _, mode := range []agent.Mode{agent.Agent, agent.Fixed} {
			task := agent.Task{Question: question, Version: version, Mode: mode, Limits: limits}
			if task.Validate() != nil {
				return
			}
			res := run(t, lib, task)
			if mode == agent.Fixed && res.Usage.ModelCalls == 0 {
				continue // the controller's own retrieval ended it (no terms, or limits) before any call
			}
			checkInvariants(t, res)
		}
	})
}

// FuzzNext feeds arbitrary state text, under the reference policy text or
// another corpus's: the decision is always valid.
func FuzzNext(f *testing.F) {
	f.Add(`{"question": "q", "version": "3.12", "observations": [], "usage": {}, "limits": {}}`, false, "")
	f.Add(`{"question": "path write", "version": "3.12", "observations": [{"tool": "search", "arguments": {"query": "path"}, "result": {"candidates": [{"source_id": "a", "rank": 1}]}}, {"tool": "read", "result": {"source_id": "a", "text": "Path write. Yes."}}], "usage": {"model_calls": 2, "searches": 1, "reads": 1, "source_bytes": 16}, "limits": {"model_calls": 9, "searches": 3, "reads": 4, "source_bytes": 4096}}`, true, "")
	f.Add(`{"question": "How do I descale the Kettle on Windows 4.0?", "version": "1.0", "observations": [{"tool": "search", "arguments": {"query": "descale"}, "result": {"candidates": [{"source_id": "k", "rank": 1}]}}, {"tool": "read", "result": {"source_id": "k", "text": "Descale the kettle. 4.0 is new."}}], "usage": {"model_calls": 2, "searches": 1, "reads": 1, "source_bytes": 16}, "limits": {"model_calls": 9, "searches": 3, "reads": 4, "source_bytes": 4096}}`, false, "Kettle and garden notes")
	f.Fuzz(func(t *testing.T, state string, fixed bool, subject string) {
		mode := agent.Agent
		if fixed {
			mode = agent.Fixed
		}
		p := model.Prompt{System: agent.InstructionFor(subject, mode), State: state}
		d := Scripted{}.Next(p)
		_, err := agent.ValidateDecision(pyjson.ValueOf(d))
		require.NoError(t, err)
		if fixed {
			assert.Contains(t, []agent.Action{agent.Answer, agent.Stop}, d.Action)
		}
	})
}

// BenchmarkScriptedRun is one whole agent-path run of the scripted policy
// (search, two reads, a refinement search, an answer) through the
// controller and the FTS5 index.
func BenchmarkScriptedRun(b *testing.B) {
	lib := openLibrary(b)
	task := agent.Task{Question: "In Python 3.12, does Path.write_text append to an existing file or overwrite it?",
		Version: "3.12", Mode: agent.Agent, Limits: agent.DefaultLimits()}
	for b.Loop() {
		run(b, lib, task)
	}
}
