package secret_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ragagentlab/ragagent/core/secret"
)

const key = "AIzaSyD-test_KEY/0123+x"

// escapeAll writes every character of s as a \uXXXX escape.
func escapeAll(s string, upper bool) string {
	var b strings.Builder
	for _, r := range s {
		if upper {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func percentAll(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// TestRedactEveryForm: one row per way an echo can spell the key; each is
// replaced whole, the text around it kept.
func TestRedactEveryForm(t *testing.T) {
	for _, c := range []struct{ name, key, echo string }{
		{"verbatim", key, key},
		{"every character a lower-case \\u escape", key, escapeAll(key, false)},
		{"every character an upper-case \\u escape", key, escapeAll(key, true)},
		{"some characters escaped", key, `AIza\u0053yD-test_KEY\/0123\u002bx`},
		{"slash as \\/", key, `AIzaSyD-test_KEY\/0123+x`},
		{"escaped twice (JSON in a JSON string)", key, `AIza\\u0053yD-test_KEY\\/0123+x`},
		{"every byte percent-encoded", key, percentAll(key)},
		{"percent-encoded in lower case", key, strings.ToLower(percentAll(key))},
		{"some bytes percent-encoded", key, "AIzaSyD-test_KEY%2F0123%2Bx"},
		{"escapes and percent mixed", key, `\u0041IzaSyD-test_KEY%2f0123+x`},
		{"a space as +, %20 or \\u0020", "ab cd ef gh", "ab+cd%20ef\\u0020gh"},
		{"non-ASCII: UTF-8 percent bytes and a surrogate pair", "kéy😀z", `k%C3%A9y\ud83d\ude00z`},
		{"trailing space in the key: matched as sent (trimmed)", key + " \n", key},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(`{"error": {"message": "API key ` + c.echo + ` is invalid", "again": "` + c.echo + `"}}`)
			assert.True(t, secret.Contains(body, c.key))
			got := string(secret.Redact(body, c.key))
			assert.Equal(t, `{"error": {"message": "API key [redacted key] is invalid", "again": "[redacted key]"}}`, got)
			assert.False(t, secret.Contains([]byte(got), c.key))
		})
	}
}

// TestRedactLeavesEverythingElse: a part of the key, another case, or no
// key at all is not touched.
func TestRedactLeavesEverythingElse(t *testing.T) {
	for _, text := range []string{
		"AIzaSyD-test_KEY/0123+", // one character short
		strings.ToUpper(key),
		`AIza\u0054yD-test_KEY/0123+x`, // an escape of another character
		"AIzaSyD-test_KEY%2G0123+x",    // not a percent escape
		"",
	} {
		assert.False(t, secret.Contains([]byte(text), key), text)
		assert.Equal(t, text, string(secret.Redact([]byte(text), key)))
	}
	body := []byte("anything " + key)
	assert.Equal(t, string(body), string(secret.Redact(body, "   ")), "no key, nothing redacted")
	assert.False(t, secret.Contains(body, ""))
}

func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"x": "`+escapeAll(key, false)+`"}`), key)
	f.Add([]byte("%41%49"+key), "AI")
	f.Fuzz(func(t *testing.T, data []byte, k string) {
		out := secret.Redact(data, k)
		// A key that shares no character with the mark cannot reappear
		// around it, so none is left.
		if strings.TrimSpace(k) != "" && !strings.ContainsAny(k, secret.Mark) {
			assert.False(t, secret.Contains(out, k), "redacted text still holds the key")
		}
	})
}
