// Command serve serves the static page (site/) on loopback with the headers
// the page needs: application/wasm, precompressed gzip and a strict
// Content-Security-Policy. It is the README's first command (`make serve`),
// and the browser tests and benchmark start it on a free port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/internal/geminitest"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// origins is a repeatable flag of origins, each checked by check
// (loopbackOrigin when nil).
type origins struct {
	list  []string
	check func(string) (string, error)
}

func (o *origins) String() string { return strings.Join(o.list, " ") }
func (o *origins) Set(s string) error {
	check := o.check
	if check == nil {
		check = loopbackOrigin
	}
	origin, err := check(s)
	if err != nil {
		return err
	}
	o.list = append(o.list, origin)
	return nil
}

// timeouts bound how long one connection may hold the server: a client
// that sends its headers slowly, reads its response slowly (or not at
// all), or keeps an idle connection open is cut off, so a few hundred
// stalled connections cannot pile up.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts leave room for the largest file, the 15 MB engine, on
// any machine the page runs on (it is served on loopback).
func defaultTimeouts() timeouts {
	return timeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: 30 * time.Second}
}

func newServer(h http.Handler, t timeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read, WriteTimeout: t.write,
		IdleTimeout: t.idle, MaxHeaderBytes: 64 << 10}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address` (port 0 picks a free port)")
	dir := fs.String("dir", "site", "the `directory` to serve")
	public := fs.Bool("public", false, "allow listening on a non-loopback address")
	var connect origins
	fs.Var(&connect, "connect", "an extra loopback `origin` for connect-src (a test's fake Gemini endpoint); repeatable")
	teams := origins{check: apiOrigin}
	fs.Var(&teams, "api-origin", "a team server's `origin` (ragagent serve-api: https, or http on loopback) the page may connect to, joining connect-src; repeatable")
	demo := fs.Bool("demo", false, "also serve the loopback fake of the Gemini API (internal/geminitest: the offline scripted policy's answers), allowed by the CSP, and print the page's address that sends live runs to it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: serve [--addr 127.0.0.1:8080] [--dir site] [--connect http://127.0.0.1:PORT] [--api-origin https://HOST]... [--demo] [--public]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	if !gemini.Loopback(host) && !*public {
		fmt.Fprintf(stderr, "serve: %q is not a loopback address; pass --public to serve beyond this machine\n", *addr)
		return exitUsage
	}
	if info, err := os.Stat(*dir); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "serve: %s is not a directory\n", *dir)
		return exitError
	}
	// Every file is opened through the root: a path or a symbolic link
	// that resolves outside the directory cannot be opened.
	root, err := os.OpenRoot(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	defer root.Close()
	if _, err := os.Stat(*dir + "/main.wasm"); err != nil {
		fmt.Fprintf(stderr, "serve: warning: %s/main.wasm is missing (run make serve, which builds it)\n", *dir)
	}
	done := make(chan error, 2)
	var fake *http.Server
	if *demo {
		fln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(stderr, "serve: the demo's fake Gemini API: %v\n", err)
			return exitError
		}
		fake = &http.Server{Handler: geminitest.NewFake(geminitest.Policy()), ReadHeaderTimeout: 10 * time.Second}
		connect.list = append(connect.list, "http://"+fln.Addr().String())
		go func() { done <- fake.Serve(fln) }()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	srv := newServer(newSite(root.FS(), append(connect.list, teams.list...)), defaultTimeouts())
	fmt.Fprintf(stdout, "serving %s on http://%s/\n", *dir, ln.Addr())
	if fake != nil {
		fakeURL := connect.list[len(connect.list)-1]
		fmt.Fprintf(stdout, "demo: a fake Gemini API on %s answers with the offline scripted policy (any key of 16 characters or more will do; nothing leaves this machine)\n", fakeURL)
		fmt.Fprintf(stdout, "demo: open http://%s/?endpoint=%s#run then choose Gemini, type any key of 16 characters or more (a shorter one is refused as not a key), show the plan and send\n", ln.Addr(), url.QueryEscape(fakeURL))
	}
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		if fake != nil {
			_ = fake.Shutdown(shutdown)
		}
		return exitOK
	}
}
