//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// jsFunc makes a JS function from source, as the page's shell would
// provide one.
func jsFunc(t *testing.T, params, body string) js.Value {
	t.Helper()
	return js.Global().Get("Function").New(params, body)
}

func TestFetchSettles(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		response   string
		kind       string
	}{
		{"success with bytes", `return Promise.resolve({status: 200, body: new TextEncoder().encode('{"ok":1}')})`, 200, `{"ok":1}`, ""},
		{"success with a string", `return Promise.resolve({status: 200, body: "text"})`, 200, "text", ""},
		{"HTTP error is a status, not an error", `return Promise.resolve({status: 429, body: "slow down"})`, 429, "slow down", ""},
		{"network failure", `return Promise.reject({kind: "URLError", message: "refused"})`, 0, "", "URLError"},
		{"timeout from the shell", `return Promise.reject({kind: "TimeoutError", message: "timed out"})`, 0, "", "TimeoutError"},
		{"unknown rejection counts as URLError", `return Promise.reject(new Error("boom"))`, 0, "", "URLError"},
		{"a DOMException named TimeoutError is one", `return Promise.reject(new DOMException("late", "TimeoutError"))`, 0, "", "TimeoutError"},
		{"a throw is not a crash", `throw new Error("sync")`, 0, "", "URLError"},
		{"a non-promise is refused", `return 42`, 0, "", "URLError"},
		{"no status is refused", `return Promise.resolve({body: "x"})`, 0, "", "URLError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Fetch{Call: jsFunc(t, "endpoint, body, opts", tc.body), Keyed: true}
			status, body, err := tr.Post(context.Background(), gemini.Endpoint, []byte(`{}`))
			if tc.kind != "" {
				var te *gemini.TransportError
				require.True(t, errors.As(err, &te), "want a TransportError, got %v", err)
				assert.Equal(t, tc.kind, te.Kind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.response, string(body))
		})
	}
}

func TestFetchPassesRequestAndDeadline(t *testing.T) {
	seen := js.Global().Get("Object").New()
	js.Global().Set("seenRequest", seen)
	defer js.Global().Delete("seenRequest")
	post := jsFunc(t, "endpoint, body, opts", `
		seenRequest.endpoint = endpoint; seenRequest.body = body;
		seenRequest.timeoutMs = opts.timeoutMs; seenRequest.hasSignal = opts.signal instanceof AbortSignal; seenRequest.cap = opts.cap;
		return Promise.resolve({status: 200, body: ""});`)
	tr := &Fetch{Call: post, Options: map[string]any{"cap": 7}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := tr.Post(ctx, "http://127.0.0.1:1/x", []byte(`{"a": "\u00e9"}`))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1/x", seen.Get("endpoint").String())
	assert.Equal(t, `{"a": "\u00e9"}`, seen.Get("body").String())
	assert.True(t, seen.Get("hasSignal").Bool())
	assert.Equal(t, 7, seen.Get("cap").Int(), "the Options are added to opts")
	ms := seen.Get("timeoutMs").Int()
	assert.True(t, ms > 4000 && ms <= 5000, "timeoutMs %d follows the context deadline", ms)
	assert.False(t, tr.HasKey())
}

func TestFetchCapsTheBody(t *testing.T) {
	post := jsFunc(t, "endpoint, body, opts", `return Promise.resolve({status: 200, body: new Uint8Array(300000)})`)
	tr := &Fetch{Call: post}
	_, body, err := tr.Post(context.Background(), gemini.Endpoint, nil)
	require.NoError(t, err)
	assert.Len(t, body, gemini.MaxResponseBytes+1, "at most one byte past the cap, so the cap can be detected")
}

func TestFetchCancelAborts(t *testing.T) {
	state := js.Global().Get("Object").New()
	js.Global().Set("abortState", state)
	defer js.Global().Delete("abortState")
	// A fetch that only settles when its signal aborts.
	post := jsFunc(t, "endpoint, body, opts", `
		return new Promise((resolve, reject) => {
			opts.signal.addEventListener("abort", () => { abortState.aborted = true; reject({kind: "URLError"}); });
		});`)
	tr := &Fetch{Call: post}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, _, err := tr.Post(ctx, gemini.Endpoint, nil)
	var te *gemini.TransportError
	require.True(t, errors.As(err, &te))
	assert.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return state.Get("aborted").Truthy() }, time.Second, 5*time.Millisecond, "the shell's fetch was aborted")

	// A deadline that passes is a TimeoutError.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err = tr.Post(ctx, gemini.Endpoint, nil)
	require.True(t, errors.As(err, &te))
	assert.Equal(t, "TimeoutError", te.Kind)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
