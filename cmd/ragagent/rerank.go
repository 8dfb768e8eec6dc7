package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/keyguard"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
)

// reranker is the rerank command with what it depends on made explicit, so
// tests can give it a key and a fixed clock.
type reranker struct {
	getenv func(string) string // where the API key comes from
	clock  func() time.Time
}

func cmdRerank(args []string, stdout, stderr io.Writer) int {
	return reranker{getenv: os.Getenv, clock: time.Now}.run(args, stdout, stderr)
}

type rerankFlags struct {
	asJSON                           bool
	listwise, crossEncoder, prices   string
	live                             bool
	ledger, budget, record, endpoint string
	allowance                        int
	in                               inputs
	corpus                           string
	candidates                       int
}

func (r reranker) run(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("rerank", "[--json] [--gemini FILE] [--cross-encoder FILE] [--price SPEC] [--max-input-bytes N] [--live --ledger FILE [--budget USD] [--record FILE] [--allowance N]] | [--json] --corpus PACK [--candidates N]", stderr)
	var f rerankFlags
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object (the three run records) instead of tables")
	fs.StringVar(&f.listwise, "gemini", "", "a Gemini listwise ragagent-recording/1 `file` to replay (default: the bundled recordings/rerank-gemini.json)")
	fs.StringVar(&f.crossEncoder, "cross-encoder", "", "a cross-encoder logits recording `file` to replay (default: the bundled recordings/rerank-cross-encoder.json)")
	fs.StringVar(&f.prices, "price", "", priceFlagHelp+" (the listwise reservations use "+engine.ListwiseModel+"'s)")
	fs.BoolVar(&f.live, "live", false, "rerank the development cases with live "+engine.ListwiseModel+" calls (paid: needs GOOGLE_API_KEY or GEMINI_API_KEY and --ledger)")
	fs.StringVar(&f.ledger, "ledger", "", "with --live, the spending ledger `file` (created if missing); each request's estimate is reserved in it before sending")
	fs.StringVar(&f.budget, "budget", "", "with --live, set the ledger's budget in US dollars (`USD`); required while the ledger has none")
	fs.StringVar(&f.record, "record", "", "with --live, the recording `file` every attempt is saved to (default ragagent-rerank-<time>.json); never overwritten")
	fs.IntVar(&f.allowance, "allowance", 4, "with --live, the request allowance (1-200), checked before every attempt")
	fs.StringVar(&f.endpoint, "endpoint", "", "with --live, for testing only: a loopback `URL` (127.0.0.0/8, ::1, localhost) to send to instead of the Gemini API")
	f.in = addInputFlag(fs)
	fs.StringVar(&f.corpus, "corpus", "", "rerank a pack's authored cases instead of the lab's frozen candidates: its lexical branch (bm25) and token coverage; "+corpusHelp)
	fs.IntVar(&f.candidates, "candidates", engine.MaxSearchK, fmt.Sprintf("with --corpus, lexical candidates per case (1-%d)", engine.MaxSearchK))
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ragagent rerank: %s\n", oneLine(err))
		return exitError
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "ragagent rerank: %s\n", msg)
		return exitUsage
	}
	if f.corpus != "" {
		other := ""
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "corpus" && fl.Name != "candidates" && fl.Name != "json" && fl.Name != "max-input-bytes" {
				other = fl.Name
			}
		})
		if other != "" {
			return usage("--" + other + " goes with the lab's frozen candidates, not with --corpus")
		}
		if err := f.in.check(); err != nil {
			return usage(err.Error())
		}
		return rerankPack(f, stdout, stderr)
	}
	liveOnly := false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ledger", "budget", "record", "allowance", "endpoint":
			liveOnly = true
		}
	})
	switch {
	case !f.live && liveOnly:
		return usage("--ledger, --budget, --record, --allowance and --endpoint go with --live")
	case f.live && f.listwise != "":
		return usage("--gemini replays a recording; it cannot go with --live")
	case f.live && f.ledger == "":
		return usage("--live needs --ledger FILE (the budget ledger)")
	}
	if err := f.in.check(); err != nil {
		return usage(err.Error())
	}
	prices, err := engine.PriceTable(priceHint, f.prices)
	if err != nil {
		return usage("--price: " + oneLine(err))
	}
	if _, ok := prices.Rate(engine.ListwiseModel); !ok {
		return fail(fmt.Errorf("the price table has no rate for %s, so no reservation can be estimated; give one with --price %s=input/output", engine.ListwiseModel, engine.ListwiseModel))
	}
	if f.live {
		if err := engine.CheckAllowance(f.allowance); err != nil {
			return fail(fmt.Errorf("--allowance: %w", err))
		}
		if _, err := engine.ResolveEndpoint(engine.ListwiseModel, f.endpoint); err != nil {
			return fail(fmt.Errorf("--endpoint: %w", err))
		}
	}
	e, err := engine.Open(engine.Options{Clock: r.clock, Allowance: f.allowance, Prices: &prices})
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	ctx := context.Background()

	var replayed engine.RerankRequest
	if replayed.CrossEncoder, err = f.in.flagRecording(f.crossEncoder, "--cross-encoder"); err != nil {
		return fail(err)
	}
	if !f.live {
		if replayed.Gemini, err = f.in.flagRecording(f.listwise, "--gemini"); err != nil {
			return fail(err)
		}
	}
	var live *engine.LiveRerankResult
	var recordPath string
	if f.live {
		if live, recordPath, err = r.rerankLive(ctx, e, f); err != nil {
			return fail(err)
		}
	}
	res, err := e.Rerank(ctx, replayed)
	if err != nil {
		return fail(err)
	}
	gem := res.Gemini
	if live != nil {
		gem = live.Gemini
	}
	printRerank(stdout, f, res, live, recordPath)
	if failed := gem.Failed(); len(failed) > 0 {
		var parts []string
		for _, c := range failed {
			parts = append(parts, c.CaseID+": "+c.Error.Error())
		}
		return fail(fmt.Errorf("%d of %d Gemini cases failed: %s", len(failed), len(gem.Cases), strings.Join(parts, "; ")))
	}
	return exitOK
}

