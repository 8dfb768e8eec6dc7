package gemini

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// ResolveEndpoint returns the URL requests go to. "" (or Endpoint itself)
// is the real API. Anything else is a test double and must point at this
// machine: a loopback address (127.0.0.0/8, ::1) or localhost, over http
// or https, with no credentials, query or fragment in the URL (a key must
// only ever travel in the x-goog-api-key header). A bare origin such as
// http://127.0.0.1:8080 gets the real endpoint's path. Refusing every other
// host means no flag or setting can send a key to a third party.
func ResolveEndpoint(override string) (string, error) {
	return ResolveModelEndpoint(Model, override)
}

// ModelEndpoint is the generateContent URL of model on the Gemini API.
func ModelEndpoint(model string) string {
	return "https://generativelanguage.googleapis.com/v1beta/models/" + model + ":generateContent"
}

// validModel: a model name as the API spells them (gemini-3.1-flash-lite),
// which keeps the URL built from it a plain path.
func validModel(model string) bool {
	if model == "" || len(model) > 64 || model[0] == '.' || model[0] == '-' {
		return false
	}
	for i := 0; i < len(model); i++ {
		if c := model[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ResolveModelEndpoint is ResolveEndpoint for a given model of the API (the
// listwise reranker's is not the agent's): "" or the model's own URL is
// the real API, a loopback override is a test double (a bare origin gets
// the model's path), and anything else is refused, another model's real
// URL included, so no flag can change which model is billed.
func ResolveModelEndpoint(model, override string) (string, error) {
	if !validModel(model) {
		return "", fmt.Errorf("model %q is not a Gemini model name", model)
	}
	if real := ModelEndpoint(model); override == "" || override == real {
		return real, nil
	}
	u, err := url.Parse(override)
	shown := override
	if err != nil {
		// an unparsable URL may still hold a credential: show none of it
		shown = "(not shown: it does not parse as a URL)"
	} else if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// never repeat what may be a credential
		c := *u
		c.User, c.RawQuery, c.Fragment = nil, "", ""
		shown = c.String() + " (credentials, query and fragment not shown)"
	}
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("endpoint %q refused: %s; an endpoint override exists only for testing against a loopback fake (127.0.0.0/8, ::1, localhost)", shown, why)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return refuse("it is not an http or https URL")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return refuse("it carries credentials, a query or a fragment")
	}
	if !Loopback(u.Hostname()) {
		return refuse("its host is not a loopback address")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1beta/models/" + model + ":generateContent"
		u.RawPath = ""
	}
	return u.String(), nil
}

// Loopback reports whether host is localhost or a loopback IP address
// (127.0.0.0/8, ::1, or either mapped into IPv6). Other spellings that
// resolvers may accept (127.1, decimal integers, trailing dots) are not.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
