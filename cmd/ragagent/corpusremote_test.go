package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPackUploadedFromTheCommandLineRanksAsTheFolder: `ragagent corpus
// upload --server URL DIR` uploads the folder `corpus build` wrote as the
// token's own; `corpus list` shows it, `retrieval --server --corpus ID`
// prints the bytes `retrieval --corpus DIR` prints here, and `corpus
// delete` removes it; the server's refusals come back with their codes,
// the command's own mistakes as usage, and the token in no message.
func TestAPackUploadedFromTheCommandLineRanksAsTheFolder(t *testing.T) {
	dir := t.TempDir()
	base, tokens := teamServer(t, dir, "team:read,run,corpora", "reader:read,run")
	token, reader, tokenFile := tokens[0], tokens[1], filepath.Join(dir, "team.token")

	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	for name, text := range map[string]string{
		"kettle.md": "# Kettle\n\nDescale the kettle monthly with citric acid.\n",
		"teapot.md": "# Teapot\n\nWarm the teapot before the tea goes in.\n",
		"oven.md":   "# Oven\n\nClean the oven racks in hot soapy water.\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644))
	}
	pack := filepath.Join(dir, "pack")
	code, _, errOut := ragagent("corpus", "build", "--from", docs, "--out", pack, "--id", "kitchen", "--title", "Kitchen notes",
		"--version", "1.0", "--base-url", "https://notes.example.org/", "--licence", "CC0", "--attribution", "the team")
	require.Equal(t, exitOK, code, errOut)
	cases := filepath.Join(dir, "cases.tsv")
	require.NoError(t, os.WriteFile(cases, []byte("id\tquestion\ttarget_urls\n"+
		"descale\thow often do I descale the kettle?\thttps://notes.example.org/kettle.md#kettle\n"+
		"racks\thow do I clean the oven racks?\thttps://notes.example.org/oven.md#oven\n"), 0o644))

	code, out, errOut := ragagent("corpus", "upload", pack, "--server", base, "--token-file", tokenFile)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "kitchen  uploaded  3 passages  versions 1.0 (default 1.0)  Kitchen notes")
	assert.Contains(t, out, "--corpus kitchen --server "+base)
	assert.Contains(t, errOut, "uploading "+pack)

	t.Setenv(tokenVariable, token)
	code, out, errOut = ragagent("corpus", "list", "--server", base)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "seed  built_in")
	assert.Contains(t, out, "kitchen  uploaded  3 passages")
	code, out, errOut = ragagent("corpus", "list", "--server", base, "--json")
	require.Equal(t, exitOK, code, errOut)
	var list struct{ Corpora []struct{ ID, Origin string } }
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Contains(t, list.Corpora, struct{ ID, Origin string }{"kitchen", "uploaded"})

	code, local, errOut := ragagent("retrieval", "--corpus", pack, "--cases", cases, "--config", "seed", "--config", "general", "--json")
	require.Equal(t, exitOK, code, errOut)
	code, remote, errOut := ragagent("retrieval", "--server", base, "--corpus", "kitchen", "--cases", cases, "--config", "seed", "--config", "general", "--json")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, local, remote, "the server's ranking of the upload is the folder's here")

	for _, tc := range []struct {
		name string
		args []string
		env  string
		code int
		says string
	}{
		{"the same id again", []string{"upload", pack, "--server", base}, token, exitError, "corpus_exists"},
		{"a token without the corpora scope", []string{"upload", pack, "--server", base}, reader, exitError, "missing_scope"},
		{"a wrong token", []string{"list", "--server", base}, "rag_wrong0000000000000000000000000", exitError, "unauthorized"},
		{"no server", []string{"upload", pack}, token, exitUsage, "--server URL names the team server"},
		{"no token", []string{"list", "--server", base}, "", exitUsage, "--server needs a token"},
		{"not a folder", []string{"upload", cases, "--server", base}, token, exitUsage, "is not a pack folder"},
		{"a folder that is not a pack", []string{"upload", docs, "--server", base}, token, exitError, "manifest.json"},
		{"no folder", []string{"upload", "--server", base}, token, exitUsage, "name one pack folder"},
		{"a built-in pack", []string{"delete", "seed", "--server", base}, token, exitError, "built_in_corpus"},
		{"another's or none", []string{"delete", "nosuch", "--server", base}, token, exitError, "not_found"},
		{"list takes no argument", []string{"list", "kitchen", "--server", base}, token, exitUsage, "takes no argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenVariable, tc.env)
			code, _, errOut := ragagent(append([]string{"corpus"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.says)
			for _, secret := range []string{token, reader} {
				assert.NotContains(t, errOut, secret)
			}
		})
	}

	code, out, errOut = ragagent("corpus", "delete", "kitchen", "--server", base)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "deleted kitchen from "+base+"\n", out)
	code, out, _ = ragagent("corpus", "list", "--server", base)
	require.Equal(t, exitOK, code)
	assert.NotContains(t, out, "kitchen")
	code, _, errOut = ragagent("retrieval", "--server", base, "--corpus", "kitchen", "--cases", cases)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "unknown_corpus")
}