// printRerank shows the three runs (the live Gemini run in place of the
// replayed one, with its ledger and recording), as tables or one JSON
// object.
func printRerank(w io.Writer, f rerankFlags, res *engine.RerankResult, live *engine.LiveRerankResult, recordPath string) {
	cov, gem, ce := res.Coverage, res.Gemini, res.CrossEncoder
	if live != nil {
		gem = live.Gemini
	}
	if f.asJSON {
		out := pyjson.NewObject("coverage", cov, "gemini", gem, "cross_encoder", ce)
		if live != nil {
			out.Set("ledger", ledgerValue(f.ledger, live)).Set("recording", recordPath)
		}
		fmt.Fprintln(w, pyjson.Dumps(out, pyjson.Options{Indent: 2, Strict: true}))
		return
	}
	printCoverage(w, cov)
	printListwise(w, res, gem)
	printCrossEncoder(w, ce)
	if live != nil {
		printLedger(w, f.ledger, live)
		fmt.Fprintf(w, "Recording: %s (replay it: ragagent rerank --gemini %s)\n", recordPath, recordPath)
	}
}

// rerankLive makes the live listwise run: it refuses before anything is
// sent, recorded or written when there is no key, and before anything is
// sent when the ledger has no budget, the allowance is too small or the
// run's reservations would pass the budget; it applies --budget, claims the
// recording file and saves every attempt to it as it happens.
func (r reranker) rerankLive(ctx context.Context, e *engine.Engine, f rerankFlags) (*engine.LiveRerankResult, string, error) {
	key, _ := httptransport.KeyFromEnv(r.getenv)
	g := keyguard.New(key)
	store := ledgerfile.File{Path: f.ledger, MaxBytes: *f.in.max, Check: func(data []byte) error { return g.Check(f.ledger, data) }}
	req := engine.LiveRerankRequest{Endpoint: f.endpoint, Transport: httptransport.New(key), Ledger: store}
	plan := func() (*engine.Refusal, error) {
		p, err := e.PlanRerank(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.ledger, err)
		}
		return p.Refusal, nil
	}
	// No key is refused before --budget touches the ledger.
	refusal, err := plan()
	if err != nil {
		return nil, "", err
	}
	if refusal != nil && refusal.Code == reason.MissingAPIKey {
		return nil, "", errors.New("--live needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
	}
	if f.budget != "" {
		usd, err := strconv.ParseFloat(f.budget, 64)
		if err != nil || usd < 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
			return nil, "", fmt.Errorf("--budget %q is not an amount of US dollars", f.budget)
		}
		if _, err := e.SetBudget(store, usd); err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.ledger, err)
		}
		if refusal, err = plan(); err != nil {
			return nil, "", err
		}
	}
	switch {
	case refusal == nil:
	case refusal.Code == "":
		if state, err := e.Ledger(store); err == nil && state.BudgetUSD == nil {
			return nil, "", fmt.Errorf("%s has no budget yet: give one with --budget USD", f.ledger)
		}
		return nil, "", fmt.Errorf("%s: %s", f.ledger, refusal.Message)
	default:
		return nil, "", fmt.Errorf("%s: %s", refusal.Code, refusal.Message)
	}
	path := f.record
	if path == "" {
		path = "ragagent-rerank-" + r.clock().UTC().Format("20060102T150405Z") + ".json"
	}
	out, err := newOutput(path, g)
	if err != nil {
		return nil, "", err
	}
	req.Save = out.save
	res, err := e.RerankLive(ctx, req)
	if err != nil {
		if !out.created {
			return nil, path, err // refused before anything was recorded or sent
		}
		return nil, path, fmt.Errorf("%w (the recording %s keeps every attempt made)", err, path)
	}
	return res, path, nil
}

