package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/internal/server"
)

// notesPack is a small pack of someone's notes as corpus build writes it:
// its manifest and its passages file (passages.json).
func notesPack(t testing.TB, id string) (manifest, passages []byte) {
	t.Helper()
	docs := []builder.Document{
		{Path: "notes/kettle.md", Data: []byte("# Kettle\n\nDescale the kettle with citric acid every month.\n")},
		{Path: "notes/garden.md", Data: []byte("# Garden\n\nWater the tomatoes at dawn, never at noon.\n")},
	}
	o := builder.Options{ID: id, Title: "Kitchen notes", Language: "en", Version: "1.0", Licence: "mine", Attribution: "me",
		Source: "notes", MadeBy: "a test", BaseURL: "https://kitchen.invalid/"}
	res, err := builder.Build(docs, o, nil)
	require.NoError(t, err)
	passages, err = corpus.EncodeJSON(o.Title, res.Passages)
	require.NoError(t, err)
	manifest, err = corpus.EncodeManifest(o.Manifest(res.Passages, passages, corpus.EncodingJSON, "passages.json", 0))
	require.NoError(t, err)
	return manifest, passages
}

// entry is one member of a tar written by tarball.
type entry struct {
	name     string
	data     []byte
	typeflag byte   // 0: a regular file
	link     string // a link's target
	size     int64  // the header's size when not len(data)
}

func tarball(t testing.TB, es ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg, Linkname: e.link}
		if e.typeflag != 0 {
			h.Typeflag = e.typeflag
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if e.size != 0 {
			h.Size = e.size
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			tw.Write(e.data) // a short entry is a broken tar, on purpose
		}
	}
	tw.Close()
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func packTarball(t testing.TB, id string) []byte {
	m, p := notesPack(t, id)
	return tarball(t, entry{name: "manifest.json", data: m}, entry{name: "passages.json", data: p})
}

func (e *env) upload(token string, body []byte) response {
	e.t.Helper()
	return e.do(req{method: "POST", path: "/v1/corpora", token: token, body: string(body),
		header: map[string]string{"Content-Type": "application/gzip"}})
}

func (e *env) corpusIDs(token string) map[string]string {
	e.t.Helper()
	r := e.do(req{method: "GET", path: "/v1/corpora", token: token, valid: true})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	var got struct {
		Corpora []struct {
			ID     string `json:"id"`
			Origin string `json:"origin"`
		} `json:"corpora"`
	}
	require.NoError(e.t, json.Unmarshal(r.body, &got))
	out := map[string]string{}
	for _, c := range got.Corpora {
		out[c.ID] = c.Origin
	}
	return out
}

