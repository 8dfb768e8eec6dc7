package recording

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/reason"
)

func prompt() model.Prompt {
	return model.Prompt{System: agent.SystemPrompt, State: `{"question": "q"}`, Schema: agent.Schema()}
}

// TestRecorderSavesAfterEveryChange: the saved bytes always parse, and
// hold every attempt made so far.
func TestRecorderSavesAfterEveryChange(t *testing.T) {
	var saves [][]byte
	rec, err := NewRecorder(File{Model: gemini.Model, Endpoint: gemini.Endpoint, Config: gemini.Config(), RecordedAt: "now"},
		func(b []byte) error { saves = append(saves, b); return nil })
	require.NoError(t, err)
	require.Len(t, saves, 1, "saved once before anything is sent")

	log, err := rec.Begin(Trial{ID: "a-agent-1", CaseID: "a", Repeat: 1, Question: "q", Version: "3.12", Mode: "agent",
		Limits: pyjson.ValueOf(agent.DefaultLimits())})
	require.NoError(t, err)
	payload := gemini.Payload(prompt())
	attempts := []gemini.Attempt{
		{Request: payload, Response: pyjson.NewObject("candidates", []any{})},
		{Request: payload, Error: "HTTPError", HTTPStatus: 429},
		{Request: payload, Error: "provider_response_bytes_limit"},
	}
	for i, a := range attempts {
		require.NoError(t, log.Record(a))
		f, err := Parse(saves[len(saves)-1])
		require.NoError(t, err, "save after attempt %d parses", i+1)
		require.Len(t, f.Trials, 1)
		assert.Len(t, f.Trials[0].Exchanges, i+1)
	}
	require.NoError(t, log.Finish(1.25))
	f, err := Parse(saves[len(saves)-1])
	require.NoError(t, err)
	tr := f.Trials[0]
	require.NotNil(t, tr.ElapsedSeconds)
	assert.Equal(t, 1.25, *tr.ElapsedSeconds)
	assert.Equal(t, "HTTPError", tr.Exchanges[1].Error)
	assert.Equal(t, 429, tr.Exchanges[1].HTTPStatus)
	assert.Equal(t, "provider_response_bytes_limit", tr.Exchanges[2].Error)
	assert.Nil(t, tr.Exchanges[2].Response)
	assert.Equal(t, 2+len(attempts)+1, len(saves), "start, trial, each attempt, finish")
	assert.Len(t, rec.File().Trials[0].Exchanges, 3)
}

func TestRecorderSaveFailureIsReported(t *testing.T) {
	broken := errors.New("disk full")
	calls := 0
	rec, err := NewRecorder(File{}, func([]byte) error {
		calls++
		if calls > 2 {
			return broken
		}
		return nil
	})
	require.NoError(t, err)
	log, err := rec.Begin(Trial{ID: "x"})
	require.NoError(t, err)
	assert.ErrorIs(t, log.Record(gemini.Attempt{Request: gemini.Payload(prompt()), Error: "URLError"}), broken)
}

// TestReplayOfRecordedFailures: each recorded error replays to the code
// the live model returned for it, one row per kind.
func TestReplayOfRecordedFailures(t *testing.T) {
	rows := []struct {
		error  string
		status int
		want   reason.Code
	}{
		{"HTTPError", 503, "model_transport_failed:HTTPError"},
		{"URLError", 0, "model_transport_failed:URLError"},
		{"TimeoutError", 0, "model_transport_failed:TimeoutError"},
		{"ConnectionResetError", 0, "model_transport_failed:ConnectionResetError"}, // a name the reference may record
		{"provider_response_bytes_limit", 0, reason.ProviderResponseBytesLimit},
		{"invalid_model_json", 0, reason.InvalidModelJSON},
		{"cancelled", 0, reason.Cancelled},
	}
	for _, row := range rows {
		t.Run(row.error, func(t *testing.T) {
			ex := Exchange{Request: gemini.Payload(prompt()), Error: row.error, HTTPStatus: row.status}
			// through the file format and back
			data := writeFile(t, &File{Trials: []Trial{{ID: "t", Exchanges: []Exchange{ex}}}})
			f, err := Parse(data)
			require.NoError(t, err)
			_, err = NewReplayer(f.Trials[0]).Decide(context.Background(), prompt(), time.Second)
			code, _ := reason.Of(err)
			assert.Equal(t, row.want, code)
			assert.Equal(t, row.want, gemini.AttemptReason(row.error), "live and replay agree")
		})
	}
}

