package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
)

// priceHint tells people how the command line changes a shipped price.
const priceHint = "override with --price"

// modelFlags are the flags shared by the commands that run the agent and
// may call Gemini: limits, the request allowance, the test endpoint and the
// price table.
type modelFlags struct {
	limits, allowance, endpoint, price, corpus *string
}

// settings are modelFlags checked: the run's limits and endpoint, and the
// engine's options (the request allowance and the price table).
type settings struct {
	corpus   string // as given ("" for the seed)
	limits   agent.Limits
	endpoint string
	options  engine.Options
}

func addModelFlags(fs *flag.FlagSet, defaultAllowance string) modelFlags {
	return modelFlags{
		limits:    fs.String("limits", "", "run limits as `k=v,...` over the defaults (model_calls, searches, reads, source_bytes, seconds)"),
		allowance: fs.String("allowance", defaultAllowance, "the process-wide request allowance (1-200), checked before every Gemini attempt"),
		endpoint:  fs.String("endpoint", "", "for testing only: a loopback `URL` (127.0.0.0/8, ::1, localhost) to send to instead of the Gemini API"),
		price:     fs.String("price", "", priceFlagHelp),
		corpus:    fs.String("corpus", "", corpusHelp+" (default seed)"),
	}
}

// parse checks the flags; an error is one line naming the flag at fault.
func (f modelFlags) parse() (settings, error) {
	s := settings{corpus: *f.corpus}
	var err error
	if s.limits, err = agent.ParseLimits(*f.limits); err != nil {
		return s, fmt.Errorf("--limits: %v", err)
	}
	if s.options.Allowance, err = strconv.Atoi(strings.TrimSpace(*f.allowance)); err != nil {
		return s, fmt.Errorf("--allowance %q is not a whole number", *f.allowance)
	}
	if err = engine.CheckAllowance(s.options.Allowance); err != nil {
		return s, fmt.Errorf("--allowance: %v", err)
	}
	if s.endpoint, err = engine.ResolveEndpoint(engine.AgentModel, *f.endpoint); err != nil {
		return s, fmt.Errorf("--endpoint: %v", err)
	}
	prices, err := engine.PriceTable(priceHint, *f.price)
	if err != nil {
		return s, fmt.Errorf("--price: %v", err)
	}
	s.options.Prices = &prices
	return s, nil
}

// open opens the engine with the settings' allowance and prices, and the
// corpus (a pack on disk read through in), returning its pack id.
func (s settings) open(in inputs) (*engine.Engine, string, error) {
	o := s.options
	o.Packs = knownPacks()
	e, err := engine.Open(o)
	if err != nil {
		return nil, "", err
	}
	id := engine.SeedPack
	if s.corpus != "" {
		if id, err = openCorpus(e, in, s.corpus); err != nil {
			e.Close()
			return nil, "", err
		}
	}
	return e, id, nil
}
