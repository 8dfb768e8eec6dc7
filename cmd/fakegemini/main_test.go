package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/testlog"
)

const dummyKey = "dummy-test-key-not-a-real-key"

// TestServes starts the command with a script, reads its URL, sends a
// preflight and two requests, and stops it.
func TestServes(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"format": "ragagent-fake/1", "replies": [{"status": 503}], "then": "policy"}`), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	var logs testlog.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--script", script}, outW, &logs); outW.Close() }()
	url, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	url = strings.TrimSpace(url)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)
	endpoint := url + "/v1beta/models/gemini-3.8-flash:generateContent"

	pre, _ := http.NewRequest(http.MethodOptions, endpoint, nil)
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type,x-goog-api-key")
	resp, err := http.DefaultClient.Do(pre)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)

	var statuses []int
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"contents": []}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Goog-Api-Key", dummyKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	assert.Equal(t, []int{503, 200}, statuses, "the script, then the policy")
	cancel()
	assert.Equal(t, 0, <-done)
	assert.Contains(t, logs.String(), "POST /v1beta/models/gemini-3.8-flash:generateContent -> 503 (headers:")
	assert.Contains(t, logs.String(), "x-goog-api-key")
	assert.NotContains(t, logs.String(), dummyKey, "header values are never logged")
}

func TestRefusals(t *testing.T) {
	rows := [][]string{
		{"--addr", "0.0.0.0:0"},
		{"--addr", "example.com:80"},
		{"--addr", "nonsense"},
		{"extra"},
	}
	for _, args := range rows {
		var out, errs bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out, &errs), args)
		assert.Empty(t, out.String())
		assert.Equal(t, 1, strings.Count(errs.String(), "\n"), errs.String())
	}
	var out, errs bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"--script", filepath.Join(t.TempDir(), "missing.json")}, &out, &errs))
	assert.Contains(t, errs.String(), "fakegemini: ")
}