// TestAnUploadedCorpusIsTheTokensOwn: a pack uploaded as corpus build
// writes it is listed, described and run on by its token, after a restart
// too, and deleted by it; another token sees none of it (not found, as a
// pack that does not exist), and runs cannot name it.
func TestAnUploadedCorpusIsTheTokensOwn(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "api.db")
	e := newEnv(t, options{corpora: dir, dbPath: db})
	alice := e.token("alice", []string{"read", "run", "corpora"}, 1000, 1)
	bob := e.token("bob", []string{"read", "run", "corpora"}, 1000, 1)

	r := e.upload(alice, packTarball(t, "kitchen"))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	assert.Equal(t, "/v1/corpora/kitchen", r.header.Get("Location"))
	manifest, _ := notesPack(t, "kitchen")
	m, err := corpus.ParseManifest(manifest)
	require.NoError(t, err)
	got := r.json(t)
	assert.Equal(t, "kitchen", got["id"])
	assert.Equal(t, "uploaded", got["origin"])
	assert.Equal(t, m.PassagesSHA256, got["sha256"])
	assert.EqualValues(t, m.Passages, got["passages"])

	assert.Equal(t, map[string]string{"seed": "built_in", "kitchen": "uploaded"}, e.corpusIDs(alice))
	assert.Equal(t, map[string]string{"seed": "built_in"}, e.corpusIDs(bob), "another token's upload is not listed")
	described := e.do(req{method: "GET", path: "/v1/corpora/kitchen", token: alice, valid: true})
	require.Equal(t, http.StatusOK, described.status, string(described.body))
	assert.Equal(t, got, described.json(t), "described as uploaded")

	run := e.await(alice, e.start(alice, `{"question": "How do I descale the kettle?", "corpus": "kitchen"}`))
	request, _ := run["request"].(map[string]any)
	assert.Equal(t, "kitchen", request["corpus"])
	assert.Equal(t, "answered", run["status"], "%v", run)

	for _, tc := range []struct {
		name string
		r    req
	}{
		{"described", req{method: "GET", path: "/v1/corpora/kitchen", token: bob, valid: true}},
		{"deleted", req{method: "DELETE", path: "/v1/corpora/kitchen", token: bob, valid: true}},
	} {
		t.Run("another token's upload is not "+tc.name, func(t *testing.T) {
			r := e.do(tc.r)
			assert.Equal(t, http.StatusNotFound, r.status, string(r.body))
			assert.Equal(t, "not_found", r.code(t))
			none := e.do(req{method: tc.r.method, path: "/v1/corpora/no-such-pack", token: bob, valid: true})
			assert.Equal(t, r.body, []byte(strings.ReplaceAll(string(none.body), "no-such-pack", "kitchen")), "the same refusal as for no pack at all")
		})
	}
	r = e.do(req{method: "POST", path: "/v1/runs", token: bob, body: `{"question": "How do I descale the kettle?", "corpus": "kitchen"}`, valid: true})
	assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	assert.Equal(t, "unknown_corpus", r.code(t), "another token's runs cannot name it")

	// A restart opens what was kept.
	e.close()
	e = newEnv(t, options{corpora: dir, dbPath: db})
	assert.Equal(t, map[string]string{"seed": "built_in", "kitchen": "uploaded"}, e.corpusIDs(alice), "kept across a restart")
	assert.Equal(t, map[string]string{"seed": "built_in"}, e.corpusIDs(bob))
	run = e.await(alice, e.start(alice, `{"question": "When do I water the tomatoes?", "corpus": "kitchen"}`))
	assert.Equal(t, "answered", run["status"], "%v", run)

	r = e.do(req{method: "DELETE", path: "/v1/corpora/kitchen", token: alice, valid: true})
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	assert.Equal(t, map[string]string{"seed": "built_in"}, e.corpusIDs(alice))
	r = e.do(req{method: "GET", path: "/v1/corpora/kitchen", token: alice, valid: true})
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.NoDirExists(t, filepath.Join(dir, e.tokenID(alice), "kitchen"), "its files are gone")
	// Its id is free again: bob may take it.
	r = e.upload(bob, packTarball(t, "kitchen"))
	assert.Equal(t, http.StatusCreated, r.status, string(r.body))
}

// tokenID is a bearer token's id (rag_<id>_<secret>).
func (e *env) tokenID(token string) string {
	return strings.SplitN(strings.TrimPrefix(token, "rag_"), "_", 2)[0]
}

// packFolders lists what the server keeps under dir (its tenants' pack
// folders), what an upload that is refused must leave as it was.
func packFolders(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	tenants, _ := os.ReadDir(dir)
	for _, tn := range tenants {
		if tn.Name() == ".incoming" {
			left, _ := os.ReadDir(filepath.Join(dir, tn.Name()))
			for _, l := range left {
				out = append(out, ".incoming/"+l.Name())
			}
			continue
		}
		ps, _ := os.ReadDir(filepath.Join(dir, tn.Name()))
		for _, p := range ps {
			out = append(out, tn.Name()+"/"+p.Name())
		}
	}
	return out
}

// hostileUpload is an upload a server must refuse, with the status and
// code it refuses it with and a phrase its message says.
type hostileUpload struct {
	name, contentType string
	body              []byte
	status            int
	code, says        string
}

