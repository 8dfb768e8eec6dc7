// Command fakegemini serves the loopback fake of the Gemini generateContent
// API (internal/geminitest) as its own process, for tests that drive a
// real browser or a separately built binary against it. It answers from a
// script file, or as geminitest.Policy when none is given (the offline
// scripted policy for an agent request, a coverage ranking for a listwise
// rerank request); it handles CORS preflights as the real API does (only
// the Content-Type and x-goog-api-key request headers allowed). It listens
// only on loopback.
//
// The first line on stdout is the base URL (http://127.0.0.1:PORT); one line
// per request goes to stderr (method, path, status and the names of the
// request headers, never their values).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/inputfile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakegemini", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback `host:port` to listen on (port 0 picks a free one)")
	script := fs.String("script", "", "a ragagent-fake/1 script `file` (default: answer agent requests with the scripted policy and listwise rerank requests with a coverage ranking)")
	quiet := fs.Bool("quiet", false, "do not log requests")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakegemini: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !gemini.Loopback(host) {
		fmt.Fprintf(stderr, "fakegemini: --addr %q must be a loopback host:port (127.0.0.1, ::1 or localhost)\n", *addr)
		return 2
	}
	responder := geminitest.Policy()
	if *script != "" {
		data, err := inputfile.Read(*script, jsonfile.MaxInputBytes)
		if err == nil {
			responder, err = geminitest.ParseScript(data)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fakegemini: %s\n", strings.Join(strings.Fields(err.Error()), " "))
			return 1
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "fakegemini: %s\n", err)
		return 1
	}
	var h http.Handler = geminitest.NewFake(responder)
	if !*quiet {
		h = logged(h, stderr)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "fakegemini: %s\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	return 0
}

// logged writes one line per request: never a header's value, so the key
// never reaches a log.
func logged(h http.Handler, w io.Writer) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: rw, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		names := make([]string, 0, len(r.Header))
		for k := range r.Header {
			names = append(names, strings.ToLower(k))
		}
		sort.Strings(names)
		fmt.Fprintf(w, "%s %s -> %d (headers: %s)\n", r.Method, r.URL.Path, rec.status, strings.Join(names, ", "))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
