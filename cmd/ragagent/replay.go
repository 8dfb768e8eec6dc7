package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

const bundledName = "recordings/agent-comparison.json (bundled)"

func cmdReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay", "[--recording FILE] [--case ID] [--with-scripted] [--json] [--otlp FILE] [--max-input-bytes N]", stderr)
	path := fs.String("recording", "", "a ragagent-recording/1 `file` (default: the bundled 16-trial comparison)")
	caseID := fs.String("case", "", "only trials of this case `id`, with each trial's steps")
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	withScripted := fs.Bool("with-scripted", false, "also run the offline scripted policy on the same cases, both paths, and show it beside the recording")
	in := addInputFlag(fs)
	otlpPath := fs.String("otlp", "", "also write the replayed trials as an OpenTelemetry trace (OTLP/JSON, OpenInference attributes) to this `file`")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := in.check(); err != nil {
		fmt.Fprintf(stderr, "ragagent replay: %s\n", err)
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent replay: %s\n", oneLine(fmt.Errorf(format, a...)))
		return exitError
	}
	e, err := engine.Open(engine.Options{})
	if err != nil {
		return fail("%v", err)
	}
	defer e.Close()
	file, name := e.Bundled(), bundledName
	if *path != "" {
		if file, err = in.recording(*path); err != nil {
			return fail("%v", err)
		}
		name = *path
	}
	ctx := context.Background()
	res, err := e.Replay(ctx, engine.ReplayRequest{File: file, Case: *caseID})
	var noCase *engine.NoCaseError
	if errors.As(err, &noCase) {
		fmt.Fprintf(stderr, "ragagent replay: no trial has case %q; cases in %s: %s\n", noCase.Case, name, strings.Join(noCase.Known, ", "))
		return exitUsage
	}
	if err != nil {
		return fail("%v", err)
	}
	rep := res.Report()
	if *otlpPath != "" {
		// An export is derived from the recording, so it is replaced, not
		// refused, when it exists.
		data, err := e.OTLP(file, res.Trials)
		if err == nil {
			err = keyguard.FromEnv().WriteFile(*otlpPath, data, false)
		}
		if err != nil {
			return fail("--otlp: %v", err)
		}
	}
	var scripted *report.Set
	if *withScripted {
		kept, _ := engine.FilterCase(file, *caseID)
		if scripted, err = e.ScriptedReport(ctx, kept); err != nil {
			return fail("scripted policy: %v", err)
		}
	}
	if *asJSON {
		var out any = rep
		if scripted != nil {
			out = reportWithScripted{rep, scripted}
		}
		return writeJSON(stdout, stderr, "replay", out)
	}
	printTable(stdout, rep)
	fmt.Fprintln(stdout)
	printSummary(stdout, rep)
	fmt.Fprintf(stdout, "\n%d trials replayed from %s: %d of %d recorded model exchanges used, no API calls made.\n",
		len(rep.Trials), name, res.ExchangesUsed, res.Exchanges)
	if *otlpPath != "" {
		fmt.Fprintf(stdout, "The %d trials' trace (OTLP/JSON, OpenInference attributes) is in %s.\n", len(rep.Trials), *otlpPath)
	}
	if scripted != nil {
		fmt.Fprintln(stdout)
		printScripted(stdout, rep, scripted)
	}
	if *caseID != "" {
		for _, t := range rep.Trials {
			fmt.Fprintln(stdout)
			printTrace(stdout, t)
		}
	}
	return exitOK
}

func printTable(w io.Writer, rep *report.Set) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Case / repeat\tPath\tExpected sources read\tAnswer fixture\tStop reason\tModel calls")
	for _, t := range rep.Trials {
		retrieval, fixture, reason, calls := "-", "-", "-", "-"
		if t.Checks != nil {
			retrieval = "No target"
			if t.Checks.RetrievalTargetsRead != nil {
				retrieval = fmt.Sprint(*t.Checks.RetrievalTargetsRead)
			}
			fixture = string(t.Checks.Outcome)
		}
		if t.Result != nil {
			reason = string(t.Result.Reason)
			calls = fmt.Sprint(t.Result.Usage.ModelCalls)
		} else if t.Error != nil {
			reason = "refused: " + string(*t.Error)
		}
		fmt.Fprintf(tw, "%s / %d\t%s\t%s\t%s\t%s\t%s\n", t.CaseID, t.Repeat, t.Mode, retrieval, fixture, reason, calls)
	}
	tw.Flush()
}

func printSummary(w io.Writer, rep *report.Set) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Path\tPass\tFail\tIncomplete")
	fmt.Fprintf(tw, "fixed\t%d\t%d\t%d\n", rep.Summary.Fixed.Pass, rep.Summary.Fixed.Fail, rep.Summary.Fixed.Incomplete)
	fmt.Fprintf(tw, "agent\t%d\t%d\t%d\n", rep.Summary.Agent.Pass, rep.Summary.Agent.Fail, rep.Summary.Agent.Incomplete)
	tw.Flush()
}

