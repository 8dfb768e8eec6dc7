// Command ragagent replays, runs and inspects the retrieval agent from a
// terminal. It is the only place that knows about flags and exit codes.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command could not do its job (bad file, failed run)
	exitUsage = 2 // the command line itself is wrong
)

// command is one subcommand.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"replay":           {"replay a recording and grade its trials (default: the bundled comparison)", cmdReplay},
		"import-published": {"rebuild the bundled recording from the reference lab's published record", cmdImportPublished},
		"live":             {"show the plan of a live Gemini batch; with --execute-approved, run and record it", cmdLive},
		"run":              {"run one question (scripted policy, live Gemini or a recording), showing each step", cmdRun},
		"rerank":           {"rerank frozen hybrid candidates by coverage, Gemini listwise and cross-encoder (replayed, or --live)", cmdRerank},
		"corpus":           {"build a corpus pack from a folder of documents (corpus build), describe one (corpus info PACK), or make its passage vectors (corpus embed)", cmdCorpus},
		"model":            {"pin a downloaded model folder's files (model pin DIR): the manifest a vector branch's or cross-encoder's model is checked against", cmdModel},
		"search":           {"search a corpus pack as the agent does, with bm25 scores and highlighted snippets", cmdSearch},
		"retrieval":        {"compare retrieval configurations on a question set: recall, MRR and nDCG with 95% intervals, paired differences", cmdRetrieval},
		"tune":             {"choose a retrieval configuration for a pack from your own question set, cross-validated, with intervals against seed and the pack default", cmdTune},
		"eval":             {"run a pack's authored cases on both paths (scripted, replayed or live Gemini) and grade them", cmdEval},
		"serve-api":        {"serve the authenticated runs API (api/openapi.json) with its state in SQLite", cmdServeAPI},
		"tokens":           {"add, list or revoke the API server's bearer tokens", cmdTokens},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ragagent: unknown command %q (try: ragagent help)\n", args[0])
		return exitUsage
	}
	// A key too short to be one is refused before anything is done.
	if err := httptransport.CheckKeyFromEnv(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "ragagent: %s\n", err)
		return exitUsage
	}
	// Every line printed is checked for the environment's key.
	g := keyguard.FromEnv()
	out, errs := g.Writer(stdout), g.Writer(stderr)
	code := c.run(args[1:], out, errs)
	out.Flush()
	if g.Leaked() {
		fmt.Fprintln(errs, "ragagent: output that contained the API key was withheld; report this, it means a reply echoed the key past the redaction")
		code = max(code, exitError)
	}
	errs.Flush()
	return code
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: ragagent <command> [flags]")
	fmt.Fprintln(w)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'ragagent <command> -h' for a command's flags.")
}

// oneLine folds an error into a single line for stderr.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
