package main

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/report"
)

// priceFlagHelp documents --price for every command that estimates cost.
const priceFlagHelp = "override list prices, `model=input/output` in US dollars per million tokens (comma-separated); every cost shown is an estimate"

// usd formats an estimate.
func usd(v *float64) string {
	if v == nil {
		return "no estimate (no price for the model)"
	}
	switch {
	case *v == 0:
		return "$0 (estimate)"
	case *v < 0.01:
		return fmt.Sprintf("$%.5f (estimate)", *v)
	}
	return fmt.Sprintf("$%.4f (estimate)", *v)
}

// rateLine describes the agent model's price in e's table for people.
func rateLine(e *engine.Engine) string {
	r, ok := e.Rate(engine.AgentModel)
	if !ok {
		return "no rate for " + engine.AgentModel + "; costs are not estimated"
	}
	return fmt.Sprintf("%s: $%.2f per million input tokens, $%.2f per million output and thinking tokens (%s)",
		r.Model, r.InputPerMTok, r.OutputPerMTok, r.Source)
}

// tokensLine describes token usage and its estimate.
func tokensLine(t report.Tokens) string {
	return fmt.Sprintf("%d prompt, %d output, %d thinking, %d total tokens over %d replies; cost %s",
		t.Prompt, t.Candidates, t.Thoughts, t.Total, t.Replies, usd(t.EstimatedUSD))
}
