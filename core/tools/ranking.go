package tools

import (
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/store"
)

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
