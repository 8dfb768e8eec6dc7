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
	"net/url"
	"regexp"
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

// TestAPIOrigins: a team server's origin (--api-origin) is https on any
// host, or http on loopback only, an origin alone with a plain host, and
// joins connect-src after the --connect origins.
func TestAPIOrigins(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"https://lab.example.org", "https://lab.example.org", ""},
		{"https://Lab.Example.org:8443/", "https://lab.example.org:8443", ""},
		{"http://127.0.0.1:8090", "http://127.0.0.1:8090", ""},
		{"http://localhost:8090", "http://localhost:8090", ""},
		{"https://[2001:db8::1]:443", "https://[2001:db8::1]:443", ""},
		{"http://lab.example.org", "", "http only on loopback"},
		{"http://10.0.0.1:8090", "", "http only on loopback"},
		{"ftp://lab.example.org", "", "not an http(s) origin"},
		{"https://lab.example.org/v1", "", "origin (scheme://host:port) only"},
		{"https://user@lab.example.org", "", "origin (scheme://host:port) only"},
		{"https://lab.example.org?x=1", "", "origin (scheme://host:port) only"},
		{"https://*.example.org", "", "a name or an IP address"},
		{"https://a;script-src", "", "a name or an IP address"},
	} {
		got, err := apiOrigin(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dir", t.TempDir(), "--connect", "http://127.0.0.1:9999", "--api-origin", "https://lab.example.org"}, w, io.Discard)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, out)
	res, err := http.Get(strings.Fields(line)[3])
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, CSP+" http://127.0.0.1:9999 https://lab.example.org", res.Header.Get("Content-Security-Policy"))
	cancel()
	assert.Equal(t, exitOK, <-done)

	var errs strings.Builder
	assert.Equal(t, exitUsage, run(context.Background(), []string{"--api-origin", "http://lab.example.org"}, io.Discard, &errs))
	assert.Contains(t, errs.String(), "http only on loopback")
}

// TestCSPAllowsExactlyWhatThePageNeeds: one row per directive, its sources
// exactly; nothing else is allowed (worker-src and the rest fall back to
// default-src or script-src: 'self').
func TestCSPAllowsExactlyWhatThePageNeeds(t *testing.T) {
	directives := map[string][]string{}
	var order []string
	for _, d := range strings.Split(CSP, ";") {
		f := strings.Fields(d)
		require.NotEmpty(t, f)
		directives[f[0]] = f[1:]
		order = append(order, f[0])
	}
	for _, tc := range []struct {
		directive string
		sources   []string
		why       string
	}{
		{"default-src", []string{"'self'"}, "everything else (workers, styles, images) only from the site"},
		{"script-src", []string{"'self'", "'wasm-unsafe-eval'"}, "the engine and the cross-encoder's runtime compile WebAssembly; no eval, no blob: or CDN script"},
		{"frame-ancestors", []string{"'none'"}, "no page may frame the lab (clickjacking the key field)"},
		{"base-uri", []string{"'none'"}, "no <base> may redirect the page's relative URLs"},
		{"form-action", []string{"'none'"}, "no form submits anywhere: the page's forms are handled in script"},
		{"connect-src", []string{"'self'", "https://generativelanguage.googleapis.com", "https://huggingface.co", "https://*.cdn.hf.co"},
			"the site, the Gemini API, the hub's resolve URLs and the CDN hosts it redirects large files to"},
	} {
		assert.Equal(t, tc.sources, directives[tc.directive], "%s: %s", tc.directive, tc.why)
	}
	assert.Equal(t, []string{"default-src", "script-src", "frame-ancestors", "base-uri", "form-action", "connect-src"}, order,
		"no other directive; connect-src last, where --connect origins join it")
	assert.NotContains(t, CSP, "'unsafe-eval'")
	assert.NotContains(t, CSP, "'unsafe-inline'")
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

// TestDemoServesTheFakeAllowedByTheCSP: --demo starts the loopback fake of
// the Gemini API, adds its origin to connect-src and prints the page's
// address that sends live runs there; the fake answers a generateContent
// request (the README's three lines rely on this).
func TestDemoServesTheFakeAllowedByTheCSP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dir", t.TempDir(), "--demo"}, w, io.Discard)
	}()
	r := bufio.NewReader(out)
	var lines []string
	for range 3 {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		lines = append(lines, line)
	}
	go io.Copy(io.Discard, out)
	m := regexp.MustCompile(`^demo: a fake Gemini API on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(lines[1])
	require.NotNil(t, m, lines[1])
	fake := m[1]
	page := regexp.MustCompile(`^demo: open (http://127\.0\.0\.1:\d+/\?endpoint=(\S+)#run) `).FindStringSubmatch(lines[2])
	require.NotNil(t, page, lines[2])
	assert.Equal(t, url.QueryEscape(fake), page[2])
	site := strings.Fields(lines[0])[3]
	res, err := http.Get(site)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, CSP+" "+fake, res.Header.Get("Content-Security-Policy"), "the page may reach the fake")

	body := `{"systemInstruction": {"parts": [{"text": "x"}]}, "contents": [{"role": "user", "parts": [{"text": "{}"}]}], "generationConfig": {}}`
	req, err := http.NewRequest("POST", fake+"/v1beta/models/gemini-3.8-flash:generateContent", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", "demo")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.NotEqual(t, http.StatusNotFound, res.StatusCode, "the fake serves generateContent")
	cancel()
	assert.Equal(t, exitOK, <-done)
}
