package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/embedproc"
)

func cmdTune(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tune", "--corpus PACK --cases FILE [--out FILE] [--json] [--folds N] [--model DIR]... [--vectors DIR]...", stderr)
	corpusName := fs.String("corpus", "seed", corpusHelp)
	casesFile := fs.String("cases", "", "the question set `file` to tune on (ragagent-cases/1 JSON or TSV); default: the pack's own cases")
	out := fs.String("out", "", "write the chosen configuration to this spec `file` (ragagent retrieval --config FILE and corpus build --config FILE read it); refused if it exists")
	folds := fs.Int("folds", 0, "cross-validation folds, 2 or more (default 5)")
	asJSON := fs.Bool("json", false, `print {"chosen", "estimate": {"mrr@10", "recall@10"}, "against": [...], "folds", ...}`)
	mf := addVectorFlags(fs)
	in := addInputFlag(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "ragagent tune: %s\n", oneLine(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent tune: %s\n", oneLine(err))
		return exitError
	}
	if err := in.check(); err != nil {
		return usage(err)
	}
	if *folds != 0 && *folds < 2 {
		return usage(fmt.Errorf("--folds must be 2 or more, got %d", *folds))
	}
	if *out != "" {
		if _, err := os.Lstat(*out); err == nil {
			return usage(fmt.Errorf("--out %s already exists; refusing to overwrite it", *out))
		} else if !errors.Is(err, iofs.ErrNotExist) {
			return fail(err)
		}
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
	req := engine.TuneRequest{Folds: *folds}
	if *casesFile != "" {
		data, err := in.read(*casesFile)
		if err != nil {
			return fail(err)
		}
		if req.Cases = string(data); strings.TrimSpace(req.Cases) == "" {
			return fail(reason.New(reason.InvalidCases, "%s is empty", *casesFile))
		}
	}
	if req.Corpus, err = openCorpus(e, in, *corpusName); err != nil {
		return fail(err)
	}
	if models != nil {
		if dir := packFolder(e, *corpusName); dir != "" {
			models.PackDir(req.Corpus, dir)
		}
		req.Vectors, req.CrossEncoders = modelStages(models, req.Corpus)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := newCounter(stderr, "ranked", "questions × configurations")
	req.OnCase = func(done, total int, _ string) { progress.step(done, total) }
	res, err := e.Tune(ctx, req)
	progress.done()
	if err != nil {
		if code, _ := reason.Of(err); code == reason.InvalidCases && *casesFile != "" {
			err = fmt.Errorf("%s: %w", *casesFile, err)
		}
		return fail(err)
	}
	if *out != "" {
		data, err := engine.SpecFile(res.Chosen)
		if err == nil {
			err = atomicfile.Create(*out, data)
		}
		if err != nil {
			return fail(err)
		}
	}
	if *asJSON {
		data, err := res.JSON()
		if err != nil {
			return fail(err)
		}
		if _, err := stdout.Write(data); err != nil {
			return fail(err)
		}
		return exitOK
	}
	printTune(stdout, res, *out)
	return exitOK
}

// printTune is tune's report for people.
func printTune(w io.Writer, r *engine.TuneResult, out string) {
	fmt.Fprintf(w, "%s: %d answerable of %d questions, %d configurations, %d-fold cross-validation\n\n", r.Corpus, r.Answerable, r.Cases, r.Space, r.Folds)
	fmt.Fprintf(w, "chosen: %s\n", r.Chosen.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tMRR@10\t95% interval\trecall@10\t95% interval")
	row := func(label string, e engine.TuneEstimate) {
		fmt.Fprintf(tw, "%s\t%.3f\t[%.3f, %.3f]\t%.3f\t[%.3f, %.3f]\n", label, e.MRR10.Value, e.MRR10.CI95[0], e.MRR10.CI95[1],
			e.Recall10.Value, e.Recall10.CI95[0], e.Recall10.CI95[1])
	}
	row("cross-validated (what to expect)", r.Estimate)
	row("in-sample (optimistic)", r.InSample)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "against\tmetric\tdifference\t95% interval\tp")
	for _, a := range r.Against {
		fmt.Fprintf(tw, "%s\t%s\t%+.3f\t[%+.3f, %+.3f]\t%.4f\n", a.Name, a.Metric, a.Difference, a.CI95[0], a.CI95[1], a.PValue)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nchosen in each fold: %s\n", strings.Join(r.FoldChoices, ", "))
	if r.Warning != "" {
		fmt.Fprintf(w, "\nwarning: %s\n", r.Warning)
	}
	if out != "" {
		fmt.Fprintf(w, "\nwrote %s: use it with --config %s, or make it the pack's default with ragagent corpus config PACK --config %s\n", out, out, out)
	}
}

// modelStages sorts the model folders given to tune: a model whose
// vectors file of the pack (vectors-<name>.bin, as corpus embed names it)
// is found is a sentence encoder to fuse; any other is taken for a
// cross-encoder, and a sentence encoder without its vectors is then
// refused by its runner, naming its kind.
func modelStages(models *embedproc.Models, pack string) ([]engine.TuneVectors, []string) {
	var vecs []engine.TuneVectors
	var ces []string
	for _, id := range models.IDs() {
		if name := vectorsName(id); models.HasVectors(pack, name) {
			vecs = append(vecs, engine.TuneVectors{Model: id, File: name})
		} else {
			ces = append(ces, id)
		}
	}
	return vecs, ces
}
