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
	fs := newFlags("eval", "--corpus PACK --policy scripted|gemini|replay:FILE [--json] [--limits k=v,...] [--execute-approved --output FILE] [--server URL [--token-file FILE]]", stderr)
	policyFlag := fs.String("policy", "scripted", "who decides: scripted (offline rules), gemini (live: plan first, --execute-approved to send) or replay:FILE (a recording made over the pack)")
	asJSON := fs.Bool("json", false, `print {"cases": [{id, mode, target_read, outcome, reason, checks, ...}], "summary": {...}}`)
	execute := fs.Bool("execute-approved", false, "with gemini, send the requests (without it, only the plan is printed)")
	output := fs.String("output", "eval-recording.json", "with gemini, the ragagent-recording/1 `file` every attempt is saved to; never overwritten")
	mflags := addModelFlags(fs, "200")
	in := addInputFlag(fs)
	config := fs.String("config", "", configHelp)
	casesFile := fs.String("cases", "", "the question set `file` to run (ragagent-cases/1 JSON, or a TSV of id, question and target URLs or -); default: the pack's own cases")
	server := fs.String("server", "", "run the agent experiment (scripted policy) on a team's server at this `URL` (ragagent serve-api or the Worker) instead of here; --corpus names a pack it holds; the token comes from --token-file or RAGAGENT_TOKEN")
	tokenFile := fs.String("token-file", "", "with --server, the `file` holding the server's token (default: the RAGAGENT_TOKEN environment variable; never a flag value)")
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
	if *server != "" || *tokenFile != "" {
		return evalOnServer(fs, remoteEval{server: *server, tokenFile: *tokenFile, corpus: s.corpus, cases: *casesFile,
			config: *config, policy: name, json: *asJSON, in: in}, stdout, stderr)
	}
	if name != engine.Gemini && *execute {
		return fail(exitUsage, fmt.Errorf("--execute-approved goes with --policy gemini"))
	}
	cfg, err := in.config(*config)
	if err != nil {
		return fail(exitUsage, err)
	}
	var caseSet []byte
	if *casesFile != "" {
		if caseSet, err = in.read(*casesFile); err != nil {
			return fail(exitError, err)
		}
		if len(caseSet) == 0 {
			caseSet = []byte(" ") // refused by the engine as a set with no cases
		}
	}
	e, corpusID, err := s.open(in)
	if err != nil {
		return fail(exitError, err)
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	counter := newCounter(stderr, "ran", "trials")
	progress := func(done, total int, id string) { counter.step(done, total) }
	var res *engine.EvalResult
	switch name {
	case engine.Scripted:
		res, err = e.Eval(ctx, engine.EvalRequest{Corpus: corpusID, Config: cfg, Cases: caseSet, Policy: engine.Scripted, Limits: s.limits, OnTrial: progress})
	case engine.Replay:
		f, rerr := in.recording(file)
		if rerr != nil {
			return fail(exitError, rerr)
		}
		res, err = e.Eval(ctx, engine.EvalRequest{Corpus: corpusID, Config: cfg, Cases: caseSet, Policy: engine.Replay, File: f, OnTrial: progress})
	case engine.Gemini:
		var code int
		if res, code = evalLive(ctx, e, corpusID, cfg, caseSet, s, *execute, *output, *asJSON, stdout, stderr); res == nil {
			return code
		}
	}
	counter.done()
	if err != nil {
		return fail(exitError, err)
	}
	if *asJSON {
		// The page's agent experiment downloads these bytes (EvalResult.JSON).
		data, err := res.JSON()
		if err != nil {
			return fail(exitError, err)
		}
		if _, err := stdout.Write(data); err != nil {
			return fail(exitError, err)
		}
		return exitOK
	}
	printEval(stdout, res)
	return exitOK
}

