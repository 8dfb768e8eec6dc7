package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "--question Q [--corpus PACK] [--version V] [--mode agent|fixed] [--policy scripted|gemini|replay:FILE] [--limits k=v,...] [--json]", stderr)
	question := fs.String("question", "", "the question to answer (for replay:FILE, default: the recorded trial's)")
	version := fs.String("version", "", "the version to search, like 3.12 (default: the corpus's default version, 3.12 for the seed, or the recorded trial's)")
	mode := fs.String("mode", "", "agent (the policy chooses searches and reads) or fixed (one search of the question, every candidate read); default agent, or the recorded trial's")
	policyFlag := fs.String("policy", "scripted", "who decides: scripted (offline rules), gemini (live, needs a key) or replay:FILE (a recording)")
	trial := fs.String("trial", "", "with replay:FILE, the trial `id` to replay (default: the first whose question, version and mode match)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the steps")
	record := fs.String("record", "", "with gemini, the recording `file` (default ragagent-run-<time>.json); never overwritten")
	mflags := addModelFlags(fs, "12")
	in := addInputFlag(fs)
	config := fs.String("config", "", configHelp)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent run: %s\n", oneLine(fmt.Errorf(format, a...)))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent run: %s\n", oneLine(err))
		return exitError
	}
	s, err := mflags.parse()
	if err != nil {
		return usage("%v", err)
	}
	if err := in.check(); err != nil {
		return usage("%v", err)
	}
	policy, file, err := parsePolicy(*policyFlag)
	name := engine.PolicyName(policy)
	if err != nil {
		return usage("%v", err)
	}
	if name != engine.Replay && *trial != "" {
		return usage("--trial goes with --policy replay:FILE")
	}
	e, corpusID, err := s.open(in)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	pack, err := e.Pack(corpusID)
	if err != nil {
		return fail(err)
	}
	// The flags given become the run's request, which the engine reads
	// with its defaults (the corpus's default version, the agent path)
	// and, for replay:FILE, the recorded trial's own fields.
	runs := e.RunParser()
	spec := pyjson.NewObject("policy", policy, "corpus", corpusID)
	for _, f := range []struct{ field, value string }{{"question", *question}, {"version", *version}, {"mode", *mode},
		{"endpoint", *mflags.endpoint}, {"trial", *trial}} {
		if f.value != "" {
			spec.Set(f.field, f.value)
		}
	}
	if *mflags.limits != "" {
		spec.Set("limits", pyjson.ValueOf(s.limits))
	}
	if name == engine.Replay {
		if runs.Recording, err = in.recording(file); err != nil {
			return fail(err)
		}
	}
	req, err := runs.Parse(spec)
	if code, refused := reason.Of(err); refused {
		if code == reason.InvalidQuestion && *question == "" && name != engine.Replay {
			return usage("--question is required")
		}
		return usage("%v", err)
	}
	if err != nil {
		return fail(fmt.Errorf("%s: %w", file, err)) // only a replayed trial can be missing
	}
	if req.Config, err = in.config(*config); err != nil {
		return usage("%v", err)
	}
	if err := e.CheckRecorded(req); err != nil {
		return fail(err)
	}
	var recorded *string
	if name == engine.Gemini {
		path, err := liveRun(e, &req, *record)
		if err != nil {
			return fail(err)
		}
		recorded = &path
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if !*asJSON {
		if corpusID != engine.SeedPack { // the default corpus goes unmentioned, as before there were packs
			fmt.Fprintf(stdout, "Corpus %s (%d candidates per agent search)\n", corpusID, pack.Manifest.SearchK)
		}
		printRunHeader(stdout, req.Task, *policyFlag, req.Trial)
		req.OnStep = func(st agent.Step, o *agent.Observation) { printStep(stdout, st, o, req.Task.Limits) }
	}
	began := time.Now()
	tr, err := e.Run(ctx, req)
	if err == nil {
		err = tr.Refused()
	}
	if err != nil {
		return fail(err)
	}
	out := e.Output(*policyFlag, recorded, tr)
	if *asJSON {
		return writeJSON(stdout, stderr, "run", out)
	}
	if k := tr.KeyRefused; k != nil {
		fmt.Fprintf(stdout, "\nThe API refused the key (HTTP %d): %s\nCheck GOOGLE_API_KEY or GEMINI_API_KEY; this run is a key problem, not graded.\n", k.HTTPStatus, k.Detail)
	}
	printRunEnd(stdout, e, out, tr.Checks, name, time.Since(began))
	return exitOK
}

// printRunEnd shows how a run ended, its fixture checks when it asked an
// authored case's question, its tokens and estimated cost, and for a live
// run where its recording is.
func printRunEnd(w io.Writer, e *engine.Engine, out engine.RunOutput, checks *evaluate.Checks, policyName engine.PolicyName, elapsed time.Duration) {
	printEnding(w, out.Result)
	printChecks(w, "", checks)
	switch {
	case out.Tokens.Replies > 0:
		fmt.Fprintf(w, "Tokens: %s.\n", tokensLine(out.Tokens))
		fmt.Fprintf(w, "Prices: %s. %s\n", rateLine(e), report.EstimateNote)
	case policyName == engine.Scripted:
		fmt.Fprintln(w, "No model tokens: the scripted policy is offline rules, free to run.")
	}
	if policyName == engine.Gemini {
		fmt.Fprintf(w, "Elapsed: %.1f s. Recording: %s (replay it: ragagent run --policy replay:%s)\n",
			elapsed.Seconds(), *out.Recording, *out.Recording)
	}
}

