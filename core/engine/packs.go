package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/fixtures"
)

// SeedPack is the id of the built-in pack: the four published passages.
const SeedPack = "seed"

// PackSource is a pack an engine may open when a request first names it:
// its manifest now, its passages file only then.
type PackSource struct {
	Manifest []byte
	// Passages reads the passages file, uncompressed (as the manifest's
	// receipt is of those bytes).
	Passages func() ([]byte, error)
	// Cases is the pack's authored cases file; nil means the engine's own
	// cases for the pack's id (fixtures), if it has any.
	Cases []byte
}

// builtinCases are the authored cases the engine has for a pack id.
func builtinCases(id string) []byte {
	switch id {
	case SeedPack:
		return fixtures.Cases
	case "python-3.11":
		return fixtures.PythonCases
	}
	return nil
}

// packs are the engine's corpora by id: the seed (always open) and the
// packs it was given or loaded, each opened once, on first use, and kept:
// switching back to a pack costs nothing.
type packs struct {
	mu      sync.Mutex
	entries map[string]*packEntry
	retired []*lab.Lab // replaced labs, closed with the engine (a run may still hold one)
}

type packEntry struct {
	manifest *corpus.Manifest
	source   PackSource
	once     sync.Mutex // held while opening
	// opened is the open lab (nil until labFor opens it), read without
	// once: listing packs must not wait on a pack that is opening.
	opened atomic.Pointer[lab.Lab]
	openMS float64
}

// newEntry is an entry, open already when l is not nil.
func newEntry(m *corpus.Manifest, s PackSource, l *lab.Lab, openMS float64) *packEntry {
	p := &packEntry{manifest: m, source: s, openMS: openMS}
	p.opened.Store(l)
	return p
}

func (ps *packs) init(seed *lab.Lab, sources []PackSource) error {
	ps.entries = map[string]*packEntry{SeedPack: newEntry(seed.Pack.Manifest, PackSource{}, seed, 0)}
	for i, s := range sources {
		m, err := corpus.ParseManifest(s.Manifest)
		if err != nil {
			return fmt.Errorf("pack source %d: %w", i+1, err)
		}
		if _, dup := ps.entries[m.ID]; dup {
			return fmt.Errorf("pack source %d: a pack %q is already known", i+1, m.ID)
		}
		ps.entries[m.ID] = newEntry(m, s, nil, 0)
	}
	return nil
}

