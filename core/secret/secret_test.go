package secret_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

var update = flag.Bool("update", false, "rewrite testdata/redact.json from the rows and this package's redaction")

// vectorRows are the cases every implementation of the redaction must
// agree on, byte for byte: the rows above, the trimming of the key as sent,
// and the edges of each form.
func vectorRows() []struct{ name, key, body string } {
	wrap := func(echo string) string {
		return `{"error": {"message": "API key ` + echo + ` is invalid", "again": "` + echo + `"}}`
	}
	rows := []struct{ name, key, body string }{
		{"verbatim", key, wrap(key)},
		{"every character a lower-case \\u escape", key, wrap(escapeAll(key, false))},
		{"every character an upper-case \\u escape", key, wrap(escapeAll(key, true))},
		{"some characters escaped", key, wrap(`AIza\u0053yD-test_KEY\/0123\u002bx`)},
		{"escaped twice (JSON in a JSON string)", key, wrap(`AIza\\u0053yD-test_KEY\\/0123+x`)},
		{"every byte percent-encoded", key, wrap(percentAll(key))},
		{"percent-encoded in lower case", key, wrap(strings.ToLower(percentAll(key)))},
		{"escapes and percent mixed", key, wrap(`\u0041IzaSyD-test_KEY%2f0123+x`)},
		{"a space as +, %20 or \\u0020", "ab cd ef gh", wrap("ab+cd%20ef\\u0020gh")},
		{"non-ASCII: UTF-8 percent bytes and a surrogate pair", "kéy😀z", wrap(`k%C3%A9y\ud83d\ude00z`)},
		{"a surrogate pair escaped twice, upper-case hex", "😀", `x\\uD83D\\uDE00y`},
		{"a lone high surrogate is not the character", "😀", `x\ud83dy`},
		{"a quote and a tab in the key as short escapes", "a\"b\tc", `[a\"b\tc]`},
		{"the key twice, adjacent", key, key + key},
		{"overlapping occurrences: the first wins", "aa", "aaa"},
		{"nothing but the key", key, key},
		{"a trailing space pasted with the key (fetch trims it)", key + " ", "echo: " + key + "."},
		{"a leading tab and a trailing newline pasted with the key", "\t" + key + "\r\n", "echo: " + key + "."},
		{"a trailing no-break space and ideographic space are trimmed", key + "\u00a0\u3000", "echo: " + key + "."},
		{"U+0085 is white space to Go: trimmed", key + "\u0085", "echo: " + key + "."},
		{"U+FEFF is not white space to Go: kept, so the key without it is not matched", "\ufeff" + key, "echo: " + key + "."},
		{"U+FEFF kept: the key with it is matched", "\ufeff" + key, "echo: \ufeff" + key + "."},
		{"one character short", key, "AIzaSyD-test_KEY/0123+"},
		{"another case", key, strings.ToUpper(key)},
		{"an escape of another character", key, `AIza\u0054yD-test_KEY/0123+x`},
		{"not a percent escape", key, "AIzaSyD-test_KEY%2G0123+x"},
		{"an escape cut short at the end", key, `AIzaSyD-test_KEY/0123+\u00`},
		{"a percent escape cut short at the end", key, "AIzaSyD-test_KEY/0123+%7"},
		{"invalid UTF-8 around the key is kept byte for byte", key, "\xff\xfe" + key + "\xc3"},
		{"a multi-byte character half percent-encoded", "é", "[%C3\xa9]"},
		{"an empty body", key, ""},
		{"a key of white space redacts nothing", " \t\n", "a b\tc"},
	}
	return rows
}

// vector is one row of testdata/redact.json: bytes that are not UTF-8
// are written in hex.
type vector struct {
	Name        string `json:"name"`
	Key         string `json:"key"`
	Body        string `json:"body,omitempty"`
	BodyHex     string `json:"body_hex,omitempty"`
	Redacted    string `json:"redacted,omitempty"`
	RedactedHex string `json:"redacted_hex,omitempty"`
	Contains    bool   `json:"contains"`
}

type vectorFile struct {
	Format  string   `json:"format"`
	Mark    string   `json:"mark"`
	Vectors []vector `json:"vectors"`
}

// TestRedactVectorsFile holds testdata/redact.json to this package's
// redaction of every row: the page's key.js, which redacts the replies it
// fetches in JavaScript, is tested against the same file (tests/node), so
// the two implementations cannot drift. go test ./core/secret -update
// rewrites it.
func TestRedactVectorsFile(t *testing.T) {
	f := vectorFile{Format: "ragagent-redact-vectors/1", Mark: secret.Mark}
	for _, r := range vectorRows() {
		v := vector{Name: r.name, Key: r.key, Contains: secret.Contains([]byte(r.body), r.key)}
		out := string(secret.Redact([]byte(r.body), r.key))
		if utf8.ValidString(r.body) {
			v.Body = r.body
		} else {
			v.BodyHex = hex.EncodeToString([]byte(r.body))
		}
		if utf8.ValidString(out) {
			v.Redacted = out
		} else {
			v.RedactedHex = hex.EncodeToString([]byte(out))
		}
		assert.Equal(t, v.Contains, out != r.body, "%s: Contains agrees with Redact", r.name)
		f.Vectors = append(f.Vectors, v)
	}
	want, err := json.MarshalIndent(f, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	const path = "testdata/redact.json"
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./core/secret -update writes it")
	assert.Equal(t, string(want), string(got), "go test ./core/secret -update rewrites it")
}
