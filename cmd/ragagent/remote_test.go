package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// teamServer starts serve-api on a database in dir with a token for each
// "name:scopes" given, each also written to dir/NAME.token: the server's
// URL and the tokens, in order.
func teamServer(t *testing.T, dir string, tokens ...string) (base string, plain []string) {
	t.Helper()
	t.Setenv(pepperVariable, testPepper)
	db := filepath.Join(dir, "api.db")
	for _, nt := range tokens {
		name, scopes, _ := strings.Cut(nt, ":")
		code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", name, "--scopes", scopes)
		require.Equal(t, exitOK, code, errOut)
		token = strings.TrimSpace(token)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".token"), []byte(token+"\n"), 0o600))
		plain = append(plain, token)
	}
	_, base, _ = startServeAPI(t, db)
	return base, plain
}

// TestRetrievalOnTheServerIsTheLocalOne: `ragagent retrieval --server URL`
// runs the experiment on serve-api and prints the bytes the local command
// prints for the same pack, TSV question set and configurations (a spec
// file among them), its table too, and gates with --min as locally; the
// token comes from a file or RAGAGENT_TOKEN and never shows in an error.
func TestRetrievalOnTheServerIsTheLocalOne(t *testing.T) {
	dir := t.TempDir()
	base, tokens := teamServer(t, dir, "ci:read,run")
	token, tokenFile := tokens[0], filepath.Join(dir, "ci.token")

	cases := filepath.Join(dir, "cases.tsv")
	require.NoError(t, os.WriteFile(cases, []byte("id\tquestion\ttarget_urls\n"+
		"q1\thow do I read a file line by line?\thttps://docs.python.org/3.11/tutorial/inputoutput.html\n"+
		"q2\thow do I sort a list of dictionaries by a key?\thttps://docs.python.org/3.11/library/functions.html\n"+
		"q3\twhat is the weather tomorrow?\t-\n"), 0o644))
	spec := filepath.Join(dir, "light.json")
	require.NoError(t, os.WriteFile(spec, []byte(`{"name": "light", "tokenizer": "stemmed", "stop_words": "english", "fields": {"text": 1, "title": 0.25}}`), 0o644))
	args := []string{"retrieval", "--corpus", "python-3.11", "--cases", cases, "--config", "seed", "--config", spec, "--config", "general"}

	code, local, errOut := ragagent(append(args, "--json")...)
	require.Equal(t, exitOK, code, errOut)
	code, remote, errOut := ragagent(append(args, "--json", "--server", base, "--token-file", tokenFile)...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, local, remote, "the server's bytes are the command's")
	assert.Contains(t, errOut, "ranked 6/6 questions × configurations")

	t.Setenv(tokenVariable, token)
	code, localTable, _ := ragagent(args...)
	require.Equal(t, exitOK, code)
	code, remoteTable, errOut := ragagent(append(args, "--server", base)...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, localTable, remoteTable)
	var res struct {
		Configs []struct {
			Metrics map[string]struct{ Value float64 }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(local), &res))
	mrr := res.Configs[0].Metrics["mrr@10"].Value
	require.Less(t, mrr, 0.99, "the gate below needs room above seed's mrr@10")
	above := strconv.FormatFloat(mrr+0.01, 'f', 4, 64)
	code, _, errOut = ragagent(append(args, "--server", base, "--min", "mrr@10="+above)...)
	assert.Equal(t, exitError, code, "the --min gate holds on the server's result")
	assert.Contains(t, errOut, "below the minimum "+strings.TrimRight(above, "0"))

	for _, tc := range []struct {
		name string
		args []string
		env  string
		code int
		says string
	}{
		{"a wrong token", []string{"--server", base}, "rat_wrong0000000000000000000000000", exitError, "unauthorized"},
		{"no token", []string{"--server", base}, "", exitUsage, "--server needs a token"},
		{"a local pack folder", []string{"--server", base, "--corpus", dir}, token, exitUsage, "names a pack the server holds"},
		{"a model here", []string{"--server", base, "--model", dir}, token, exitUsage, "--model run here, not with --server"},
		{"not a URL", []string{"--server", "ftp://x"}, token, exitUsage, "is not an http(s) URL"},
		{"a token file without a server", []string{"--token-file", tokenFile}, token, exitUsage, "--token-file goes with --server"},
		{"an unknown corpus", []string{"--server", base, "--corpus", "nosuch"}, token, exitError, "unknown_corpus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenVariable, tc.env)
			code, _, errOut := ragagent(append([]string{"retrieval"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.says)
			assert.NotContains(t, errOut, token)
		})
	}
}

// evalUnmeasured is `ragagent eval --json`'s bytes read back and printed
// again with the measured durations zeroed (engine.EvalResult.Unmeasured):
// what two runs of one scripted eval share, here or on a server.
func evalUnmeasured(t *testing.T, data string) string {
	t.Helper()
	var res engine.EvalResult
	require.NoError(t, json.Unmarshal([]byte(data), &res), "an eval result")
	out, err := res.Unmeasured().JSON()
	require.NoError(t, err)
	return string(out)
}

// measuredTime is the eval table's time row, the one measured thing it
// prints (its figures' widths too: the row is masked whole).
var measuredTime = regexp.MustCompile(`(?m)^time( +\d+\.\d+ s, \d+\.\d+ ms a trial)+$`)

// TestEvalOnTheServerIsTheLocalOne: `ragagent eval --server URL` runs the
// agent experiment on serve-api and prints what the local command prints
// for the same pack, question set (a TSV, a JSON file, the pack's own)
// and configuration (a spec file, a name, the pack's default): the
// object with --json and the table, measured seconds aside, counting its
// trials on stderr as locally. Flags of local runs and policies but
// scripted are refused before anything is sent; the token comes from a
// file or RAGAGENT_TOKEN and never shows in an error.
func TestEvalOnTheServerIsTheLocalOne(t *testing.T) {
	dir := t.TempDir()
	base, tokens := teamServer(t, dir, "ci:read,run")
	token, tokenFile := tokens[0], filepath.Join(dir, "ci.token")

	cases := filepath.Join(dir, "cases.tsv")
	require.NoError(t, os.WriteFile(cases, []byte("id\tquestion\ttarget_urls\n"+
		"q1\thow do I read a file line by line?\thttps://docs.python.org/3.11/tutorial/inputoutput.html\n"+
		"q2\thow do I sort a list of dictionaries by a key?\thttps://docs.python.org/3.11/library/functions.html\n"+
		"q3\twhat is the weather tomorrow?\t-\n"), 0o644))
	spec := filepath.Join(dir, "light.json")
	require.NoError(t, os.WriteFile(spec, []byte(`{"name": "light", "tokenizer": "stemmed", "stop_words": "english", "fields": {"text": 1, "title": 0.25}}`), 0o644))
	remoteArgs := []string{"--server", base, "--token-file", tokenFile}

	for _, tc := range []struct {
		name     string
		args     []string
		progress string
	}{
		{"a TSV set under a spec file", []string{"--corpus", "python-3.11", "--cases", cases, "--config", spec}, "ran 6/6 trials"},
		{"a JSON set under a built-in", []string{"--corpus", "python-3.11", "--cases", "../../fixtures/python-3.11-cases.json", "--config", "stemmed", "--policy", "scripted"}, "ran 78/78 trials"},
		{"the seed's own cases", nil, "ran 8/8 trials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"eval"}, tc.args...)
			code, local, errOut := ragagent(append(args, "--json")...)
			require.Equal(t, exitOK, code, errOut)
			code, remote, errOut := ragagent(append(append(args, "--json"), remoteArgs...)...)
			require.Equal(t, exitOK, code, errOut)
			assert.Equal(t, evalUnmeasured(t, local), evalUnmeasured(t, remote), "the command's object, measured seconds aside")
			assert.Equal(t, strings.HasSuffix(local, "\n"), strings.HasSuffix(remote, "\n"), "ended alike")
			assert.Contains(t, errOut, tc.progress)

			code, localTable, errOut := ragagent(args...)
			require.Equal(t, exitOK, code, errOut)
			code, remoteTable, errOut := ragagent(append(args, remoteArgs...)...)
			require.Equal(t, exitOK, code, errOut)
			require.Regexp(t, measuredTime, localTable, "the table's time row is what is masked")
			assert.Equal(t, measuredTime.ReplaceAllString(localTable, "…"), measuredTime.ReplaceAllString(remoteTable, "…"))
		})
	}

	recording := filepath.Join(dir, "run.json")
	require.NoError(t, os.WriteFile(recording, []byte("{}"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		env  string
		code int
		says string
	}{
		{"a wrong token", []string{"--server", base}, "rat_wrong0000000000000000000000000", exitError, "unauthorized"},
		{"no token", []string{"--server", base}, "", exitUsage, "--server needs a token"},
		{"the token from the environment", []string{"--server", base, "--corpus", "nosuch"}, token, exitError, "unknown_corpus"},
		{"a local pack folder", []string{"--server", base, "--corpus", dir}, token, exitUsage, "names a pack the server holds"},
		{"limits here", []string{"--server", base, "--limits", "reads=1"}, token, exitUsage, "--limits run here, not with --server (the server runs the scripted policy under the default limits)"},
		{"a live run's flags", []string{"--server", base, "--execute-approved", "--output", recording, "--allowance", "3"}, token, exitUsage, "--allowance, --execute-approved, --output run here, not with --server"},
		{"gemini", []string{"--server", base, "--policy", "gemini"}, token, exitUsage, "--policy gemini runs here, not with --server (the server runs agent experiments with the scripted policy only)"},
		{"a replay", []string{"--server", base, "--policy", "replay:" + recording}, token, exitUsage, "--policy replay runs here, not with --server"},
		{"not a URL", []string{"--server", "ftp://x"}, token, exitUsage, "is not an http(s) URL"},
		{"a token file without a server", []string{"--token-file", tokenFile}, token, exitUsage, "--token-file goes with --server"},
		{"an unknown configuration", []string{"--server", base, "--config", "nosuch"}, token, exitError, "unknown_config"},
		{"a set the command refuses", []string{"--server", base, "--cases", spec}, token, exitError, spec + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenVariable, tc.env)
			code, out, errOut := ragagent(append([]string{"eval"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.says)
			assert.NotContains(t, errOut, token)
			assert.Empty(t, out)
		})
	}
}

// TestCtrlCCancelsTheServersExperiment: Ctrl-C (os.Interrupt) on
// `ragagent retrieval --server` or `ragagent eval --server` while the
// server runs the experiment cancels it there: the command exits 1 saying
// so, and the server's experiment ends cancelled, not run to its end.
func TestCtrlCCancelsTheServersExperiment(t *testing.T) {
	dir := t.TempDir()
	base, tokens := teamServer(t, dir, "ci:read,run")
	token := tokens[0]

	// The server's most cases in an experiment: minutes of work, so the
	// interrupt comes long before its end.
	var rows strings.Builder
	rows.WriteString("id\tquestion\ttarget_urls\n")
	for i := range 2000 {
		fmt.Fprintf(&rows, "q%d\thow do I read a file line by line, case %d?\thttps://docs.python.org/3.11/tutorial/inputoutput.html\n", i, i)
	}
	cases := filepath.Join(dir, "cases.tsv")
	require.NoError(t, os.WriteFile(cases, []byte(rows.String()), 0o644))

	seen := map[string]bool{}
	for _, tc := range []struct{ command, kind string }{{"retrieval", "retrieval"}, {"eval", "agent"}} {
		t.Run(tc.command, func(t *testing.T) {
			cmd := child(tc.command, "--server", base, "--corpus", "python-3.11", "--cases", cases)
			cmd.Env = append(cmd.Env, tokenVariable+"="+token)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			var id string
			require.Eventually(t, func() bool {
				_, list := apiCall(t, "GET", base+"/v1/experiments", token, "")
				for _, x := range list["experiments"].([]any) {
					if x := x.(map[string]any); x["state"] == "running" && x["kind"] == tc.kind && !seen[x["id"].(string)] {
						id = x["id"].(string)
						seen[id] = true
						return true
					}
				}
				return false
			}, 30*time.Second, 20*time.Millisecond, "the command's experiment runs on the server")
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, stderr.String())
			assert.Equal(t, exitError, exit.ExitCode())
			assert.Contains(t, stderr.String(), "(the server's experiment "+id+" is cancelled)")
			_, x := apiCall(t, "GET", base+"/v1/experiments/"+id, token, "")
			assert.Equal(t, "cancelled", x["state"])
			progress := x["progress"].(map[string]any)
			assert.Less(t, progress["done"], progress["total"], "stopped before its end")
		})
	}
}
