package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// LiveConfig is what a live listwise run needs.
type LiveConfig struct {
	Transport gemini.Transport  // holds the key; the core never sees it
	Allowance *gemini.Allowance // the process-wide request allowance
	Endpoint  string            // "" for ListwiseModel's API URL; a loopback fake for tests
	// Record saves every attempt (a recording.TrialLog's Record); an error
	// stops the run.
	Record func(gemini.Attempt) error
	Ledger *budget.Ledger
	Rate   price.Rate // ListwiseModel's price, from a visible, overridable table
}

// Live is the listwise model called for real: the agent's live model
// (gemini.Live: body cap, allowance, key check, one attempt with a timeout,
// no retry, no redirect, every attempt recorded) for ListwiseModel, with a
// ledger in front of it. A request the live model would refuse without
// sending reserves nothing; any other has its estimate reserved, and
// saved, before it is sent, and the reservation stays whatever happens.
type Live struct {
	model     *gemini.Live
	transport gemini.Transport
	allowance *gemini.Allowance
	ledger    *budget.Ledger
	rate      price.Rate
}

// NewLive builds the live listwise model.
func NewLive(c LiveConfig) (*Live, error) {
	if c.Ledger == nil {
		return nil, errors.New("live listwise model: a ledger is required")
	}
	m, err := gemini.NewLiveFor(ListwiseModel, c.Transport, c.Allowance, c.Endpoint, c.Record)
	if err != nil {
		return nil, err
	}
	return &Live{model: m, transport: c.Transport, allowance: c.Allowance, ledger: c.Ledger, rate: c.Rate}, nil
}

// Endpoint is the URL requests go to.
func (l *Live) Endpoint() string { return l.model.Endpoint() }

// Decide reserves the request's estimate (budget_exceeded when it would
// pass the budget: nothing is sent) and then sends it through the live
// model; the reservation's outcome is completed or the failure's code.
func (l *Live) Decide(ctx context.Context, p agent.Prompt, timeout time.Duration) (agent.Reply, error) {
	body := gemini.Body(gemini.Payload(p))
	if len(body) > gemini.MaxRequestBytes || l.allowance.Used() >= l.allowance.Limit() || !l.transport.HasKey() || ctx.Err() != nil {
		// The live model refuses these before sending: nothing to pay for.
		return l.model.Decide(ctx, p, timeout)
	}
	sum := sha256.Sum256(body)
	seq, err := l.ledger.Reserve(budget.Request{Label: "rerank listwise: " + question(p), Model: ListwiseModel,
		RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(l.rate, len(body), MaxOutputTokens())})
	if err != nil {
		return agent.Reply{}, err
	}
	reply, failure := l.model.Decide(ctx, p, timeout)
	outcome := budget.Completed
	if failure != nil {
		outcome = "failed: " + failure.Error()
		if code, ok := reason.Of(failure); ok {
			outcome = string(code)
		}
	}
	if err := l.ledger.Settle(seq, outcome); err != nil {
		return agent.Reply{}, errors.Join(failure, fmt.Errorf("the request was sent: %w", err))
	}
	return reply, failure
}

// question is the question a listwise prompt carries, for the ledger.
func question(p agent.Prompt) string {
	v, _ := pyjson.Decode(p.State)
	q, _ := get(objectOf(v), "question").(string)
	if r := []rune(q); len(r) > 80 {
		q = string(r[:80]) + "…"
	}
	return q
}

// LiveTrialID names the one trial of a live run's recording.
const LiveTrialID = "rerank-live"

// NewLiveRecording starts the recording of a live listwise run: the
// listwise model, the endpoint and generation config, and one trial whose
// exchanges are the run's attempts in case order, which is what Replay
// answers from (ragagent rerank --gemini FILE, or the page). save gets the
// whole file after every attempt; pass the trial log's Record as
// LiveConfig.Record.
func NewLiveRecording(endpoint string, began time.Time, save func([]byte) error) (*recording.Recorder, *recording.TrialLog, error) {
	rec, err := recording.NewRecorder(recording.File{Model: ListwiseModel, Endpoint: endpoint,
		Config: pyjson.NewObject("generationConfig", gemini.Config()), RecordedAt: began.UTC().Format(time.RFC3339Nano)}, save)
	if err != nil {
		return nil, nil, err
	}
	log, err := rec.Begin(recording.Trial{ID: LiveTrialID, Split: "development", Repeat: 1, Mode: "listwise"})
	if err != nil {
		return nil, nil, err
	}
	return rec, log, nil
}
