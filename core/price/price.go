// Package price turns token counts into estimated US dollar costs. Every
// figure it produces is an estimate from a table of list prices that people
// can see and override; it is never a bill.
package price

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Rate is one model's list price per million tokens, in US dollars. Output
// tokens include thinking tokens, which are billed as output.
type Rate struct {
	Model         string  `json:"model"`
	InputPerMTok  float64 `json:"input_usd_per_mtok"`
	OutputPerMTok float64 `json:"output_usd_per_mtok"`
	// Source says where the figure comes from (or that it is an assumption).
	Source string `json:"source"`
}

// Cost estimates the price of a call with the given token counts.
func (r Rate) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*r.InputPerMTok + float64(outputTokens)*r.OutputPerMTok) / 1e6
}

// Table is a set of rates by model.
type Table struct {
	rates map[string]Rate
}

// Defaults are the prices the project ships with. The models are the ones
// the reference labs pinned; the figures are assumptions to be checked
// against the provider's pricing page, which is why every output that uses
// them says "estimate" and every command lets them be overridden.
func Defaults() Table {
	return NewTable(
		Rate{Model: "gemini-3.8-flash", InputPerMTok: 0.50, OutputPerMTok: 3.00,
			Source: "assumed list price (Gemini Flash tier)"},
		Rate{Model: "gemini-3.1-flash-lite", InputPerMTok: 0.25, OutputPerMTok: 1.50,
			Source: "assumed list price (Gemini Flash-Lite tier)"},
	)
}

// NewTable builds a table from rates; a later rate for a model wins.
func NewTable(rates ...Rate) Table {
	t := Table{rates: map[string]Rate{}}
	for _, r := range rates {
		t.rates[r.Model] = r
	}
	return t
}

// Rate returns the model's rate.
func (t Table) Rate(model string) (Rate, bool) {
	r, ok := t.rates[model]
	return r, ok
}

// Rates lists the table sorted by model.
func (t Table) Rates() []Rate {
	out := make([]Rate, 0, len(t.rates))
	for _, r := range t.rates {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// Override applies "model=input/output[,model=input/output]" (US dollars per
// million tokens) over the table and returns the result. A model priced
// twice is refused rather than silently taking the last price.
func (t Table) Override(spec string) (Table, error) {
	out := NewTable(t.Rates()...)
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	given := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		model, prices, ok := strings.Cut(strings.TrimSpace(part), "=")
		in, outp, ok2 := strings.Cut(prices, "/")
		if !ok || !ok2 || strings.TrimSpace(model) == "" {
			return Table{}, fmt.Errorf("price %q is not model=input/output (US dollars per million tokens)", part)
		}
		if given[strings.TrimSpace(model)] {
			return Table{}, fmt.Errorf("%s is priced twice; give each model once", strings.TrimSpace(model))
		}
		given[strings.TrimSpace(model)] = true
		i, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		o, err2 := strconv.ParseFloat(strings.TrimSpace(outp), 64)
		if err1 != nil || err2 != nil || !(i >= 0 && o >= 0) || math.IsInf(i, 0) || math.IsInf(o, 0) {
			return Table{}, fmt.Errorf("price %q needs two finite, non-negative numbers", part)
		}
		out.rates[strings.TrimSpace(model)] = Rate{Model: strings.TrimSpace(model), InputPerMTok: i, OutputPerMTok: o, Source: "given on the command line"}
	}
	return out, nil
}
