package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/secret"
	"github.com/ragagentlab/ragagent/internal/geminitest"
	"github.com/ragagentlab/ragagent/internal/keyguard"
)

// escaped writes every character of s as a \uXXXX escape.
func escaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// keyEchoes is a fake that echoes the key it is sent: in the assessment
// of a search (verbatim), then of a stop (as \u escapes), then in a 403's
// message (as \u escapes), then answers with the scripted policy.
func keyEchoes() *geminitest.Server {
	n := 0
	policy := geminitest.Policy()
	return geminitest.NewServer(geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
		n++
		k := r.Header.Get("X-Goog-Api-Key")
		switch n {
		case 1:
			return geminitest.Decision(pyjson.NewObject("action", "search", "assessment", "the key is "+k, "query", "write text file",
				"source_id", "", "answer", "", "citations", []any{}))
		case 2:
			return geminitest.Text(`{"action": "stop", "assessment": "again ` + escaped(k) + `", "query": "", "source_id": "", "answer": "", "citations": []}`)
		case 3:
			return geminitest.Raw(403, `{"error": {"code": 403, "message": "API key `+escaped(k)+` not valid", "status": "PERMISSION_DENIED"}}`)
		}
		return policy.Reply(r)
	}))
}

// TestTheKeyReachesNoOutput: replies that echo the key (verbatim, as \u
// escapes, in 2xx text and a 403's message) leave it in none of stdout,
// stderr, --json output, the recording or the report, in any form. It was
// printed on stdout and in --json detail, and written 32 times to the
// recording, output and report.
func TestTheKeyReachesNoOutput(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json ", asJSON), func(t *testing.T) {
			fake := keyEchoes()
			defer fake.Close()
			dir := t.TempDir()
			output := filepath.Join(dir, "rec.json")
			t.Setenv("GOOGLE_API_KEY", dummyKey+" ") // trimmed when sent, and when looked for
			args := []string{"live", "--execute-approved", "--endpoint", fake.URL(), "--output", output, "--cases", "overwrite", "--repeats", "1", "--modes", "agent,fixed"}
			if asJSON {
				args = append(args, "--json")
			}
			code, out, errs := ragagent(args...)
			require.Equal(t, exitOK, code, errs)
			recData, err := os.ReadFile(output)
			require.NoError(t, err)
			repData, err := os.ReadFile(filepath.Join(dir, "rec.report.json"))
			require.NoError(t, err)
			for name, text := range map[string]string{"stdout": out, "stderr": errs, "recording": string(recData), "report": string(repData)} {
				assert.False(t, secret.Contains([]byte(text), dummyKey), "the key is in the %s", name)
			}
			assert.Contains(t, string(recData), secret.Mark, "the echo was recorded, redacted")
			assert.NotContains(t, out+errs, "withheld", "the transport redacted it: the last check found nothing")
			gens := fake.Generations()
			require.GreaterOrEqual(t, len(gens), 2, "both echoing replies were asked for")
			assert.Equal(t, dummyKey, gens[0].Header.Get("X-Goog-Api-Key"))
		})
	}
}

// TestA403EchoingTheKeyIsShownRedacted: run --policy gemini shows the
// API's message of a 403 (on stdout, and in --json detail) without the key
// it echoed as \u escapes.
func TestA403EchoingTheKeyIsShownRedacted(t *testing.T) {
	fake := geminitest.NewServer(geminitest.ResponderFunc(func(r geminitest.Request) geminitest.Reply {
		return geminitest.Raw(403, `{"error": {"code": 403, "message": "API key `+escaped(r.Header.Get("X-Goog-Api-Key"))+` not valid"}}`)
	}))
	defer fake.Close()
	t.Setenv("GOOGLE_API_KEY", dummyKey)
	for _, asJSON := range []bool{false, true} {
		args := []string{"run", "--policy", "gemini", "--question", "How do I write a file?", "--endpoint", fake.URL(),
			"--record", filepath.Join(t.TempDir(), "r.json")}
		if asJSON {
			args = append(args, "--json")
		}
		code, out, errs := ragagent(args...)
		require.Equal(t, exitOK, code, errs)
		assert.Contains(t, out, "HTTP 403: API key "+secret.Mark+" not valid")
		assert.False(t, secret.Contains([]byte(out+errs), dummyKey))
	}
}

