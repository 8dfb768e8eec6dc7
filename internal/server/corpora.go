package server

import (
	"net/http"

	"github.com/ragagentlab/ragagent/core/engine"
)

// corpusJSON is a pack as GET /v1/corpora lists it (api: Corpus): what a
// client needs to name it in a run (its id, versions and default version)
// and to tell the packs apart (title, passages, search k).
type corpusJSON struct {
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Language       string   `json:"language"`
	Versions       []string `json:"versions"`
	DefaultVersion string   `json:"default_version"`
	SearchK        int      `json:"search_k"`
	Passages       int      `json:"passages"`
}

func corpusOf(p engine.PackSummary) corpusJSON {
	m := p.Manifest
	return corpusJSON{ID: m.ID, Title: m.Title, Language: m.Language, Versions: m.Versions,
		DefaultVersion: m.DefaultVersion, SearchK: m.SearchK, Passages: m.Passages}
}

// listCorpora lists the packs a run may name, the seed first: the run
// parser's own list, so what is listed is what runs.
func (s *Server) listCorpora(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	out := []corpusJSON{}
	for _, p := range s.runs.Corpora() {
		out = append(out, corpusOf(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"corpora": out})
	return nil
}
