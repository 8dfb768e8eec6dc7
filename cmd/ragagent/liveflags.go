package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/price"
)

// modelFlags are the flags shared by the commands that run the agent and
// may call Gemini: limits, the request allowance, the test endpoint and the
// price table.
type modelFlags struct {
	limits, allowance, endpoint, price *string
}

// settings are modelFlags checked.
type settings struct {
	limits    agent.Limits
	allowance *gemini.Allowance
	endpoint  string
	rate      *price.Rate
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
	n, err := strconv.Atoi(strings.TrimSpace(*f.allowance))
	if err != nil {
		return s, fmt.Errorf("--allowance %q is not a whole number", *f.allowance)
	}
	if s.allowance, err = gemini.NewAllowance(n); err != nil {
		return s, fmt.Errorf("--allowance: %v", err)
	}
	if s.endpoint, err = gemini.ResolveEndpoint(*f.endpoint); err != nil {
		return s, fmt.Errorf("--endpoint: %v", err)
	}
	if s.rate, err = rateFor(*f.price, gemini.Model); err != nil {
		return s, fmt.Errorf("--price: %v", err)
	}
	return s, nil
}