// TestTheLastCheckWithholdsWhatHoldsTheKey: whatever got past redaction
// (here a recording the person replays that carries the key) is not
// printed: the line is withheld and the command exits 1; a file holding
// the key is not written.
func TestTheLastCheckWithholdsWhatHoldsTheKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", dummyKey)
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"format": "ragagent-recording/1", "trials": [{"id": "x", "case_id": "c", "mode": "agent",
		"question": "is `+escaped(dummyKey)+` a key?", "version": "3.12", "exchanges": []}]}`), 0o644))
	code, out, errs := ragagent("replay", "--recording", path, "--json")
	assert.Equal(t, exitError, code)
	assert.False(t, secret.Contains([]byte(out+errs), dummyKey))
	assert.Contains(t, out, "[a line of output was withheld: it contained the API key]")
	assert.Contains(t, errs, "output that contained the API key was withheld")

	g := keyguard.New(dummyKey + "\n")
	o, err := newOutput(filepath.Join(t.TempDir(), "out.json"), g)
	require.NoError(t, err)
	err = o.save([]byte(`{"x": "` + strings.ReplaceAll(strings.ToUpper(escaped(dummyKey)), `\U`, `\u`) + `"}`))
	assert.ErrorContains(t, err, "it contains the API key; nothing was written")
	assert.NoFileExists(t, o.path)
	require.NoError(t, o.save([]byte(`{"x": 1}`)))
	assert.FileExists(t, o.path)
}

// TestEveryFileWrittenIsRefusedIfItHoldsTheKey: each command's file
// writes pass the same last check as output.save: a file holding the
// environment's key is not written and the command exits 1 with one line
// saying so. replay --otlp wrote the key in plain text and exited 0;
// import-published and corpus build wrote whatever they made unchecked.
func TestEveryFileWrittenIsRefusedIfItHoldsTheKey(t *testing.T) {
	dir := t.TempDir()
	recording := filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(recording, []byte(`{"format": "ragagent-recording/1", "trials": [{"id": "x", "case_id": "c", "mode": "agent",
		"question": "is `+escaped(dummyKey)+` a key?", "version": "3.12", "exchanges": []}]}`), 0o644))
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.md"), []byte("# Keys\n\nMine is "+dummyKey+".\n"), 0o644))
	for _, c := range []struct {
		name, key string
		args      func(out string) []string
		file      string // the refused file, under out ("" for out itself)
	}{
		{"replay --otlp", dummyKey, func(out string) []string {
			return []string{"replay", "--recording", recording, "--otlp", out}
		}, ""},
		// The rebuilt recording holds this question; a key equal to it
		// stands for a key that reached the published record.
		{"import-published --output", "does Path.write_text append", func(out string) []string {
			return []string{"import-published", "--output", out}
		}, ""},
		{"corpus build --gzip", dummyKey, func(out string) []string {
			return []string{"corpus", "build", "--from", docs, "--out", out, "--id", "keys", "--title", "Keys", "--version", "1.0",
				"--base-url", "https://example.org/", "--licence", "CC0", "--attribution", "me", "--gzip"}
		}, "passages.json.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", c.key)
			out := filepath.Join(t.TempDir(), "out.json")
			refused := out
			if c.file != "" {
				refused = filepath.Join(out, c.file)
			}
			code, stdout, errs := ragagent(c.args(out)...)
			assert.Equal(t, exitError, code)
			assert.NoFileExists(t, refused)
			assert.False(t, secret.Contains([]byte(stdout+errs), c.key))
			assert.Contains(t, errs, "refusing to write "+refused+": it contains the API key; nothing was written")
			progress := regexp.MustCompile(`(?m)^read [0-9]+/[0-9]+ documents\n`) // corpus build's, into a buffer
			assert.Equal(t, 1, strings.Count(progress.ReplaceAllString(errs, ""), "\n"), "one line: %q", errs)

			t.Setenv("GEMINI_API_KEY", "another-key-in-no-file")
			code, _, errs = ragagent(c.args(out)...)
			assert.Equal(t, exitOK, code, errs)
			assert.FileExists(t, refused, "a file without the key is written")
		})
	}
}

// A key shorter than secret.MinKey characters in the environment is not a
// key: every command refuses it in one line before doing anything, so the
// redaction and the output guard never look for a fragment that nearly
// any text holds (a one-character demo key withheld every file).
func TestAShortKeyIsRefusedAtEntry(t *testing.T) {
	for _, row := range []struct{ variable, value string }{{"GOOGLE_API_KEY", "x"}, {"GEMINI_API_KEY", " demo-key-15char "}} {
		t.Run(row.variable, func(t *testing.T) {
			noKey(t)
			t.Setenv(row.variable, row.value)
			for _, args := range [][]string{{"replay"}, {"live", "--cases", "overwrite"}, {"serve-api", "--db", filepath.Join(t.TempDir(), "x.db")}} {
				code, out, errs := ragagent(args...)
				assert.Equal(t, exitUsage, code, args)
				assert.Empty(t, out, args)
				assert.Contains(t, errs, row.variable+" is not an API key", args)
				assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			}
		})
	}
}
