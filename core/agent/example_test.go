package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/policy"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
)

// Example runs the controller over the pinned corpus on an authored
// question, with the offline scripted policy in the model's place: it needs
// no key and no network, and its proposals are admitted or refused exactly
// as a model's are. Each step is one proposal and what the controller did
// with it: here a search for the question's content words, reads of both
// candidates, a second search for the one term nothing read mentions, and an
// answer whose quotes passed the citation contract (each is an exact
// substring of a passage this run read; the URL comes from the read record).
func Example() {
	snap, err := corpus.Parse(fixtures.Snapshot)
	if err != nil {
		log.Fatal(err)
	}
	lib, err := tools.Open(snap) // an in-memory SQLite FTS5 index of the passages
	if err != nil {
		log.Fatal(err)
	}
	defer lib.Close()
	cases, err := evaluate.ParseCases(fixtures.Cases)
	if err != nil {
		log.Fatal(err)
	}
	c, _ := cases.Case("overwrite")

	ctrl := agent.Controller{Tools: lib, Model: policy.Scripted{}}
	res, err := ctrl.Run(context.Background(), agent.Task{
		Question: c.Question, Version: c.Version, Mode: agent.Agent, Limits: agent.DefaultLimits()})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Steps {
		fmt.Printf("%d %s %q -> %s\n", s.Call, s.Action, s.Argument, s.Outcome)
	}
	fmt.Println(res.Status, res.Reason)
	for _, cite := range res.Citations {
		fmt.Printf("%s %q\n", cite.SourceID, cite.Quote)
	}
	// Output:
	// 1 search "path write text append existing file overwrite" -> admitted
	// 2 search "path write text append existing file overwrite appends files" -> admitted
	// 3 read "path-write" -> admitted
	// 4 read "path-read" -> admitted
	// 5 search "append path write text overwrite" -> admitted
	// 6 answer "" -> finished
	// answered citation_contract_passed
	// path-write "Path.write_text(data, encoding=None, errors=None, newline=None) writes text to a file and closes it."
	// path-write "An existing file is overwritten."
}
