package gemini_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
)

// memTransport answers with a fixed status and body, without a network.
type memTransport struct {
	status int
	body   []byte
}

func (memTransport) HasKey() bool { return true }

func (m memTransport) Post(context.Context, string, []byte) (int, []byte, error) {
	return m.status, m.body, nil
}

// FuzzLiveReply feeds any HTTP status and body to the live model: it never
// panics, ends with a reason code or a reply, records exactly one attempt,
// and the recording of that attempt replays to the same outcome.
func FuzzLiveReply(f *testing.F) {
	f.Add(200, []byte(`{"candidates": [{"content": {"parts": [{"text": "{}"}]}, "finishReason": "STOP"}]}`))
	f.Add(200, []byte(`not json`))
	f.Add(200, []byte(`[]`))
	f.Add(429, []byte(`{"error": {"message": "slow down"}}`))
	f.Add(302, []byte(``))
	f.Add(200, []byte(`{"candidates": [{"content": {"parts": [{"text": "\"x\"", "thought": true}, {"text": 7}]}, "finishReason": "STOP"}]}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		allowance, err := gemini.NewAllowance(1)
		require.NoError(t, err)
		var recorded []gemini.Attempt
		live, err := gemini.NewClient(memTransport{status, body}, allowance, "", func(a gemini.Attempt) error {
			recorded = append(recorded, a)
			return nil
		})
		require.NoError(t, err)
		p := prompt(smallState)
		reply, liveErr := live.Decide(context.Background(), p, time.Second)
		require.Len(t, recorded, 2, "recorded as pending before it was sent, then with its outcome")
		require.True(t, recorded[0].Pending)
		recorded = recorded[1:]
		if liveErr != nil {
			_, ok := reason.Of(liveErr)
			require.True(t, ok, "a refusal carries a code: %v", liveErr)
		}
		trial := recording.Trial{ID: "t", Exchanges: []recording.Exchange{recording.ExchangeOf(recorded[0])}}
		again, replayErr := recording.NewReplayer(trial).Decide(context.Background(), p, time.Second)
		liveCode, _ := reason.Of(liveErr)
		replayCode, _ := reason.Of(replayErr)
		assert.Equal(t, liveCode, replayCode)
		if liveErr == nil {
			assert.Equal(t, reply.Value, again.Value)
		}
	})
}
