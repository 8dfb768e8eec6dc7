package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

func searched(q string, ids ...string) agent.Observation {
	cands := make([]agent.Candidate, len(ids))
	for i, id := range ids {
		cands[i] = agent.Candidate{SourceID: id, Rank: i + 1, Version: "3.11"}
	}
	return agent.Observation{Tool: agent.Search, Arguments: agent.Arguments{Query: &q}, Result: &agent.SearchResult{Query: q, Candidates: cands}}
}

func wasRead(id, text string) agent.Observation {
	return agent.Observation{Tool: agent.Read, Arguments: agent.Arguments{SourceID: &id},
		Result: &agent.ReadResult{SourceID: id, Version: "3.11", Text: text, URL: "https://example.invalid/" + id}}
}

// prompt is the request a model gets for a question over a corpus about
// subject, after observations: the state as the controller writes it.
func prompt(subject string, mode agent.Mode, question string, obs ...agent.Observation) model.Prompt {
	u := agent.Usage{ModelCalls: len(obs)}
	for _, o := range obs {
		if o.Tool == agent.Search {
			u.Searches++
		} else {
			u.Reads++
			r, _ := o.Read()
			u.SourceBytes += len(r.Text)
		}
	}
	if obs == nil {
		obs = []agent.Observation{}
	}
	state := pyjson.Dumps(map[string]any{"question": question, "version": "3.11", "observations": obs, "usage": u,
		"limits": agent.DefaultLimits(), "schema": agent.Schema()}, pyjson.Options{SortKeys: true})
	return model.Prompt{System: agent.InstructionFor(subject, mode), State: state, Schema: agent.Schema()}
}

const django = "Can a Django model field be unique?"

// plain is django without the name.
const plain = "Can a model field be unique?"

// TestRules has a row per decision rule, in the order the policy applies
// them: each is the state a model would see and the decision it leads to.
func TestRules(t *testing.T) {
	modelField := "Field.unique: if True, this field must be unique throughout the table of the model. It is enforced at the database level."
	inPassing := "Django's Context class for templating is a read-only chain of mappings."
	// The opening searches of a question (the content words, then with
	// their forms), the first issuing ids.
	open := func(question string, ids ...string) []agent.Observation {
		o := openingQueries(analyse(question, "3.11", agent.PythonSubject), asWritten)
		require.Len(t, o, 2)
		return []agent.Observation{searched(o[0], ids...), searched(o[1])}
	}
	opening := open(django, "models.field", "chainmap.see-also")
	exhausted := func(question string, reads ...agent.Observation) []agent.Observation {
		// The last search spent, finding nothing new: the next decision
		// concludes.
		var ids []string
		for _, r := range reads {
			ids = append(ids, *r.Arguments.SourceID)
		}
		obs := append(open(question, ids...), reads...)
		return append(obs, searched("django"))
	}
	rows := []struct {
		name     string
		subject  string
		mode     agent.Mode
		question string
		obs      []agent.Observation
		action   agent.Action
		arg      string // the query, or the source read
		says     string // in the assessment
	}{
		{"search the content words", "", agent.Agent, django, nil,
			agent.Search, "django model field unique", "content words"},
		{"the subject's names are not searched: Python's documentation", "", agent.Agent, "How do I serialize a Python object with pickle?", nil,
			agent.Search, "serialize object pickle", "content words"},
		{"the subject's names are not searched: another pack's title", "Kettle and garden notes", agent.Agent, "How often should I descale the Kettle?", nil,
			agent.Search, "often descale", "content words"},
		{"search again with the words' other forms", "", agent.Agent, "How do I loop over a dictionary's keys and values?", []agent.Observation{searched("loop over dictionary keys values", "a")},
			agent.Search, "loop over dictionary keys values loops dictionaries key value", "other forms"},
		{"read in rank order", "", agent.Agent, django, opening,
			agent.Read, "models.field", "rank 1"},
		{"another order of the same candidates: the ids decide, not the order", "", agent.Agent, django, open(django, "chainmap.see-also", "models.field"),
			agent.Read, "models.field", "rank 2"},
		{"read first the candidate whose id names the question's terms", "", agent.Agent, django, open(django, "c.b.a", "django.model.field"),
			agent.Read, "django.model.field", "rank 2"},
		{"read every opening candidate before answering", "", agent.Agent, plain, append(open(plain, "models.field", "chainmap.see-also"), wasRead("models.field", modelField)),
			agent.Read, "chainmap.see-also", "opening searches' candidates are all read"},
		{"search again for the uncovered terms, with the names", "", agent.Agent, django,
			append(opening, wasRead("models.field", modelField), wasRead("chainmap.see-also", inPassing)),
			agent.Search, "django", "no read passage carries all of django"},
		{"quote the covering sentences", "", agent.Agent, plain, exhausted(plain, wasRead("models.field", modelField)),
			agent.Answer, "", "cover 3 of 3"},
		{"stop when nothing read carries a distinctive term", "", agent.Agent, django, exhausted(django, wasRead("models.field", modelField)),
			agent.Stop, "", "nothing read mentions django"},
		{"stop when the distinctive term is only mentioned in passing", "", agent.Agent, django, exhausted(django, wasRead("models.field", modelField), wasRead("chainmap.see-also", inPassing)),
			agent.Stop, "", "no read passage carries django together with half"},
		{"stop when the evidence lacks the question's version number", "", agent.Agent, "On what date will Python 4.0 be released?",
			exhausted("On what date will Python 4.0 be released?", wasRead("whatsnew", "Python 3.11 was released on a date in October 2022.")),
			agent.Stop, "", "nothing read mentions 4.0"},
		{"a capitalised proper noun is distinctive: PostgreSQL", "", agent.Agent, "What TCP port does PostgreSQL listen on by default?",
			exhausted("What TCP port does PostgreSQL listen on by default?", wasRead("sqlite3", "It is possible to port the code to a larger database such as PostgreSQL."), wasRead("socket", "A TCP server will listen on the port given by default.")),
			agent.Stop, "", "no read passage carries tcp, postgresql together"},
		{"fixed mode answers from what was read", "", agent.Fixed, plain, []agent.Observation{searched("q", "models.field"), wasRead("models.field", modelField)},
			agent.Answer, "", "cover 3 of 3"},
		{"fixed mode stops on a missing distinctive term", "", agent.Fixed, django, []agent.Observation{searched("q", "models.field"), wasRead("models.field", modelField)},
			agent.Stop, "", "nothing read mentions django"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			d := Scripted{}.Next(prompt(row.subject, row.mode, row.question, row.obs...))
			_, err := agent.ValidateDecision(pyjson.ValueOf(d))
			require.NoError(t, err)
			assert.Equal(t, row.action, d.Action, d.Assessment)
			assert.Equal(t, row.arg, d.Query+d.SourceID)
			assert.Contains(t, d.Assessment, row.says)
			if d.Action == agent.Answer {
				require.NotEmpty(t, d.Citations)
				assert.Equal(t, modelField[:strings.Index(modelField, ". ")+1], d.Citations[0].Quote)
			}
		})
	}
}