// flagRecording reads a recording named by a flag; "" is the bundled one
// (nil).
func (in inputs) flagRecording(path, flagName string) (*recording.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := in.recording(path)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return f, err
}

func ledgerValue(path string, live *engine.LiveRerankResult) *pyjson.Object {
	l := live.Ledger
	return pyjson.NewObject("file", path, "budget_usd", l.BudgetUSD, "spent_usd", l.SpentUSD,
		"remaining_usd", l.RemainingUSD, "entries", l.Entries)
}

// num is a float as Python prints it, so the tables show the record's digits.
func num(x float64) string { return pyjson.FloatRepr(x) }

func optNum(p *float64) string {
	if p == nil {
		return "-"
	}
	return num(*p)
}

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func terms(ts []string) string {
	if len(ts) == 0 {
		return "-"
	}
	return strings.Join(ts, ", ")
}

func printCandidates(w io.Writer, cands []rerank.Candidate) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Source\tVersion\tLexical rank\tLexical score\tVector rank\tVector score\tLexical RRF\tVector RRF\tFused score")
	for _, c := range cands {
		f := c.Fusion
		if f == nil {
			f = &rerank.Fusion{}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.SourceID, c.Version, optInt(f.LexicalRank), optNum(f.LexicalScore),
			optInt(f.VectorRank), optNum(f.VectorScore), optNum(f.LexicalContribution), optNum(f.VectorContribution), optNum(f.FusedScore))
	}
	tw.Flush()
}

// printCovered is the seed's table: source, incoming rank, matched terms,
// coverage, reranked position.
func printCovered(w io.Writer, rows []rerank.Covered) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Source\tIncoming rank\tMatched terms\tCoverage\tReranked position")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\n", r.SourceID, r.IncomingRank, terms(r.Features.MatchedTokens), num(r.CoverageScore), r.RerankRank)
	}
	tw.Flush()
}

