package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/store"
	"github.com/ragagentlab/ragagent/core/tools"
)

// MaxSearchK bounds a diagnostic search's page.
const MaxSearchK = 10

// SearchRequest is a search for people inspecting the index (the agent's
// literal OR semantics, with scores the agent never sees).
type SearchRequest struct {
	Query string `json:"query"`
	// Version filters by version; "" searches every version.
	Version string `json:"version"`
	// K is how many results, 1..MaxSearchK; 0 means the agent's k.
	K int `json:"k"`
}

// SearchResult is a scored search: the hits best first, the FTS5
// expression the query became and how long it took.
type SearchResult struct {
	Query     string         `json:"query"`
	Version   string         `json:"version"`
	K         int            `json:"k"`
	Hits      []tools.Scored `json:"hits"`
	Terms     string         `json:"terms"`
	ElapsedMS float64        `json:"elapsed_ms"`
}

// Search runs a scored search over the seed index.
func (e *Engine) Search(req SearchRequest) (*SearchResult, error) {
	if req.K == 0 {
		req.K = agent.SearchK
	}
	if req.K < 1 || req.K > MaxSearchK {
		return nil, fmt.Errorf("search: k must be from 1 to %d", MaxSearchK)
	}
	started := e.clock()
	hits, err := e.lab.Explain(req.Query, req.K, req.Version)
	if err != nil {
		return nil, err
	}
	return &SearchResult{Query: req.Query, Version: req.Version, K: req.K, Hits: hits,
		Terms: store.MatchExpression(store.Terms(req.Query)), ElapsedMS: e.since(started)}, nil
}

// ParseSearchSpec reads a front end's search, JSON {query, version, k}: an
// absent k is the agent's; a given k must be a whole number 1..MaxSearchK.
func ParseSearchSpec(text string) (SearchRequest, error) {
	v, err := pyjson.Decode(text)
	if err != nil {
		return SearchRequest{}, fmt.Errorf("search: options are not JSON: %v", err)
	}
	o, _ := v.(*pyjson.Object)
	var req SearchRequest
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
