package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/ragagentlab/ragagent/core/reason"
)

// PackArchive is a pack folder (`ragagent corpus build`'s: manifest.json
// and the passages file it names) as POST /v1/corpora takes it: a gzip'd
// tar of those two files and nothing else (the server refuses a file the
// pack does not name). read reads a file within the caller's cap.
func PackArchive(dir string, read func(path string) ([]byte, error)) ([]byte, error) {
	manifestPath := filepath.Join(dir, "manifest.json")
	manifest, err := read(manifestPath)
	if err != nil {
		return nil, err
	}
	var m struct {
		Format       string `json:"format"`
		PassagesFile string `json:"passages_file"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("%s: not a pack's manifest: %v", manifestPath, err)
	}
	name := m.PassagesFile
	if name == "" || filepath.Base(name) != name || strings.HasPrefix(name, ".") || strings.ContainsRune(name, '\\') {
		return nil, fmt.Errorf("%s: not a ragagent-corpus/1 manifest (passages_file must be a plain file name beside it)", manifestPath)
	}
	passages, err := read(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		data []byte
	}{{"manifest.json", manifest}, {name, passages}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Upload sends a pack archive (PackArchive) as the token's own and returns
// the server's corpus JSON ({id, passages, sha256, origin, bytes, ...}).
// The server checks the pack: its refusal (invalid_pack, corpus_exists,
// corpus_quota, body_too_large, ...) comes back as a coded error.
func (c *Client) Upload(ctx context.Context, archive []byte) ([]byte, error) {
	res, err := c.api.UploadCorpusWithBodyWithResponse(ctx, "application/gzip", bytes.NewReader(archive))
	if err != nil {
		return nil, c.unreachable(err)
	}
	if res.JSON201 == nil {
		return nil, corpusRefusal(res.HTTPResponse, res.Body)
	}
	return res.Body, nil
}

// Corpora is the server's GET /v1/corpora: {"corpora": [...]}, the
// built-in packs and the token's uploads.
func (c *Client) Corpora(ctx context.Context) ([]byte, error) {
	res, err := c.api.ListCorporaWithResponse(ctx)
	if err != nil {
		return nil, c.unreachable(err)
	}
	if res.JSON200 == nil {
		return nil, corpusRefusal(res.HTTPResponse, res.Body)
	}
	return res.Body, nil
}

// Delete removes the token's upload id (a built-in pack is
// built_in_corpus, another token's or none not_found).
func (c *Client) Delete(ctx context.Context, id string) error {
	res, err := c.api.DeleteCorpusWithResponse(ctx, id)
	if err != nil {
		return c.unreachable(err)
	}
	if res.HTTPResponse == nil || res.HTTPResponse.StatusCode != http.StatusNoContent {
		return corpusRefusal(res.HTTPResponse, res.Body)
	}
	return nil
}

// corpusRefusal is refusal for the corpora's calls: the server's coded
// error, or its status.
func corpusRefusal(r *http.Response, body []byte) error {
	err := refusal(r, body)
	if _, ok := reason.Of(err); ok {
		return err
	}
	status := "no response"
	if r != nil {
		status = r.Status
	}
	return fmt.Errorf("the server answered %s, not a corpus", status)
}
