package reranklab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/price"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// LiveRankerConfig is what a live listwise run needs.
type LiveRankerConfig struct {
	Transport gemini.Transport  // holds the key; the core never sees it
	Allowance *gemini.Allowance // the process-wide request allowance
	Endpoint  string            // "" for ListwiseModel's API URL; a loopback fake for tests
	// Record saves every attempt (a recording.TrialLog's Record); an error
	// stops the run.
	Record func(gemini.Attempt) error
	Ledger *budget.Ledger
	Rate   price.Rate // ListwiseModel's price, from a visible, overridable table
}

// LiveRanker is the listwise model called for real: the agent's live model
// (gemini.LiveRanker: body cap, allowance, key check, one attempt with a timeout,
// no retry, no redirect, every attempt recorded) for ListwiseModel, with a
// ledger in front of it. A request the live model would refuse without
// sending reserves nothing; any other has its estimate reserved, and
// saved, before it is sent, and the reservation stays whatever happens.
type LiveRanker struct {
	model  *gemini.Client
	ledger *budget.Ledger
	rate   price.Rate
	// pending is the reservation of the request in flight (0: none made).
	pending  int
	question string
}

// NewLiveRanker builds the live listwise model.
func NewLiveRanker(c LiveRankerConfig) (*LiveRanker, error) {
	if c.Ledger == nil {
		return nil, errors.New("live listwise model: a ledger is required")
	}
	m, err := gemini.NewClientFor(ListwiseModel, c.Transport, c.Allowance, c.Endpoint, c.Record)
	if err != nil {
		return nil, err
	}
	l := &LiveRanker{model: m, ledger: c.Ledger, rate: c.Rate}
	m.BeforeSend = l.reserve
	return l, nil
}

// Endpoint is the URL requests go to.
func (l *LiveRanker) Endpoint() string { return l.model.Endpoint() }

// Decide sends the request through the live model, which reserves its
// estimate in the ledger once its own checks pass (budget_exceeded when it
// would pass the budget: nothing is sent); the reservation is then settled
// as completed or with the failure's code, and kept either way.
func (l *LiveRanker) Decide(ctx context.Context, p model.Prompt, timeout time.Duration) (model.Reply, error) {
	l.pending, l.question = 0, question(p)
	reply, failure := l.model.Decide(ctx, p, timeout)
	if l.pending == 0 {
		return reply, failure // refused before sending: nothing was reserved
	}
	outcome := budget.Completed
	if failure != nil {
		outcome = "failed: " + failure.Error()
		if code, ok := reason.Of(failure); ok {
			outcome = string(code)
		}
	}
	if err := l.ledger.Settle(l.pending, outcome); err != nil {
		return model.Reply{}, errors.Join(failure, fmt.Errorf("the request was sent: %w", err))
	}
	return reply, failure
}

// reserve is the live model's BeforeSend: the estimate for exactly the body
// about to be sent, saved before it is sent.
func (l *LiveRanker) reserve(body []byte) error {
	sum := sha256.Sum256(body)
	seq, err := l.ledger.Reserve(budget.Request{Label: "rerank listwise: " + l.question, Model: ListwiseModel,
		RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(body),
		EstimatedUSD: budget.Estimate(l.rate, len(body), gemini.MaxOutputTokens())})
	if err != nil {
		return err
	}
	l.pending = seq
	return nil
}

// question is the question a listwise prompt carries, for the ledger.
func question(p model.Prompt) string {
	v, _ := pyjson.Decode(p.State)
	q, _ := get(objectOf(v), "question").(string)
	if r := []rune(q); len(r) > 80 {
		q = string(r[:80]) + "…"
	}
	return q
}

// LiveTrialID names the one trial of a live run's recording.
const LiveTrialID = "rerank-live"

// LiveConfig is the generation config a live rerank's recording names.
func LiveConfig() *pyjson.Object { return pyjson.NewObject("generationConfig", gemini.Config()) }

// LiveTrial is the one trial of a live rerank's recording: its exchanges
// are the run's attempts in case order, which is what Replay answers from
// (ragagent rerank --gemini FILE, or the page).
func LiveTrial() recording.Trial {
	return recording.Trial{ID: LiveTrialID, Split: "development", Repeat: 1, Mode: "listwise"}
}
