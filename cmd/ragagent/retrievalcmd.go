package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// minimum is one --min METRIC=VALUE gate.
type minimum struct {
	metric string
	value  float64
}

// parseMinimum reads METRIC=VALUE, the metric one of the experiment's.
func parseMinimum(v string) (minimum, error) {
	metric, value, ok := strings.Cut(v, "=")
	metrics := engine.RetrievalMetrics()
	if !ok || !slices.Contains(metrics, metric) {
		return minimum{}, fmt.Errorf("--min %q is not METRIC=VALUE with METRIC one of %s", v, strings.Join(metrics, ", "))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || f < 0 || f > 1 {
		return minimum{}, fmt.Errorf("--min %s: %q is not a number from 0 to 1", metric, value)
	}
	return minimum{metric, f}, nil
}

func cmdRetrieval(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("retrieval", "[--corpus PACK] [--cases FILE] [--config NAME|FILE]... [--k N] [--json] [--min METRIC=VALUE]... [--model DIR]... [--vectors DIR]... [--live --ledger FILE | --gemini FILE] [--list] [--server URL [--token-file FILE]]", stderr)
	corpusName := fs.String("corpus", "seed", corpusHelp)
	casesFile := fs.String("cases", "", "the question set `file` (ragagent-cases/1 JSON, or a TSV of id, question and target URLs or -); default: the pack's own cases")
	var configs, mins listFlag
	fs.Var(&configs, "config", "a configuration: a built-in's `name` (see --list), all (every offline built-in, the default) or a spec file; repeat to compare, the first is the baseline")
	k := fs.Int("k", engine.DefaultRetrievalK, fmt.Sprintf("how many passages to rank for each question, 1-%d (whatever the agent's own search k)", engine.MaxRetrievalK))
	asJSON := fs.Bool("json", false, `print {"corpus", "k", "cases", "answerable", "configs": [{name, spec, metrics, cases}], "comparisons": [...]}`)
	fs.Var(&mins, "min", "fail (exit 1) when the first configuration's `METRIC=VALUE` is below VALUE, e.g. recall@10=0.6; repeatable")
	list := fs.Bool("list", false, "list the built-in configurations and exit")
	mf := addVectorFlags(fs)
	lf := addListwiseFlags(fs)
	in := addInputFlag(fs)
	server := fs.String("server", "", "run the experiment on a team's server at this `URL` (ragagent serve-api or the Worker) instead of here; --corpus names a pack it holds; the token comes from --token-file or RAGAGENT_TOKEN")
	tokenFile := fs.String("token-file", "", "with --server, the `file` holding the server's token (default: the RAGAGENT_TOKEN environment variable; never a flag value)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "ragagent retrieval: %s\n", oneLine(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent retrieval: %s\n", oneLine(err))
		return exitError
	}
	if err := in.check(); err != nil {
		return usage(err)
	}
	if err := lf.check(fs); err != nil {
		return usage(err)
	}
	if *k < 1 || *k > engine.MaxRetrievalK {
		return usage(fmt.Errorf("--k must be from 1 to %d, got %d", engine.MaxRetrievalK, *k))
	}
	var gates []minimum
	for _, m := range mins {
		g, err := parseMinimum(m)
		if err != nil {
			return usage(err)
		}
		gates = append(gates, g)
	}
	if *server != "" || *tokenFile != "" {
		return retrievalOnServer(fs, remoteRetrieval{server: *server, tokenFile: *tokenFile, corpus: *corpusName, cases: *casesFile,
			configs: configs, k: *k, json: *asJSON, gates: gates, in: in}, stdout, stderr)
	}
	models, err := mf.open()
	if err != nil {
		return usage(err)
	}
	opts := engine.Options{Packs: knownPacks()}
	if models != nil {
		defer models.Close()
		opts.Models = models
	}
	e, err := engine.Open(opts)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	if *list {
		return listConfigs(e, *asJSON, stdout, stderr)
	}
	refs, err := configRefs(e, in, configs)
	if err != nil {
		return fail(err)
	}
	req := engine.RetrievalRequest{Configs: refs, K: *k}
	if *casesFile != "" {
		data, err := in.read(*casesFile)
		if err != nil {
			return fail(err)
		}
		req.Cases = string(data)
		if strings.TrimSpace(req.Cases) == "" {
			return fail(reason.New(reason.InvalidCases, "%s is empty", *casesFile))
		}
	}
	if req.Corpus, err = openCorpus(e, in, *corpusName); err != nil {
		return fail(err)
	}
	if dir := packFolder(e, *corpusName); models != nil && dir != "" {
		models.PackDir(req.Corpus, dir)
	}
	run, out, err := lf.run(e, in, os.Getenv, time.Now(), stderr)
	if err != nil {
		return fail(err)
	}
	req.Listwise = run
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := newCounter(stderr, "ranked", "questions × configurations")
	req.OnCase = func(done, total int, _ string) { progress.step(done, total) }
	res, err := e.Retrieval(ctx, req)
	progress.done()
	if err != nil && out != nil && out.created {
		err = fmt.Errorf("%w (the recording %s keeps every attempt made)", err, out.path)
	}
	if err != nil {
		if *casesFile != "" {
			if code, _ := reason.Of(err); code == reason.InvalidCases {
				err = fmt.Errorf("%s: %w", *casesFile, err)
			}
		}
		return fail(err)
	}
	if *asJSON {
		// The page's download writes the same bytes (RetrievalResult.JSON).
		data, err := res.JSON()
		if err != nil {
			return fail(err)
		}
		if _, err := stdout.Write(data); err != nil {
			return fail(err)
		}
	} else {
		printRetrieval(stdout, res)
	}
	lf.report(stderr, res, out)
	return checkMinimums(res, gates, stderr)
}

