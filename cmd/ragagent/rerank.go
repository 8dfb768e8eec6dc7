package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/reranklab"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/httptransport"
	"github.com/ragagentlab/ragagent/internal/ledgerfile"
	"github.com/ragagentlab/ragagent/recordings"
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
}

func (r reranker) run(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("rerank", "[--json] [--gemini FILE] [--cross-encoder FILE] [--price SPEC] [--live --ledger FILE [--budget USD] [--record FILE] [--allowance N]]", stderr)
	var f rerankFlags
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object (the three run records) instead of tables")
	fs.StringVar(&f.listwise, "gemini", "", "a Gemini listwise ragagent-recording/1 `file` to replay (default: the bundled recordings/rerank-gemini.json)")
	fs.StringVar(&f.crossEncoder, "cross-encoder", "", "a cross-encoder logits recording `file` to replay (default: the bundled recordings/rerank-cross-encoder.json)")
	fs.StringVar(&f.prices, "price", "", priceFlagHelp+" (the listwise reservations use "+reranklab.ListwiseModel+"'s)")
	fs.BoolVar(&f.live, "live", false, "rerank the development cases with live "+reranklab.ListwiseModel+" calls (paid: needs GOOGLE_API_KEY or GEMINI_API_KEY and --ledger)")
	fs.StringVar(&f.ledger, "ledger", "", "with --live, the spending ledger `file` (created if missing); each request's estimate is reserved in it before sending")
	fs.StringVar(&f.budget, "budget", "", "with --live, set the ledger's budget in US dollars (`USD`); required while the ledger has none")
	fs.StringVar(&f.record, "record", "", "with --live, the recording `file` every attempt is saved to (default ragagent-rerank-<time>.json); never overwritten")
	fs.IntVar(&f.allowance, "allowance", 4, "with --live, the request allowance (1-200), checked before every attempt")
	fs.StringVar(&f.endpoint, "endpoint", "", "with --live, for testing only: a loopback `URL` (127.0.0.0/8, ::1, localhost) to send to instead of the Gemini API")
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
	rate, err := rateFor(f.prices, reranklab.ListwiseModel)
	if err != nil {
		return usage("--price: " + oneLine(err))
	}
	if rate == nil {
		return fail(fmt.Errorf("the price table has no rate for %s, so no reservation can be estimated; give one with --price %s=input/output", reranklab.ListwiseModel, reranklab.ListwiseModel))
	}

	s, err := reranklab.Open(reranklab.Inputs{Snapshot: fixtures.RerankSnapshot, Vectors: fixtures.RerankVectors,
		Development: fixtures.RerankDevelopment, Expanded: fixtures.RerankExpanded})
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	ctx := context.Background()

	var (
		model      model.Model
		mode       = reranklab.ListwiseReplayMode
		ledger     *budget.Ledger
		recordPath string
	)
	if f.live {
		var live *reranklab.LiveRanker
		if live, ledger, recordPath, err = r.liveModel(f, *rate); err != nil {
			return fail(err)
		}
		model, mode = live, reranklab.ListwiseLiveMode
	} else {
		file, err := loadRecording(f.listwise, recordings.RerankGemini, "--gemini")
		if err != nil {
			return fail(err)
		}
		model = reranklab.NewReplay(file)
	}
	encFile, err := loadRecording(f.crossEncoder, recordings.RerankCrossEncoder, "--cross-encoder")
	if err != nil {
		return fail(err)
	}

	cov, err := s.Coverage(ctx)
	if err != nil {
		return fail(err)
	}
	gem, err := s.Gemini(ctx, model, mode, *rate)
	if err != nil {
		if recordPath != "" {
			err = fmt.Errorf("%w (the recording %s keeps every attempt made)", err, recordPath)
		}
		return fail(err)
	}
	ce, err := s.CrossEncoder(ctx, reranklab.NewRecordedEncoder(encFile))
	if err != nil {
		return fail(fmt.Errorf("cross-encoder: %w", err))
	}

	if f.asJSON {
		out := pyjson.NewObject("coverage", cov, "gemini", gem, "cross_encoder", ce)
		if ledger != nil {
			out.Set("ledger", ledgerValue(f.ledger, ledger)).Set("recording", recordPath)
		}
		fmt.Fprintln(stdout, pyjson.Dumps(out, pyjson.Options{Indent: 2, Strict: true}))
	} else {
		printCoverage(stdout, cov)
		printListwise(stdout, gem, ce, *rate)
		printCrossEncoder(stdout, ce)
		if ledger != nil {
			printLedger(stdout, f.ledger, ledger, *rate)
			fmt.Fprintf(stdout, "Recording: %s (replay it: ragagent rerank --gemini %s)\n", recordPath, recordPath)
		}
	}
	if failed := gem.Failed(); len(failed) > 0 {
		var parts []string
		for _, c := range failed {
			parts = append(parts, c.CaseID+": "+c.Error.Error())
		}
		return fail(fmt.Errorf("%d of %d Gemini cases failed: %s", len(failed), len(gem.Cases), strings.Join(parts, "; ")))
	}
	return exitOK
}