// liveRun gives a Gemini run its transport (the key from the environment)
// and a new recording file, refusing before anything is sent when there is
// no key or the file exists.
func liveRun(e *engine.Engine, req *engine.RunRequest, recordPath string) (string, error) {
	key, _ := httptransport.KeyFromEnv(os.Getenv)
	req.Transport = httptransport.New(key)
	plan, err := e.PlanRun(*req)
	if err != nil {
		return "", err
	}
	if r := plan.Refusal; r != nil {
		if r.Code == reason.MissingAPIKey {
			return "", fmt.Errorf("--policy gemini needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
		}
		return "", fmt.Errorf("%s: %s", r.Code, r.Message)
	}
	if recordPath == "" {
		recordPath = "ragagent-run-" + time.Now().UTC().Format("20060102T150405Z") + ".json"
	}
	out, err := newOutput(recordPath, keyguard.New(key))
	if err != nil {
		return "", err
	}
	req.Save = out.save
	return recordPath, nil
}

func printRunHeader(w io.Writer, t agent.Task, policyName string, replayed *recording.Trial) {
	fmt.Fprintf(w, "Question: %s\n", t.Question)
	fmt.Fprintf(w, "Version %s, %s path, policy %s", t.Version, t.Mode, policyName)
	if replayed != nil {
		fmt.Fprintf(w, " (trial %s)", replayed.ID)
	}
	fmt.Fprintf(w, ", limits %s\n\n", t.Limits)
}

// printStep shows one step as it happens: the call, the proposed action,
// what the application did with it, the assessment, the observation and
// the counters against the limits.
func printStep(w io.Writer, s agent.Step, o *agent.Observation, l agent.Limits) {
	call := fmt.Sprintf("call %d", s.Call)
	if s.Call == 0 {
		call = "fixed " // the fixed path's own retrieval, no model call
	}
	action := string(s.Action)
	switch {
	case action == "":
		action = "(reply refused)"
	case s.Argument != "":
		action += " " + strconv.Quote(s.Argument)
	}
	verdict := string(s.Outcome)
	if s.Reason != "" {
		verdict += ": " + string(s.Reason)
	}
	fmt.Fprintf(w, "%-7s %s -> %s\n", call, clip(action, 90), verdict)
	if s.Detail != "" {
		fmt.Fprintf(w, "        why: %s\n", clip(s.Detail, 200))
	}
	if s.Assessment != "" {
		fmt.Fprintf(w, "        assessment: %s\n", clip(s.Assessment, 300))
	}
	if o != nil {
		if sr, ok := o.Search(); ok {
			cands := make([]string, len(sr.Candidates))
			for i, c := range sr.Candidates {
				cands[i] = fmt.Sprintf("%s (rank %d, %s)", c.SourceID, c.Rank, c.Version)
			}
			if len(cands) == 0 {
				cands = []string{"none"}
			}
			fmt.Fprintf(w, "        candidates: %s\n", strings.Join(cands, ", "))
		}
		if rr, ok := o.Read(); ok {
			fmt.Fprintf(w, "        read %d bytes: %s\n", len(rr.Text), clip(strconv.Quote(rr.Text), 120))
		}
	}
	u := s.Usage
	fmt.Fprintf(w, "        used: model calls %d/%d, searches %d/%d, reads %d/%d, source bytes %d/%d\n",
		u.ModelCalls, l.ModelCalls, u.Searches, l.Searches, u.Reads, l.Reads, u.SourceBytes, l.SourceBytes)
	if s.Tokens != nil {
		fmt.Fprintf(w, "        tokens: %d prompt, %d output, %d thinking\n", s.Tokens.Prompt, s.Tokens.Candidates, s.Tokens.Thoughts)
	}
}

func printEnding(w io.Writer, r *agent.Result) {
	fmt.Fprintf(w, "\n%s: %s", strings.ToUpper(string(r.Status[:1]))+string(r.Status[1:]), r.Reason)
	if r.Detail != "" {
		fmt.Fprintf(w, " (%s)", oneLine(fmt.Errorf("%s", r.Detail)))
	}
	fmt.Fprintln(w)
	if r.Status == agent.Answered {
		fmt.Fprintf(w, "Answer: %s\n", r.Answer)
		for i, c := range r.Citations {
			fmt.Fprintf(w, "  [%d] %s: %s\n      %s\n", i+1, c.SourceID, strconv.Quote(c.Quote), c.URL)
		}
		return
	}
	if r.Reason == reason.ModelStopped {
		fmt.Fprintln(w, "No answer: the policy stopped (see its last assessment).")
		return
	}
	fmt.Fprintln(w, "No answer.")
}
