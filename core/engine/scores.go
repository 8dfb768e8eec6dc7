package engine

import (
	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/report"
)

// BM25Kind is how a seed ranking's scores read: FTS5's bm25, lower is better.
const BM25Kind = "bm25 (lower is better)"

// CandidateScores fills each trial's Scores for a trace viewer: every
// search's candidates with the score the pack's ranking gave them (the
// search run again with the pack's k, which gives the same ranks), which
// the observation the model saw leaves out. A candidate the search no
// longer finds gets no score rather than a guess.
func (e *Engine) CandidateScores(corpus string, trials []report.Trial) error {
	l, err := e.labFor(corpus)
	if err != nil {
		return err
	}
	for i := range trials {
		scoresOf(l, &trials[i])
	}
	return nil
}

func scoresOf(l *lab.Lab, tr *report.Trial) {
	r := tr.Result
	if r == nil {
		return
	}
	out := make([][]*float64, len(r.Observations))
	any := false
	for i, o := range r.Observations {
		sr, ok := o.Search()
		if !ok {
			continue
		}
		found := map[string]float64{}
		if hits, err := l.Explain(sr.Query, l.SearchK, r.Version); err == nil {
			for _, h := range hits {
				found[h.SourceID] = h.Score
			}
		}
		out[i] = make([]*float64, len(sr.Candidates))
		for j, c := range sr.Candidates {
			if s, ok := found[c.SourceID]; ok {
				out[i][j] = &s
				any = true
			}
		}
	}
	if any {
		tr.Scores, tr.ScoreKind = out, BM25Kind
		if rec := l.RetrievalRecord(); rec != nil {
			// Every configuration's searcher negates its score as bm25() does.
			tr.ScoreKind = rec.Name + "'s score, negated as bm25's is (lower is better)"
		}
	}
}
