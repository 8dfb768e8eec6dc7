package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetrievalOnTheServerIsTheLocalOne: `ragagent retrieval --server URL`
// runs the experiment on serve-api and prints the bytes the local command
// prints for the same pack, TSV question set and configurations (a spec
// file among them), its table too, and gates with --min as locally; the
// token comes from a file or RAGAGENT_TOKEN and never shows in an error.
func TestRetrievalOnTheServerIsTheLocalOne(t *testing.T) {
	t.Setenv(pepperVariable, testPepper)
	dir := t.TempDir()
	db := filepath.Join(dir, "api.db")
	code, token, errOut := ragagent("tokens", "add", "--db", db, "--name", "ci", "--scopes", "read,run")
	require.Equal(t, exitOK, code, errOut)
	token = strings.TrimSpace(token)
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	_, base, _ := startServeAPI(t, db)

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
