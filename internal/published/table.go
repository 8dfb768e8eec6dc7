package published

import (
	"encoding/json"
	"fmt"
)

// TableFormat tags the page's copy of the published outcomes.
const TableFormat = "ragagent-published-table/1"

// Table is the published comparison's outcomes, small enough for the page
// to show the moment it opens (site/published.json), before its engine has
// replayed anything: per trial the row of the seed's table, and the
// summary per path. The page marks each row verified once its own replay
// gives the same row.
type Table struct {
	Format     string     `json:"format"`
	Source     string     `json:"source"`
	Model      string     `json:"model"`
	RecordedAt string     `json:"recorded_at"`
	Trials     []TableRow `json:"trials"`
	Summary    any        `json:"summary"`
}

// TableRow is one trial's row: who, and what the seed's table shows.
type TableRow struct {
	ID                   string `json:"id"`
	CaseID               string `json:"case_id"`
	Repeat               int    `json:"repeat"`
	Mode                 string `json:"mode"`
	RetrievalTargetsRead *bool  `json:"retrieval_targets_read"`
	Outcome              string `json:"outcome"`
	Reason               string `json:"reason"`
	ModelCalls           int    `json:"model_calls"`
}

// TableOf reads the published comparison record's outcomes.
func TableOf(data []byte) (*Table, error) {
	var rec struct {
		Model      string `json:"model"`
		RecordedAt string `json:"recorded_at"`
		Summary    any    `json:"summary"`
		Trials     []struct {
			ID     string `json:"id"`
			CaseID string `json:"case_id"`
			Repeat int    `json:"repeat"`
			Mode   string `json:"mode"`
			Result struct {
				Reason string `json:"reason"`
				Usage  struct {
					ModelCalls int `json:"model_calls"`
				} `json:"usage"`
			} `json:"result"`
			Checks struct {
				RetrievalTargetsRead *bool  `json:"retrieval_targets_read"`
				Outcome              string `json:"outcome"`
			} `json:"checks"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("published record: %w", err)
	}
	t := &Table{Format: TableFormat, Source: "fixtures/published/agent-live-comparison.json", Model: rec.Model,
		RecordedAt: rec.RecordedAt, Summary: rec.Summary, Trials: []TableRow{}}
	for _, tr := range rec.Trials {
		t.Trials = append(t.Trials, TableRow{ID: tr.ID, CaseID: tr.CaseID, Repeat: tr.Repeat, Mode: tr.Mode,
			RetrievalTargetsRead: tr.Checks.RetrievalTargetsRead, Outcome: tr.Checks.Outcome, Reason: tr.Result.Reason,
			ModelCalls: tr.Result.Usage.ModelCalls})
	}
	return t, nil
}

// Bytes is the table as the page's JSON file.
func (t *Table) Bytes() ([]byte, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
