package lab

import (
	"sync"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/tools"
)

// memo serves the lab's runs: it serialises access to the index (one SQLite
// connection is not safe for concurrent use) and remembers search results,
// which depend only on the immutable index and the query's terms, k and
// version. Replaying a recording repeats the same searches across trials
// and repeats, and in the browser each FTS5 query costs milliseconds.
type memo struct {
	lib *tools.Library

	// mu is shared by every memo over the same index (a lab and its views
	// under other configurations, see Lab.Under).
	mu       *sync.Mutex
	searches map[searchKey][]tools.Handle
}

type searchKey struct {
	query, version string
	k              int
}

func newMemo(lib *tools.Library, mu *sync.Mutex) *memo {
	return &memo{lib: lib, mu: mu, searches: map[searchKey][]tools.Handle{}}
}

// Search returns the library's result, computed once per query, k and
// version. Errors are not remembered.
func (m *memo) Search(query string, k int, version string) ([]tools.Handle, error) {
	key := searchKey{query, version, k}
	m.mu.Lock()
	defer m.mu.Unlock()
	if hs, ok := m.searches[key]; ok {
		return append([]tools.Handle(nil), hs...), nil
	}
	hs, err := m.lib.Search(query, k, version)
	if err != nil {
		return nil, err
	}
	m.searches[key] = hs
	return append([]tools.Handle(nil), hs...), nil
}

// ReadCost and ValidateRead touch only the handle and the passage.
func (m *memo) ReadCost(h tools.Handle) int                         { return m.lib.ReadCost(h) }
func (m *memo) ValidateRead(p corpus.Passage, h tools.Handle) error { return m.lib.ValidateRead(p, h) }

// Read is the library's read, serialised with the searches (an image
// pack's passage is read from its index).
func (m *memo) Read(h tools.Handle) (corpus.Passage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lib.Read(h)
}

// Verify is the library's check of every passage, serialised with the runs.
func (m *memo) Verify() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lib.Verify()
}

// Explain is the library's scored search, serialised with the runs.
func (m *memo) Explain(query string, k int, version string) ([]tools.Scored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lib.Explain(query, k, version)
}

// ExplainSnippets is the library's search with snippets, serialised with
// the runs.
func (m *memo) ExplainSnippets(query string, k int, version string) ([]tools.Scored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lib.ExplainSnippets(query, k, version)
}