// configRefs turns --config values into the engine's references: all or
// a built-in's name as a name, anything else a spec file read through in
// (none given: all).
func configRefs(e *engine.Engine, in inputs, values []string) ([]engine.ConfigRef, error) {
	names := []string{engine.AllConfigs}
	for _, s := range engine.RetrievalConfigs() {
		names = append(names, s.Name)
	}
	var refs []engine.ConfigRef
	for _, v := range values {
		if slices.Contains(names, v) {
			refs = append(refs, engine.ConfigRef{Name: v})
			continue
		}
		if _, err := os.Stat(v); errors.Is(err, os.ErrNotExist) {
			return nil, reason.New(reason.UnknownConfig, "--config %q is neither a built-in (%s) nor a file", v, strings.Join(names, ", "))
		}
		data, err := in.read(v)
		if err != nil {
			return nil, err
		}
		refs = append(refs, engine.ConfigRef{Spec: data})
	}
	return refs, nil
}

// checkMinimums is the --min gate on the first configuration: exit 1 with
// one line naming every metric below its minimum.
func checkMinimums(res *engine.RetrievalResult, gates []minimum, stderr io.Writer) int {
	if len(gates) == 0 {
		return exitOK
	}
	first := res.Configs[0]
	var below []string
	for _, g := range gates {
		est, _ := first.Metrics.Get(g.metric)
		if est.Value < g.value {
			below = append(below, fmt.Sprintf("%s is %.4g (95%% interval %.4g to %.4g), below the minimum %g", g.metric, est.Value, est.CI95[0], est.CI95[1], g.value))
		}
	}
	if len(below) == 0 {
		return exitOK
	}
	fmt.Fprintf(stderr, "ragagent retrieval: %s on %s: %s\n", first.Name, res.Corpus, strings.Join(below, "; "))
	return exitError
}

// listConfigs prints the built-ins: name and what it does, or their specs.
func listConfigs(e *engine.Engine, asJSON bool, stdout, stderr io.Writer) int {
	specs := engine.RetrievalConfigs()
	if asJSON {
		return writeJSON(stdout, stderr, "retrieval", map[string]any{"configs": specs})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "config\twhat it does")
	for _, s := range specs {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Description)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n--config all (the default) compares these, %s first as the baseline. A spec file (JSON, see docs/retrieval.md) names one of your own.\n", specs[0].Name)
	return exitOK
}

// printRetrieval is the experiment for people: the metrics with their
// intervals, each configuration against the baseline, and the ranks.
func printRetrieval(w io.Writer, res *engine.RetrievalResult) {
	fmt.Fprintf(w, "Retrieval on %s: %d cases, %d answerable; the top %d passages ranked for each.\n", res.Corpus, res.Cases, res.Answerable, res.K)
	fmt.Fprintf(w, "Each metric is the mean over the answerable cases, with its 95%% interval from 10000 seeded resamples of them.\n\n")
	metrics := engine.RetrievalMetrics()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "config\t%s\n", strings.Join(metrics, "\t"))
	for _, c := range res.Configs {
		cells := []string{c.Name}
		for _, m := range metrics {
			est, _ := c.Metrics.Get(m)
			cells = append(cells, fmt.Sprintf("%.3f [%.3f, %.3f]", est.Value, est.CI95[0], est.CI95[1]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	if len(res.Comparisons) > 0 {
		fmt.Fprintf(w, "\nAgainst %s (b − a on the same cases: the difference, its 95%% interval from paired resamples, the two-sided p-value):\n\n", res.Configs[0].Name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "config\t%s\n", strings.Join(metrics, "\t"))
		row := []string{}
		for i, c := range res.Comparisons {
			if i%len(metrics) == 0 {
				row = []string{c.B}
			}
			row = append(row, fmt.Sprintf("%+.3f [%+.3f, %+.3f] p %.3f", c.Difference, c.CI95[0], c.CI95[1], c.PValue))
			if len(row) == len(metrics)+1 {
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nRank of the first passage matching a target (- none in the top %d):\n\n", res.K)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"case"}
	for _, c := range res.Configs {
		header = append(header, c.Name)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i, kase := range res.Configs[0].Cases {
		cells := []string{kase.ID}
		for _, c := range res.Configs {
			cell := "-"
			if r := c.Cases[i].Rank; r != nil {
				cell = strconv.Itoa(*r)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}
