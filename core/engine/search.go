package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/store"
)

// MaxSearchK bounds a diagnostic search's page.
const MaxSearchK = corpus.MaxSearchK

// SearchRequest is a search for people inspecting the index (the agent's
// literal OR semantics, with scores the agent never sees).
type SearchRequest struct {
	// Corpus is the pack to search ("" is the seed).
	Corpus string `json:"corpus"`
	Query  string `json:"query"`
	// Version filters by version; "" searches every version.
	Version string `json:"version"`
	// K is how many results, 1..MaxSearchK; 0 means the pack's agent k.
	K int `json:"k"`
	// Config is the retrieval configuration to rank by: a built-in's name
	// or a configuration's JSON; "" is the pack's default.
	Config string `json:"config,omitempty"`
}

// SearchResult is a scored search: the hits best first, the FTS5
// expression the query became and how long it took.
type SearchResult struct {
	Corpus  string `json:"corpus"`
	Query   string `json:"query"`
	Version string `json:"version"`
	K       int    `json:"k"`
	// Retrieval names the configuration the hits are ranked by when it
	// is not seed.
	Retrieval string  `json:"retrieval,omitempty"`
	Hits      []Hit   `json:"hits"`
	Terms     string  `json:"terms"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Hit is one passage a search found: the handle the agent would be issued
// (source id, rank, version, size and receipt), its bm25 score (lower is
// better), and its URL, title and FTS5 snippet, the matched terms between
// MarkOpen and MarkClose.
type Hit struct {
	SourceID   string  `json:"source_id"`
	Rank       int     `json:"rank"`
	Version    string  `json:"version"`
	Bytes      int     `json:"bytes"`
	TextSHA256 string  `json:"text_sha256"`
	Score      float64 `json:"score"`
	URL        string  `json:"url,omitempty"`
	Title      string  `json:"title,omitempty"`
	// Aliases are the passage's other URLs (the same page, another of its
	// anchors; DESIGN's fourth phase): a target naming one matches it.
	// Always a list, empty when none.
	Aliases []string `json:"aliases"`
	Snippet string   `json:"snippet,omitempty"`
}

// The marks around a snippet's matched terms (⟦ and ⟧: Python's
// documentation uses brackets) and the ellipsis where it is cut.
const (
	MarkOpen  = store.MarkOpen
	MarkClose = store.MarkClose
	Ellipsis  = store.Ellipsis
)

// Search runs a scored search over a pack's index with the agent's
// literal semantics.
func (e *Engine) Search(req SearchRequest) (*SearchResult, error) {
	l, err := e.labUnder(req.Corpus, req.Config)
	if err != nil {
		return nil, err
	}
	if req.K == 0 {
		req.K = l.SearchK
	}
	if req.K < 1 || req.K > MaxSearchK {
		return nil, fmt.Errorf("search: k must be from 1 to %d", MaxSearchK)
	}
	started := e.clock()
	hits, err := l.ExplainSnippets(req.Query, req.K, req.Version)
	if err != nil {
		return nil, err
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{SourceID: h.SourceID, Rank: h.Rank, Version: h.Version, Bytes: h.Bytes, TextSHA256: h.TextSHA256,
			Score: h.Score, URL: h.URL, Title: h.Title, Aliases: append([]string{}, h.Aliases...), Snippet: h.Snippet}
	}
	var config string
	if r := l.RetrievalRecord(); r != nil {
		config = r.Name
	}
	return &SearchResult{Corpus: l.Pack.Manifest.ID, Query: req.Query, Version: req.Version, K: req.K, Hits: out, Retrieval: config,
		Terms: store.MatchExpression(store.Terms(req.Query)), ElapsedMS: e.since(started)}, nil
}

// ParseSearchSpec reads a front end's search, JSON {corpus, query, version,
// k, config}: an absent corpus is the seed, an absent k the pack's agent k; a given k must be a whole number 1..MaxSearchK;
// config a built-in's name or a configuration's spec (an object), absent the pack's default.
func ParseSearchSpec(text string) (SearchRequest, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return SearchRequest{}, fmt.Errorf("search: options are not JSON: %v", err)
	}
	o, _ := v.(*pyjson.Object)
	var req SearchRequest
	req.Corpus, _ = get(o, "corpus").(string)
	req.Query, _ = get(o, "query").(string)
	req.Version, _ = get(o, "version").(string)
	switch c := get(o, "config").(type) {
	case nil:
	case string:
		req.Config = c
	case *pyjson.Object:
		req.Config = pyjson.Dumps(c, pyjson.Options{})
	default:
		return SearchRequest{}, reason.New(reason.InvalidConfig, "search: config is a built-in's name (a string) or a spec (an object)")
	}
	if k := get(o, "k"); k != nil {
		n, _ := k.(pyjson.Number)
		i, whole := n.Int()
		if !whole || i < 1 || i > MaxSearchK {
			return SearchRequest{}, fmt.Errorf("search: k must be from 1 to %d", MaxSearchK)
		}
		req.K = i
	}
	return req, nil
}