// evalLive plans the pack's cases as a live batch (one run per case and
// path); with approval it runs them, saving every attempt to output. A nil
// result comes with the exit code.
func evalLive(ctx context.Context, e *engine.Engine, corpusID, cfg string, caseSet []byte, s settings, execute bool, output string, asJSON bool, stdout, stderr io.Writer) (*engine.EvalResult, int) {
	key, variable := httptransport.KeyFromEnv(os.Getenv)
	lp, err := e.PlanBatch(engine.BatchRequest{Corpus: corpusID, Config: cfg, CaseSet: caseSet, Repeats: 1, Modes: []agent.Mode{agent.Fixed, agent.Agent},
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
	done, counter := 0, newCounter(stderr, "ran", "trials")
	_, rep, err := e.RunBatch(ctx, lp, engine.BatchRun{Save: out.save,
		OnTrial: func(report.Trial) { done++; counter.step(done, lp.Trials) }})
	counter.done()
	if err != nil {
		fmt.Fprintf(stderr, "ragagent eval: %s (the recording so far is in %s)\n", oneLine(err), output)
		return nil, exitError
	}
	fmt.Fprintf(stderr, "recording: %s (replay it: ragagent eval --corpus %s --policy replay:%s)\n", output, corpusID, output)
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
	// Target reads are counted per trial: with repeats (a recording of
	// several runs of each case) they are said of the answerable trials.
	answerable := map[string]int{}
	for _, c := range res.Cases {
		if c.TargetRead != nil {
			answerable[c.Mode]++
		}
	}
	for _, p := range []struct {
		name  string
		t     evaluate.Tally
		reads int
	}{{"fixed", sm.Fixed, sm.TargetsRead.Fixed}, {"agent", sm.Agent, sm.TargetsRead.Agent}} {
		of, unit := answerable[p.name], "trials"
		if of == sm.Answerable {
			unit = "cases"
		}
		fmt.Fprintf(w, "%-6s pass %d, fail %d, incomplete %d; a target passage read in %d of %d answerable %s\n",
			p.name, p.t.Pass, p.t.Fail, p.t.Incomplete, p.reads, of, unit)
	}
	fmt.Fprintf(w, "\n%s\n", evaluate.Scope)
	printEvalExperiment(w, &res.Experiment)
}

// rateLabels are the rates as the table names them.
var rateLabels = map[string]string{engine.RateTargetRead: "target read", engine.RateAnswered: "answered", engine.RateFailed: "failed",
	engine.RateIncomplete: "incomplete", engine.RateCorrectAbstention: "correct abstention", engine.RateValidCitations: "valid citations", engine.RatePass: "pass"}

// printEvalExperiment is the agent-level experiment: each path's rates
// with intervals, tokens, cost and time, then agent against fixed.
func printEvalExperiment(w io.Writer, x *engine.EvalExperiment) {
	if len(x.Paths) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRates per path, each with its 95%% interval from %d seeded resamples of the path's trials:\n\n", x.Resamples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "rate"
	for _, p := range x.Paths {
		header += "\t" + p.Path
	}
	fmt.Fprintln(tw, header)
	for i, name := range engine.EvalRates() {
		row := rateLabels[name]
		for _, p := range x.Paths {
			r := p.Rates[i]
			if r.Value == nil {
				row += "\t-"
				continue
			}
			row += fmt.Sprintf("\t%d/%d %.3f [%.3f, %.3f]", r.Count, r.Of, *r.Value, r.CI95[0], r.CI95[1])
		}
		fmt.Fprintln(tw, row)
	}
	tokens, cost, took := "tokens", "estimated cost", "time"
	for _, p := range x.Paths {
		tokens += fmt.Sprintf("\t%d (%d prompt, %d output)", p.Tokens.Total, p.Tokens.Prompt, p.Tokens.Candidates+p.Tokens.Thoughts)
		if p.EstimatedUSD == nil {
			cost += "\tnot priced"
		} else {
			cost += fmt.Sprintf("\t$%.4f", *p.EstimatedUSD)
		}
		took += fmt.Sprintf("\t%.3f s, %.1f ms a trial", p.Seconds, 1000*p.MeanSeconds)
	}
	fmt.Fprintln(tw, tokens)
	fmt.Fprintln(tw, cost)
	fmt.Fprintln(tw, took)
	tw.Flush()
	if len(x.Comparisons) == 0 {
		return
	}
	c0 := x.Comparisons[0]
	fmt.Fprintf(w, "\n%s against %s, trials paired by case and repeat: %s minus %s, its 95%% interval and p-value from %d paired resamples, and the exact McNemar p-value of the pairs that differ:\n\n",
		c0.B, c0.A, c0.B, c0.A, x.Resamples)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "rate\tpairs\tdifference\t95%% interval\tp\t%s only\t%s only\tMcNemar p\n", c0.A, c0.B)
	for _, c := range x.Comparisons {
		if c.Difference == nil {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t-\t-\n", rateLabels[c.Rate])
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%+.3f\t[%+.3f, %+.3f]\t%.3f\t%d\t%d\t%.3f\n", rateLabels[c.Rate], c.Pairs, *c.Difference, c.CI95[0], c.CI95[1], *c.PValue, c.AOnly, c.BOnly, c.McNemarP)
	}
	tw.Flush()
}

func outcomeOf(o evaluate.Outcome) string {
	if o == "" {
		return "-"
	}
	return string(o)
}
