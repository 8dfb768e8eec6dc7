package tools

import (
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
)

// RetrievalBase is what every configuration over the library's index
// shares (made on first use, shared with the views Under makes after):
// an experiment's searchers open from it, so the postings the agent's
// searches built are reused, and the other way round.
func (l *Library) RetrievalBase() *retrieval.Base {
	if l.base == nil {
		l.base = retrieval.NewBase(l.index)
	}
	return l.base
}

// Index is the library's index, for ranking it under a retrieval
// configuration (an experiment); the caller serialises its use with the
// library's other users (one SQLite connection).
func (l *Library) Index() *store.Index { return l.index }

// Heads are the passages without their text (a snapshot's with it), in
// index order: what a ranking's hits are matched against.
func (l *Library) Heads() ([]corpus.Passage, error) {
	if l.snapshot != nil {
		return l.snapshot.Passages, nil
	}
	return l.index.Heads()
}
