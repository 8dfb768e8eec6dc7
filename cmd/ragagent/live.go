package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

func cmdLive(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("live", "[--execute-approved [--output FILE] [--report FILE]] [--cases IDS] [--repeats N] [--modes fixed,agent] [--limits k=v,...] [--allowance N] [--price SPEC] [--json]", stderr)
	execute := fs.Bool("execute-approved", false, "send the requests (without it, only the plan is printed)")
	output := fs.String("output", "live-recording.json", "the ragagent-recording/1 `file` to write; never overwritten")
	report := fs.String("report", "", "the report `file` to write (default: the output name with .report.json); never overwritten")
	cases := fs.String("cases", "", "comma-separated case `ids` (default: every case of the corpus; the seed's are fixtures/cases.json)")
	repeats := fs.String("repeats", "2", "how many times to run each case on each path (1-10)")
	modes := fs.String("modes", "fixed,agent", "the paths to run: fixed, agent or both")
	mflags := addModelFlags(fs, "200")
	in := addInputFlag(fs)
	asJSON := fs.Bool("json", false, "print the plan (or the report) as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent live: %s\n", oneLine(fmt.Errorf(format, a...)))
		return code
	}
	s, err := mflags.parse()
	if err == nil {
		err = in.check()
	}
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	e, corpusID, err := s.open(in)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer e.Close()
	n, err := strconv.Atoi(strings.TrimSpace(*repeats))
	if err != nil {
		return fail(exitUsage, "--repeats %q is not a whole number", *repeats)
	}
	var ms []agent.Mode
	for _, m := range splitList(*modes) {
		ms = append(ms, agent.Mode(m))
	}
	key, variable := httptransport.KeyFromEnv(os.Getenv)
	lp, err := e.PlanBatch(engine.BatchRequest{Corpus: corpusID, Cases: splitList(*cases), Repeats: n, Modes: ms, Limits: s.limits,
		Endpoint: s.endpoint, Transport: httptransport.New(key), KeySource: variable})
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if !*execute {
		if *asJSON {
			return writeJSON(stdout, stderr, "live", lp)
		}
		printPlan(stdout, e, lp)
		fmt.Fprintln(stdout, "\nNothing was sent. To run this plan, add --execute-approved (and --output FILE to choose where the recording goes).")
		return exitOK
	}
	if err := lp.Refusal(); err != nil {
		if code, _ := reason.Of(err); code == reason.MissingAPIKey {
			return fail(exitError, "no API key: set GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
		}
		return fail(exitError, "%v", err)
	}
	reportPath := *report
	if reportPath == "" {
		reportPath = strings.TrimSuffix(*output, ".json") + ".report.json"
	}
	if reportPath == *output {
		return fail(exitUsage, "--report and --output name the same file")
	}
	g := keyguard.New(key)
	recOut, err := newOutput(*output, g)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	reportOut, err := newOutput(reportPath, g)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	progress := stdout
	if *asJSON {
		progress = stderr
	} else {
		printPlan(stdout, e, lp)
		fmt.Fprintln(stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return executeLive(ctx, e, lp, recOut, reportOut, *asJSON, stdout, progress, stderr)
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func printPlan(w io.Writer, e *engine.Engine, lp *engine.BatchPlan) {
	fmt.Fprintln(w, "Live Gemini plan")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	config, _ := json.Marshal(lp.Config)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("model", "%s", lp.Model)
	row("endpoint", "%s", lp.Endpoint)
	row("config", "%s", config)
	row("limits", "%s (per run)", lp.Limits)
	if lp.Corpus != engine.SeedPack { // the default corpus goes unmentioned, as before there were packs
		row("corpus", "%s (%d candidates per agent search)", lp.Corpus, lp.SearchK)
	}
	row("cases", "%s", strings.Join(lp.Cases, ", "))
	row("repeats", "%d", lp.Repeats)
	row("paths", "%s", strings.Join(lp.Modes, ", "))
	row("trials", "%d", lp.Trials)
	row("allowance", "%d requests for the whole process, checked before every attempt; no retries", lp.RequestAllowance)
	row("caps", "request body <= %d bytes, response <= %d bytes, timeout min(%d s, run's remaining deadline), redirects refused",
		lp.MaxRequestBytes, lp.MaxResponseBytes, lp.MaxCallSeconds)
	within := "within the allowance"
	if lp.WorstCaseRequests > lp.RequestAllowance {
		within = fmt.Sprintf("over the allowance: trials after the %dth request end with batch_request_limit", lp.RequestAllowance)
	}
	row("worst case", "%d requests (1 per fixed trial, %d per agent trial), %s", lp.WorstCaseRequests, lp.Limits.ModelCalls, within)
	key := "not set (GOOGLE_API_KEY or GEMINI_API_KEY); --execute-approved will refuse"
	if lp.KeyVariable != nil {
		key = "from " + *lp.KeyVariable + " (never printed, recorded or logged)"
	}
	row("key", "%s", key)
	row("price", "%s", rateLine(e))
	row("cost", "at most %s: every request a full %d-byte body at one token per byte and %d output tokens", usd(lp.WorstCaseUSD), lp.MaxRequestBytes, engine.MaxOutputTokens())
	if t, n := e.RecordedTokens(); n > 0 && lp.Corpus == engine.SeedPack {
		row("for scale", "the recorded comparison (%d requests) used %d prompt and %d output tokens: %s", n, t.Prompt, t.Candidates+t.Thoughts, usd(t.EstimatedUSD))
	}
	tw.Flush()
}

// executeLive runs the plan, saving the recording after every attempt, and
// writes the report.
func executeLive(ctx context.Context, e *engine.Engine, lp *engine.BatchPlan, recOut, reportOut *output, asJSON bool, stdout, progress, stderr io.Writer) int {
	output, reportPath := recOut.path, reportOut.path
	total, done := lp.Trials, 0
	onTrial := func(t report.Trial) {
		done++
		fmt.Fprintf(progress, "[%d/%d] %s\n", done, total, trialLine(e, t))
	}
	br, rep, runErr := e.RunBatch(ctx, lp, engine.BatchRun{Save: recOut.save,
		OnTrial: onTrial, Environment: environment()})
	if br == nil {
		fmt.Fprintf(stderr, "ragagent live: %s\n", oneLine(runErr))
		return exitError
	}
	data, err := json.MarshalIndent(br, "", "  ")
	if err == nil {
		err = reportOut.save(append(data, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragagent live: writing the report: %s\n", oneLine(err))
		return exitError
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "ragagent live: stopped: %s (the recording %s keeps every attempt made)\n", oneLine(runErr), output)
		return exitError
	}
	if asJSON {
		stdout.Write(append(data, '\n'))
		return exitOK
	}
	fmt.Fprintln(stdout)
	printTable(stdout, rep)
	fmt.Fprintln(stdout)
	printSummary(stdout, rep)
	fmt.Fprintf(stdout, "\nActual API requests: %d of %d allowed. Elapsed: %.1f s.\n", br.ActualAPIRequests, lp.RequestAllowance, br.ElapsedSeconds)
	fmt.Fprintf(stdout, "Tokens: fixed %s\n        agent %s\n        total %s\n",
		tokensLine(br.Tokens.Fixed), tokensLine(br.Tokens.Agent), tokensLine(br.Tokens.Total))
	fmt.Fprintf(stdout, "Prices: %s. %s\n", rateLine(e), report.EstimateNote)
	fmt.Fprintf(stdout, "Wrote the recording %s and the report %s.\nReplay it offline: ragagent replay --recording %s\n", output, reportPath, output)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "ragagent live: stopped by interrupt after %d of %d trials; the recording and report hold what ran\n", len(rep.Trials), total)
		return exitError
	}
	return exitOK
}

// trialLine is one finished trial for the progress log.
func trialLine(e *engine.Engine, t report.Trial) string {
	if t.Result == nil {
		return fmt.Sprintf("%s refused before it started: %s", t.ID, *t.Error)
	}
	outcome := "-"
	if t.Checks != nil {
		outcome = string(t.Checks.Outcome)
	}
	tokens := e.Tokens(t.Result)
	return fmt.Sprintf("%s: %s, %s, %s; model calls %d, tokens %d, %s; %.1f s", t.ID, outcome, t.Result.Status,
		t.Result.Reason, t.Result.Usage.ModelCalls, tokens.Total, usd(tokens.EstimatedUSD), *t.ElapsedSeconds)
}

// writeJSON prints v as indented JSON.
func writeJSON(stdout, stderr io.Writer, cmd string, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "ragagent %s: %s\n", cmd, oneLine(err))
		return exitError
	}
	return exitOK
}
