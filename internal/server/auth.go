package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// The scopes a token may carry.
const (
	ScopeRead    = "read"    // see the token's own runs, their events and recordings
	ScopeRun     = "run"     // start scripted runs, cancel runs
	ScopeLive    = "live"    // start Gemini runs, spending the server's key
	ScopeCorpora = "corpora" // upload and delete the token's own corpora
)

// Scopes lists the scopes in the order they are shown.
func Scopes() []string { return []string{ScopeRead, ScopeRun, ScopeLive, ScopeCorpora} }

// MinPepper is the shortest pepper accepted, in bytes, and MinPepperBits
// the least entropy its characters must show (see CheckPepper).
const (
	MinPepper     = 32
	MinPepperBits = 180
)

// MakePepper is the command that makes a good pepper, as every refusal
// says.
const MakePepper = "openssl rand -hex 32"

// CheckPepper refuses a pepper that does not look random: shorter than
// MinPepper bytes, a shorter string repeated, or with fewer than
// MinPepperBits bits by its characters' counts (its length times the
// Shannon entropy of its byte frequencies, an upper bound on what it can
// hold). Sixteen "a"s hold nothing; 64 random hex digits (MakePepper)
// show at least 200 bits, 32 random bytes in base64 at least 185, while
// 32 hex digits can show at most 128 and a sentence of 43 letters about
// 160.
// It is the HMAC key of every stored token secret: a guessable one would
// let a stolen database be searched for tokens.
func CheckPepper(p []byte) error {
	bits := pepperBits(p)
	switch {
	case len(p) < MinPepper:
		return fmt.Errorf("the token pepper is %d bytes; it needs at least %d random-looking bytes (make one with: %s)", len(p), MinPepper, MakePepper)
	case periodic(p):
		return fmt.Errorf("the token pepper is a shorter string repeated, not random (make one with: %s)", MakePepper)
	case bits < MinPepperBits:
		return fmt.Errorf("the token pepper does not look random: its characters show about %.0f bits, under %d (make one with: %s)", bits, MinPepperBits, MakePepper)
	}
	return nil
}

// pepperBits is len(p) times the Shannon entropy of p's byte frequencies.
func pepperBits(p []byte) float64 {
	var counts [256]int
	for _, c := range p {
		counts[c]++
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			f := float64(n) / float64(len(p))
			h -= float64(n) * math.Log2(f)
		}
	}
	return h
}

// periodic reports whether p is a shorter string repeated (the last
// repetition may be cut short).
func periodic(p []byte) bool {
	for period := 1; period <= len(p)/2; period++ {
		if bytes.Equal(p[period:], p[:len(p)-period]) {
			return true
		}
	}
	return false
}

// tokenPrefix starts every token, so one found in a log or a paste is
// recognisable (and a secret scanner can be taught it).
const tokenPrefix = "rag_"

// Token lengths in hex digits: the id (looked up) and the secret (only its
// HMAC is stored).
const (
	idHex     = 16
	secretHex = 64
)

// NewToken makes a token: the string to hand to its holder, shown once,
// and the record to store, which keeps only the HMAC of the secret under
// pepper. Daily allowances must be at least 1.
func NewToken(pepper []byte, name string, scopes []string, dailyRequests, dailyLiveCalls int, now time.Time) (string, store.Token, error) {
	if err := CheckPepper(pepper); err != nil {
		return "", store.Token{}, err
	}
	if strings.TrimSpace(name) == "" || len(name) > 100 {
		return "", store.Token{}, errors.New("a token needs a name of 1 to 100 bytes")
	}
	if len(scopes) == 0 {
		return "", store.Token{}, fmt.Errorf("a token needs at least one scope among %s", strings.Join(Scopes(), ", "))
	}
	seen := map[string]bool{}
	for _, s := range scopes {
		if !slices.Contains(Scopes(), s) {
			return "", store.Token{}, fmt.Errorf("scope %q is not one of %s", s, strings.Join(Scopes(), ", "))
		}
		if seen[s] {
			return "", store.Token{}, fmt.Errorf("scope %q is given twice", s)
		}
		seen[s] = true
	}
	if dailyRequests < 1 || dailyLiveCalls < 1 {
		return "", store.Token{}, errors.New("daily allowances must be whole numbers of at least 1")
	}
	id, err := randomHex(idHex / 2)
	if err != nil {
		return "", store.Token{}, err
	}
	secret, err := randomHex(secretHex / 2)
	if err != nil {
		return "", store.Token{}, err
	}
	t := store.Token{ID: id, Name: name, Hash: hashSecret(pepper, secret), Scopes: scopes,
		DailyRequests: dailyRequests, DailyLiveCalls: dailyLiveCalls, CreatedAt: now.UTC()}
	return tokenPrefix + id + "_" + secret, t, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// hashSecret is the hex HMAC-SHA256 of a token's secret under the pepper:
// a stolen database alone cannot be turned into working tokens.
func hashSecret(pepper []byte, secret string) string {
	m := hmac.New(sha256.New, pepper)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))
}

// parseToken splits rag_<id>_<secret>, both lower-case hex of fixed length.
func parseToken(s string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok || len(rest) != idHex+1+secretHex || rest[idHex] != '_' {
		return "", "", false
	}
	id, secret = rest[:idHex], rest[idHex+1:]
	if !lowerHex(id) || !lowerHex(secret) {
		return "", "", false
	}
	return id, secret, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// unauthorized is the one refusal for every bad credential (missing,
// malformed, unknown, forged, revoked), so a caller learns nothing about
// which tokens exist.
var unauthorized = refuse(http.StatusUnauthorized, CodeUnauthorized, "a valid bearer token is required (Authorization: Bearer rag_...)")

// authenticate finds the request's token. The id selects the record; the
// secret's HMAC is compared with the stored one in constant time.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (store.Token, *apiError) {
	h := r.Header.Values("Authorization")
	if len(h) != 1 {
		return store.Token{}, unauthorized
	}
	scheme, cred, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return store.Token{}, unauthorized
	}
	id, secret, ok := parseToken(strings.TrimSpace(cred))
	if !ok {
		return store.Token{}, unauthorized
	}
	t, found, err := s.store.Token(ctx, id)
	if err != nil {
		return store.Token{}, s.internal("token lookup", err)
	}
	// Hash and compare even when the id is unknown, so both take as long.
	want := t.Hash
	if !found {
		want = strings.Repeat("0", sha256.Size*2)
	}
	match := subtle.ConstantTimeCompare([]byte(hashSecret(s.pepper, secret)), []byte(want)) == 1
	if !found || !match || !t.RevokedAt.IsZero() {
		return store.Token{}, unauthorized
	}
	return t, nil
}

// hasScope reports whether the token carries any of scopes.
func hasScope(t store.Token, scopes ...string) bool {
	for _, s := range scopes {
		if slices.Contains(t.Scopes, s) {
			return true
		}
	}
	return false
}

func missingScope(scopes ...string) *apiError {
	return refuse(http.StatusForbidden, CodeMissingScope, fmt.Sprintf("the token needs the %s scope", strings.Join(scopes, " or ")))
}

// day is the UTC date allowances are counted by.
func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// untilTomorrow is the seconds to the next UTC midnight (at least 1).
func untilTomorrow(now time.Time) int {
	now = now.UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return max(1, int(next.Sub(now).Seconds()+0.999))
}
