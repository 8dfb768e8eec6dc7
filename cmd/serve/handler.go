package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// CSP is the page's Content-Security-Policy: its own scripts and WASM only
// (the engine, and the cross-encoder's transformers.js and ONNX Runtime Web,
// all served from site/; 'wasm-unsafe-eval' lets them compile, no 'eval'
// is allowed); no page may frame it (clickjacking the key field), no <base>
// may redirect its relative URLs, and no form may submit anywhere (the
// page's forms are handled in script); and network access only to itself,
// the Gemini API and the Hugging Face hub for the cross-encoder's files:
// huggingface.co answers a file's resolve URL, small files itself, large
// ones (the ONNX weights, stored with Xet) with a redirect to a regional CDN
// host under cdn.hf.co (us.aws.cdn.hf.co, for one), and a CSP applies to
// redirect targets too. connect-src stays last: --connect origins join it.
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; " +
	"connect-src 'self' https://generativelanguage.googleapis.com " + ModelHosts

// ModelHosts are the hub's hosts the cross-encoder's files come from.
const ModelHosts = "https://huggingface.co https://*.cdn.hf.co"

// types are the content types the site uses; anything else is served as
// application/octet-stream, which a browser will not run.
var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".wasm": "application/wasm",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
	".gz":   "application/gzip",
}

// site serves a directory of static files: precompressed .gz twins when the
// client accepts gzip, a strict CSP on every response, and revalidation
// (not blind caching) so a rebuilt main.wasm is picked up while an unchanged
// one keeps the browser's compiled-code cache. Only regular files are
// served; files is an os.Root's file system in the server, so a symbolic
// link whose target leaves the directory is refused (404).
type site struct {
	files fs.FS
	csp   string
}

func newSite(files fs.FS, extraConnect []string) *site {
	csp := CSP
	for _, origin := range extraConnect {
		csp += " " + origin
	}
	return &site{files: files, csp: csp}
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || strings.HasSuffix(r.URL.Path, "/") {
		name = path.Join(name, "index.html")
	}
	if !fs.ValidPath(name) || hidden(name) || s.twin(name) {
		http.NotFound(w, r)
		return
	}
	ctype, ok := types[path.Ext(name)]
	if !ok {
		ctype = "application/octet-stream"
	}
	served, encoding := name, ""
	for _, enc := range encodings {
		if accepts(r.Header.Get("Accept-Encoding"), enc.coding) && s.fresh(name, name+enc.suffix) {
			served, encoding = name+enc.suffix, enc.coding
			break
		}
	}
	// Stat first: opening a FIFO would block; only a regular file is
	// opened (and checked again once open).
	if info, err := fs.Stat(s.files, served); err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	f, err := s.files.Open(served)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	content, ok := f.(io.ReadSeeker)
	if !ok {
		http.Error(w, "file is not seekable", http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	etag := fmt.Sprintf(`"%x-%x`, info.ModTime().UnixNano(), info.Size())
	if encoding != "" {
		h.Set("Content-Encoding", encoding)
		etag += "-" + encoding
		// The decoded size lets the page show download progress; the
		// Content-Length it sees is the compressed one.
		if raw, err := fs.Stat(s.files, name); err == nil {
			h.Set("X-Decoded-Length", fmt.Sprint(raw.Size()))
		}
	} else {
		h.Set("X-Decoded-Length", fmt.Sprint(info.Size()))
	}
	h.Set("ETag", etag+`"`)
	http.ServeContent(w, r, "", info.ModTime().Truncate(time.Second), content)
}

// hidden refuses dotfiles at any depth.
func hidden(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// twin reports whether name is the precompressed twin of another file
// (main.wasm.gz beside main.wasm), which is served only as that file's
// encoding. A .gz file with no such sibling (a corpus pack's passages
// file, packs/python-3.11/passages.sqlite.gz) is an ordinary file.
func (s *site) twin(name string) bool {
	for _, enc := range encodings {
		if raw, ok := strings.CutSuffix(name, enc.suffix); ok {
			if _, err := fs.Stat(s.files, raw); err == nil {
				return true
			}
		}
	}
	return false
}

// encodings are the precompressed twins the server looks for, best first:
// brotli when the build made one (optional), else gzip.
var encodings = []struct{ coding, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// fresh reports whether twin exists and is no older than the file it
// compresses, so a stale twin is never served for a rebuilt file.
func (s *site) fresh(name, twin string) bool {
	t, err := fs.Stat(s.files, twin)
	if err != nil || !t.Mode().IsRegular() {
		return false
	}
	raw, err := fs.Stat(s.files, name)
	return err == nil && !t.ModTime().Before(raw.ModTime())
}

// accepts reads an Accept-Encoding header: the coding (or *) listed
// without q=0.
func accepts(header, want string) bool {
	for _, item := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != want && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}

// loopbackOrigin validates an extra connect-src origin: http(s), a loopback
// host, nothing but scheme, host and port. Only a test's fake endpoint on
// this machine may be added to the policy.
func loopbackOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--connect %q is not an http(s) origin", s)
	}
	if !gemini.Loopback(u.Hostname()) {
		return "", fmt.Errorf("--connect %q is not a loopback origin (127.0.0.0/8, ::1 or localhost)", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("--connect takes an origin (scheme://host:port) only")
	}
	return u.Scheme + "://" + u.Host, nil
}

// hostName is a DNS name or IPv4 address as --api-origin takes it.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// apiOrigin validates a team server's origin the page may connect to
// (--api-origin: the Experiments view's "on the server" experiments):
// https on any host, or http on a loopback host only (the token would
// cross the network in clear), nothing but scheme, host and port. It
// joins connect-src alone: the page's other fetches keep their own
// checks (the key goes only to the Gemini endpoints key.js allows).
func apiOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--api-origin %q is not an http(s) origin", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("--api-origin takes an origin (scheme://host:port) only")
	}
	// A host name's letters, digits, dots and dashes, or an IPv6 literal:
	// nothing that could end the directive or widen it (a ';', a '*').
	if host := u.Hostname(); !hostName.MatchString(host) && (!strings.HasPrefix(u.Host, "[") || net.ParseIP(host) == nil) {
		return "", fmt.Errorf("--api-origin %q: the host must be a name or an IP address", s)
	}
	if u.Scheme == "http" && !gemini.Loopback(u.Hostname()) {
		return "", fmt.Errorf("--api-origin %q: http only on loopback (127.0.0.0/8, ::1 or localhost); a team server elsewhere is https", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
