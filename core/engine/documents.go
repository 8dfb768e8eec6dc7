package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/tools"
)

// DocumentsPack is the id of the pack a person builds from their own
// documents in a front end.
const DocumentsPack = "documents"

// DocumentsBaseURL is what the documents pack's URLs begin with: a host
// that resolves nowhere, then the file's path and anchor. A question set
// for the pack may name a target by the path and anchor alone, as the
// page shows it ("notes/kettle.md#kettle"; lab.Lab.TargetBase).
const DocumentsBaseURL = "https://your-documents.invalid/"

// The bounds of a documents pack: a file the builder reads at most
// (builder.MaxDocumentBytes), how many files and how many bytes in all, so
// a pack built, kept and reopened in a browser stays quick.
const (
	MaxDocuments      = 2000
	MaxDocumentsBytes = 32 << 20
)

// DocumentCaps are the documents pack's bounds, for a front end that
// refuses a file before reading it.
type DocumentCaps struct {
	FileBytes  int `json:"file_bytes"`
	Files      int `json:"files"`
	TotalBytes int `json:"total_bytes"`
	// BaseURL is what the pack's URLs begin with (DocumentsBaseURL): a
	// front end shows a target as the rest, the file's path and anchor,
	// which a question set may name as it is.
	BaseURL string `json:"base_url"`
}

func documentCaps() DocumentCaps {
	return DocumentCaps{FileBytes: builder.MaxDocumentBytes, Files: MaxDocuments, TotalBytes: MaxDocumentsBytes, BaseURL: DocumentsBaseURL}
}

// BuildRequest is a person's documents to make into the documents pack.
type BuildRequest struct {
	Documents []builder.Document
	// OnDocument, if set, is told after each document is read.
	OnDocument func(done, total int)
}

// BuildResult is a built and loaded documents pack: its manifest and
// passages files (JSON, for the front end to keep and load again), what
// it is like, and each document the build left out with its reason. When
// no document was readable, only Skipped is set: nothing was built and
// the pack loaded before (if any) stays.
type BuildResult struct {
	Manifest  string            `json:"manifest,omitempty"`
	Passages  string            `json:"passages,omitempty"`
	Info      *PackInfo         `json:"info"`
	Documents int               `json:"documents"`
	Skipped   []builder.Skipped `json:"skipped"`
}

// documentsOptions are the documents pack's settings: its passages are cut
// as the Python pack's (at most 1,500 bytes), three per agent search, and
// their URLs name the file under a host that cannot resolve, since the
// documents exist only where they were dropped.
func documentsOptions() builder.Options {
	return builder.Options{ID: DocumentsPack, Title: "Your documents", Language: "und", Version: "1.0", SearchK: 3,
		Licence:     "Your own documents: they stay in this browser and are not sent anywhere.",
		Attribution: "The documents' authors.", Source: "Files dropped or picked in the page, kept in this browser's storage.",
		MadeBy:  "core/builder in the page's engine worker (headings, sections and paragraphs; passages of at most 1500 bytes)",
		BaseURL: DocumentsBaseURL, RetrievalConfig: DefaultBuildConfig}
}

// BuildPack makes the documents pack from a person's files (HTML,
// Markdown, reStructuredText, text, JSON Lines passages) and loads it,
// replacing the one loaded before. A file that is binary, too large, not
// UTF-8 or of no known kind is left out with its reason; when every file
// is, nothing is built (the result has only the reasons) and the pack
// loaded before stays.
func (e *Engine) BuildPack(req BuildRequest) (*BuildResult, error) {
	caps := documentCaps()
	if len(req.Documents) == 0 {
		return nil, fmt.Errorf("documents: no file given")
	}
	if len(req.Documents) > caps.Files {
		return nil, fmt.Errorf("documents: %d files; at most %d", len(req.Documents), caps.Files)
	}
	total := 0
	for _, d := range req.Documents {
		total += len(d.Data)
	}
	if total > caps.TotalBytes {
		return nil, fmt.Errorf("documents: %d bytes in all; at most %d", total, caps.TotalBytes)
	}
	built, err := BuildCorpus(CorpusBuild{Options: documentsOptions(), Documents: req.Documents, OnDocument: req.OnDocument})
	if err != nil {
		if built != nil && len(built.Skipped) > 0 {
			// Nothing readable: say why for each file; the pack before stays.
			return &BuildResult{Skipped: built.Skipped}, nil
		}
		return nil, fmt.Errorf("documents: %w", err)
	}
	manifest, passages := built.ManifestFile, built.Passages
	info, err := e.LoadPack(manifest, passages)
	if err != nil {
		return nil, err
	}
	return &BuildResult{Manifest: string(manifest), Passages: string(passages), Info: info, Documents: built.Documents, Skipped: built.Skipped}, nil
}

// RemovePack forgets a pack loaded from bytes (LoadPack or BuildPack); runs
// under way keep it until they end. The seed and the packs the engine was
// opened with stay.
func (e *Engine) RemovePack(id string) error {
	e.packs.mu.Lock()
	defer e.packs.mu.Unlock()
	p, ok := e.packs.entries[id]
	if !ok {
		return &UnknownPackError{ID: id, Known: sortedKeys(e.packs.entries)}
	}
	if id == SeedPack || p.source.Passages != nil {
		return fmt.Errorf("pack %s: built in; it cannot be removed", id)
	}
	if open := p.opened.Load(); open != nil {
		e.packs.retired = append(e.packs.retired, open)
	}
	delete(e.packs.entries, id)
	return nil
}

// PassageView is one passage read in full for a person: its text, URL,
// title and size, its receipt checked.
type PassageView struct {
	Corpus string `json:"corpus"`
	Passage
}

// Passage reads one passage of a pack by source id (checking it as a read
// is checked: its text against its receipt).
func (e *Engine) Passage(corpusID, sourceID string) (*PassageView, error) {
	l, err := e.labFor(corpusID)
	if err != nil {
		return nil, err
	}
	p, err := l.Read(sourceID)
	if err != nil {
		return nil, err
	}
	if err := tools.Validate(p, tools.Handle{SourceID: p.SourceID, Version: p.Version, TextSHA256: p.TextSHA256}); err != nil {
		return nil, err
	}
	return &PassageView{Corpus: l.Pack.Manifest.ID, Passage: Passage{Passage: p, Bytes: p.Bytes()}}, nil
}

// PackCases are a pack's authored cases (the Run view's presets).
func (e *Engine) PackCases(id string) ([]evaluate.Case, error) {
	l, err := e.labFor(id)
	if err != nil {
		return nil, err
	}
	return l.Cases.Cases, nil
}
