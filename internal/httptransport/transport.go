// Package httptransport is the native gemini.Transport, over net/http. It is
// the only native code that holds the API key: it reads no environment
// itself (the command passes the key in) and puts the key in exactly one
// place, the x-goog-api-key header. It lives outside core so the core never
// links a network library.
package httptransport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/secret"
)

// KeyFromEnv returns the first non-blank key among GOOGLE_API_KEY and
// GEMINI_API_KEY (the reference lab's order) and the variable it came from,
// using getenv (os.Getenv when nil).
func KeyFromEnv(getenv func(string) string) (key, variable string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, name := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"} {
		if k := strings.TrimSpace(getenv(name)); k != "" {
			return k, name
		}
	}
	return "", ""
}

// CheckKeyFromEnv refuses the environment's key (KeyFromEnv's) when it is
// too short to be one (secret.CheckKey), naming its variable: a fragment
// like a one-character placeholder is never sent, and never looked for in
// what the lab writes.
func CheckKeyFromEnv(getenv func(string) string) error {
	key, variable := KeyFromEnv(getenv)
	if secret.CheckKey(key) != nil {
		return fmt.Errorf("%s is not an API key: it is %d long, a key at least %d characters (Gemini's are 39); set the key, or unset %s",
			variable, utf8.RuneCountInString(key), secret.MinKey, variable)
	}
	return nil
}

// Transport posts generateContent requests with net/http. It sends only
// Content-Type and x-goog-api-key (no User-Agent, no Accept-Encoding: the
// API's browser preflight allows no others, and the page's shell sends the
// same), uses no proxy, follows no redirect (a 3xx comes back as its
// status), retries nothing, and reads at most one byte past the response
// cap so an oversized reply is detected without being buffered.
type Transport struct {
	key    string
	client *http.Client
}

// New returns a transport that sends key ("" for none: every request is then
// refused by the model before sending).
func New(key string) *Transport {
	rt := &http.Transport{
		Proxy:              nil, // never through a proxy, whatever the environment says
		ForceAttemptHTTP2:  true,
		DisableCompression: true, // no Accept-Encoding header
		MaxIdleConns:       4,
	}
	return &Transport{key: strings.TrimSpace(key), client: &http.Client{
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// HasKey reports whether a key was given.
func (t *Transport) HasKey() bool { return t.key != "" }

// Post sends body and returns the status and at most
// gemini.MaxResponseBytes+1 bytes of the response body, with the key
// redacted in every form an echo can take (secret.Redact). Errors are
// *gemini.TransportError: TimeoutError for a deadline, a timeout or a
// cancellation, URLError for anything else (refused, DNS, TLS, reset). No
// error text carries the key.
func (t *Transport) Post(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, t.fail(ctx, err)
	}
	req.Header = http.Header{
		"Content-Type":   {"application/json"},
		"X-Goog-Api-Key": {t.key},
		"User-Agent":     {""}, // an empty value stops net/http from adding its own
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, t.fail(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, gemini.MaxResponseBytes+1))
	if err != nil {
		return 0, nil, t.fail(ctx, err)
	}
	// Whatever the status, the body may echo the key (an error message, a
	// model repeating its request): it is redacted before anything sees it.
	return resp.StatusCode, secret.Redact(data, t.key), nil
}

// fail classifies a failure with no HTTP response.
func (t *Transport) fail(ctx context.Context, err error) error {
	kind := gemini.URLError
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		kind = gemini.TimeoutError
	}
	return &gemini.TransportError{Kind: kind, Err: errors.New(string(secret.Redact([]byte(err.Error()), t.key)))}
}
