package gemini

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

func TestResolveModelEndpoint(t *testing.T) {
	const lite = "gemini-3.1-flash-lite"
	real := "https://generativelanguage.googleapis.com/v1beta/models/" + lite + ":generateContent"
	assert.Equal(t, real, ModelEndpoint(lite))
	assert.Equal(t, Endpoint, ModelEndpoint(Model))
	for _, row := range []struct{ in, want string }{
		{"", real},
		{real, real},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/v1beta/models/" + lite + ":generateContent"},
		{"http://[::1]:1/x:generateContent", "http://[::1]:1/x:generateContent"},
	} {
		got, err := ResolveModelEndpoint(lite, row.in)
		require.NoError(t, err, row.in)
		assert.Equal(t, row.want, got, row.in)
	}
	// Another model's real URL, the agent's included, is not an override.
	for _, in := range []string{Endpoint, "https://generativelanguage.googleapis.com/v1beta/models/other:generateContent", "http://example.com"} {
		_, err := ResolveModelEndpoint(lite, in)
		assert.ErrorContains(t, err, "loopback", in)
	}
	for _, bad := range []string{"", "Gemini", "a/b", "../x", "-x", "x?y", "gemini 3"} {
		_, err := ResolveModelEndpoint(bad, "")
		assert.ErrorContains(t, err, "not a Gemini model name", bad)
	}
}

type endpointTransport struct{ got string }

func (e *endpointTransport) HasKey() bool { return true }
func (e *endpointTransport) Post(_ context.Context, endpoint string, _ []byte) (int, []byte, error) {
	e.got = endpoint
	return 500, nil, nil
}

func TestNewLiveForPostsToThatModel(t *testing.T) {
	a, err := NewAllowance(1)
	require.NoError(t, err)
	tr := &endpointTransport{}
	m, err := NewClientFor("gemini-3.1-flash-lite", tr, a, "", nil)
	require.NoError(t, err)
	assert.Equal(t, ModelEndpoint("gemini-3.1-flash-lite"), m.Endpoint())
	_, _ = m.Decide(context.Background(), model.Prompt{System: "s", State: "{}", Schema: pyjson.NewObject()}, MaxCallTimeout)
	assert.Equal(t, ModelEndpoint("gemini-3.1-flash-lite"), tr.got)
	_, err = NewClientFor("no/such", tr, a, "", nil)
	assert.Error(t, err)
}
