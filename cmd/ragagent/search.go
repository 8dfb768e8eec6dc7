package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
)

// searchOutput is `ragagent search --json`.
type searchOutput struct {
	Results []searchResult `json:"results"`
}

// searchResult is one hit, best first; the snippet marks matched terms
// between store.MarkOpen and store.MarkClose (⟦ and ⟧).
type searchResult struct {
	Rank     int    `json:"rank"`
	SourceID string `json:"source_id"`
	URL      string `json:"url"`
	// Aliases are the passage's other URLs, [] when none.
	Aliases []string `json:"aliases"`
	Version string   `json:"version"`
	Score   float64  `json:"score"`
	Snippet string   `json:"snippet"`
}

func cmdSearch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("search", "[--corpus PACK] [--version V] [--limit N] [--config NAME|FILE] [--json] [--max-input-bytes N] QUERY", stderr)
	corpusName := fs.String("corpus", "seed", corpusHelp)
	version := fs.String("version", "", "the version to search, like 3.11 (default: the corpus's default version)")
	limit := fs.Int("limit", 0, fmt.Sprintf("how many results, 1-%d (default: the corpus's agent search k)", engine.MaxSearchK))
	asJSON := fs.Bool("json", false, `print {"results": [{rank, source_id, url, aliases, version, score, snippet}]}`)
	config := fs.String("config", "", configHelp)
	in := addInputFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flagErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "ragagent search: %s\n", msg)
		return exitUsage
	}
	query := strings.Join(fs.Args(), " ")
	switch {
	case strings.TrimSpace(query) == "":
		return usage("give a query, e.g. ragagent search --corpus python-3.11 write text file")
	case *limit < 0 || *limit > engine.MaxSearchK:
		return usage(fmt.Sprintf("--limit must be from 1 to %d", engine.MaxSearchK))
	}
	if err := in.check(); err != nil {
		return usage(err.Error())
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent search: %s\n", oneLine(err))
		return exitError
	}
	e, id, err := openWithCorpus(engine.Options{}, in, *corpusName)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	pack, err := e.Pack(id)
	if err != nil {
		return fail(err)
	}
	v := *version
	if v == "" {
		v = pack.Manifest.DefaultVersion
	}
	cfg, err := in.config(*config)
	if err != nil {
		return fail(err)
	}
	res, err := e.Search(engine.SearchRequest{Corpus: id, Query: query, Version: v, K: *limit, Config: cfg})
	if code, ok := reason.Of(err); ok && code == reason.InvalidQuery {
		return usage("the query has no searchable terms (runs of a-z and 0-9)")
	}
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		out := searchOutput{Results: []searchResult{}}
		for _, h := range res.Hits {
			out.Results = append(out.Results, searchResult{Rank: h.Rank, SourceID: h.SourceID, URL: h.URL, Aliases: h.Aliases, Version: h.Version, Score: h.Score, Snippet: h.Snippet})
		}
		return writeJSON(stdout, stderr, "search", out)
	}
	// The seed's search is the FTS5 expression and its bm25; another
	// configuration's scores are its own (bm25 per field, proximity,
	// expansion), so the header names it and the score is called a score.
	score := "bm25"
	if res.Retrieval == "" {
		fmt.Fprintf(stdout, "%s, version %s: %s (top %d by bm25; lower is better)\n", res.Corpus, v, res.Terms, res.K)
	} else {
		score = "score"
		fmt.Fprintf(stdout, "%s, version %s: %s ranked by %s (top %d; lower is better; snippets mark the query's literal terms)\n",
			res.Corpus, v, strconv.Quote(query), res.Retrieval, res.K)
	}
	if len(res.Hits) == 0 {
		fmt.Fprintln(stdout, "No passage matches any term.")
		return exitOK
	}
	for _, h := range res.Hits {
		fmt.Fprintf(stdout, "\n%2d. %s  (%s %.4g, %d bytes)\n", h.Rank, h.SourceID, score, h.Score, h.Bytes)
		if h.Title != "" {
			fmt.Fprintf(stdout, "    %s\n", h.Title)
		}
		fmt.Fprintf(stdout, "    %s\n", h.URL)
		if line := aliasLine(h.Aliases); line != "" {
			fmt.Fprintf(stdout, "    %s\n", line)
		}
		fmt.Fprintf(stdout, "    %s\n", oneLine(errors.New(h.Snippet))) // terms between ⟦ and ⟧
	}
	return exitOK
}

// aliasLine names a hit's aliases by their #fragments on one line, the
// first five and how many more: "also #re.IGNORECASE, #index-3".
func aliasLine(aliases []string) string {
	if len(aliases) == 0 {
		return ""
	}
	var parts []string
	for i, a := range aliases {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(aliases)-5))
			break
		}
		_, fragment, _ := strings.Cut(a, "#")
		parts = append(parts, "#"+fragment)
	}
	return "also " + strings.Join(parts, ", ")
}