func (ps *packs) close() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var first error
	for _, e := range ps.entries {
		if l := e.opened.Load(); l != nil {
			if err := l.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	for _, l := range ps.retired {
		l.Close()
	}
	return first
}

// UnknownPackError is a corpus no pack has as its id.
type UnknownPackError struct {
	ID    string
	Known []string
}

func (e *UnknownPackError) Error() string {
	return fmt.Sprintf("no corpus pack %q; the packs are %s", e.ID, strings.Join(e.Known, ", "))
}

func (ps *packs) entry(id string) (*packEntry, error) {
	if id == "" {
		id = SeedPack
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e, ok := ps.entries[id]
	if !ok {
		return nil, &UnknownPackError{ID: id, Known: sortedKeys(ps.entries)}
	}
	return e, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// labFor is the lab of a corpus ("" is the seed), opened now if it is not
// yet: its passages read, checked against the manifest and indexed.
func (e *Engine) labFor(id string) (*lab.Lab, error) {
	p, err := e.packs.entry(id)
	if err != nil {
		return nil, err
	}
	p.once.Lock()
	defer p.once.Unlock()
	if l := p.opened.Load(); l != nil {
		return l, nil
	}
	started := e.clock()
	data, err := p.source.Passages()
	if err != nil {
		return nil, fmt.Errorf("pack %s: read the passages file: %w", p.manifest.ID, err)
	}
	cases := p.source.Cases
	if cases == nil {
		cases = builtinCases(p.manifest.ID)
	}
	l, err := lab.OpenPack(p.source.Manifest, data, cases, e.sha256)
	if err != nil {
		return nil, err
	}
	p.openMS = e.since(started)
	p.opened.Store(l)
	return l, nil
}

// PackSummary is a pack as a front end lists it: its manifest, whether it
// is open, and how many authored cases it has once open.
type PackSummary struct {
	Manifest *corpus.Manifest `json:"manifest"`
	Open     bool             `json:"open"`
}

// Packs lists the engine's corpora, the seed first, then by id.
func (e *Engine) Packs() []PackSummary {
	e.packs.mu.Lock()
	defer e.packs.mu.Unlock()
	ids := []string{SeedPack}
	for _, id := range sortedKeys(e.packs.entries) {
		if id != SeedPack {
			ids = append(ids, id)
		}
	}
	out := []PackSummary{}
	for _, id := range ids {
		p := e.packs.entries[id]
		out = append(out, PackSummary{Manifest: p.manifest, Open: p.opened.Load() != nil})
	}
	return out
}

// Pack is one of the engine's corpora as Packs lists it ("" is the seed),
// without opening it: its manifest names its search k and default version.
func (e *Engine) Pack(id string) (*PackSummary, error) {
	p, err := e.packs.entry(id)
	if err != nil {
		return nil, err
	}
	return &PackSummary{Manifest: p.manifest, Open: p.opened.Load() != nil}, nil
}

// PackInfo is an opened pack: its manifest, its authored cases and what
// its passages are like.
type PackInfo struct {
	Manifest *corpus.Manifest `json:"manifest"`
	SearchK  int              `json:"search_k"`
	// RetrievalConfig is the configuration the pack's searches rank by
	// unless told otherwise (its manifest's, seed when it names none).
	RetrievalConfig string `json:"retrieval_config"`
	Cases           int    `json:"cases"`
	Pages           int    `json:"pages"` // distinct URLs without their fragment
	TextBytes       int    `json:"text_bytes"`
	Sizes           Sizes  `json:"passage_bytes"`
	// OpenMS is how long opening the pack took (0 for the seed, opened
	// with the engine).
	OpenMS float64 `json:"open_ms"`
}

// Sizes are the smallest, median and largest passage sizes in bytes.
type Sizes struct {
	Min    int `json:"min"`
	Median int `json:"median"`
	Max    int `json:"max"`
}

// PackInfo opens a pack if need be and describes it.
func (e *Engine) PackInfo(id string) (*PackInfo, error) {
	l, err := e.labFor(id)
	if err != nil {
		return nil, err
	}
	p, _ := e.packs.entry(id)
	info := &PackInfo{Manifest: l.Pack.Manifest, SearchK: l.SearchK, RetrievalConfig: l.Retrieval.Name, Cases: len(l.Cases.Cases), OpenMS: p.openMS}
	st := l.Library.Stats()
	sizes := append([]int(nil), st.Bytes...)
	sort.Ints(sizes)
	info.Pages, info.TextBytes = st.Pages, st.TextBytes
	info.Sizes = Sizes{Min: sizes[0], Median: sizes[len(sizes)/2], Max: sizes[len(sizes)-1]}
	return info, nil
}

// VerifyPack opens a pack if need be and checks every passage (id,
// version, URL, title, text and receipt, no repeated id), which opening an
// image pack leaves to each passage's first use.
func (e *Engine) VerifyPack(id string) error {
	l, err := e.labFor(id)
	if err != nil {
		return err
	}
	return l.Verify()
}

// LoadPack opens a pack from its manifest and passages bytes (a front end
// that fetched them, or a person's own documents) and keeps it under its
// id, with the engine's cases for that id if it has any. Loading bytes
// identical to a pack already open costs nothing; other bytes under the
// id of an open pack replace it (runs under way keep the old one). The
// seed cannot be replaced.
func (e *Engine) LoadPack(manifest, passages []byte) (*PackInfo, error) {
	m, err := corpus.ParseManifest(manifest)
	if err != nil {
		return nil, err
	}
	if m.ID == SeedPack {
		return nil, fmt.Errorf("pack %s: the seed is built in and cannot be replaced", m.ID)
	}
	e.packs.mu.Lock()
	old := e.packs.entries[m.ID]
	e.packs.mu.Unlock()
	if old != nil {
		same := old.opened.Load() != nil && old.manifest.PassagesSHA256 == m.PassagesSHA256 && old.manifest.PassagesBytes == m.PassagesBytes
		if same {
			return e.PackInfo(m.ID)
		}
	}
	started := e.clock()
	l, err := lab.OpenPack(manifest, passages, builtinCases(m.ID), e.sha256)
	if err != nil {
		return nil, err
	}
	if m.ID == DocumentsPack {
		l.TargetBase = DocumentsBaseURL
	}
	entry := newEntry(m, PackSource{Manifest: manifest}, l, e.since(started))
	e.packs.mu.Lock()
	if prev := e.packs.entries[m.ID]; prev != nil {
		if open := prev.opened.Load(); open != nil {
			e.packs.retired = append(e.packs.retired, open)
		}
	}
	e.packs.entries[m.ID] = entry
	e.packs.mu.Unlock()
	return e.PackInfo(m.ID)
}
