package server

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// GuardListener makes the refusals Go's HTTP server writes itself, before
// any handler sees the request, the API's JSON errors: a request line or
// header it cannot parse (400 malformed_request), headers over
// MaxHeaderBytes (431 headers_too_large), a transfer coding it does not
// know (400 malformed_request; Go says 501). net/http writes those as
// plain text straight to the connection and closes it, with no hook to
// change them (http.Server.ErrorLog only logs), so the guard recognises
// that one write on the connection and replaces it. What Go does not let
// an API answer at all: a client too slow to send its headers
// (ReadHeaderTimeout) or its body (ReadTimeout) gets the connection
// closed without a response, as does a connection that sends nothing;
// a path Go's mux cleans (/v1//runs) is redirected (301) before routing.
func GuardListener(ln net.Listener) net.Listener { return guardedListener{ln} }

type guardedListener struct{ net.Listener }

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c}, nil
}

// guardedConn rewrites Go's own plain-text refusals.
type guardedConn struct {
	net.Conn
	mu sync.Mutex
}

// goRefusal is what follows the status line of every refusal net/http
// writes itself (server.go's errorHeaders).
const goRefusal = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *guardedConn) Write(p []byte) (int, error) {
	status, text, ok := refusalOf(p)
	if !ok {
		return c.Conn.Write(p)
	}
	code, message := CodeMalformedRequest, "the request could not be parsed ("+text+"); the connection is closed"
	if status == http.StatusRequestHeaderFieldsTooLarge {
		code, message = CodeHeadersTooLarge, "the request's headers are over the server's limit; the connection is closed"
	} else {
		status = http.StatusBadRequest
	}
	body, _ := marshal(struct {
		Error errorBody `json:"error"`
	}{errorBody{code, message}})
	body = append(body, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		status, http.StatusText(status), len(body))
	if _, err := c.Conn.Write(append([]byte(head), body...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// refusalOf recognises one of net/http's own refusals: HTTP/1.1, a 4xx or
// 5xx status, its fixed plain-text headers; text is its status text.
func refusalOf(p []byte) (status int, text string, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found || len(rest) < 4 || rest[3] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	line, _, found := bytes.Cut(rest, []byte(goRefusal))
	if !found || bytes.ContainsAny(line, "\r\n") {
		return 0, "", false
	}
	return status, string(line[4:]), true
}
