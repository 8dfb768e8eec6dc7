package httptransport

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

const dummyKey = "dummy-test-key-not-a-real-key"

func TestKeyFromEnv(t *testing.T) {
	rows := []struct {
		env       map[string]string
		key, from string
	}{
		{map[string]string{}, "", ""},
		{map[string]string{"GEMINI_API_KEY": "g"}, "g", "GEMINI_API_KEY"},
		{map[string]string{"GOOGLE_API_KEY": "o", "GEMINI_API_KEY": "g"}, "o", "GOOGLE_API_KEY"},
		{map[string]string{"GOOGLE_API_KEY": "  ", "GEMINI_API_KEY": "g"}, "g", "GEMINI_API_KEY"},
	}
	for _, row := range rows {
		key, variable := KeyFromEnv(func(k string) string { return row.env[k] })
		assert.Equal(t, row.key, key)
		assert.Equal(t, row.from, variable)
	}
}

// TestNoProxyNoRedirect: the environment's proxy settings are never used,
// and a redirect comes back as its status.
func TestNoProxyNoRedirect(t *testing.T) {
	tr := New(dummyKey)
	rt, ok := tr.client.Transport.(*http.Transport)
	require.True(t, ok)
	assert.Nil(t, rt.Proxy, "no proxy function, so HTTPS_PROXY is ignored")
	assert.True(t, rt.DisableCompression)

	fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Redirect("/v1beta/models/x:generateContent")))
	defer fake.Close()
	status, _, err := tr.Post(context.Background(), fake.Endpoint(), []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusFound, status)
	assert.Len(t, fake.Requests(), 1)
}

func TestFailureKinds(t *testing.T) {
	fake := geminitest.NewServer(geminitest.Sequence(nil, geminitest.Slow(time.Hour, geminitest.Text("{}"))))
	defer fake.Close()
	tr := New(dummyKey)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := tr.Post(ctx, fake.Endpoint(), []byte("{}"))
	var te *gemini.TransportError
	require.True(t, errors.As(err, &te))
	assert.Equal(t, gemini.TimeoutError, te.Kind)

	closed := geminitest.NewServer(geminitest.Sequence(nil))
	url := closed.Endpoint()
	closed.Close()
	_, _, err = tr.Post(context.Background(), url, []byte("{}"))
	require.True(t, errors.As(err, &te))
	assert.Equal(t, gemini.URLError, te.Kind)
	assert.NotContains(t, err.Error(), dummyKey)

	_, _, err = tr.Post(context.Background(), "http://127.0.0.1:1/\x7f", []byte("{}"))
	require.True(t, errors.As(err, &te))
	assert.Equal(t, gemini.URLError, te.Kind)
}
