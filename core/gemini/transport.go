package gemini

import "context"

// Transport carries one generateContent request to an endpoint and brings
// back the HTTP status and body. It owns the API key: the core never sees
// it. A native transport uses net/http; the page's transport asks the JS
// shell to fetch. Implementations send only the Content-Type and
// x-goog-api-key headers, follow no redirect (a 3xx comes back as its
// status), make no retry, read at most MaxResponseBytes+1 bytes of body,
// honour ctx's deadline and cancellation, and return every body, whatever
// its status, with the key redacted by secret.Redact (a body can echo the
// key verbatim, JSON-escaped or URL-encoded): the Client, the recording and
// every output see only what the transport hands back.
type Transport interface {
	// HasKey reports whether a key is configured, without revealing it, so
	// a missing key is refused before anything is sent or counted.
	HasKey() bool
	// Post sends body to endpoint. A non-nil error means no HTTP response
	// arrived: it should be a *TransportError naming the kind of failure.
	Post(ctx context.Context, endpoint string, body []byte) (status int, response []byte, err error)
}

// TransportError is a request that got no HTTP response. Kind is the
// reference lab's exception name: URLError (connection refused, DNS, TLS,
// reset) or TimeoutError (the per-call timeout or the run's deadline).
type TransportError struct {
	Kind string
	Err  error
}

func (e *TransportError) Error() string {
	if e.Err == nil {
		return e.Kind
	}
	return e.Kind + ": " + e.Err.Error()
}

func (e *TransportError) Unwrap() error { return e.Err }
