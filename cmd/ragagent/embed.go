package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/embedproc"
)

// vectorFlags are the flags of the commands that can run a vector branch:
// the model folders and the folders holding vectors files.
type vectorFlags struct {
	models, vectors listFlag
}

func addVectorFlags(fs *flag.FlagSet) *vectorFlags {
	m := &vectorFlags{}
	fs.Var(&m.models, "model", "a sentence-embedding model's `folder` (its files and ragagent-model.json), for a configuration's vector branch; repeatable")
	fs.Var(&m.vectors, "vectors", "a `folder` holding passage vectors files (ragagent corpus embed writes them; a pack folder's own are found without it); repeatable")
	return m
}

// open is the command's engine.Models, or nil when no flag asks for one
// (a vector branch is then refused, naming the flags).
func (m *vectorFlags) open() (*embedproc.Models, error) {
	if len(m.models) == 0 && len(m.vectors) == 0 {
		return nil, nil
	}
	script, err := embedproc.Script(os.Getenv)
	if err != nil && len(m.models) > 0 {
		return nil, err
	}
	return embedproc.NewModels(m.models, m.vectors, embedproc.NodeCommand(script))
}

// packFolder is the folder of a --corpus given as a pack folder or its
// manifest, or "" for a pack the engine knows by id.
func packFolder(e *engine.Engine, name string) string {
	for _, p := range e.Packs() {
		if p.Manifest.ID == name {
			return ""
		}
	}
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		return name
	}
	return filepath.Dir(name)
}

// vectorsName is the default vectors file name for a model id:
// vectors-<the id's name>.bin.
func vectorsName(model string) string {
	if i := strings.LastIndex(model, "/"); i >= 0 {
		model = model[i+1:]
	}
	return "vectors-" + model + ".bin"
}

func cmdCorpusEmbed(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("corpus embed", "--corpus PACK --model DIR [--out FILE] [--batch N]", stderr)
	corpusName := fs.String("corpus", "", corpusHelp)
	modelDir := fs.String("model", "", "the sentence-embedding model's `folder`: its files and ragagent-model.json, which pins them")
	out := fs.String("out", "", "the vectors `file` to write; default vectors-<model name>.bin in the pack's folder (this folder for a built-in pack)")
	batch := fs.Int("batch", 32, "passages per call to the model, 1-256")
	in := addInputFlag(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "ragagent corpus embed: %s\n", oneLine(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent corpus embed: %s\n", oneLine(err))
		return exitError
	}
	switch {
	case *corpusName == "":
		return usage(fmt.Errorf("--corpus is required"))
	case *modelDir == "":
		return usage(fmt.Errorf("--model is required: a folder with the model's files and its ragagent-model.json"))
	case *batch < 1 || *batch > 256:
		return usage(fmt.Errorf("--batch must be from 1 to 256, got %d", *batch))
	}
	if err := in.check(); err != nil {
		return usage(err)
	}
	script, err := embedproc.Script(os.Getenv)
	if err != nil {
		return fail(err)
	}
	models, err := embedproc.NewModels([]string{*modelDir}, nil, embedproc.NodeCommand(script))
	if err != nil {
		return fail(err)
	}
	defer models.Close()
	e, id, err := openWithCorpus(engine.Options{}, in, *corpusName)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(stderr, "starting the embedder for %s\n", *modelDir)
	emb, err := models.Open(ctx, *modelDir)
	if err != nil {
		return fail(err)
	}
	model := emb.Model()
	path := *out
	if path == "" {
		path = filepath.Join(packFolder(e, *corpusName), vectorsName(model.ID))
	}
	if _, err := os.Stat(path); err == nil {
		return fail(fmt.Errorf("%s exists; remove it or give another --out", path))
	}
	progress := newCounter(stderr, "embedded", "passages")
	set, err := e.EmbedPack(ctx, engine.EmbedRequest{Corpus: id, Embedder: emb, Batch: *batch,
		CreatedBy: "ragagent corpus embed --model " + model.ID, OnBatch: progress.step})
	progress.done()
	if err != nil {
		return fail(err)
	}
	data, err := set.Encode()
	if err != nil {
		return fail(err)
	}
	if err := atomicfile.Create(path, data); err != nil {
		return fail(err)
	}
	name := filepath.Base(path)
	fmt.Fprintf(stdout, "wrote %s: %d vectors of %d dimensions from %s, %d bytes\n", path, set.Len(), model.Dimensions, model.ID, len(data))
	fmt.Fprintf(stdout, "rank with it: ragagent retrieval --corpus %s --model %s --vectors %s --config FILE, FILE holding\n", *corpusName, *modelDir, filepath.Dir(path))
	fmt.Fprintf(stdout, `  {"name": "hybrid", "tokenizer": "stemmed", "stop_words": "english", "fields": {"text": 1, "title": 0.5, "anchor": 1}, "proximity": {"window": 4}, "fusion": {"model": %q, "vectors": %q}}`+"\n", model.ID, name)
	return exitOK
}

func cmdModel(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "pin" {
		fmt.Fprintln(stderr, "usage: ragagent model pin DIR --id OWNER/NAME --revision REV --license LICENSE [--weights PATH]")
		return exitUsage
	}
	fs := newFlags("model pin", "DIR --id OWNER/NAME --revision REV --license LICENSE [--weights PATH]", stderr)
	id := fs.String("id", "", "the model's `id` on its host, owner/name (e.g. sentence-transformers/all-MiniLM-L6-v2)")
	revision := fs.String("revision", "", "the `revision` (commit) the files were downloaded at")
	license := fs.String("license", "", "the model's `licence` (e.g. Apache-2.0)")
	weights := fs.String("weights", "onnx/model.onnx", "the ONNX weights' `path` inside the folder")
	args = args[1:]
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "ragagent model pin: %s\n", msg)
		return exitUsage
	}
	switch {
	case dir == "" && fs.NArg() == 1:
		dir = fs.Arg(0)
	case dir == "" || fs.NArg() > 0:
		return usage("name one model folder")
	}
	if *id == "" || *revision == "" || *license == "" {
		return usage("--id, --revision and --license are required: the manifest names the model before anything loads")
	}
	data, err := embedproc.Pin(dir, *id, *revision, *license, "pinned by ragagent model pin from the files on disk", *weights)
	if err == nil {
		err = atomicfile.Create(filepath.Join(dir, embedproc.ManifestFile), data)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragagent model pin: %s\n", oneLine(err))
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s: the sha256 of each file as it is on disk now; compare them with the ones %s's host lists before trusting them\n",
		filepath.Join(dir, embedproc.ManifestFile), *id)
	return exitOK
}
