package server

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
)

// The caps on uploaded packs when none are configured.
const (
	// DefaultMaxUpload caps an upload's body (the gzip'd tar as sent).
	DefaultMaxUpload = 64 << 20
	// DefaultMaxPackBytes caps a pack's passages, uncompressed (the
	// manifest's passages_bytes), and so what an upload may unpack to.
	DefaultMaxPackBytes = 256 << 20
	// MaxManifestBytes caps an upload's manifest.json.
	MaxManifestBytes = 1 << 20
)

// Quota bounds what one tenant keeps uploaded: how many packs and how
// many bytes on disk (manifest and passages file as uploaded).
type Quota struct {
	Packs int
	Bytes int64
}

// DefaultQuota is a tenant's quota when none is configured.
func DefaultQuota() Quota { return Quota{Packs: 10, Bytes: 1 << 30} }

// A tenant is a token: what one token uploads is its own, and no other
// token sees it (a team shares a token, or uploads a pack under each).

// PackStore keeps a server's uploaded packs: natively a directory
// (dirPacks, serve-api --corpora DIR), on Cloudflare Workers an R2 bucket
// (worker/r2.go). A store keeps bytes and says what it keeps; the checks,
// the quota and who owns what are the shelf's, the same over either. An
// id is kept once on a server, whoever's it is (an engine holds packs by
// id), and a pack appears whole or not at all: Put writes the passages
// file first and the manifest last, and Kept and Find see only packs
// whose manifest is written.
type PackStore interface {
	// Kept lists the tenant's packs, by id.
	Kept(ctx context.Context, tenant string) ([]KeptPack, error)
	// Find is the pack kept under id, whoever's it is.
	Find(ctx context.Context, id string) (KeptPack, bool, error)
	// Put keeps a pack, given its passages file as uploaded; ErrPackTaken
	// when a pack is kept under its id already (another process's upload
	// took the id meanwhile).
	Put(ctx context.Context, p KeptPack, passagesFile []byte) error
	// Passages reads a kept pack's passages file as uploaded.
	Passages(ctx context.Context, p KeptPack) ([]byte, error)
	// Delete removes a kept pack: its manifest first (the pack is gone at
	// once), then its passages file.
	Delete(ctx context.Context, p KeptPack) error
}

// ErrPackTaken is a Put under an id a pack is kept under.
var ErrPackTaken = errors.New("a pack is kept under this id")

// KeptPack is an uploaded pack as its store keeps it.
type KeptPack struct {
	Tenant   string
	ID       string
	Manifest []byte // manifest.json as uploaded
	File     string // the passages file's name (the manifest's passages_file)
	Bytes    int64  // the manifest and the passages file, as uploaded
	// Where is the store's own name for the passages file ("" natively;
	// on a Worker its R2 key, which Put chooses).
	Where string
}

// shelf is the server's uploaded packs: their store, the caps and the
// quota. When resident, every kept pack is open in the server's engine
// (natively: opened at Start and at upload, so a run finds it there, and
// served only once it opened). Otherwise (a Worker: its front and its run
// objects are separate programs, each with an isolate's 128 MB) a pack is
// opened by the program whose run names it (openUpload, once per content:
// the engine keeps it by id and receipt), and an upload is verified in an
// engine of its own, closed after, so the front holds no pack.
type shelf struct {
	store    PackStore
	resident bool
	// served, when resident, says whether the engine holds a kept pack
	// (one that failed to open at Start is kept but not served).
	served   func(m *corpus.Manifest) bool
	quota    Quota
	maxBody  int64
	maxBytes int64

	mu      sync.Mutex // one upload or deletion at a time in this process
	opening sync.Mutex // one pack opened at a time (not resident)
}

// shelved is a kept pack with its manifest read.
type shelved struct {
	KeptPack
	manifest *corpus.Manifest
}

// read parses a kept pack's manifest, which must name the pack's id.
func read(p KeptPack) (shelved, error) {
	m, err := corpus.ParseManifest(p.Manifest)
	if err == nil && m.ID != p.ID {
		err = fmt.Errorf("its manifest names %q", m.ID)
	}
	if err != nil {
		return shelved{}, fmt.Errorf("uploaded pack %s of %s: %w", p.ID, p.Tenant, err)
	}
	return shelved{KeptPack: p, manifest: m}, nil
}