func printCoverage(w io.Writer, rec *rerank.CoverageRecord) {
	c := rec.Configuration
	fmt.Fprintf(w, "Coverage reranking of hybrid candidates (snapshot %s; rank constant %d, candidate budget %d, rerank k %d; score: %s; ties: %s)\n",
		rec.SnapshotID[:12], c.RankConstant, c.CandidateBudget, c.RerankK, c.Score, c.Tie)
	for _, d := range rec.DevelopmentCases {
		fmt.Fprintf(w, "\n%s (version %s): %s\n", d.CaseID, d.RequestedVersion, d.Query)
		printCandidates(w, d.Before)
		fmt.Fprintln(w)
		printCovered(w, d.After)
	}
	m := rec.MechanismCheck
	fmt.Fprintf(w, "\nMechanism check (%s): %s\n  before: %s\n  after:  %s\n", m.Scope, m.Query,
		strings.Join(rerank.Sources(m.Before), ", "), strings.Join(rerank.Sources(m.After), ", "))
	d := rec.UnfilteredDiagnostic
	fmt.Fprintf(w, "\nUnfiltered read/write diagnostic (every version, every chunk kept): %s\n", d.Query)
	printCandidates(w, d.Before)
	fmt.Fprintln(w)
	printCovered(w, d.After)
	fmt.Fprintf(w, "\nEmpty candidates give %d reranked rows; an altered candidate is refused with %s.\n", len(rec.EmptyCandidates), rec.AlteredCandidateRefusal)
	fmt.Fprintf(w, "Limit: %s\n", rec.Limit)
}

