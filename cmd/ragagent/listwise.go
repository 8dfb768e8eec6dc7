package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
)

// listwiseFlags are retrieval's flags for configurations with a Gemini
// listwise stage: live calls through a ledger, or a recording replayed.
type listwiseFlags struct {
	live                           bool
	ledger, budget, record, replay string
	endpoint                       string
}

func addListwiseFlags(fs *flag.FlagSet) *listwiseFlags {
	f := &listwiseFlags{}
	fs.BoolVar(&f.live, "live", false, "run the listwise stages' Gemini calls (paid: needs GOOGLE_API_KEY or GEMINI_API_KEY and --ledger); the plan is shown and checked first")
	fs.StringVar(&f.ledger, "ledger", "", "with --live, the spending ledger `file` (created if missing); each request's estimate is reserved in it before sending")
	fs.StringVar(&f.budget, "budget", "", "with --live, set the ledger's budget in US dollars (`USD`); required while the ledger has none")
	fs.StringVar(&f.record, "record", "", "with --live, the recording `file` every attempt is saved to (default ragagent-retrieval-<time>.json); never overwritten")
	fs.StringVar(&f.endpoint, "endpoint", "", "with --live, for testing only: a loopback `URL` (127.0.0.0/8, ::1, localhost) to send to instead of the Gemini API")
	fs.StringVar(&f.replay, "gemini", "", "replay the listwise stages from a recording `file` --live made (a changed request is refused)")
	return f
}

// check refuses flags that do not go together.
func (f *listwiseFlags) check(fs *flag.FlagSet) error {
	liveOnly := ""
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ledger", "budget", "record", "endpoint":
			liveOnly = fl.Name
		}
	})
	switch {
	case !f.live && liveOnly != "":
		return fmt.Errorf("--%s goes with --live", liveOnly)
	case f.live && f.replay != "":
		return errors.New("--gemini replays a recording; it cannot go with --live")
	case f.live && f.ledger == "":
		return errors.New("--live needs --ledger FILE (the spending ledger)")
	}
	return nil
}

// run is the request's ListwiseRun (nil without --live or --gemini), and
// the recording's path for a live one. A live run without a key is
// refused before anything is read or written; --budget is applied to the
// ledger; the recording file is claimed and every attempt saved to it.
func (f *listwiseFlags) run(e *engine.Engine, in inputs, getenv func(string) string, now time.Time, stderr io.Writer) (*engine.ListwiseRun, *output, error) {
	if f.replay != "" {
		rec, err := in.flagRecording(f.replay, "--gemini")
		if err != nil {
			return nil, nil, err
		}
		return &engine.ListwiseRun{Replay: rec, OnPlan: f.showPlan(stderr)}, nil, nil
	}
	if !f.live {
		return nil, nil, nil
	}
	key, _ := httptransport.KeyFromEnv(getenv)
	if key == "" {
		return nil, nil, errors.New("--live needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
	}
	if _, err := engine.ResolveEndpoint(engine.ListwiseModel, f.endpoint); err != nil {
		return nil, nil, fmt.Errorf("--endpoint: %w", err)
	}
	g := keyguard.New(key)
	store := ledgerfile.File{Path: f.ledger, MaxBytes: *in.max, Check: func(data []byte) error { return g.Check(f.ledger, data) }}
	if f.budget != "" {
		usd, err := strconv.ParseFloat(f.budget, 64)
		if err != nil || usd < 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
			return nil, nil, fmt.Errorf("--budget %q is not an amount of US dollars", f.budget)
		}
		if _, err := e.SetBudget(store, usd); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.ledger, err)
		}
	}
	path := f.record
	if path == "" {
		path = "ragagent-retrieval-" + now.UTC().Format("20060102T150405Z") + ".json"
	}
	out, err := newOutput(path, g)
	if err != nil {
		return nil, nil, err
	}
	progress := newCounter(stderr, "listwise", "requests")
	return &engine.ListwiseRun{Transport: httptransport.New(key), Endpoint: f.endpoint, Ledger: store, Save: out.save,
		OnPlan: f.showPlan(stderr), OnCall: progress.step}, out, nil
}

// showPlan prints the listwise plan before anything is sent.
func (f *listwiseFlags) showPlan(w io.Writer) func(*engine.ListwisePlan) error {
	return func(p *engine.ListwisePlan) error {
		if p.Replay {
			fmt.Fprintf(w, "listwise: replaying %d requests to %s from %s\n", len(p.Calls), p.Model, f.replay)
			return nil
		}
		fmt.Fprintf(w, "listwise: %d requests to %s at %s, %s reserved in all; ledger %s: budget %s, remaining %s\n",
			len(p.Calls), p.Model, p.Endpoint, usd(&p.TotalUSD), f.ledger, dollars(p.Ledger.BudgetUSD), dollars(p.Ledger.RemainingUSD))
		return nil
	}
}

// report says what the listwise stages did, on stderr: requests, the
// ledger after them, the cases whose reply was refused, the recording.
func (f *listwiseFlags) report(w io.Writer, res *engine.RetrievalResult, out *output) {
	lw := res.Listwise
	if lw == nil {
		if f.live || f.replay != "" {
			fmt.Fprintln(w, "listwise: no configuration has a listwise stage; nothing was sent")
		}
		return
	}
	for _, r := range lw.Refused {
		fmt.Fprintf(w, "listwise: %s, case %s: %s: %s (ranked in first-stage order)\n", r.Config, r.CaseID, r.Code, r.Detail)
	}
	if l := lw.Ledger; l != nil {
		fmt.Fprintf(w, "listwise: %d requests sent; ledger %s: budget %s, reserved %s, remaining %s\n",
			lw.Requests, f.ledger, dollars(l.BudgetUSD), dollars(&l.SpentUSD), dollars(l.RemainingUSD))
	}
	if out != nil && out.created {
		fmt.Fprintf(w, "listwise: recording %s (replay it: ragagent retrieval ... --gemini %s)\n", out.path, out.path)
	}
}

// dollars is a ledger's amount for people ("-": none).
func dollars(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *p)
}