// owned lists a tenant's served packs by id; one whose manifest does not
// read is reported to bad and left out.
func (sh *shelf) owned(ctx context.Context, tenant string, bad func(error)) ([]shelved, error) {
	kept, err := sh.store.Kept(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := []shelved{}
	for _, k := range kept {
		sp, err := read(k)
		if err != nil {
			bad(err)
			continue
		}
		if sh.resident && !sh.served(sp.manifest) {
			continue
		}
		out = append(out, sp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// lookup is the tenant's served pack id, if it has one (another tenant's
// is not found, as a pack that does not exist).
func (sh *shelf) lookup(ctx context.Context, tenant, id string) (shelved, bool, error) {
	k, found, err := sh.store.Find(ctx, id)
	if err != nil || !found || k.Tenant != tenant {
		return shelved{}, false, err
	}
	sp, err := read(k)
	if err != nil {
		return shelved{}, false, err
	}
	if sh.resident && !sh.served(sp.manifest) {
		return shelved{}, false, nil
	}
	return sp, true, nil
}

// find is lookup for a caller without a context or a way to report a
// fault (experiments' mayName): a store that fails finds nothing.
func (sh *shelf) find(tenant, id string) (shelved, bool) {
	sp, ok, err := sh.lookup(context.Background(), tenant, id)
	return sp, ok && err == nil
}

// passages reads a kept pack's passages, uncompressed.
func (sh *shelf) passages(ctx context.Context, sp shelved) ([]byte, error) {
	data, err := sh.store.Passages(ctx, sp.KeptPack)
	if err != nil {
		return nil, fmt.Errorf("uploaded pack %s: reading %s: %w", sp.ID, sp.File, err)
	}
	if strings.HasSuffix(sp.File, ".gz") {
		if data, err = sp.manifest.Gunzip(data); err != nil {
			return nil, fmt.Errorf("uploaded pack %s: %w", sp.ID, err)
		}
	}
	return data, nil
}

// open has eng hold a kept pack, reading its passages from the store
// unless eng holds these very ones (the same id, receipt and size): a
// program opens a pack once, and again only when it was replaced by a
// pack of other content under the same id.
func (sh *shelf) open(ctx context.Context, eng *engine.Engine, sp shelved) error {
	sh.opening.Lock()
	defer sh.opening.Unlock()
	if p, err := eng.Pack(sp.ID); err == nil && p.Open && sameContent(p.Manifest, sp.manifest) {
		return nil
	}
	passages, err := sh.passages(ctx, sp)
	if err != nil {
		return err
	}
	_, err = eng.LoadPack(sp.Manifest, passages)
	return err
}

// sameContent is whether two manifests' passages are the same bytes.
func sameContent(a, b *corpus.Manifest) bool {
	return a.PassagesSHA256 == b.PassagesSHA256 && a.PassagesBytes == b.PassagesBytes
}

// usage is what packs take against the quota.
func usage(ps []KeptPack) (int, int64) {
	var b int64
	for _, p := range ps {
		b += p.Bytes
	}
	return len(ps), b
}

// packUpload is an upload unpacked and checked: its files' bytes.
type packUpload struct {
	manifest *corpus.Manifest
	files    map[string][]byte // name -> bytes as uploaded
	passages []byte            // uncompressed
}

// uploadError is an upload refused for what it holds (invalid_pack).
type uploadError struct{ msg string }

func (e *uploadError) Error() string { return e.msg }

func badPack(format string, a ...any) error { return &uploadError{fmt.Sprintf(format, a...)} }

// unpackUpload reads a gzip'd tar whose top level holds a pack folder's
// files and checks it as the command line checks a pack folder (the
// manifest's format and fields, the passages under the cap and as large
// as the manifest says; the receipt is checked when the pack opens). It
// refuses what a hostile archive may hold: an entry that is not a regular
// file (symlinks, hard links, devices), a name with a folder, "..", or an
// absolute path, a name given twice, an entry over the cap, a file the
// pack does not name, and more bytes than the cap once decompressed (a
// gzip bomb stops at the cap).
func unpackUpload(body []byte, maxBytes int64) (*packUpload, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, badPack("the body is not gzip: %v", err)
	}
	zr.Multistream(false)
	// The tar's headers and padding take a few KiB past its files.
	limit := maxBytes + MaxManifestBytes + 64<<10
	lr := &io.LimitedReader{R: zr, N: limit + 1}
	tr := tar.NewReader(lr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, badPack("the archive decompresses to more than %d bytes", limit)
			}
			return nil, badPack("the archive is not a tar: %v", err)
		}
		name := h.Name
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
			return nil, badPack("entry %q: an absolute or Windows path; the archive's top level holds the pack's files", name)
		}
		for _, part := range strings.Split(name, "/") {
			if part == ".." {
				return nil, badPack("entry %q: a path with \"..\"", name)
			}
		}
		clean := path.Clean(name)
		if h.Typeflag == tar.TypeDir {
			if clean != "." {
				return nil, badPack("entry %q: a folder; the archive's top level holds the pack's files", name)
			}
			continue
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			return nil, badPack("entry %q: not a regular file (type %q): links and devices are refused", name, string(h.Typeflag))
		}
		if clean == "." || strings.Contains(clean, "/") {
			return nil, badPack("entry %q: a file inside a folder; the archive's top level holds the pack's files", name)
		}
		if _, dup := files[clean]; dup {
			return nil, badPack("entry %q is in the archive twice", clean)
		}
		max := maxBytes
		if clean == "manifest.json" {
			max = MaxManifestBytes
		}
		if h.Size < 0 || h.Size > max {
			return nil, badPack("entry %q is %d bytes, over the cap of %d", clean, h.Size, max)
		}
		data, err := io.ReadAll(io.LimitReader(tr, max+1))
		if err != nil {
			if lr.N <= 0 {
				return nil, badPack("the archive decompresses to more than %d bytes", limit)
			}
			return nil, badPack("entry %q could not be read: %v", clean, err)
		}
		files[clean] = data
	}
	// Nothing after the tar's end but its zero padding.
	rest, err := io.ReadAll(lr)
	switch {
	case lr.N <= 0:
		return nil, badPack("the archive decompresses to more than %d bytes", limit)
	case err != nil:
		return nil, badPack("the archive's gzip stream is broken: %v", err)
	case len(bytes.Trim(rest, "\x00")) > 0:
		return nil, badPack("the archive holds bytes after its end")
	}
	raw, ok := files["manifest.json"]
	if !ok {
		return nil, badPack("the archive has no manifest.json at its top level")
	}
	m, err := corpus.ParseManifest(raw)
	if err != nil {
		return nil, badPack("manifest.json: %v", err)
	}
	if int64(m.PassagesBytes) > maxBytes {
		return nil, badPack("manifest.json: passages_bytes %d is over this server's cap of %d bytes", m.PassagesBytes, maxBytes)
	}
	data, ok := files[m.PassagesFile]
	if !ok {
		return nil, badPack("the archive has no %s, the manifest's passages file", m.PassagesFile)
	}
	for name := range files {
		if name != "manifest.json" && name != m.PassagesFile {
			return nil, badPack("the archive holds %q, which the pack does not name (only manifest.json and %s)", name, m.PassagesFile)
		}
	}
	passages := data
	if strings.HasSuffix(m.PassagesFile, ".gz") {
		// Gunzip stops past the manifest's passages_bytes.
		if passages, err = m.Gunzip(data); err != nil {
			return nil, badPack("%s: %v", m.PassagesFile, err)
		}
	}
	if len(passages) != m.PassagesBytes {
		return nil, badPack("%s holds %d bytes; the manifest says %d", m.PassagesFile, len(passages), m.PassagesBytes)
	}
	return &packUpload{manifest: m, files: files, passages: passages}, nil
}

// size is what the pack takes on disk.
func (u *packUpload) size() int64 {
	var n int64
	for _, b := range u.files {
		n += int64(len(b))
	}
	return n
}