// TestAnyReadingOrder: once the same passages are read, the conclusion
// does not depend on the order they were found or read in, so another
// ranking of the same candidates cannot turn an answer into a stop.
func TestAnyReadingOrder(t *testing.T) {
	a := wasRead("models.field", "Field.unique: if True, this field must be unique throughout the table of the model.")
	b := wasRead("models.options", "Options.unique_together lists sets of field names that must be unique together.")
	c := wasRead("chainmap.see-also", "Django's Context class for templating is a read-only chain of mappings.")
	for _, q := range []string{django, plain} {
		var actions []agent.Action
		for _, order := range [][]agent.Observation{{a, b, c}, {c, b, a}, {b, c, a}} {
			obs := append([]agent.Observation{searched("s1", "models.field", "models.options", "chainmap.see-also"), searched("s2", "z"), searched("s3", "w")}, order...)
			actions = append(actions, Scripted{}.Next(prompt("", agent.Agent, q, obs...)).Action)
		}
		assert.Equal(t, actions[0], actions[1], q)
		assert.Equal(t, actions[0], actions[2], q)
	}
}

func TestNameTerms(t *testing.T) {
	rows := []struct {
		text  string
		names []string
	}{
		{"How do I make a Django model field unique?", []string{"django"}},
		{"how do i make a django model field unique", []string{"django"}},
		{"What TCP port does PostgreSQL listen on by default?", []string{"tcp", "postgresql"}},
		{"How do I install NumPy with conda on Windows?", []string{"numpy", "conda", "windows"}},
		{"Windows users: how do I install it?", nil},
		{"Does Path.write_text overwrite a file?", []string{"path", "write", "text", "overwrite"}},
		{"What does print() do ONLY once?", []string{"print"}},
		{"How Do I Read A File?", nil},
		{"How do I keep non-ASCII characters?", []string{"ascii"}},
		{"Is sha256 or utf8 better?", []string{"sha256", "utf8"}},
		{"How do I run coroutines concurrently?", []string{"coroutines"}},
	}
	for _, row := range rows {
		got := nameTerms(row.text, true)
		var names []string
		for _, t := range strings.Fields(strings.ToLower(strings.NewReplacer("?", " ", ".", " ", "_", " ", ":", " ", "(", " ", ")", " ", "-", " ").Replace(row.text))) {
			if got[t] && !contains(names, t) {
				names = append(names, t)
			}
		}
		assert.Equal(t, row.names, names, row.text)
	}
	assert.Equal(t, map[string]bool{"python": true}, nameTerms(agent.PythonSubject, false), "the subject's first word is a name")
	assert.Equal(t, map[string]bool{"sqlite": true}, nameTerms("SQLite documentation", false))
}