func printListwise(w io.Writer, res *engine.RerankResult, gem *rerank.GeminiRecord) {
	ce, rate := res.CrossEncoder, res.Rate
	fmt.Fprintf(w, "\nGemini listwise and cross-encoder orders of the same frozen candidates (%s, %s)\n", gem.Model, gem.ExecutionMode)
	scored := map[string][]rerank.Scored{}
	for _, c := range ce.Original {
		scored[c.CaseID] = c.CrossEncoder
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Case\tIncoming\tCoverage\tGemini\tCross-encoder")
	for _, c := range gem.Cases {
		order := strings.Join(rerank.Sources(c.Gemini), ", ")
		if c.Error != nil {
			order = "refused: " + string(c.Error.Code)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.CaseID, strings.Join(rerank.Sources(c.Before), ", "),
			strings.Join(rerank.Sources(c.Coverage), ", "), order, strings.Join(rerank.Sources(scored[c.CaseID]), ", "))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n  Requests (the reservation a live run makes first: every body byte as an input token at $%s/M, plus %d output tokens at $%s/M; an estimate, not a bill)\n",
		num(rate.InputPerMTok), engine.MaxOutputTokens(), num(rate.OutputPerMTok))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Case\tRequest bytes\tRequest sha256\tReserved estimate (USD)")
	for _, c := range gem.Calls {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", c.CaseID, c.RequestBytes, c.RequestSHA256, num(c.EstimatedUSD))
	}
	tw.Flush()
}

func outcome(o rerank.Outcome) string {
	switch {
	case o.Top1Hit == nil:
		return string(o.Reason)
	case *o.Top1Hit:
		return "hit (RR " + num(o.ReciprocalRank) + ")"
	}
	return "miss (RR " + num(o.ReciprocalRank) + ")"
}

func printCrossEncoder(w io.Writer, ce *rerank.CrossEncoderRecord) {
	model, _ := ce.Model.(*pyjson.Object)
	name, _ := model.Get("model")
	revision, _ := model.Get("revision")
	fmt.Fprintf(w, "\nCross-encoder logits (%v at %v, %s; raw logits, not probabilities)\n", name, revision, ce.ExecutionMode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Case\tSource\tIncoming rank\tLogit\tCross-encoder rank")
	for _, c := range ce.Original {
		for i, r := range c.CrossEncoder {
			caseID := c.CaseID
			if i > 0 {
				caseID = ""
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d\n", caseID, r.SourceID, r.IncomingRank, num(r.CrossEncoderLogit), r.CrossEncoderRank)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nExpanded cases (every version-eligible passage is a candidate; cases file sha256 %s)\n", ce.CasesSHA256[:12])
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Case\tSplit\tStratum\tVersion\tTargets\tCoverage order\tCoverage\tCross-encoder order\tCross-encoder")
	for _, c := range ce.Expanded {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.CaseID, c.Split, c.Stratum, c.Version, terms(c.TargetSources),
			strings.Join(rerank.Sources(c.Coverage), ", "), outcome(c.Outcome.Coverage),
			strings.Join(rerank.Sources(c.CrossEncoder), ", "), outcome(c.Outcome.CrossEncoder))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nSummary by split and scorer (unsupported questions are outside the denominator)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Split\tScorer\tAnswerable\tTop-1 hits\tMRR")
	for _, sp := range []struct {
		name string
		s    rerank.SplitSummary
	}{{"diagnostic", ce.Summary.Diagnostic}, {"validation", ce.Summary.Validation}} {
		for _, sc := range []struct {
			name string
			t    rerank.Tally
		}{{"coverage", sp.s.Coverage}, {"cross_encoder", sp.s.CrossEncoder}} {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", sp.name, sc.name, sc.t.Answerable, sc.t.Top1Hits, optNum(sc.t.MRR))
		}
	}
	tw.Flush()
}

func printLedger(w io.Writer, path string, live *engine.LiveRerankResult) {
	l, rate := live.Ledger, live.Rate
	fmt.Fprintf(w, "\nLedger %s: budget $%s, reserved $%s, remaining $%s (%d reservations; %s at $%s/$%s per M tokens, %s)\n",
		path, optNum(l.BudgetUSD), num(l.SpentUSD), optNum(l.RemainingUSD), len(l.Entries), rate.Model, num(rate.InputPerMTok), num(rate.OutputPerMTok), rate.Source)
}

// rerankPack is rerank --corpus: a pack's cases through the lexical branch
// and coverage, with the plain note that a pack has no vectors to fuse.
func rerankPack(f rerankFlags, stdout, stderr io.Writer) int {
	e, err := engine.Open(engine.Options{Packs: knownPacks()})
	if err != nil {
		fmt.Fprintf(stderr, "ragagent rerank: %s\n", oneLine(err))
		return exitError
	}
	defer e.Close()
	id, err := openCorpus(e, f.in, f.corpus)
	if err == nil {
		var res *rerank.PackRerankResult
		if res, err = e.RerankPack(context.Background(), engine.PackRerankRequest{Corpus: id, Candidates: f.candidates}); err == nil {
			if f.asJSON {
				return writeJSON(stdout, stderr, "rerank", res)
			}
			printPackRerank(stdout, res)
			return exitOK
		}
	}
	fmt.Fprintf(stderr, "ragagent rerank: %s\n", oneLine(err))
	return exitError
}

func printPackRerank(w io.Writer, res *rerank.PackRerankResult) {
	fmt.Fprintf(w, "Rerank over the pack %s: %d lexical candidates per case.\nNo fusion: %s.\n\n", res.Corpus, res.Candidates, res.Note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tlexical top-1\tlexical RR\tcoverage top-1\tcoverage RR\tcoverage first")
	for _, c := range res.Cases {
		first := "-"
		if len(c.Coverage) > 0 {
			first = c.Coverage[0].SourceID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.CaseID, hitText(c.Outcomes["lexical"]), rrText(c.Outcomes["lexical"]),
			hitText(c.Outcomes["coverage"]), rrText(c.Outcomes["coverage"]), first)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "order\tanswerable\ttop-1 hits\tMRR")
	for _, name := range []string{"lexical", "coverage"} {
		t := res.Summary[name]
		mrr := "-"
		if t.MRR != nil {
			mrr = strconv.FormatFloat(*t.MRR, 'f', 3, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", name, t.Answerable, t.Top1Hits, mrr)
	}
	tw.Flush()
}

func hitText(o rerank.Outcome) string {
	if o.Top1Hit == nil {
		return "no target"
	}
	return strconv.FormatBool(*o.Top1Hit)
}

func rrText(o rerank.Outcome) string {
	if o.Top1Hit == nil {
		return "-"
	}
	return strconv.FormatFloat(o.ReciprocalRank, 'f', 3, 64)
}