// hostileUploads are the uploads every server refuses, natively and on a
// Worker, made for its caps (a pack's passages, an upload's body): every
// archive that is not a pack folder's files as the command line reads one.
func hostileUploads(t testing.TB, capBytes, maxUpload int) []hostileUpload {
	m, p := notesPack(t, "hostile") // an id no test uploads: refused for what it holds, not for its id
	man := entry{name: "manifest.json", data: m}
	pas := entry{name: "passages.json", data: p}
	tampered := bytes.Replace(p, []byte("citric"), []byte("citrix"), 1)
	require.NotEqual(t, p, tampered)
	var mm map[string]any
	require.NoError(t, json.Unmarshal(m, &mm))
	mm["passages_bytes"] = capBytes + 1
	overCap, _ := json.Marshal(mm)
	var zeros bytes.Buffer
	zw := gzip.NewWriter(&zeros)
	zw.Write(make([]byte, capBytes+8<<20))
	zw.Close()
	require.Less(t, zeros.Len(), maxUpload, "the bomb fits under the upload cap")
	return []hostileUpload{
		{"not gzip", "", []byte("manifest.json"), 422, "invalid_pack", "not gzip"},
		{"not a tar", "", gz(t, []byte(strings.Repeat("not a tar ", 100))), 422, "invalid_pack", "not a tar"},
		{"a gzip bomb", "", zeros.Bytes(), 422, "invalid_pack", "decompresses to more than"},
		{"a symlink", "", tarball(t, man, entry{name: "passages.json", typeflag: tar.TypeSymlink, link: "/etc/passwd"}), 422, "invalid_pack", "not a regular file"},
		{"a hard link", "", tarball(t, man, entry{name: "passages.json", typeflag: tar.TypeLink, link: "manifest.json"}), 422, "invalid_pack", "not a regular file"},
		{"a path with ..", "", tarball(t, man, entry{name: "../passages.json", data: p}), 422, "invalid_pack", "a path with"},
		{"an absolute path", "", tarball(t, man, entry{name: "/tmp/passages.json", data: p}), 422, "invalid_pack", "absolute"},
		{"a file in a folder", "", tarball(t, man, entry{name: "kitchen/passages.json", data: p}), 422, "invalid_pack", "inside a folder"},
		{"a folder", "", tarball(t, entry{name: "kitchen/", typeflag: tar.TypeDir}, man, pas), 422, "invalid_pack", "a folder"},
		{"a name twice", "", tarball(t, man, pas, entry{name: "./passages.json", data: p}), 422, "invalid_pack", "twice"},
		{"an entry over the cap", "", tarball(t, man, entry{name: "passages.json", data: p, size: int64(capBytes) + 1}), 422, "invalid_pack", "over the cap"},
		{"a file the pack does not name", "", tarball(t, man, pas, entry{name: "run.sh", data: []byte("#!/bin/sh\n")}), 422, "invalid_pack", "does not name"},
		{"no manifest", "", tarball(t, pas), 422, "invalid_pack", "no manifest.json"},
		{"no passages file", "", tarball(t, man), 422, "invalid_pack", "no passages.json"},
		{"a manifest that is not one", "", tarball(t, entry{name: "manifest.json", data: []byte(`{"format": "nope"}`)}, pas), 422, "invalid_pack", "manifest.json"},
		{"passages over the cap", "", tarball(t, entry{name: "manifest.json", data: overCap}, pas), 422, "invalid_pack", "over this server's cap"},
		{"passages not as the receipt says", "", tarball(t, man, entry{name: "passages.json", data: tampered}), 422, "invalid_pack", "sha256"},
		{"passages shorter than the manifest says", "", tarball(t, man, entry{name: "passages.json", data: p[:len(p)-1]}), 422, "invalid_pack", "bytes"},
		{"not application/gzip", "application/json", packTarball(t, "kitchen"), 415, "unsupported_media_type", "application/gzip"},
		{"over the upload cap", "", append(packTarball(t, "kitchen"), make([]byte, maxUpload)...), 413, "body_too_large", "over"},
	}
}

// refused posts a hostile upload and checks its refusal.
func (e *env) refused(t *testing.T, tok string, tc hostileUpload) {
	ct := tc.contentType
	if ct == "" {
		ct = "application/gzip"
	}
	r := e.do(req{method: "POST", path: "/v1/corpora", token: tok, body: string(tc.body), header: map[string]string{"Content-Type": ct}})
	assert.Equal(t, tc.status, r.status, string(r.body))
	assert.Equal(t, tc.code, r.code(t))
	assert.Contains(t, string(r.body), tc.says)
}