// liveModel sets up the live listwise model, refusing before anything is
// sent when there is no key, the ledger cannot be used or has no budget, or
// the recording file exists; every attempt is then saved to the recording
// as it happens.
func (r reranker) liveModel(f rerankFlags, rate price.Rate) (*reranklab.LiveRanker, *budget.Ledger, string, error) {
	key, _ := httptransport.KeyFromEnv(r.getenv)
	if key == "" {
		return nil, nil, "", fmt.Errorf("--live needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment; nothing was sent")
	}
	allowance, err := gemini.NewAllowance(f.allowance)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--allowance: %w", err)
	}
	endpoint, err := gemini.ResolveModelEndpoint(reranklab.ListwiseModel, f.endpoint)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--endpoint: %w", err)
	}
	ledger, err := r.openLedger(f)
	if err != nil {
		return nil, nil, "", err
	}
	began := r.clock().UTC()
	path := f.record
	if path == "" {
		path = "ragagent-rerank-" + began.Format("20060102T150405Z") + ".json"
	}
	if err := claim(path); err != nil {
		return nil, nil, "", err
	}
	_, log, err := reranklab.NewLiveRecording(endpoint, began, func(data []byte) error { return replaceFile(path, data) })
	if err != nil {
		return nil, nil, "", err
	}
	live, err := reranklab.NewLiveRanker(reranklab.LiveRankerConfig{Transport: httptransport.New(key), Allowance: allowance, Endpoint: endpoint,
		Record: log.Record, Ledger: ledger, Rate: rate})
	return live, ledger, path, err
}

// openLedger opens the --ledger file and applies --budget.
func (r reranker) openLedger(f rerankFlags) (*budget.Ledger, error) {
	ledger, err := budget.Open(ledgerfile.File{Path: f.ledger}, r.clock)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.ledger, err)
	}
	if f.budget != "" {
		usd, err := strconv.ParseFloat(f.budget, 64)
		if err != nil || usd < 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
			return nil, fmt.Errorf("--budget %q is not an amount of US dollars", f.budget)
		}
		if err := ledger.SetBudget(usd); err != nil {
			return nil, fmt.Errorf("%s: %w", f.ledger, err)
		}
	}
	if _, ok := ledger.Budget(); !ok {
		return nil, fmt.Errorf("%s has no budget yet: give one with --budget USD", f.ledger)
	}
	return ledger, nil
}

func loadRecording(path string, bundled []byte, flagName string) (*recording.File, error) {
	data := bundled
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
	}
	file, err := recording.Parse(data)
	if err != nil && path != "" {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file, err
}

func ledgerValue(path string, l *budget.Ledger) *pyjson.Object {
	b, _ := l.Budget()
	return pyjson.NewObject("file", path, "budget_usd", b, "spent_usd", l.Spent(), "remaining_usd", l.Remaining(), "entries", l.Entries())
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

func printCoverage(w io.Writer, rec *reranklab.CoverageRecord) {
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
	fmt.Fprintf(w, "\nMechanism check (%s): %s\n  before: %s\n  after:  %s\n", reranklab.MechanismScope, m.Query,
		strings.Join(rerank.Sources(m.Before), ", "), strings.Join(rerank.Sources(m.After), ", "))
	d := rec.UnfilteredDiagnostic
	fmt.Fprintf(w, "\nUnfiltered read/write diagnostic (every version, every chunk kept): %s\n", d.Query)
	printCandidates(w, d.Before)
	fmt.Fprintln(w)
	printCovered(w, d.After)
	fmt.Fprintf(w, "\nEmpty candidates give %d reranked rows; an altered candidate is refused with %s.\n", len(rec.EmptyCandidates), rec.AlteredCandidateRefusal)
	fmt.Fprintf(w, "Limit: %s\n", rec.Limit)
}

func printListwise(w io.Writer, gem *reranklab.GeminiRecord, ce *reranklab.CrossEncoderRecord, rate price.Rate) {
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
		num(rate.InputPerMTok), reranklab.MaxOutputTokens(), num(rate.OutputPerMTok))
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

func printCrossEncoder(w io.Writer, ce *reranklab.CrossEncoderRecord) {
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
		s    reranklab.SplitSummary
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

func printLedger(w io.Writer, path string, l *budget.Ledger, rate price.Rate) {
	b, _ := l.Budget()
	fmt.Fprintf(w, "\nLedger %s: budget $%s, reserved $%s, remaining $%s (%d reservations; %s at $%s/$%s per M tokens, %s)\n",
		path, num(b), num(l.Spent()), num(l.Remaining()), len(l.Entries()), rate.Model, num(rate.InputPerMTok), num(rate.OutputPerMTok), rate.Source)
}
