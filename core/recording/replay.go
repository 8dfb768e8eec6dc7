package recording

import (
	"context"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Replayer is an model.Model that answers from one trial's exchanges, in
// order, and only for the request each one recorded.
type Replayer struct {
	trial     string
	exchanges []Exchange
	next      int
}

// NewReplayer replays a trial's exchanges.
func NewReplayer(t Trial) *Replayer {
	return &Replayer{trial: t.ID, exchanges: t.Exchanges}
}

// Used is how many exchanges have been handed out.
func (r *Replayer) Used() int { return r.next }

// Decide returns the next recorded reply if the prompt's request body equals
// the recorded request as a JSON value; otherwise replay_request_mismatch,
// naming the trial, the exchange, the first differing JSON path and the
// first differing characters of both sides. A recorded failure ends the run
// with the code the live run ended with (gemini.AttemptReason):
// model_transport_failed:<kind> for a transport kind (or a reference
// exception name), and provider_response_bytes_limit, invalid_model_json or
// cancelled for an attempt recorded with that code.
func (r *Replayer) Decide(_ context.Context, p model.Prompt, _ time.Duration) (model.Reply, error) {
	response, err := r.Answer(gemini.Payload(p))
	if err != nil {
		return model.Reply{}, err
	}
	return gemini.Decode(response)
}

// Answer hands out the next recorded response for request, whatever the
// model behind it (a generateContent body, a cross-encoder's pairs): the
// request must equal the recorded one as a JSON value, else
// replay_request_mismatch with the first difference; an error exchange
// replays as the code the live attempt ended with (gemini.AttemptReason);
// past the last exchange, replay_exhausted.
func (r *Replayer) Answer(request any) (any, error) {
	if r.next >= len(r.exchanges) {
		return nil, reason.New(reason.ReplayExhausted,
			"trial %s: model call %d has no recorded exchange (the recording has %d)", r.trial, r.next+1, len(r.exchanges))
	}
	ex := r.exchanges[r.next]
	if d, same := pyjson.Diff(request, ex.Request); !same {
		return nil, reason.New(reason.ReplayRequestMismatch,
			"trial %s, exchange %d: the request differs at %s: this run sent %s, the recording has %s",
			r.trial, r.next+1, d.Path, d.Got, d.Want)
	}
	r.next++
	if ex.Error != "" {
		detail := fmt.Sprintf("trial %s, exchange %d", r.trial, r.next)
		if ex.HTTPStatus != 0 {
			detail += fmt.Sprintf(": HTTP %d", ex.HTTPStatus)
		}
		if ex.Pending {
			detail += ": sent " + ex.SentAt + "; the recording process stopped before its reply was recorded"
		}
		return nil, reason.New(gemini.AttemptReason(ex.Error), "%s (recorded)", detail)
	}
	return ex.Response, nil
}
