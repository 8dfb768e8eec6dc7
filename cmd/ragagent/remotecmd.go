package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/remote"
)

// tokenVariable is where `--server` finds the server's token when no
// --token-file is given. A token is never a flag's value: flags show in
// the process list and in a CI log's echo of the command.
const tokenVariable = "RAGAGENT_TOKEN"

// remoteRetrieval is `ragagent retrieval --server`'s inputs, as the local
// command read them.
type remoteRetrieval struct {
	server, tokenFile, corpus, cases string
	configs                          []string
	k                                int
	json                             bool
	gates                            []minimum
	in                               inputs
}

// localOnly are the retrieval flags that need this machine's engine or
// models, refused beside --server.
var localOnly = []string{"model", "vectors", "live", "ledger", "budget", "record", "endpoint", "gemini", "list"}

// retrievalOnServer runs the experiment on the server and prints what
// the command prints locally: the server's result bytes with --json (the
// same bytes for the same inputs), else the table, then the --min gates.
func retrievalOnServer(fs *flag.FlagSet, r remoteRetrieval, stdout, stderr io.Writer) int {
	usage := func(err error) int {
		fmt.Fprintf(stderr, "ragagent retrieval: %s\n", oneLine(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent retrieval: %s\n", oneLine(err))
		return exitError
	}
	client, err := dialServer(fs, r.server, r.tokenFile, r.corpus, localOnly, "the server ranks with its own packs and no models", r.in)
	if err != nil {
		return usage(err)
	}
	req := remote.Retrieval{Corpus: r.corpus, K: r.k}
	if r.cases != "" {
		if req.Cases, err = serverCases(r.in, r.cases); err != nil {
			return fail(err)
		}
	}
	refs, err := configRefs(nil, r.in, r.configs)
	if err != nil {
		return fail(err)
	}
	for _, ref := range refs {
		data, err := json.Marshal(ref)
		if err != nil {
			return fail(err)
		}
		req.Configs = append(req.Configs, data)
	}
	data, err := onServer(stderr, "ranked", "questions × configurations", r.cases, func(ctx context.Context, p remote.Progress) ([]byte, error) {
		return client.Retrieval(ctx, req, p)
	})
	if err != nil {
		return fail(err)
	}
	var res engine.RetrievalResult
	if err := json.Unmarshal(data, &res); err != nil || len(res.Configs) == 0 {
		return fail(fmt.Errorf("the server's result is not a retrieval result: %v", err))
	}
	if r.json {
		if _, err := stdout.Write(data); err != nil {
			return fail(err)
		}
	} else {
		printRetrieval(stdout, &res)
	}
	return checkMinimums(&res, r.gates, stderr)
}

// dialServer is the client of a --server command after the checks made
// before anything is sent, each a usage error: a server URL beside
// --token-file, none of the command's local-only flags (why says what
// the server runs instead), a corpus that names a pack the server holds
// rather than one on this disk, and a token.
func dialServer(fs *flag.FlagSet, server, tokenFile, corpus string, localOnly []string, why string, in inputs) (*remote.Client, error) {
	if server == "" {
		return nil, errors.New("--token-file goes with --server URL")
	}
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(localOnly, f.Name) {
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return nil, fmt.Errorf("%s run here, not with --server (%s)", strings.Join(clash, ", "), why)
	}
	if info, err := os.Stat(corpus); err == nil && (info.IsDir() || strings.HasSuffix(corpus, ".json")) {
		return nil, fmt.Errorf("--corpus %s is a pack here; with --server it names a pack the server holds (upload yours: ragagent corpus upload %s --server URL)", corpus, corpus)
	}
	token, err := serverToken(tokenFile, in)
	if err != nil {
		return nil, err
	}
	return remote.New(server, token, nil)
}

// serverCases is the question set file at path as the server takes it:
// its ragagent-cases/1 object (a TSV turned into one, as the command
// line reads it), an error naming the file.
func serverCases(in inputs, path string) (json.RawMessage, error) {
	data, err := in.read(path)
	if err != nil {
		return nil, err
	}
	obj, err := engine.QuestionSetObject(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// onServer runs an experiment's call on the server under Ctrl-C (which
// cancels it there), counting its progress on stderr as "verb d/n noun",
// and names the cases file in an invalid_cases refusal.
func onServer(stderr io.Writer, verb, noun, cases string, call func(ctx context.Context, progress remote.Progress) ([]byte, error)) ([]byte, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := newCounter(stderr, verb, noun)
	data, err := call(ctx, progress.step)
	progress.done()
	if code, _ := reason.Of(err); code == reason.InvalidCases && cases != "" {
		err = fmt.Errorf("%s: %w", cases, err)
	}
	return data, err
}

// serverToken is the token from file (its one line) or, without one,
// from RAGAGENT_TOKEN.
func serverToken(file string, in inputs) (string, error) {
	if file == "" {
		if t := os.Getenv(tokenVariable); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("--server needs a token: --token-file FILE, or the %s environment variable", tokenVariable)
	}
	data, err := in.read(file)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// remoteEval is `ragagent eval --server`'s inputs, as the local command
// read them.
type remoteEval struct {
	server, tokenFile, corpus, cases, config string
	policy                                   engine.PolicyName
	json                                     bool
	in                                       inputs
}

// evalLocalOnly are the eval flags of this machine's runs (a live one's
// key, allowance, endpoint, prices and recording; limits over the
// defaults), refused beside --server: its agent experiments run the
// scripted policy under the default limits.
var evalLocalOnly = []string{"execute-approved", "output", "limits", "allowance", "endpoint", "price"}

// evalOnServer runs the agent experiment on the server and prints what
// the command prints locally for its result: the server's bytes with
// --json (the local bytes for the same inputs, measured seconds aside),
// else the table. A policy but scripted is refused before anything is
// sent: the server runs no other (a gemini run would spend through a
// ledger experiments do not hold; a replay's recording is a file here).
func evalOnServer(fs *flag.FlagSet, r remoteEval, stdout, stderr io.Writer) int {
	usage := func(err error) int {
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent eval: %s\n", oneLine(err))
		return exitError
	}
	if r.server != "" && r.policy != engine.Scripted {
		return usage(fmt.Errorf("--policy %s runs here, not with --server (the server runs agent experiments with the scripted policy only); drop --server to run it on this machine", r.policy))
	}
	client, err := dialServer(fs, r.server, r.tokenFile, r.corpus, evalLocalOnly, "the server runs the scripted policy under the default limits", r.in)
	if err != nil {
		return usage(err)
	}
	req := remote.Eval{Corpus: cmp.Or(r.corpus, engine.SeedPack), Policy: string(engine.Scripted)}
	if r.cases != "" {
		if req.Cases, err = serverCases(r.in, r.cases); err != nil {
			return fail(err)
		}
	}
	cfg, err := r.in.config(r.config)
	if err != nil {
		return usage(err)
	}
	if text := strings.TrimSpace(cfg); strings.HasPrefix(text, "{") {
		req.Config = json.RawMessage(text)
	} else if cfg != "" {
		if req.Config, err = json.Marshal(cfg); err != nil {
			return fail(err)
		}
	}
	data, err := onServer(stderr, "ran", "trials", r.cases, func(ctx context.Context, p remote.Progress) ([]byte, error) {
		return client.Eval(ctx, req, p)
	})
	if err != nil {
		return fail(err)
	}
	var res engine.EvalResult
	if err := json.Unmarshal(data, &res); err != nil || res.Policy == "" {
		return fail(fmt.Errorf("the server's result is not an eval result: %v", err))
	}
	if r.json {
		if _, err := stdout.Write(data); err != nil {
			return fail(err)
		}
		return exitOK
	}
	printEval(stdout, &res)
	return exitOK
}
