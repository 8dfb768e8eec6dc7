package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CheckOrigin validates an origin a server lets browsers call it from
// (Config.AllowOrigins, serve-api --allow-origin): http or https, a host,
// and nothing else (no path, query, fragment or user), as a browser sends
// it in an Origin header. It returns the origin as compared: lower-case
// scheme and host.
func CheckOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil {
		return "", fmt.Errorf("origin %q is not a URL: %v", origin, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("origin %q must be http or https", origin)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("origin %q must be scheme://host[:port] alone (as a browser's Origin header)", origin)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// corsMethods and corsHeaders are what a page allowed by AllowOrigins may
// send: the API's methods, the bearer token, a JSON or gzip body and a
// resumed stream's Last-Event-ID.
const (
	corsMethods = "GET, POST, DELETE"
	corsHeaders = "Authorization, Content-Type, Accept, Last-Event-ID"
)

// cors lets the pages of the allowed origins call the API from a browser
// (the page's "On the server" experiments): a request whose Origin is one
// of them gets Access-Control-Allow-Origin with that origin (never "*", and
// no credentials: the token is a header the page sets, not a cookie), and
// its preflight (OPTIONS with Access-Control-Request-Method) is answered
// 204 before authentication, since a browser sends no Authorization with
// it. Any other origin gets no CORS header, so the browser keeps the
// answer from its page; requests without an Origin (the command line,
// node, curl) are served as before.
func cors(allowed map[string]bool, h http.Handler) http.Handler {
	if len(allowed) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !allowed[strings.ToLower(origin)] {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.Header().Set("Access-Control-Allow-Methods", corsMethods)
			w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", "Retry-After")
		h.ServeHTTP(w, r)
	})
}
