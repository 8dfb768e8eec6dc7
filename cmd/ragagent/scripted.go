package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/report"
)

// reportWithScripted is `replay --with-scripted --json`: the replay report
// with the scripted policy's report beside it.
type reportWithScripted struct {
	*report.Set
	Scripted *report.Set `json:"scripted"`
}

// printScripted shows the scripted policy's trials and its summary beside
// the recorded paths'.
func printScripted(w io.Writer, recorded, scripted *report.Set) {
	fmt.Fprintln(w, "Scripted policy (offline rules, no model; the same validation and admission; deterministic, so one run per case and path):")
	labelled := &report.Set{Trials: make([]report.Trial, len(scripted.Trials))}
	for i, t := range scripted.Trials {
		t.Mode = "scripted " + t.Mode
		labelled.Trials[i] = t
	}
	printTable(w, labelled)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Path\tTrials\tPass\tFail\tIncomplete")
	row := func(name string, trials int, pass, fail, incomplete int) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", name, trials, pass, fail, incomplete)
	}
	count := func(r *report.Set, m agent.Mode) int {
		n := 0
		for _, t := range r.Trials {
			if t.Mode == string(m) && t.Checks != nil {
				n++
			}
		}
		return n
	}
	rf, ra, sf, sa := recorded.Summary.Fixed, recorded.Summary.Agent, scripted.Summary.Fixed, scripted.Summary.Agent
	row("recorded fixed", count(recorded, agent.Fixed), rf.Pass, rf.Fail, rf.Incomplete)
	row("recorded agent", count(recorded, agent.Agent), ra.Pass, ra.Fail, ra.Incomplete)
	row("scripted fixed", count(scripted, agent.Fixed), sf.Pass, sf.Fail, sf.Incomplete)
	row("scripted agent", count(scripted, agent.Agent), sa.Pass, sa.Fail, sa.Incomplete)
	tw.Flush()
}
