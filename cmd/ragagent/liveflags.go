package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/price"
)

// priceHint tells people how the command line changes a shipped price.
const priceHint = "override with --price"

// modelFlags are the flags shared by the commands that run the agent and
// may call Gemini: limits, the request allowance, the test endpoint and the
// price table.
type modelFlags struct {
	limits, allowance, endpoint, price *string
}

// settings are modelFlags checked.
type settings struct {
	limits    agent.Limits
	allowance int
	endpoint  string
	prices    price.Table
	rate      *price.Rate // gemini.Model's, if the table has one
}

func addModelFlags(fs *flag.FlagSet, defaultAllowance string) modelFlags {
	return modelFlags{
		limits:    fs.String("limits", "", "run limits as `k=v,...` over the defaults (model_calls, searches, reads, source_bytes, seconds)"),
		allowance: fs.String("allowance", defaultAllowance, "the process-wide request allowance (1-200), checked before every Gemini attempt"),
		endpoint:  fs.String("endpoint", "", "for testing only: a loopback `URL` (127.0.0.0/8, ::1, localhost) to send to instead of the Gemini API"),
		price:     fs.String("price", "", priceFlagHelp),
	}
}

// parse checks the flags; an error is one line naming the flag at fault.
func (f modelFlags) parse() (settings, error) {
	var s settings
	var err error
	if s.limits, err = agent.ParseLimits(*f.limits); err != nil {
		return s, fmt.Errorf("--limits: %v", err)
	}
	if s.allowance, err = strconv.Atoi(strings.TrimSpace(*f.allowance)); err != nil {
		return s, fmt.Errorf("--allowance %q is not a whole number", *f.allowance)
	}
	if _, err = gemini.NewAllowance(s.allowance); err != nil {
		return s, fmt.Errorf("--allowance: %v", err)
	}
	if s.endpoint, err = gemini.ResolveEndpoint(*f.endpoint); err != nil {
		return s, fmt.Errorf("--endpoint: %v", err)
	}
	if s.prices, err = engine.PriceTable(priceHint, *f.price); err != nil {
		return s, fmt.Errorf("--price: %v", err)
	}
	if r, ok := s.prices.Rate(gemini.Model); ok {
		s.rate = &r
	}
	return s, nil
}

// open opens the engine with the settings' allowance and prices.
func (s settings) open() (*engine.Engine, error) {
	return engine.Open(engine.Options{Allowance: s.allowance, Prices: &s.prices})
}
