// Package reranklab runs the reranking lab end to end, as the reference lab's
// three runs did: hybrid candidates for the development questions and
// their coverage reranking (with the mechanism check, the unfiltered
// read/write diagnostic and the refusal demonstrations), the Gemini
// listwise reranking of the same frozen candidates, and the cross-encoder
// comparison over the original cases and the twelve expanded ones with its
// top-1/MRR summary. Each run returns a record whose Value has the
// reference record's JSON shape (core/rerank's records), so a replay can be
// compared with the published record number for number.
//
// A Suite is the opened lab; a Bench (bench.go) is the lab as an engine
// holds it for its front ends: the replay suite opened on first use, live
// listwise reranks through a spending ledger, and fresh cross-encoder
// scorings taken through the acceptance contract; it never hands out its
// Suite.
package reranklab

import (
	"context"
	"fmt"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// The lab's configuration, as the reference coverage record states it.
const (
	CandidateBudget = 3
	RerankK         = 3
	ScoreRule       = "unique query token coverage"
	TieRule         = "incoming rank"
)

// Inputs are the lab's pinned data files (see the fixtures package).
type Inputs struct {
	Snapshot    []byte // ragagent-rerank-snapshot/1
	Vectors     []byte // ragagent-vectors/1
	Development []byte // ragagent-rerank-cases/1
	Expanded    []byte // the twelve expanded cases, as the reference file
}

type developmentFile struct {
	Format                   string                   `json:"format"`
	Description              string                   `json:"description"`
	Cases                    []rerank.DevelopmentCase `json:"cases"`
	MechanismCheckCase       string                   `json:"mechanism_check_case"`
	UnfilteredDiagnosticCase string                   `json:"unfiltered_diagnostic_case"`
}

// DevelopmentFormat is the development cases file's format tag.
const DevelopmentFormat = "ragagent-rerank-cases/1"

// Suite is the opened lab. It is not safe for concurrent use.
type Suite struct {
	snap        *rerank.Snapshot
	vectors     *rerank.Recorded
	retriever   *rerank.Retriever
	dev         []rerank.DevelopmentCase
	mechanism   rerank.DevelopmentCase
	diagnostic  rerank.DevelopmentCase
	expanded    []rerank.ExpandedCase
	casesSHA256 string
}

// Open validates the inputs against each other and builds the retriever.
func Open(in Inputs) (*Suite, error) {
	snap, err := rerank.ParseSnapshot(in.Snapshot)
	if err != nil {
		return nil, err
	}
	vectors, err := rerank.ParseVectors(in.Vectors, snap)
	if err != nil {
		return nil, err
	}
	s := &Suite{snap: snap, vectors: vectors, casesSHA256: corpus.SHA256(string(in.Expanded))}
	if err := s.parseDevelopment(in.Development); err != nil {
		return nil, err
	}
	if err := s.parseExpanded(in.Expanded); err != nil {
		return nil, err
	}
	if s.retriever, err = rerank.NewRetriever(snap, vectors); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Suite) parseDevelopment(data []byte) error {
	var f developmentFile
	if err := jsonfile.Decode(data, &f); err != nil {
		return fmt.Errorf("development cases: not a valid cases file: %w", err)
	}
	if f.Format != DevelopmentFormat {
		return fmt.Errorf("development cases: format is %q, want %q", f.Format, DevelopmentFormat)
	}
	byID := map[string]rerank.DevelopmentCase{}
	for i, c := range f.Cases {
		where := fmt.Sprintf("development cases: case %d (%q)", i+1, c.CaseID)
		switch _, dup := byID[c.CaseID]; {
		case c.CaseID == "" || dup:
			return fmt.Errorf("%s: case_id must be non-empty and unique", where)
		case !corpus.ValidVersion(c.RequestedVersion):
			return fmt.Errorf("%s: requested_version %q is not of the form 3.12", where, c.RequestedVersion)
		}
		if _, err := rerank.QueryTokens(c.Query); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		byID[c.CaseID] = c
	}
	var ok1, ok2 bool
	s.mechanism, ok1 = byID[f.MechanismCheckCase]
	s.diagnostic, ok2 = byID[f.UnfilteredDiagnosticCase]
	if !ok1 || !ok2 {
		return fmt.Errorf("development cases: mechanism_check_case %q and unfiltered_diagnostic_case %q must name cases", f.MechanismCheckCase, f.UnfilteredDiagnosticCase)
	}
	s.dev = f.Cases
	return nil
}

func (s *Suite) parseExpanded(data []byte) error {
	var cases []rerank.ExpandedCase
	if err := jsonfile.Decode(data, &cases); err != nil {
		return fmt.Errorf("expanded cases: not a list of cases: %w", err)
	}
	sources := map[string]bool{}
	for _, p := range s.snap.Passages() {
		sources[p.SourceID] = true
	}
	seen := map[string]bool{}
	for i, c := range cases {
		where := fmt.Sprintf("expanded cases: case %d (%q)", i+1, c.CaseID)
		switch {
		case c.CaseID == "" || seen[c.CaseID]:
			return fmt.Errorf("%s: case_id must be non-empty and unique", where)
		case !corpus.ValidVersion(c.Version):
			return fmt.Errorf("%s: version %q is not of the form 3.12", where, c.Version)
		case c.TargetSources == nil:
			return fmt.Errorf("%s: target_sources must be a list (empty for an unsupported question)", where)
		case c.Split == "" || c.Stratum == "":
			return fmt.Errorf("%s: split and stratum are required", where)
		}
		if _, err := rerank.QueryTokens(c.Question); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, t := range c.TargetSources {
			if !sources[t] {
				return fmt.Errorf("%s: target source %q is not in the snapshot", where, t)
			}
		}
		seen[c.CaseID] = true
	}
	s.expanded = cases
	return nil
}

// Close releases the retriever's index.
func (s *Suite) Close() error { return s.retriever.Close() }

// Snapshot is the validated snapshot.
func (s *Suite) Snapshot() *rerank.Snapshot { return s.snap }

// Retriever is the first stage, for candidates of other queries (a query
// the vector recording does not hold is refused with unrecorded_query).
func (s *Suite) Retriever() *rerank.Retriever { return s.retriever }

// Development lists the development cases in order.
func (s *Suite) Development() []rerank.DevelopmentCase {
	return append([]rerank.DevelopmentCase(nil), s.dev...)
}

// Expanded lists the expanded cases in order.
func (s *Suite) Expanded() []rerank.ExpandedCase {
	return append([]rerank.ExpandedCase(nil), s.expanded...)
}

// CasesSHA256 is the sha256 of the expanded cases file's bytes.
func (s *Suite) CasesSHA256() string { return s.casesSHA256 }

// candidates is the first stage for a development case.
func (s *Suite) candidates(ctx context.Context, c rerank.DevelopmentCase) ([]rerank.Candidate, error) {
	cands, err := s.retriever.Candidates(ctx, c.Query, c.RequestedVersion, CandidateBudget)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.CaseID, err)
	}
	return cands, nil
}

// Pool is an expanded case's candidates: every chunk of its version, in
// snapshot order, without branch evidence.
func (s *Suite) Pool(c rerank.ExpandedCase) []rerank.Candidate {
	eligible := s.snap.Eligible(c.Version)
	out := make([]rerank.Candidate, len(eligible))
	for i, p := range eligible {
		out[i] = p.Candidate()
	}
	return out
}
