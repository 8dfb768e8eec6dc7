package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/fixtures/packs"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/docfolder"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

func cmdCorpus(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "build":
			return cmdCorpusBuild(args[1:], stdout, stderr)
		case "info":
			return cmdCorpusInfo(args[1:], stdout, stderr)
		case "embed":
			return cmdCorpusEmbed(args[1:], stdout, stderr)
		case "config":
			return cmdCorpusConfig(args[1:], stdout, stderr)
		case "upload":
			return cmdCorpusUpload(args[1:], stdout, stderr)
		case "list":
			return cmdCorpusList(args[1:], stdout, stderr)
		case "delete":
			return cmdCorpusDelete(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "usage: ragagent corpus build --from DIR --out DIR --id ID ... | ragagent corpus info PACK | ragagent corpus embed --corpus PACK --model DIR | ragagent corpus config --config NAME|FILE PACK | ragagent corpus upload|list|delete --server URL ... (a team server's packs)")
	return exitUsage
}

func cmdCorpusBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("corpus build", "--from DIR --out DIR --id ID --title T --version V --base-url URL [flags]", stderr)
	from := fs.String("from", "", "the folder of documents (.html, .md, .rst, .txt, .jsonl passages) to read, recursively")
	out := fs.String("out", "", "the pack `folder` to write (manifest.json and the passages file); created, and refused if it holds a manifest")
	include := fs.String("include", "", "only documents under these comma-separated sub`folders` of --from (default: all)")
	exclude := fs.String("exclude", "", "leave out these comma-separated `paths` of --from: a folder and all under it, or a file")
	var o engine.CorpusBuild
	fs.StringVar(&o.ID, "id", "", "the pack's `id` (lower-case letters, digits, '.', '_', '-')")
	fs.StringVar(&o.Title, "title", "", "the pack's title")
	fs.StringVar(&o.Language, "language", "en", "the documents' language (a BCP 47 tag)")
	fs.StringVar(&o.Version, "version", "", "the version every passage belongs to, like 3.11")
	fs.IntVar(&o.SearchK, "search-k", engine.DefaultSearchK, fmt.Sprintf("candidates per agent search (1-%d)", engine.MaxSearchK))
	config := fs.String("config", engine.DefaultBuildConfig, "the pack's default retrieval configuration: a built-in's `name` (ragagent retrieval --list; seed is the seed's literal search) or a spec file (ragagent tune --out writes one)")
	fs.StringVar(&o.Licence, "licence", "", "the documents' licence")
	fs.StringVar(&o.Attribution, "attribution", "", "the attribution the licence asks for")
	fs.StringVar(&o.Source, "source", "", "where the documents came from (default: the --from folder)")
	fs.StringVar(&o.MadeBy, "made-by", "", "how the pack was made (default: this command line)")
	fs.StringVar(&o.BaseURL, "base-url", "", "the absolute https `URL` a document's path is appended to (ending in /)")
	fs.StringVar(&o.PageExt, "page-ext", "", "replace each document's extension with this one in its URL (e.g. .html)")
	fs.IntVar(&o.MaxBytes, "max-bytes", engine.DefaultPassageBytes, "a passage's size cap in bytes; longer sections are cut at paragraph boundaries")
	fs.StringVar(&o.Encoding, "encoding", engine.EncodingJSON, "the passages file: json (readable) or sqlite (a prebuilt FTS5 image, for large packs)")
	fs.BoolVar(&o.Gzip, "gzip", false, "gzip the passages file (the receipt stays that of the uncompressed bytes)")
	asJSON := fs.Bool("json", false, "print the manifest and the skipped documents as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent corpus build: %s\n", fmt.Sprintf(format, a...))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent corpus build: %s\n", oneLine(err))
		return exitError
	}
	switch {
	case *from == "" || *out == "":
		return usage("--from and --out are required")
	case o.Encoding != engine.EncodingJSON && o.Encoding != engine.EncodingSQLite:
		return usage("--encoding %q is not json or sqlite", o.Encoding)
	}
	var err error
	if o.RetrievalConfig, o.RetrievalSpec, err = configArg(*config); err != nil {
		return usage("--config: %s", oneLine(err))
	}
	if o.Source == "" {
		o.Source = "the documents in " + filepath.Base(*from)
	}
	if o.MadeBy == "" {
		o.MadeBy = "ragagent corpus build " + strings.Join(args, " ")
	}
	if _, err := os.Stat(filepath.Join(*out, "manifest.json")); err == nil {
		return fail(fmt.Errorf("%s already holds a manifest.json; refusing to overwrite it (choose another --out or remove it)", *out))
	}
	for _, ex := range folders(*exclude) {
		// A misspelt path would leave out nothing, silently.
		if _, err := os.Stat(filepath.Join(*from, filepath.FromSlash(ex))); err != nil {
			return usage("--exclude %q is not a file or folder in %s", ex, *from)
		}
	}
	if o.Documents, err = docfolder.Read(*from, folders(*include), folders(*exclude)); err != nil {
		return fail(err)
	}
	progress := newProgress(stderr, "read")
	o.OnDocument = progress.step
	built, err := engine.BuildCorpus(o)
	progress.done()
	if err != nil {
		return fail(err)
	}
	m, name := built.Manifest, built.Manifest.PassagesFile
	g := keyguard.FromEnv()
	// What is checked for the key is what the file holds unpacked.
	if err := g.Check(filepath.Join(*out, name), built.Passages); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fail(err)
	}
	if err := g.WriteFile(filepath.Join(*out, name), built.PassagesFile, false); err != nil {
		return fail(err)
	}
	if err := g.WriteFile(filepath.Join(*out, "manifest.json"), built.ManifestFile, false); err != nil {
		return fail(err)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, "corpus build", map[string]any{"manifest": m, "documents": built.Documents, "skipped": built.Skipped})
	}
	for _, s := range built.Skipped {
		fmt.Fprintf(stdout, "skipped %s: %s\n", s.Path, s.Reason)
	}
	fmt.Fprintf(stdout, "wrote %s: %d passages from %d documents (%d skipped), %s %d bytes", *out, m.Passages, built.Documents, len(built.Skipped), name, len(built.PassagesFile))
	if o.Gzip {
		fmt.Fprintf(stdout, " (%d uncompressed)", len(built.Passages))
	}
	fmt.Fprintf(stdout, ", sha256 %s\n", m.PassagesSHA256)
	return exitOK
}