func TestAnalyse(t *testing.T) {
	q := analyse("On what date will Python 4.0 be released, after 3.11?", "3.11", agent.PythonSubject)
	assert.Equal(t, []string{"date", "4", "0", "released", "after"}, q.content)
	assert.Empty(t, q.names)
	assert.Equal(t, []string{"4.0"}, q.literals)
	q = analyse("How often should I descale the Kettle?", "1.0", "Kettle and garden notes")
	assert.Equal(t, []string{"often", "descale"}, q.content)
	assert.Equal(t, []string{"descale"}, q.names, "descale is not a common English word")
}

// A letter joined to a word by a hyphen is part of the name it is written
// in and kept as a content term; a letter on its own is not.
func TestAnalyseKeepsJoinedLetters(t *testing.T) {
	for _, row := range []struct {
		question string
		content  []string
	}{
		{"What does the = specifier do inside an f-string expression?", []string{"specifier", "inside", "f", "string", "expression"}},
		{"How do I label the x-axis of a plot?", []string{"label", "x", "axis", "plot"}},
		{"How do I send an e-mail with an attachment?", []string{"send", "e", "mail", "attachment"}},
		{"Can I write \"F-strings\" over several lines?", []string{"write", "f", "strings", "over", "several", "lines"}},
		{"What is the axis-x value?", []string{"axis", "x", "value"}},
		{"Is a b c a list?", []string{"list"}},
		{"What does a-b mean in a 3-d array?", []string{"mean", "array"}},
	} {
		assert.Equal(t, row.content, analyse(row.question, "3.11", agent.PythonSubject).content, row.question)
	}
}

// The second opening search adds the words' other forms only when the
// search matches them apart from the words: under a stemming search
// (strings is string) it would find nothing new and is not made; a form
// with a key of its own is still searched.
func TestOpeningQueriesUnderTheSearchsTokenizer(t *testing.T) {
	stems := func(t string) string { return strings.TrimSuffix(t, "s") }
	q := analyse("What does the = specifier do inside an f-string expression?", "3.11", agent.PythonSubject)
	assert.Equal(t, []string{"specifier inside f string expression", "specifier inside f string expression strings expressions"},
		openingQueries(q, asWritten))
	assert.Equal(t, []string{"specifier inside f string expression"}, openingQueries(q, stems))
	q = analyse("How do I loop over a dictionary's keys and values?", "3.11", agent.PythonSubject)
	assert.Equal(t, []string{"loop over dictionary keys values", "loop over dictionary keys values dictionaries"},
		openingQueries(q, stems), "dictionaries is not dictionary under this key")
	d := Scripted{TermKey: stems}.Next(prompt("", agent.Agent, "What does the = specifier do inside an f-string expression?",
		searched("specifier inside f string expression", "a")))
	assert.Equal(t, agent.Read, d.Action, "no other-forms search under a stemming search: the candidate is read")
}

func asWritten(t string) string { return t }

func TestCarriesLiteral(t *testing.T) {
	for _, row := range []struct {
		text string
		want bool
	}{{"removed in version 4.0.", true}, {"version 14.0", false}, {"4.01", false}, {"4.0.1", false}, {"(4.0, 2)", true}, {"4 0", false}} {
		assert.Equal(t, row.want, carriesLiteral(row.text, "4.0"), row.text)
	}
}

func TestOrdinary(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(commonWords), "\n")
	require.Greater(t, len(lines), 10000)
	for _, w := range []string{lines[0], lines[len(lines)/2], lines[len(lines)-1], "model", "field", "windows", "python", "released"} {
		assert.True(t, ordinary(w), w)
	}
	for _, w := range []string{"", "django", "numpy", "postgresql", "dataframe", "zzzzzz", "aaa"} {
		assert.False(t, ordinary(w), w)
	}
	assert.True(t, strings.HasSuffix(commonWords, "\n"))
	for i := 1; i < len(lines); i++ {
		require.Less(t, lines[i-1], lines[i], "sorted bytewise and distinct, for the binary search")
	}
}

func TestForms(t *testing.T) {
	for _, row := range []struct {
		word  string
		forms []string
	}{
		{"keys", []string{"key"}}, {"key", []string{"keys"}}, {"dictionary", []string{"dictionaries"}},
		{"dictionaries", []string{"dictionary"}}, {"class", []string{"classes"}}, {"classes", []string{"class"}},
		{"same", nil}, {"django", nil}, {"is", nil},
	} {
		assert.Equal(t, row.forms, forms(row.word), row.word)
	}
}
