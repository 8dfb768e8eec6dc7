package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const outsideSecret = "SECRET-OUTSIDE-THE-SITE"

// siteWithLinks is a site directory beside a secret file, with symbolic
// links that stay inside and links that leave it.
func siteWithLinks(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	site, outside := filepath.Join(base, "site"), filepath.Join(base, "outside")
	for _, d := range []string{site, outside, filepath.Join(site, "sub")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(path, text string) { require.NoError(t, os.WriteFile(path, []byte(text), 0o644)) }
	write(filepath.Join(outside, "secret.js"), outsideSecret)
	write(filepath.Join(site, "index.html"), "<!doctype html>")
	write(filepath.Join(site, "sub", "app.js"), "export {}")
	for link, target := range map[string]string{
		"inside.js":   "sub/app.js",           // stays inside: served
		"sub/up.js":   "../index.html",        // stays inside: served
		"escape.js":   "../outside/secret.js", // leaves it
		"absolute.js": filepath.Join(outside, "secret.js"),
		"passwd.txt":  "/etc/passwd",
		"outdir":      "../outside", // a directory outside
		"loop.js":     "loop.js",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(site, link)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(site, "pipe.js"), 0o644))
	return site
}

// serveDir runs the server on dir as `serve --dir` does and returns its URL.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int)
	go func() { done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dir", dir}, w, io.Discard) }()
	t.Cleanup(func() { cancel(); <-done })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, out)
	return strings.TrimSuffix(strings.Fields(line)[3], "/")
}

// TestOnlyFilesInsideTheDirectoryAreServed: a symbolic link inside --dir
// was followed wherever it led (a link to the system password file was
// served). Now only regular files whose resolved path stays inside are
// served; links that stay inside still work; a FIFO is refused without
// blocking.
func TestOnlyFilesInsideTheDirectoryAreServed(t *testing.T) {
	url := serveDir(t, siteWithLinks(t))
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/", 200},
		{"/inside.js", 200},
		{"/sub/up.js", 200},
		{"/escape.js", 404},
		{"/absolute.js", 404},
		{"/passwd.txt", 404},
		{"/outdir/secret.js", 404},
		{"/loop.js", 404},
		{"/pipe.js", 404},
		{"/../outside/secret.js", 404},
		{"/sub/../../outside/secret.js", 404},
	} {
		t.Run(c.path, func(t *testing.T) {
			res, err := client.Get(url + c.path)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, c.status, res.StatusCode)
			assert.NotContains(t, string(body), outsideSecret)
			assert.NotContains(t, string(body), "root:")
		})
	}
}

// TestCSPForbidsFramingBaseAndForms: the policy had no frame-ancestors,
// base-uri or form-action.
func TestCSPForbidsFramingBaseAndForms(t *testing.T) {
	rec := httptest.NewRecorder()
	newSite(fstestFS(), nil).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	for _, d := range []string{"frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'", "default-src 'self'"} {
		assert.Contains(t, csp, d)
	}
}

// served starts newServer with t on a loopback listener.
func served(tb testing.TB, files fstest.MapFS, tm timeouts) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	srv := newServer(newSite(files, nil), tm)
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes conn within d (a read
// ends in EOF or a reset, not in the client's own deadline).
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestStalledConnectionsAreClosed: 200 idle keep-alive connections and 50
// stalled readers stayed open after 20 s. Now an idle connection, a client
// that never finishes its headers and one that stops reading its response
// are each cut off by the server's timeouts.
func TestStalledConnectionsAreClosed(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64<<20) // more than the sockets' buffers hold
	addr := served(t, fstest.MapFS{"index.html": {Data: []byte("hi")}, "big.bin": {Data: big}},
		timeouts{readHeader: 300 * time.Millisecond, read: time.Second, write: 500 * time.Millisecond, idle: 300 * time.Millisecond})

	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		assert.True(t, closedWithin(conn, 10*time.Second), "the idle connection is closed by the server")
	})
	t.Run("headers never finished", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		assert.True(t, closedWithin(conn, 10*time.Second))
	})
	t.Run("a reader that stops reading", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond) // stalled past the write timeout
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.Copy(io.Discard, conn)
		assert.Less(t, n, int64(len(big)), "the response was cut off, not delivered whole to a stalled reader")
	})
}

func TestTheServerHasEveryTimeout(t *testing.T) {
	srv := newServer(http.NotFoundHandler(), defaultTimeouts())
	for _, d := range []time.Duration{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout} {
		assert.Positive(t, d)
	}
	assert.GreaterOrEqual(t, srv.WriteTimeout, time.Minute, "time to send the 15 MB engine")
}

// FuzzServePath: no path escapes the site directory or panics the
// handler: whatever is asked, nothing outside is served, and a 200 is only
// ever a regular file's contents.
func FuzzServePath(f *testing.F) {
	for _, p := range []string{"/", "/inside.js", "/escape.js", "/../outside/secret.js", "/outdir/secret.js", "/sub/../../x",
		"/%2e%2e/outside/secret.js", "//etc/passwd", "/sub/", "/pipe.js", "/.hidden", "/a\x00b"} {
		f.Add(p)
	}
	root, err := os.OpenRoot(siteWithLinks(f))
	require.NoError(f, err)
	f.Cleanup(func() { root.Close() })
	s := newSite(root.FS(), nil)
	f.Fuzz(func(t *testing.T, path string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path, req.URL.RawPath = path, ""
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		body := rec.Body.String()
		assert.NotContains(t, body, outsideSecret)
		assert.NotContains(t, body, "root:")
		if rec.Code == 200 {
			assert.Contains(t, []string{"<!doctype html>", "export {}"}, body)
		}
	})
}
