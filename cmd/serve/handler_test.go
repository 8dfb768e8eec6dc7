package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

func testSite(t *testing.T) *site {
	now := time.Unix(1_800_000_000, 0)
	files := fstest.MapFS{
		"index.html":                 {Data: []byte("<!doctype html>"), ModTime: now},
		"app.js":                     {Data: []byte("export {}"), ModTime: now},
		"main.wasm":                  {Data: []byte("\x00asm raw"), ModTime: now},
		"main.wasm.gz":               {Data: gz(t, "\x00asm raw"), ModTime: now},
		"main.wasm.br":               {Data: []byte("brotli bytes"), ModTime: now},
		"old.js":                     {Data: []byte("new"), ModTime: now},
		"old.js.gz":                  {Data: gz(t, "stale"), ModTime: now.Add(-time.Hour)},
		"data.bin":                   {Data: []byte("?"), ModTime: now},
		".secret":                    {Data: []byte("no"), ModTime: now},
		"sub/index.html":             {Data: []byte("sub"), ModTime: now},
		"views/run.js":               {Data: []byte("export function mount() {}"), ModTime: now},
		"packs/p/passages.sqlite.gz": {Data: []byte("gzip bytes"), ModTime: now},
	}
	return newSite(files, nil)
}

func TestSiteServesFiles(t *testing.T) {
	s := testSite(t)
	for _, tc := range []struct {
		name, method, path, accept string
		status                     int
		ctype, encoding, body      string
	}{
		{"root is index.html", "GET", "/", "", 200, "text/html; charset=utf-8", "", "<!doctype html>"},
		{"module script", "GET", "/app.js", "", 200, "text/javascript; charset=utf-8", "", "export {}"},
		{"module script in a folder", "GET", "/views/run.js", "", 200, "text/javascript; charset=utf-8", "", "export function mount() {}"},
		{"wasm without gzip", "GET", "/main.wasm", "", 200, "application/wasm", "", "\x00asm raw"},
		{"wasm with gzip", "GET", "/main.wasm", "deflate, gzip", 200, "application/wasm", "gzip", "\x00asm raw"},
		{"gzip refused by q=0", "GET", "/main.wasm", "gzip;q=0", 200, "application/wasm", "", "\x00asm raw"},
		{"brotli preferred", "GET", "/main.wasm", "gzip, deflate, br, zstd", 200, "application/wasm", "br", "brotli bytes"},
		{"stale twin ignored", "GET", "/old.js", "gzip", 200, "text/javascript; charset=utf-8", "", "new"},
		{"head", "HEAD", "/main.wasm", "", 200, "application/wasm", "", ""},
		{"unknown type is inert", "GET", "/data.bin", "", 200, "application/octet-stream", "", "?"},
		{"sub directory index", "GET", "/sub/", "", 200, "text/html; charset=utf-8", "", "sub"},
		{"dotfile hidden", "GET", "/.secret", "", 404, "", "", ""},
		{"gz twin not served directly", "GET", "/main.wasm.gz", "", 404, "", "", ""},
		{"br twin not served directly", "GET", "/main.wasm.br", "", 404, "", "", ""},
		{"a gzip file that is no twin is a file", "GET", "/packs/p/passages.sqlite.gz", "gzip", 200, "application/gzip", "", "gzip bytes"},
		{"escape attempt", "GET", "/../etc/passwd", "", 404, "", "", ""},
		{"directory without slash", "GET", "/sub", "", 404, "", "", ""},
		{"missing", "GET", "/nope.js", "", 404, "", "", ""},
		{"post refused", "POST", "/", "", 405, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			res := rec.Result()
			assert.Equal(t, tc.status, res.StatusCode)
			assert.Equal(t, CSP, res.Header.Get("Content-Security-Policy"), "every response carries the CSP")
			assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			if tc.status != 200 {
				return
			}
			assert.Equal(t, tc.ctype, res.Header.Get("Content-Type"))
			assert.Equal(t, tc.encoding, res.Header.Get("Content-Encoding"))
			body := rec.Body.Bytes()
			if tc.encoding == "gzip" {
				r, err := gzip.NewReader(bytes.NewReader(body))
				require.NoError(t, err)
				body, err = io.ReadAll(r)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.body, string(body))
			if tc.method == "GET" && tc.encoding != "br" {
				assert.Equal(t, fmt.Sprint(len(tc.body)), res.Header.Get("X-Decoded-Length"), "the decoded size, for progress")
			}
		})
	}
}

func TestSiteRevalidates(t *testing.T) {
	s := testSite(t)
	first := httptest.NewRecorder()
	s.ServeHTTP(first, httptest.NewRequest("GET", "/main.wasm", nil))
	etag := first.Header().Get("ETag")
	require.NotEmpty(t, etag)
	assert.Equal(t, "no-cache", first.Header().Get("Cache-Control"))

	req := httptest.NewRequest("GET", "/main.wasm", nil)
	req.Header.Set("If-None-Match", etag)
	again := httptest.NewRecorder()
	s.ServeHTTP(again, req)
	assert.Equal(t, http.StatusNotModified, again.Code)

	zipped := httptest.NewRecorder()
	zreq := httptest.NewRequest("GET", "/main.wasm", nil)
	zreq.Header.Set("Accept-Encoding", "gzip")
	s.ServeHTTP(zipped, zreq)
	assert.NotEqual(t, etag, zipped.Header().Get("ETag"), "the gzip variant has its own validator")
}

func TestExtraConnectOrigins(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"http://127.0.0.1:9999", "http://127.0.0.1:9999", ""},
		{"http://localhost:1234/", "http://localhost:1234", ""},
		{"http://[::1]:80", "http://[::1]:80", ""},
		{"https://example.com", "", "not a loopback origin"},
		{"http://10.0.0.1:80", "", "not a loopback origin"},
		{"ftp://127.0.0.1", "", "not an http(s) origin"},
		{"http://127.0.0.1:9/path", "", "origin (scheme://host:port) only"},
	} {
		got, err := loopbackOrigin(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
	}
	s := newSite(fstestFS(), []string{"http://127.0.0.1:9999"})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, CSP+" http://127.0.0.1:9999", rec.Header().Get("Content-Security-Policy"))
}

func fstestFS() fstest.MapFS {
	return fstest.MapFS{"index.html": {Data: []byte("x")}}
}

func TestRunRefusesNonLoopback(t *testing.T) {
	var out, errs strings.Builder
	code := run(context.Background(), []string{"--addr", "0.0.0.0:0", "--dir", t.TempDir()}, &out, &errs)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs.String(), "not a loopback address")

	errs.Reset()
	code = run(context.Background(), []string{"--connect", "https://example.com"}, &out, &errs)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs.String(), "not a loopback origin")
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int)
	go func() { done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dir", t.TempDir()}, w, io.Discard) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	assert.Regexp(t, `^serving .* on http://127\.0\.0\.1:\d+/\n$`, line)
	url := strings.TrimSuffix(strings.Fields(line)[3], "\n")
	res, err := http.Get(url)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, CSP, res.Header.Get("Content-Security-Policy"), "a live server sends the CSP")
	cancel()
	assert.Equal(t, exitOK, <-done)
}
