package reranklab

import (
	"context"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/rerank"
)

// Replay serves a recording's exchanges in order, trial after trial, each
// only for the request it recorded (recording.Replayer's exact-request
// match, with its mismatch message naming the trial and the first
// difference). A run that asks in another order, or for other candidates,
// is refused with replay_request_mismatch.
type Replay struct {
	file      *recording.File
	replayers []*recording.Replayer
	cur       int
}

// NewReplay replays file's trials in order.
func NewReplay(file *recording.File) *Replay {
	r := &Replay{file: file}
	for _, t := range file.Trials {
		r.replayers = append(r.replayers, recording.NewReplayer(t))
	}
	return r
}

// Answer returns the next recorded response for request.
func (r *Replay) Answer(request any) (any, error) {
	for r.cur < len(r.replayers)-1 && r.replayers[r.cur].Used() == len(r.file.Trials[r.cur].Exchanges) {
		r.cur++
	}
	if len(r.replayers) == 0 {
		return nil, reason.New(reason.ReplayExhausted, "the recording has no trials")
	}
	return r.replayers[r.cur].Answer(request)
}

// Unused counts the exchanges not handed out.
func (r *Replay) Unused() int {
	n := 0
	for i, rp := range r.replayers {
		n += len(r.file.Trials[i].Exchanges) - rp.Used()
	}
	return n
}

// Decide answers a listwise prompt from the recording, as the agent's
// replay does.
func (r *Replay) Decide(_ context.Context, p model.Prompt, _ time.Duration) (model.Reply, error) {
	response, err := r.Answer(gemini.Payload(p))
	if err != nil {
		return model.Reply{}, err
	}
	return gemini.Decode(response)
}

// RecordedEncoder is a cross-encoder replayed from a recording whose
// requests are rerank.Input(question, candidates) and whose responses are
// {"scores": [...], "inference_seconds": s}. The scores come back as
// recorded, for rerank.AcceptScores to judge.
type RecordedEncoder struct {
	*Replay
}

// NewRecordedEncoder replays file.
func NewRecordedEncoder(file *recording.File) RecordedEncoder {
	return RecordedEncoder{NewReplay(file)}
}

// Scores returns the recorded logits for the pairs.
func (e RecordedEncoder) Scores(_ context.Context, question string, cands []rerank.Candidate) (rerank.Scores, error) {
	response, err := e.Answer(rerank.Input(question, cands))
	if err != nil {
		return rerank.Scores{}, err
	}
	o, _ := response.(*pyjson.Object)
	logits, _ := o.Get("scores")
	var seconds float64
	if n, ok := get(o, "inference_seconds").(pyjson.Number); ok {
		seconds = n.Float64()
	}
	return rerank.Scores{Logits: logits, Seconds: seconds}, nil
}

// Model is the recorded model acquisition record.
func (e RecordedEncoder) Model() any { return get(config(e.file), "model") }

// Environment is the recorded runtime environment.
func (e RecordedEncoder) Environment() any { return get(config(e.file), "environment") }

// Mode says the scores are replayed.
func (e RecordedEncoder) Mode() string { return CrossEncoderReplayMode }

func config(f *recording.File) *pyjson.Object {
	o, _ := f.Config.(*pyjson.Object)
	return o
}

func get(o *pyjson.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

func objectOf(v any) *pyjson.Object {
	o, _ := v.(*pyjson.Object)
	return o
}
