package main

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/recordings"
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

// rateLine describes a rate for people.
func rateLine(r *price.Rate) string {
	if r == nil {
		return "no rate for " + gemini.Model + "; costs are not estimated"
	}
	return fmt.Sprintf("%s: $%.2f per million input tokens, $%.2f per million output and thinking tokens (%s)",
		r.Model, r.InputPerMTok, r.OutputPerMTok, r.Source)
}

// tokensLine describes token usage and its estimate.
func tokensLine(t report.Tokens) string {
	return fmt.Sprintf("%d prompt, %d output, %d thinking, %d total tokens over %d replies; cost %s",
		t.Prompt, t.Candidates, t.Thoughts, t.Total, t.Replies, usd(t.EstimatedUSD))
}

// recordedTokens sums the usage metadata of the bundled comparison, for
// scale.
func recordedTokens(r *price.Rate) (report.Tokens, int) {
	var t report.Tokens
	file, err := recording.Parse(recordings.AgentComparison)
	if err != nil {
		return t, 0
	}
	requests := 0
	for _, trial := range file.Trials {
		for _, ex := range trial.Exchanges {
			requests++
			resp, _ := ex.Response.(*pyjson.Object)
			u, _ := resp.Get("usageMetadata")
			if um, ok := u.(*pyjson.Object); ok {
				m := report.Tokens{Replies: 1}
				m.Tokens = *model.Meta{UsageMetadata: um}.Tokens()
				t = t.Add(m)
			}
		}
	}
	if r != nil {
		v := r.Cost(t.Prompt, t.Candidates+t.Thoughts)
		t.EstimatedUSD = &v
	}
	return t, requests
}
