package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/core/tools"
)

// MaxSearchK bounds a diagnostic search's page.
const MaxSearchK = 10

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
}

// SearchResult is a scored search: the hits best first (each with its URL,
// title and FTS5 snippet, matched terms between store.MarkOpen and
// store.MarkClose), the FTS5 expression the query became and how long it
// took.
type SearchResult struct {
	Corpus    string         `json:"corpus"`
	Query     string         `json:"query"`
	Version   string         `json:"version"`
	K         int            `json:"k"`
	Hits      []tools.Scored `json:"hits"`
	Terms     string         `json:"terms"`
	ElapsedMS float64        `json:"elapsed_ms"`
}

// Search runs a scored search over a pack's index with the agent's
// literal semantics.
func (e *Engine) Search(req SearchRequest) (*SearchResult, error) {
	l, err := e.labFor(req.Corpus)
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
	if hits == nil {
		hits = []tools.Scored{}
	}
	return &SearchResult{Corpus: l.Pack.Manifest.ID, Query: req.Query, Version: req.Version, K: req.K, Hits: hits,
		Terms: store.MatchExpression(store.Terms(req.Query)), ElapsedMS: e.since(started)}, nil
}

// ParseSearchSpec reads a front end's search, JSON {corpus, query, version,
// k}: an absent corpus is the seed, an absent k the pack's agent k; a given k must be a whole number 1..MaxSearchK.
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
