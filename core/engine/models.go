package engine

import (
	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/core/reranklab"
)

// The models a live call reaches: the agent's (a live run, a batch) and
// the listwise reranker's.
const (
	AgentModel    = gemini.Model
	ListwiseModel = reranklab.ListwiseModel
)

// MaxOutputTokens is the output allowance of every live request, what a
// worst-case estimate prices each reply at.
func MaxOutputTokens() int { return gemini.MaxOutputTokens() }

// CheckAllowance refuses a request allowance that is not a whole number
// from 1 to the process-wide cap, before an engine is opened with it.
func CheckAllowance(n int) error {
	_, err := gemini.NewAllowance(n)
	return err
}

// ResolveEndpoint is where a live call to model goes: "" or the model's
// own URL is the real API, a loopback override a test double (a bare
// origin gets the API's path); any other host is refused, so no setting
// can send a key to a third party.
func ResolveEndpoint(model, override string) (string, error) {
	return gemini.ResolveModelEndpoint(model, override)
}

// Tokens is a result's token usage priced at the agent model's list price
// in the engine's table (unpriced when the table has none).
func (e *Engine) Tokens(r *agent.Result) report.Tokens {
	return report.TokensOf(r, e.agentRate())
}

// agentRate is the agent model's price, if the table has one.
func (e *Engine) agentRate() *price.Rate {
	if r, ok := e.Rate(AgentModel); ok {
		return &r
	}
	return nil
}

// RecordedTokens is the token usage the bundled comparison's replies
// reported, priced as Tokens prices, and how many requests it recorded:
// the scale a live plan is shown beside.
func (e *Engine) RecordedTokens() (report.Tokens, int) {
	var t report.Tokens
	requests := 0
	for _, trial := range e.bundled.Trials {
		for _, ex := range trial.Exchanges {
			requests++
			resp, _ := ex.Response.(*pyjson.Object)
			if um, ok := get(resp, "usageMetadata").(*pyjson.Object); ok {
				t = t.Add(report.Tokens{Replies: 1, Tokens: *model.Meta{UsageMetadata: um}.Tokens()})
			}
		}
	}
	if r := e.agentRate(); r != nil {
		usd := r.Cost(t.Prompt, t.Candidates+t.Thoughts)
		t.EstimatedUSD = &usd
	}
	return t, requests
}
