package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

func cmdEval(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", "--corpus PACK --policy scripted|gemini|replay:FILE [--json] [--limits k=v,...] [--execute-approved --output FILE]", stderr)
	policyFlag := fs.String("policy", "scripted", "who decides: scripted (offline rules), gemini (live: plan first, --execute-approved to send) or replay:FILE (a recording made over the pack)")
	asJSON := fs.Bool("json", false, `print {"cases": [{id, mode, target_read, outcome, reason, checks, ...}], "summary": {...}}`)
	execute := fs.Bool("execute-approved", false, "with gemini, send the requests (without it, only the plan is printed)")
	output := fs.String("output", "eval-recording.json", "with gemini, the ragagent-recording/1 `file` every attempt is saved to; never overwritten")
	mflags := addModelFlags(fs, "200")
	in := addInputFlag(fs)
	config := fs.String("config", "", configHelp)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return code
	}
	if err := in.check(); err != nil {
		return fail(exitUsage, err)
	}
	s, err := mflags.parse()
	if err != nil {
		return fail(exitUsage, err)
	}
	policy, file, err := parsePolicy(*policyFlag)
	name := engine.PolicyName(policy)
	if err != nil {
		return fail(exitUsage, err)
	}
	if name != engine.Gemini && *execute {
		return fail(exitUsage, fmt.Errorf("--execute-approved goes with --policy gemini"))
	}
	cfg, err := in.config(*config)
	if err != nil {
		return fail(exitUsage, err)
	}
	e, corpusID, err := s.open(in)
	if err != nil {
		return fail(exitError, err)
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := func(done, total int, id string) { fmt.Fprintf(stderr, "\r%d/%d trials", done, total) }
	var res *engine.EvalResult
	switch name {
	case engine.Scripted:
		res, err = e.Eval(ctx, engine.EvalRequest{Corpus: corpusID, Config: cfg, Policy: engine.Scripted, Limits: s.limits, OnTrial: progress})
	case engine.Replay:
		f, rerr := in.recording(file)
		if rerr != nil {
			return fail(exitError, rerr)
		}
		res, err = e.Eval(ctx, engine.EvalRequest{Corpus: corpusID, Config: cfg, Policy: engine.Replay, File: f, OnTrial: progress})
	case engine.Gemini:
		var code int
		if res, code = evalLive(ctx, e, corpusID, cfg, s, *execute, *output, *asJSON, stdout, stderr); res == nil {
			return code
		}
	}
	fmt.Fprintln(stderr)
	if err != nil {
		return fail(exitError, err)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, "eval", res)
	}
	printEval(stdout, res)
	return exitOK
}

// evalLive plans the pack's cases as a live batch (one run per case and
// path); with approval it runs them, saving every attempt to output. A nil
// result comes with the exit code.
func evalLive(ctx context.Context, e *engine.Engine, corpusID, cfg string, s settings, execute bool, output string, asJSON bool, stdout, stderr io.Writer) (*engine.EvalResult, int) {
	key, variable := httptransport.KeyFromEnv(os.Getenv)
	lp, err := e.PlanBatch(engine.BatchRequest{Corpus: corpusID, Config: cfg, Repeats: 1, Modes: []agent.Mode{agent.Fixed, agent.Agent},
		Limits: s.limits, Endpoint: s.endpoint, Transport: httptransport.New(key), KeySource: variable})
	if err != nil {
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return nil, exitUsage
	}
	if !execute {
		if asJSON {
			return nil, writeJSON(stdout, stderr, "eval", lp)
		}
		printPlan(stdout, e, lp)
		fmt.Fprintln(stdout, "\nNothing was sent. To run this plan, add --execute-approved (and --output FILE to choose where the recording goes).")
		return nil, exitOK
	}
	if err := lp.Refusal(); err != nil {
		if code, _ := reason.Of(err); code == reason.MissingAPIKey {
			err = fmt.Errorf("no API key: set GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
		}
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return nil, exitError
	}
	out, err := newOutput(output, keyguard.New(key))
	if err != nil {
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return nil, exitError
	}
	done := 0
	_, rep, err := e.RunBatch(ctx, lp, engine.BatchRun{Save: out.save,
		OnTrial: func(report.Trial) { done++; fmt.Fprintf(stderr, "\r%d/%d trials", done, lp.Trials) }})
	if err != nil {
		fmt.Fprintf(stderr, "\nragagent eval: %s (the recording so far is in %s)\n", oneLine(err), output)
		return nil, exitError
	}
	fmt.Fprintf(stderr, "\rrecording: %s (replay it: ragagent eval --corpus %s --policy replay:%s)\n", output, corpusID, output)
	return lp.Eval(rep), exitOK
}

func printEval(w io.Writer, res *engine.EvalResult) {
	fmt.Fprintf(w, "Eval of %s (%d candidates per agent search), policy %s\n\n", res.Corpus, res.SearchK, res.Policy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tpath\ttarget read\toutcome\tstop reason\tsearches\treads\tbytes")
	for _, c := range res.Cases {
		target := "-"
		if c.TargetRead != nil {
			target = map[bool]string{true: "yes", false: "no"}[*c.TargetRead]
		}
		var u agent.Usage
		if c.Usage != nil {
			u = *c.Usage
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", c.ID, c.Mode, target, outcomeOf(c.Outcome), c.Reason, u.Searches, u.Reads, u.SourceBytes)
	}
	tw.Flush()
	sm := res.Summary
	fmt.Fprintf(w, "\n%d cases (%d answerable, %d the documents cannot answer), %d trials.\n", sm.Answerable+sm.Unanswer, sm.Answerable, sm.Unanswer, sm.Trials)
	for _, p := range []struct {
		name  string
		t     evaluate.Tally
		reads int
	}{{"fixed", sm.Fixed, sm.TargetsRead.Fixed}, {"agent", sm.Agent, sm.TargetsRead.Agent}} {
		fmt.Fprintf(w, "%-6s pass %d, fail %d, incomplete %d; a target passage read in %d of %d answerable cases\n",
			p.name, p.t.Pass, p.t.Fail, p.t.Incomplete, p.reads, sm.Answerable)
	}
	fmt.Fprintf(w, "\n%s\n", evaluate.Scope)
}

func outcomeOf(o evaluate.Outcome) string {
	if o == "" {
		return "-"
	}
	return string(o)
}
