package secret_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
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
		units := []rune{r}
		if hi, lo := utf16.EncodeRune(r); hi != utf8.RuneError {
			units = []rune{hi, lo} // a surrogate pair above U+FFFF
		}
		for _, u := range units {
			if upper {
				fmt.Fprintf(&b, `\u%04X`, u)
			} else {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
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

// htmlAll writes every character of s as an HTML reference: decimal, or
// hexadecimal with the given x and a semicolon or not.
func htmlAll(s string, hex bool, x string, semi bool) string {
	var b strings.Builder
	for _, r := range s {
		if hex {
			fmt.Fprintf(&b, "&#%s%X", x, r)
		} else {
			fmt.Fprintf(&b, "&#%d", r)
		}
		if semi {
			b.WriteByte(';')
		}
	}
	return b.String()
}

// mixedCase swaps the case of every other ASCII letter.
func mixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		switch c := b[i]; {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// split puts sep after every n bytes of s.
func split(s string, n int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s[i:min(i+n, len(s))])
	}
	return b.String()
}

// inBase64 is the base64 of prefix, the key and suffix: the key's bytes at
// the alignment len(prefix) % 3 of longer base64 text.
func inBase64(enc *base64.Encoding, prefix, k, suffix string) string {
	return enc.EncodeToString([]byte(prefix + k + suffix))
}

// form is one way an echo can spell the key.
type form struct {
	name, key, echo string
	base64          bool // the echo is longer base64 text: a digit or two around the key's stay
}

// forms are the ways an echo can spell the key, one row each.
func forms() []form {
	return []form{
		{"verbatim", key, key, false},
		{"every character a lower-case \\u escape", key, escapeAll(key, false), false},
		{"every character an upper-case \\u escape", key, escapeAll(key, true), false},
		{"some characters escaped", key, `AIza\u0053yD-test_KEY\/0123\u002bx`, false},
		{"slash as \\/", key, `AIzaSyD-test_KEY\/0123+x`, false},
		{"escaped twice (JSON in a JSON string)", key, `AIza\\u0053yD-test_KEY\\/0123+x`, false},
		{"every byte percent-encoded", key, percentAll(key), false},
		{"percent-encoded in lower case", key, strings.ToLower(percentAll(key)), false},
		{"some bytes percent-encoded", key, "AIzaSyD-test_KEY%2F0123%2Bx", false},
		{"escapes and percent mixed", key, `\u0041IzaSyD-test_KEY%2f0123+x`, false},
		{"a space as +, %20 or \\u0020", "ab cd ef gh ij kl", "ab+cd%20ef\\u0020gh ij+kl", false},
		{"non-ASCII: UTF-8 percent bytes and a surrogate pair", "kéy😀z-0123456789ab", `k%C3%A9y\ud83d\ude00z-0123456789ab`, false},
		{"upper case", key, strings.ToUpper(key), false},
		{"lower case", key, strings.ToLower(key), false},
		{"mixed case", key, mixedCase(key), false},
		{"upper case, percent-encoded in lower case", key, strings.ToLower(percentAll(strings.ToUpper(key))), false},
		{"upper case as \\u escapes", key, escapeAll(strings.ToUpper(key), false), false},
		{"HTML decimal references", key, htmlAll(key, false, "", true), false},
		{"HTML hexadecimal references", key, htmlAll(key, true, "x", true), false},
		{"HTML hexadecimal references, upper-case X, no semicolons", key, htmlAll(key, true, "X", false), false},
		{"HTML named references", key, "AIzaSyD-test&lowbar;KEY&sol;0123&plus;x", false},
		{"HTML-escaped & < > \" '", `k&y<v>"q'-0123456789`, `k&amp;y&lt;v&gt;&quot;q&#39;-0123456789`, false},
		{"HTML references in upper case", key, strings.ToUpper("AIzaSyD-test&#x5f;KEY&#x2f;0123&#43;x"), false},
		{"split by a space", key, "AIzaSyD-test_ KEY/0123+x", false},
		{"split by a line break", key, "AIzaSyD-test_KEY/\n0123+x", false},
		{"split by CRLF and a tab, twice", key, "AIzaSyD\r\n\t-test_KEY/01\r\n23+x", false},
		{"split by an escaped line break", key, `AIzaSyD-test_KEY\n/0123+x`, false},
		{"split by an HTML line break reference", key, "AIzaSyD-test&#10;_KEY/0123+x", false},
		{"split by a percent-encoded line break", key, "AIzaSyD-test%0A_KEY/0123+x", false},
		{"base64, padded", key, base64.StdEncoding.EncodeToString([]byte(key)), true},
		{"base64, unpadded", key, base64.RawStdEncoding.EncodeToString([]byte(key)), true},
		{"base64 URL alphabet", key, base64.URLEncoding.EncodeToString([]byte(key)), true},
		{"base64 URL alphabet, unpadded", key, base64.RawURLEncoding.EncodeToString([]byte(key)), true},
		{"base64, the key at offset 1 of longer text", key, inBase64(base64.StdEncoding, "x", key, "!tail"), true},
		{"base64, the key at offset 2 of longer text", key, inBase64(base64.StdEncoding, "xy", key, "?"), true},
		{"base64, the key at offset 3 of longer text", key, inBase64(base64.StdEncoding, "xyz", key, "tail"), true},
		{"base64 URL alphabet, the key at offset 1", key, inBase64(base64.RawURLEncoding, "{", key, "}"), true},
		{"base64 URL alphabet, the key at offset 2", key, inBase64(base64.RawURLEncoding, "\xff\xfe", key, "\x00"), true},
		{"base64 broken into lines (MIME)", key, split(inBase64(base64.StdEncoding, "Authorization: ", key, "\n"), 8, "\r\n"), true},
		{"base64 with / as \\/ in a JSON string", "?>?>?>?>?>?>?>?>?>", strings.ReplaceAll(inBase64(base64.StdEncoding, "k=", "?>?>?>?>?>?>?>?>?>", ""), "/", `\/`), true},
	}
}

// TestRedactEveryForm: one row per way an echo can spell the key; each is
// replaced whole, the text around it kept (base64 text keeps the digit or
// two at each end that also encode its neighbours).
func TestRedactEveryForm(t *testing.T) {
	for _, c := range forms() {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(`{"error": {"message": "API key ` + c.echo + ` is invalid", "again": "` + c.echo + `"}}`)
			assert.True(t, secret.Contains(body, c.key))
			got := string(secret.Redact(body, c.key))
			if !c.base64 {
				assert.Equal(t, `{"error": {"message": "API key [redacted key] is invalid", "again": "[redacted key]"}}`, got)
			}
			assert.Equal(t, 2, strings.Count(got, secret.Mark), got)
			assert.False(t, secret.Contains([]byte(got), c.key))
			if c.base64 {
				for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
					for _, part := range strings.Fields(strings.NewReplacer(secret.Mark, " ", `"`, " ", `\`, " ").Replace(got)) {
						if dec, err := enc.DecodeString(part); err == nil {
							assert.NotContains(t, string(dec), c.key[1:len(c.key)-1], "what is left decodes to no part of the key")
						}
					}
				}
			}
		})
	}
}

// TestRedactLeavesEverythingElse: a part of the key, another key, or no
// key at all is not touched, and neither is any text when the key is too
// short to be one.
func TestRedactLeavesEverythingElse(t *testing.T) {
	for _, text := range []string{
		"AIzaSyD-test_KEY/0123+",       // one character short
		`AIza\u0054yD-test_KEY/0123+x`, // an escape of another character
		"AIzaSyD-test_KEY%2G0123+x",    // not a percent escape
		"AIzaSyD-test_KEY/0123+y",
		"AIzaSyD-test-KEY/0123+x", // - for _: only letters fold
		base64.StdEncoding.EncodeToString([]byte("AIzaSyD-test_KEY/0124+x")),
		"&#65IzaSyD-test_KEY/0123+", // a reference, but one character short
		"",
	} {
		assert.False(t, secret.Contains([]byte(text), key), text)
		assert.Equal(t, text, string(secret.Redact([]byte(text), key)))
	}
	body := []byte("anything " + key)
	assert.Equal(t, string(body), string(secret.Redact(body, "   ")), "no key, nothing redacted")
	assert.False(t, secret.Contains(body, ""))
	short := key[:secret.MinKey-1]
	assert.False(t, secret.Contains(body, short), "a key of %d characters is not a key", len(short))
	assert.Equal(t, string(body), string(secret.Redact(body, short)))
	assert.True(t, secret.Contains(body, key[:secret.MinKey]))
}

// TestCheckKeyRefusesWhatIsNotAKey: a key shorter than MinKey characters
// (counted in code points, after trimming, as sent) is refused at entry.
func TestCheckKeyRefusesWhatIsNotAKey(t *testing.T) {
	assert.NoError(t, secret.CheckKey(""), "no key")
	assert.NoError(t, secret.CheckKey(" \t"), "white space alone is no key")
	assert.NoError(t, secret.CheckKey(key))
	assert.NoError(t, secret.CheckKey(strings.Repeat("é", secret.MinKey)))
	for _, k := range []string{"x", " demo ", strings.Repeat("é", secret.MinKey-1), key[:secret.MinKey-1] + "   "} {
		err := secret.CheckKey(k)
		if assert.Error(t, err, "%q", k) {
			assert.Contains(t, err.Error(), "not an API key")
		}
	}
}

// spell writes k in one of the forms the redaction knows, chosen by how.
func spell(k string, how uint8, at int) string {
	switch how % 12 {
	case 0:
		return k
	case 1:
		return asciiCase(k, unicode.ToUpper)
	case 2:
		return mixedCase(k)
	case 3:
		return escapeAll(k, how&16 != 0)
	case 4:
		return percentAll(k)
	case 5:
		// Without semicolons the last reference gets one: digits that
		// follow would otherwise continue its number.
		if how&16 != 0 {
			return htmlAll(k, false, "", true)
		}
		return htmlAll(k, false, "", false) + ";"
	case 6:
		return htmlAll(k, true, "x", true)
	case 7:
		// White space between two characters that are not white space.
		rs := []rune(k)
		for i := len(rs) / 2; i < len(rs); i++ {
			if !unicode.IsSpace(rs[i-1]) && !unicode.IsSpace(rs[i]) {
				return string(rs[:i]) + []string{" ", "\n", "\r\n", "\t"}[at%4] + string(rs[i:])
			}
		}
		return k
	case 8:
		return inBase64(base64.StdEncoding, strings.Repeat("p", at%7), k, strings.Repeat("s", at%5))
	case 9:
		return inBase64(base64.RawURLEncoding, strings.Repeat("p", at%7), k, "")
	case 10:
		return split(inBase64(base64.StdEncoding, strings.Repeat("p", at%3), k, "s"), 4+at%9, "\r\n")
	}
	return asciiCase(k, unicode.ToLower)
}

// asciiCase maps the ASCII letters of s (only those fold).
func asciiCase(s string, to func(rune) rune) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 {
			return to(r)
		}
		return r
	}, s)
}

func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"x": "`+escapeAll(key, false)+`"}`), key, uint8(0), 3)
	f.Add([]byte("%41%49"+key), "AIzaSyD-test_KEY", uint8(8), 1)
	f.Add([]byte("<p>"+htmlAll(key, true, "x", true)+"</p>"), key, uint8(5), 2)
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte("xy"+key))), key, uint8(10), 40)
	f.Fuzz(func(t *testing.T, data []byte, k string, how uint8, at int) {
		out := secret.Redact(data, k)
		if secret.CheckKey(k) != nil || strings.TrimSpace(k) == "" || !utf8.ValidString(k) {
			assert.Equal(t, data, out, "not a key: nothing redacted")
			return
		}
		// A key that shares no character with the mark (letters folded)
		// cannot reappear around it, so none is left.
		if !strings.ContainsAny(strings.ToLower(k)+strings.ToUpper(k), secret.Mark) {
			assert.False(t, secret.Contains(out, k), "redacted text still holds the key")
		}
		// The key spelled in any of the forms, anywhere, is found.
		at = max(0, min(at, len(data)))
		echo := spell(strings.TrimSpace(k), how, at)
		with := append(append(append([]byte{}, data[:at]...), echo...), data[at:]...)
		assert.True(t, secret.Contains(with, k), "the key spelled %q is found", echo)
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
	var rows []struct{ name, key, body string }
	for _, f := range forms() {
		rows = append(rows, struct{ name, key, body string }{f.name, f.key, wrap(f.echo)})
	}
	return append(rows, []struct{ name, key, body string }{
		{"a surrogate pair escaped twice, upper-case hex", "😀-0123456789abcdef", `x\\uD83D\\uDE00-0123456789abcdefy`},
		{"a lone high surrogate is not the character", "😀-0123456789abcdef", `x\ud83d-0123456789abcdefy`},
		{"a quote and a tab in the key as short escapes", "a\"b\tc-0123456789abcdef", `[a\"b\tc-0123456789abcdef]`},
		{"the key twice, adjacent", key, key + key},
		{"overlapping occurrences: the first wins", strings.Repeat("a", 16), strings.Repeat("a", 17)},
		{"nothing but the key", key, key},
		{"white space before the key is kept", key, "x \n\t" + key},
		{"white space inside the key is not optional", "ab cd ef gh ij kl", "abcdefghijkl ab cdef gh ij kl"},
		{"a trailing space pasted with the key (fetch trims it)", key + " ", "echo: " + key + "."},
		{"a leading tab and a trailing newline pasted with the key", "\t" + key + "\r\n", "echo: " + key + "."},
		{"a trailing no-break space and ideographic space are trimmed", key + "\u00a0\u3000", "echo: " + key + "."},
		{"U+0085 is white space to Go: trimmed", key + "\u0085", "echo: " + key + "."},
		{"U+FEFF is not white space to Go: kept, so the key without it is not matched", "\ufeff" + key, "echo: " + key + "."},
		{"U+FEFF kept: the key with it is matched", "\ufeff" + key, "echo: \ufeff" + key + "."},
		{"one character short", key, "AIzaSyD-test_KEY/0123+"},
		{"letters fold, signs do not", key, "AIzaSyD-test-KEY/0123+x"},
		{"non-ASCII letters do not fold", "kéy-0123456789abcdef", "KÉY-0123456789ABCDEF kÉy-0123456789abcdef KéY-0123456789ABCDEF"},
		{"an escape of another character", key, `AIza\u0054yD-test_KEY/0123+x`},
		{"not a percent escape", key, "AIzaSyD-test_KEY%2G0123+x"},
		{"an escape cut short at the end", key, `AIzaSyD-test_KEY/0123+\u00`},
		{"a percent escape cut short at the end", key, "AIzaSyD-test_KEY/0123+%7"},
		{"a reference cut short at the end", key, "AIzaSyD-test_KEY/0123+&#x7"},
		{"a named reference that does not exist", key, "AIzaSyD-test&under;KEY/0123+x"},
		{"a named reference is case-sensitive", key, "AIzaSyD-test&LOWBAR;KEY/0123+x"},
		{"base64 of another key", key, base64.StdEncoding.EncodeToString([]byte("AIzaSyD-test_KEY/0124+x"))},
		{"base64 leaves out the last bits: a key that differs only there matches", key, base64.StdEncoding.EncodeToString([]byte("AIzaSyD-test_KEY/0123+y"))},
		{"invalid UTF-8 around the key is kept byte for byte", key, "\xff\xfe" + key + "\xc3"},
		{"a multi-byte character half percent-encoded", "é0123456789abcdef", "[%C3\xa90123456789abcdef]"},
		{"a key of 15 characters is not a key", "AIzaSyD-test_KE", "AIzaSyD-test_KE aizasyd-test_ke"},
		{"a key of 16 characters is", "AIzaSyD-test_KEY", "AIzaSyD-test_KEY aizasyd-test_key"},
		{"a one-character key is not a key", "x", "every x in the text is kept"},
		{"an empty body", key, ""},
		{"a key of white space redacts nothing", " \t\n", "a b\tc"},
	}...)
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