// printTrace prints one trial's steps as the seed's section 3 table does,
// then its ending, answer, citations and checks.
func printTrace(w io.Writer, t report.Trial) {
	fmt.Fprintf(w, "%s / %d, %s path (trial %s)\n", t.CaseID, t.Repeat, t.Mode, t.ID)
	if t.Result == nil {
		fmt.Fprintf(w, "  refused before it started: %s %s\n", *t.Error, t.ErrorDetail)
		return
	}
	r := t.Result
	rows := [][4]string{{"Call", "Action", "Query or source", "Application"}}
	var assessments []string
	for _, s := range r.Steps {
		call := fmt.Sprint(s.Call)
		if s.Call == 0 {
			call = "-" // the fixed path's own retrieval
		}
		action, arg := string(s.Action), s.Argument
		if action == "" {
			action = "(reply refused)"
		}
		if arg == "" {
			arg = "—"
		}
		admission := string(s.Outcome)
		if s.Reason != "" {
			admission += ": " + string(s.Reason)
		}
		rows = append(rows, [4]string{call, action, clip(arg, 60), admission})
		assessment := s.Assessment
		switch {
		case s.Call == 0 && s.Action == agent.Search:
			assessment = "(fixed retrieval: the application searches the question once and reads every candidate)"
		case assessment == "" && s.Detail != "":
			assessment = "(" + s.Detail + ")"
		}
		assessments = append(assessments, assessment)
	}
	var width [3]int
	for _, row := range rows {
		for i := range width {
			width[i] = max(width[i], len([]rune(row[i])))
		}
	}
	for i, row := range rows {
		fmt.Fprintf(w, "  %s  %s  %s  %s\n", pad(row[0], width[0]), pad(row[1], width[1]), pad(row[2], width[2]), row[3])
		if i > 0 && assessments[i-1] != "" {
			fmt.Fprintf(w, "  %s  %s\n", pad("", width[0]), wrap(assessments[i-1], 100, strings.Repeat(" ", width[0]+4)))
		}
	}
	fmt.Fprintf(w, "  Ended: %s, %s", r.Status, r.Reason)
	if r.Detail != "" {
		fmt.Fprintf(w, " (%s)", r.Detail)
	}
	fmt.Fprintf(w, "\n  Usage: %s\n", usageLine(r.Usage, r.Limits))
	if r.Tokens.Total > 0 {
		fmt.Fprintf(w, "  Tokens: %d prompt, %d output, %d thinking, %d total\n", r.Tokens.Prompt, r.Tokens.Candidates, r.Tokens.Thoughts, r.Tokens.Total)
	}
	if r.Status == agent.Answered {
		fmt.Fprintf(w, "  Answer: %s\n", r.Answer)
		for _, c := range r.Citations {
			fmt.Fprintf(w, "    [%s] %q\n      %s\n", c.SourceID, c.Quote, c.URL)
		}
	}
	printChecks(w, "  ", t.Checks)
}

// printChecks shows each fixture check with its value, then its reason's
// code and sentence; a run of no authored case has none.
func printChecks(w io.Writer, indent string, c *evaluate.Checks) {
	if c == nil {
		return
	}
	retrieval := "no target"
	if c.RetrievalTargetsRead != nil {
		retrieval = fmt.Sprint(*c.RetrievalTargetsRead)
	}
	fmt.Fprintf(w, "%sChecks:\n", indent)
	for _, row := range []struct {
		name, value string
		why         evaluate.Why
	}{
		{"expected sources read", retrieval, c.RetrievalReason},
		{"answer fixture", passFail(c.AnswerFixtureCheck), c.AnswerReason},
		{"outcome", string(c.Outcome), c.OutcomeReason},
	} {
		fmt.Fprintf(w, "%s  %s: %s (%s)\n%s    %s\n", indent, row.name, row.value, row.why.Code, indent,
			wrap(row.why.Detail, 100, indent+"    "))
	}
	fmt.Fprintf(w, "%s  queries %q, refined %t, within limits %t\n", indent, c.Trajectory.Queries, c.Trajectory.Refined, c.Trajectory.WithinLimits)
}

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// clip shortens s to n characters for a table cell.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// usageLine shows counters against their limits.
func usageLine(u agent.Usage, l agent.Limits) string {
	return fmt.Sprintf("%d of %d model calls, %d of %d searches, %d of %d reads, %d of %d source bytes; deadline %d s",
		u.ModelCalls, l.ModelCalls, u.Searches, l.Searches, u.Reads, l.Reads, u.SourceBytes, l.SourceBytes, l.Seconds)
}

func pad(s string, n int) string {
	return s + strings.Repeat(" ", n-len([]rune(s)))
}

// wrap folds text at about n characters, indenting continuation lines.
func wrap(text string, n int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if line+1+len([]rune(word)) > n {
				b.WriteString("\n" + indent)
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len([]rune(word))
	}
	return b.String()
}