func writeFile(t *testing.T, f *File) []byte {
	t.Helper()
	var b []byte
	rec, err := NewRecorder(*f, func(d []byte) error { b = d; return nil })
	require.NoError(t, err)
	for _, tr := range f.Trials {
		log, err := rec.Begin(tr)
		require.NoError(t, err)
		for _, ex := range tr.Exchanges {
			require.NoError(t, log.Record(gemini.Attempt{Request: ex.Request.(*pyjson.Object), Response: ex.Response, Error: ex.Error, HTTPStatus: ex.HTTPStatus}))
		}
	}
	return b
}

func TestMemoryRecorderKeepsEveryAttempt(t *testing.T) {
	r := NewMemoryRecorder(File{Model: "m", Trials: []Trial{{ID: "ignored"}}})
	log, err := r.Begin(Trial{ID: "run-1"})
	require.NoError(t, err)
	require.NoError(t, log.Record(gemini.Attempt{Request: pyjson.NewObject("a", 1), Error: "URLError"}))
	f := r.File()
	require.Len(t, f.Trials, 1)
	assert.Equal(t, "run-1", f.Trials[0].ID)
	assert.Equal(t, "URLError", f.Trials[0].Exchanges[0].Error)
}

// TestAPendingAttemptIsOnRecordUntilItsOutcomeReplacesIt: the write-ahead
// record made before a request is sent is saved (a kill while waiting for
// the reply leaves it, and it parses and replays as a call without a
// reply: model_transport_failed:ReplyNotRecorded, the call counted); the
// outcome recorded after the reply replaces it, so the finished file is
// byte for byte what it was without write-ahead records.
func TestAPendingAttemptIsOnRecordUntilItsOutcomeReplacesIt(t *testing.T) {
	head := File{Model: gemini.Model, Endpoint: gemini.Endpoint, Config: gemini.Config(), RecordedAt: "now"}
	var saves [][]byte
	rec, err := NewRecorder(head, func(b []byte) error { saves = append(saves, b); return nil })
	require.NoError(t, err)
	log, err := rec.Begin(Trial{ID: "t", Question: "q", Version: "3.12", Mode: "agent"})
	require.NoError(t, err)
	payload := gemini.Payload(prompt())
	require.NoError(t, log.Record(gemini.Attempt{Request: payload, Pending: true, SentAt: "2026-11-29T12:00:00Z"}))

	killed, err := Parse(saves[len(saves)-1])
	require.NoError(t, err, "the file saved before sending parses")
	ex := killed.Trials[0].Exchanges[0]
	assert.True(t, ex.Pending)
	assert.Equal(t, gemini.NotRecorded, ex.Error)
	assert.Equal(t, "2026-11-29T12:00:00Z", ex.SentAt)
	assert.Contains(t, string(saves[len(saves)-1]), `"error": "ReplyNotRecorded",`)
	r := NewReplayer(killed.Trials[0])
	_, err = r.Decide(context.Background(), prompt(), time.Second)
	code, _ := reason.Of(err)
	assert.Equal(t, reason.Code("model_transport_failed:ReplyNotRecorded"), code)
	assert.Contains(t, err.Error(), "sent 2026-11-29T12:00:00Z; the recording process stopped before its reply was recorded")
	assert.Equal(t, 1, r.Used(), "the call counts")

	reply := pyjson.NewObject("candidates", []any{})
	require.NoError(t, log.Record(gemini.Attempt{Request: payload, Response: reply}))
	var plain [][]byte
	rec2, err := NewRecorder(head, func(b []byte) error { plain = append(plain, b); return nil })
	require.NoError(t, err)
	log2, err := rec2.Begin(Trial{ID: "t", Question: "q", Version: "3.12", Mode: "agent"})
	require.NoError(t, err)
	require.NoError(t, log2.Record(gemini.Attempt{Request: payload, Response: reply}))
	assert.Equal(t, string(plain[len(plain)-1]), string(saves[len(saves)-1]))

	_, err = Parse([]byte(`{"format": "ragagent-recording/1", "trials": [{"id": "t", "exchanges": [{"request": {}, "error": "ReplyNotRecorded", "pending": "yes"}]}]}`))
	assert.ErrorContains(t, err, "pending must be true or false")
}
