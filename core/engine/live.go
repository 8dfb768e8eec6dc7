package engine

import (
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/recording"
)

// LiveModel is how a live run reaches a model of the Gemini API: which
// model, the transport that holds the key, and the endpoint ("" for the
// model's real URL, or a loopback test double).
type LiveModel struct {
	Model     string
	Transport gemini.Transport
	Endpoint  string
	// Allowance counts the attempts; nil means the engine's.
	Allowance *gemini.Allowance
	// BeforeSend, if set, sees every attempt before it is counted and sent
	// (gemini.Client.BeforeSend).
	BeforeSend func(body []byte) error
}

// header is a live recording's provider settings, stamped now on the
// engine's clock (recording.Header).
func (e *Engine) header(modelName, endpoint string, config any) recording.File {
	return recording.Header(modelName, endpoint, config, e.clock())
}

// startLive begins a trial in rec and returns the live client that records
// every attempt in it, counted against the engine's allowance.
func (e *Engine) startLive(rec *recording.Recorder, trial recording.Trial, m LiveModel) (*gemini.Client, *recording.Live, error) {
	lt, err := rec.BeginLive(trial, e.clock)
	if err != nil {
		return nil, nil, err
	}
	a := m.Allowance
	if a == nil {
		a = e.allowance
	}
	c, err := gemini.NewClientFor(m.Model, m.Transport, a, m.Endpoint, lt.Record)
	if err != nil {
		return nil, nil, err
	}
	c.BeforeSend = m.BeforeSend
	return c, lt, nil
}