// folders is a comma-separated list of sub-folders, without their slashes.
func folders(s string) []string {
	var out []string
	for _, p := range splitList(s) {
		if p = strings.Trim(p, "/"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func cmdCorpusInfo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("corpus info", "[--json] PACK (seed, python-3.11, sqlite-3.40, or a pack folder or manifest)", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	in := addInputFlag(fs)
	// The pack may come before or after the flags.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flagErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 || name == "" {
		fmt.Fprintln(stderr, "ragagent corpus info: name one pack: seed, python-3.11, sqlite-3.40, or a pack folder or manifest")
		return exitUsage
	}
	if err := in.check(); err != nil {
		fmt.Fprintf(stderr, "ragagent corpus info: %s\n", err)
		return exitUsage
	}
	e, err := engine.Open(engine.Options{Packs: knownPacks()})
	if err != nil {
		fmt.Fprintf(stderr, "ragagent corpus info: %s\n", oneLine(err))
		return exitError
	}
	defer e.Close()
	id, err := openCorpus(e, in, name)
	if err != nil {
		fmt.Fprintf(stderr, "ragagent corpus info: %s\n", oneLine(err))
		return exitError
	}
	info, err := e.PackInfo(id)
	if err == nil {
		err = e.VerifyPack(id)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragagent corpus info: %s\n", oneLine(err))
		return exitError
	}
	if *asJSON {
		return writeJSON(stdout, stderr, "corpus info", info)
	}
	printPackInfo(stdout, info)
	return exitOK
}

// retrievalNote says where a pack's configuration comes from.
func retrievalNote(named string) string {
	if named == "" {
		return " (the manifest names none)"
	}
	return " (the manifest's default; --config chooses another)"
}

func printPackInfo(w io.Writer, info *engine.PackInfo) {
	m := info.Manifest
	fmt.Fprintf(w, "%s: %s\n", m.ID, m.Title)
	rows := [][2]string{
		{"language", m.Language},
		{"versions", strings.Join(m.Versions, ", ") + " (default " + m.DefaultVersion + ")"},
		{"search k", fmt.Sprintf("%d candidates per agent search", info.SearchK)},
		{"retrieval", info.RetrievalConfig + retrievalNote(m.RetrievalConfig)},
		{"passages", fmt.Sprintf("%d from %d pages; text %d bytes; passage bytes min %d, median %d, max %d",
			m.Passages, info.Pages, info.TextBytes, info.Sizes.Min, info.Sizes.Median, info.Sizes.Max)},
		{"file", fmt.Sprintf("%s (%s, %d bytes", m.PassagesFile, m.PassagesEncoding, m.PassagesBytes) + compressedNote(info) + ")"},
		{"sha256", m.PassagesSHA256},
		{"cases", fmt.Sprintf("%d authored", info.Cases)},
		{"licence", m.Licence},
		{"attribution", m.Attribution},
		{"source", m.Source},
		{"made by", m.MadeBy},
		{"verified", fmt.Sprintf("size, sha256 and every passage's receipt, id and URL (opened in %.0f ms, then read whole)", info.OpenMS)},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-12s %s\n", r[0], r[1])
	}
}

func compressedNote(info *engine.PackInfo) string {
	m := info.Manifest
	if m.CompressedBytes == 0 {
		return ""
	}
	return fmt.Sprintf(", %d gzip-compressed", m.CompressedBytes)
}

// configArg reads a --config value naming a pack's default: a built-in's
// name, or else a spec file's path (its JSON, at most
// corpus.MaxRetrievalSpecBytes).
func configArg(v string) (name string, spec []byte, err error) {
	if _, lookupErr := engine.ParseConfig(v); lookupErr == nil && !strings.HasPrefix(strings.TrimSpace(v), "{") {
		return v, nil, nil
	} else if _, statErr := os.Stat(v); statErr != nil {
		return "", nil, fmt.Errorf("%w; nor is it a spec file", lookupErr)
	}
	max := int64(engine.MaxSpecBytes)
	data, err := inputs{max: &max}.read(v)
	return "", data, err
}

// cmdCorpusConfig changes a built pack's default retrieval configuration
// without rebuilding it: the manifest is rewritten in place (atomically)
// with every other field, the receipt among them, as it was, once the
// pack opens with the new default.
func cmdCorpusConfig(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("corpus config", "--config NAME|FILE PACK", stderr)
	config := fs.String("config", "", "the new default: a built-in's `name` (ragagent retrieval --list) or a spec file (ragagent tune --out writes one)")
	in := addInputFlag(fs)
	// The pack may come before or after the flags.
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flagErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ragagent corpus config: %s\n", fmt.Sprintf(format, a...))
		return exitUsage
	}
	if path == "" && fs.NArg() == 1 {
		path = fs.Arg(0)
	} else if fs.NArg() > 0 {
		path = ""
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent corpus config: %s\n", oneLine(err))
		return exitError
	}
	if path == "" || *config == "" {
		return usage("give --config NAME|FILE and one pack folder (or its manifest.json)")
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, "manifest.json")
	}
	name, spec, err := configArg(*config)
	if err != nil {
		return usage("--config: %s", oneLine(err))
	}
	manifest, passages, err := packs.Load(path, in.read, *in.max)
	if err != nil {
		return fail(err)
	}
	updated, m, err := engine.SetPackDefault(manifest, name, spec)
	if err != nil {
		return fail(err)
	}
	e, err := engine.Open(engine.Options{})
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	if _, err := e.LoadPack(updated, passages); err != nil {
		return fail(fmt.Errorf("the pack does not open with the new default: %w", err))
	}
	if err := atomicfile.Write(path, updated); err != nil {
		return fail(err)
	}
	def := m.RetrievalConfig
	if def == "" {
		def = "seed"
	}
	fmt.Fprintf(stdout, "%s: pack %s's default retrieval configuration is now %s (passages and receipt unchanged)\n", path, m.ID, def)
	return exitOK
}
