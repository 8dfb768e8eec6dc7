package engine

import (
	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/report"
)

// RunOutput is what `ragagent run --json` prints, and what the node
// module's run returns: the result, who decided (the policy as the person
// named it), where a live run's recording went (nil for none), and the
// priced token usage beside it. One type, so the two cannot drift.
type RunOutput struct {
	Policy    string        `json:"policy"`
	Recording *string       `json:"recording"`
	Result    *agent.Result `json:"result"`
	Tokens    report.Tokens `json:"tokens"`
	Note      string        `json:"note"`
}

// Output is a finished run's RunOutput: tr's result priced at the agent
// model's rate, with the estimate's note.
func (e *Engine) Output(policy string, recording *string, tr report.Trial) RunOutput {
	return RunOutput{Policy: policy, Recording: recording, Result: tr.Result, Tokens: e.Tokens(tr.Result), Note: report.EstimateNote}
}
