package lab

import (
	"sync"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/retrieval"
)

// ranking is what experiments over the lab's index keep between them:
// the passages' heads, read once.
type ranking struct {
	once  sync.Once
	heads []corpus.Passage
	err   error
}

// Ranking runs fn with the retrieval base every configuration over the
// lab's index opens from (tools.Library.RetrievalBase), the passages'
// heads (source id, version, URL, title; an image's without text) in
// index order, and index, through which alone fn reaches the base: index
// runs its function with the runs' searches and reads held off (the
// index is one SQLite connection, and the base's scratch is shared), so
// an experiment holds them off a search at a time, never to its end.
func (l *Lab) Ranking(fn func(base *retrieval.Base, heads []corpus.Passage, index func(func() error) error) error) error {
	l.tools.mu.Lock()
	l.rank.once.Do(func() { l.rank.heads, l.rank.err = l.Library.Heads() })
	err := l.rank.err
	l.tools.mu.Unlock()
	if err != nil {
		return err
	}
	return fn(l.Library.RetrievalBase(), l.rank.heads, func(f func() error) error {
		l.tools.mu.Lock()
		defer l.tools.mu.Unlock()
		return f()
	})
}

// WithCases is the lab with another question set (a --cases file): the
// cases parsed and checked against the pack (CheckCases) with the runs
// held off, in a copy that shares the index, which only the original's
// Close releases.
func (l *Lab) WithCases(data []byte) (*Lab, error) {
	cs, err := evaluate.ParseCasesAt(data, l.TargetBase)
	if err != nil {
		return nil, err
	}
	l.tools.mu.Lock()
	err = CheckCases(l.Library, cs)
	l.tools.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c := *l
	c.Cases, c.CasesSHA256 = cs, corpus.SHA256(string(data))
	return &c, nil
}

// Passages are the lab's passages with their texts, in index order: what
// a pack's passage vectors are made of (one per passage, in this order).
// The runs' searches and reads wait meanwhile.
func (l *Lab) Passages() ([]corpus.Passage, error) {
	l.tools.mu.Lock()
	defer l.tools.mu.Unlock()
	if l.Snapshot != nil {
		return l.Snapshot.Passages, nil
	}
	return l.Library.Index().Passages()
}
