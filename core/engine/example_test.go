package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ragagentlab/ragagent/core/engine"
)

// Example is where a front end starts: open the engine (the seed corpus
// indexed, its authored cases, the bundled recordings), replay the
// published comparison, run one question with the offline scripted policy
// (no key, nothing sent), and search the index as the agent does. The
// command line, the page and the server call exactly these methods, and
// read only what they return.
func Example() {
	e, err := engine.Open(engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()

	// The bundled 16 trials, replayed exchange by exchange and graded.
	replayed, err := e.Replay(ctx, engine.ReplayRequest{})
	if err != nil {
		log.Fatal(err)
	}
	s := replayed.Summary
	fmt.Printf("%d trials; fixed %d/%d/%d, agent %d/%d/%d (pass/fail/incomplete)\n", len(replayed.Trials),
		s.Fixed.Pass, s.Fixed.Fail, s.Fixed.Incomplete, s.Agent.Pass, s.Agent.Fail, s.Agent.Incomplete)

	// A run request as any front end sends one; the engine fills in the
	// rest (the seed, its default version 3.12, the default limits, the
	// scripted policy).
	req, err := e.RunParser().ParseText(`{"question": "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "mode": "fixed"}`)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := e.Run(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(req.Corpus, req.Task.Version, req.Policy, "->", tr.Result.Status, tr.Result.Reason)
	if tr.Checks != nil {
		fmt.Println("graded as case", tr.CaseID+":", tr.Checks.Outcome)
	}

	// The agent's literal search, with the bm25 scores it never sees.
	found, err := e.Search(engine.SearchRequest{Query: "write text to a file", Version: "3.12"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found.Terms)
	for _, h := range found.Hits {
		fmt.Println(h.Rank, h.SourceID, h.URL)
	}
	// Output:
	// 16 trials; fixed 4/2/2, agent 4/3/1 (pass/fail/incomplete)
	// seed 3.12 scripted -> answered citation_contract_passed
	// graded as case overwrite: pass
	// "write" OR "text" OR "to" OR "a" OR "file"
	// 1 path-write https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.write_text
	// 2 path-read https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.read_text
}