// TestHostileUploadsAreRefused: every archive that is not a pack folder's
// files as the command line reads one is refused with its declared code,
// and nothing is kept or served.
func TestHostileUploadsAreRefused(t *testing.T) {
	dir := t.TempDir()
	const capBytes = 64 << 10
	e := newEnv(t, options{corpora: dir, maxPackBytes: capBytes, maxUpload: 256 << 10})
	tok := e.token("alice", []string{"read", "corpora"}, 1000, 1)
	for _, tc := range hostileUploads(t, capBytes, 256<<10) {
		t.Run(tc.name, func(t *testing.T) {
			e.refused(t, tok, tc)
			assert.Empty(t, packFolders(t, dir), "nothing is kept")
			assert.Equal(t, map[string]string{"seed": "built_in"}, e.corpusIDs(tok), "nothing is served")
		})
	}
	r := e.upload(tok, packTarball(t, "kitchen"))
	assert.Equal(t, http.StatusCreated, r.status, "the same pack whole is taken: %s", r.body)
}

func gz(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestCorpusQuotaAndIDs: a token's uploads are bounded in count and
// bytes (corpus_quota), an id is taken once on a server (corpus_exists,
// for the token's own and for another's), a built-in pack is neither
// replaced nor deleted, and uploads and deletions need the corpora scope;
// a server without a corpora folder takes none.
func TestCorpusQuotaAndIDs(t *testing.T) {
	dir := t.TempDir()
	one := packTarball(t, "kitchen")
	m, p := notesPack(t, "kitchen")
	e := newEnv(t, options{corpora: dir, quota: server.Quota{Packs: 2, Bytes: int64(len(m)+len(p))*2 + 1000}})
	alice := e.token("alice", []string{"read", "run", "corpora"}, 1000, 1)
	bob := e.token("bob", []string{"read", "corpora"}, 1000, 1)
	reader := e.token("carol", []string{"read", "run", "live"}, 1000, 1)
	require.Equal(t, http.StatusCreated, e.upload(alice, one).status)

	bigger := func(id string) []byte {
		m, p := notesPack(t, id)
		var mm map[string]any
		require.NoError(t, json.Unmarshal(m, &mm))
		mm["attribution"] = strings.Repeat("x", 4000) // 3,000 bytes and more larger than kitchen
		m, _ = json.Marshal(mm)
		return tarball(t, entry{name: "manifest.json", data: m}, entry{name: "passages.json", data: p})
	}
	for _, tc := range []struct {
		name   string
		r      func() response
		status int
		code   string
	}{
		{"the token's own id again", func() response { return e.upload(alice, one) }, 409, "corpus_exists"},
		{"another token's id", func() response { return e.upload(bob, one) }, 409, "corpus_exists"},
		{"a built-in's id", func() response { return e.upload(alice, packTarball(t, "seed")) }, 409, "corpus_exists"},
		{"over the bytes quota", func() response { return e.upload(alice, bigger("pantry")) }, 409, "corpus_quota"},
		{"no corpora scope", func() response { return e.upload(reader, packTarball(t, "cellar")) }, 403, "missing_scope"},
		{"deleting without the corpora scope", func() response {
			return e.do(req{method: "DELETE", path: "/v1/corpora/kitchen", token: reader, valid: true})
		}, 403, "missing_scope"},
		{"deleting a built-in", func() response {
			return e.do(req{method: "DELETE", path: "/v1/corpora/seed", token: alice, valid: true})
		}, 409, "built_in_corpus"},
		{"a PUT", func() response { return e.do(req{method: "PUT", path: "/v1/corpora/kitchen", token: alice}) }, 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			assert.Equal(t, tc.status, r.status, string(r.body))
			assert.Equal(t, tc.code, r.code(t))
			assert.Equal(t, []string{e.tokenID(alice) + "/kitchen"}, packFolders(t, dir))
		})
	}
	require.Equal(t, http.StatusCreated, e.upload(alice, packTarball(t, "pantry")).status)
	r := e.upload(alice, packTarball(t, "cellar"))
	assert.Equal(t, http.StatusConflict, r.status, string(r.body))
	assert.Equal(t, "corpus_quota", r.code(t), "over the count quota")
	require.Equal(t, http.StatusNoContent, e.do(req{method: "DELETE", path: "/v1/corpora/pantry", token: alice, valid: true}).status)
	assert.Equal(t, http.StatusCreated, e.upload(alice, packTarball(t, "cellar")).status, "a deletion frees the quota")

	plain := newEnv(t, options{})
	tok := plain.token("alice", []string{"corpora"}, 100, 1)
	r = plain.upload(tok, one)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	assert.Equal(t, "unavailable", r.code(t))
}
