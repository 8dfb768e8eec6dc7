package report

import (
	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// EstimateNote labels every cost this package computes.
const EstimateNote = "Estimate from list prices in the price table (prompt tokens at the input rate, output and thinking tokens at the output rate); not a bill or an invoice."

// Tokens is token usage summed over the model replies that reported it,
// with its estimated cost.
type Tokens struct {
	// Replies is how many replies carried usageMetadata (a request that
	// failed before a reply has none, and is not priced).
	Replies int `json:"replies"`
	model.Tokens
	// EstimatedUSD is nil when the price table has no rate for the model.
	EstimatedUSD *float64 `json:"estimated_usd"`
}

// Add sums two usages (a missing price stays missing).
func (t Tokens) Add(o Tokens) Tokens {
	out := Tokens{Replies: t.Replies + o.Replies, Tokens: t.Tokens.Add(o.Tokens)}
	if t.EstimatedUSD != nil && o.EstimatedUSD != nil {
		usd := *t.EstimatedUSD + *o.EstimatedUSD
		out.EstimatedUSD = &usd
	}
	return out
}

// TokensOf is a result's token usage priced at rate (nil: not priced).
func TokensOf(r *agent.Result, rate *price.Rate) Tokens {
	var t Tokens
	if r != nil {
		for _, s := range r.Steps {
			if s.Tokens != nil {
				t.Replies++
				t.Tokens = t.Tokens.Add(*s.Tokens)
			}
		}
	}
	if rate != nil {
		usd := rate.Cost(t.Prompt, t.Candidates+t.Thoughts)
		t.EstimatedUSD = &usd
	}
	return t
}

// BatchTrial is one trial of a batch report, in the published record's
// shape (id, case, path, result, checks, elapsed, provider usage) plus its
// refusal code and priced tokens.
type BatchTrial struct {
	ID             string           `json:"id"`
	CaseID         string           `json:"case_id"`
	Split          string           `json:"split"`
	Repeat         int              `json:"repeat"`
	Mode           string           `json:"mode"`
	Result         *agent.Result    `json:"result"`
	Error          *reason.Code     `json:"error"`
	Checks         *evaluate.Checks `json:"checks"`
	ElapsedSeconds float64          `json:"elapsed_seconds"`
	ProviderUsage  []*pyjson.Object `json:"provider_usage"`
	Tokens         Tokens           `json:"tokens"`
}

// PathTokens is token usage per path and in all.
type PathTokens struct {
	Fixed Tokens `json:"fixed"`
	Agent Tokens `json:"agent"`
	Total Tokens `json:"total"`
}

// Cost is the batch's money, always an estimate.
type Cost struct {
	// CurrencyCost stays null: no invoice is read (the published field).
	CurrencyCost *float64    `json:"currency_cost"`
	EstimatedUSD *float64    `json:"estimated_usd"`
	Rate         *price.Rate `json:"rate"`
	Note         string      `json:"note"`
}

// Batch is a batch of fresh runs reported like the reference lab's
// published record: settings, summary per path, trials with checks, actual
// requests, elapsed time and environment, plus token totals and an
// estimated cost.
type Batch struct {
	ExecutionMode     string            `json:"execution_mode"`
	Model             string            `json:"model"`
	Config            any               `json:"config"`
	Endpoint          string            `json:"endpoint"`
	BatchRequestCap   int               `json:"batch_request_cap"`
	Limits            agent.Limits      `json:"limits"`
	CasesSHA256       string            `json:"cases_sha256"`
	Summary           Summary           `json:"summary"`
	Trials            []BatchTrial      `json:"trials"`
	RecordedAt        string            `json:"recorded_at"`
	ActualAPIRequests int               `json:"actual_api_requests"`
	ElapsedSeconds    float64           `json:"elapsed_seconds"`
	Environment       map[string]string `json:"environment"`
	Tokens            PathTokens        `json:"tokens"`
	Cost              Cost              `json:"cost"`
}

// Fill sets the report's trials, summary, tokens and cost from a batch's
// trial reports, pricing at rate (nil: unpriced).
func (b *Batch) Fill(rep *Set, rate *price.Rate) {
	b.Summary = rep.Summary
	b.Trials = make([]BatchTrial, 0, len(rep.Trials))
	var tokens PathTokens
	if rate != nil {
		zero := 0.0
		tokens.Fixed.EstimatedUSD, tokens.Agent.EstimatedUSD = &zero, &zero
	}
	for _, t := range rep.Trials {
		bt := BatchTrial{ID: t.ID, CaseID: t.CaseID, Split: t.Split, Repeat: t.Repeat, Mode: t.Mode,
			Result: t.Result, Error: t.Error, Checks: t.Checks, ProviderUsage: []*pyjson.Object{},
			Tokens: TokensOf(t.Result, rate)}
		if t.ElapsedSeconds != nil {
			bt.ElapsedSeconds = *t.ElapsedSeconds
		}
		if t.Result != nil {
			for _, s := range t.Result.Steps {
				if s.UsageMetadata != nil {
					bt.ProviderUsage = append(bt.ProviderUsage, s.UsageMetadata)
				}
			}
		}
		switch agent.Mode(t.Mode) {
		case agent.Fixed:
			tokens.Fixed = tokens.Fixed.Add(bt.Tokens)
		case agent.Agent:
			tokens.Agent = tokens.Agent.Add(bt.Tokens)
		}
		b.Trials = append(b.Trials, bt)
	}
	tokens.Total = tokens.Fixed.Add(tokens.Agent)
	b.Tokens = tokens
	b.Cost = Cost{EstimatedUSD: tokens.Total.EstimatedUSD, Rate: rate, Note: EstimateNote}
	if rate == nil {
		b.Cost.Note = "No price for " + b.Model + " in the price table; token usage recorded, no estimate made."
	}
}

// TrialCost is a trial's estimated cost at one list price: per step (nil where
// the step carried no usage, such as the fixed path's own retrieval or a
// request that failed before a reply) and in all, priced from the summed
// tokens as TokensOf prices them. Always an estimate (EstimateNote).
type TrialCost struct {
	Rate     price.Rate `json:"rate"`
	StepsUSD []*float64 `json:"steps_usd"`
	TotalUSD float64    `json:"total_usd"`
}

// CostOf prices a result's steps at rate; nil for no result.
func CostOf(r *agent.Result, rate price.Rate) *TrialCost {
	if r == nil {
		return nil
	}
	c := &TrialCost{Rate: rate, StepsUSD: make([]*float64, len(r.Steps))}
	for i, s := range r.Steps {
		if s.Tokens != nil {
			usd := rate.Cost(s.Tokens.Prompt, s.Tokens.Candidates+s.Tokens.Thoughts)
			c.StepsUSD[i] = &usd
		}
	}
	c.TotalUSD = *TokensOf(r, &rate).EstimatedUSD
	return c
}
