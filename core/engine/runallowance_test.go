package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/reason"
)

// A server gives each live run its own allowance and charges its caller in
// BeforeSend: the engine's process-wide allowance is then untouched, every
// attempt passes BeforeSend exactly once before it is sent, and a refusal
// there ends the run with its code with nothing sent.
func TestLiveRunWithItsOwnAllowanceAndBeforeSend(t *testing.T) {
	e := open(t, 5)
	transport := &inProcess{key: true}
	own, err := gemini.NewAllowance(12)
	require.NoError(t, err)
	charged := 0
	tr, err := e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: transport, Allowance: own, Save: func([]byte) error { return nil },
		BeforeSend: func(body []byte) error { charged++; return nil }})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, transport.calls(), charged, "one charge per attempt")
	assert.Equal(t, transport.calls(), own.Used())
	assert.Zero(t, e.Allowance().Used(), "the engine's allowance is not the run's")

	before := transport.calls()
	tr, err = e.Run(context.Background(), engine.RunRequest{Task: task(t, e, "overwrite", agent.Agent), Policy: engine.Gemini,
		Transport: transport, Save: func([]byte) error { return nil },
		BeforeSend: func([]byte) error { return reason.New(reason.BatchRequestLimit, "the caller's allowance is used") }})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	assert.Equal(t, reason.BatchRequestLimit, tr.Result.Reason)
	assert.Equal(t, before, transport.calls(), "nothing sent")
	assert.Zero(t, e.Allowance().Used())
}
