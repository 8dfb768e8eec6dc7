package server

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ragagentlab/ragagent/core/corpus"
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

// shelf keeps uploaded packs in a directory, one folder per tenant and in
// it one folder per pack holding the files as uploaded (manifest.json and
// its passages file): dir/<token id>/<pack id>/. A pack is written into
// dir/.incoming and renamed into place whole, so a crash leaves either no
// pack or all of it (Start clears .incoming).
type shelf struct {
	dir      string
	quota    Quota
	maxBody  int64
	maxBytes int64

	mu    sync.Mutex
	packs map[string]shelved // pack id -> its owner and size
}

// shelved is an uploaded pack as the shelf knows it.
type shelved struct {
	Tenant string
	ID     string
	Bytes  int64  // on disk
	File   string // the passages file's name
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

// used is a tenant's count and bytes.
func (sh *shelf) used(tenant string) (int, int64) {
	n, b := 0, int64(0)
	for _, p := range sh.packs {
		if p.Tenant == tenant {
			n++
			b += p.Bytes
		}
	}
	return n, b
}

// owned lists a tenant's packs by id.
func (sh *shelf) owned(tenant string) []shelved {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []shelved
	for _, p := range sh.packs {
		if p.Tenant == tenant {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// find is the tenant's pack id, if it has one.
func (sh *shelf) find(tenant, id string) (shelved, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p, ok := sh.packs[id]
	if !ok || p.Tenant != tenant {
		return shelved{}, false
	}
	return p, true
}

// write keeps an upload's files in dir/.incoming, synced, then renames
// the folder into dir/<tenant>/<id>: the pack appears whole or not at all.
func (sh *shelf) write(tenant string, u *packUpload) error {
	incoming := filepath.Join(sh.dir, ".incoming")
	if err := os.MkdirAll(incoming, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(incoming, "pack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for name, data := range u.files {
		if err := writeSynced(filepath.Join(tmp, name), data); err != nil {
			return err
		}
	}
	owner := filepath.Join(sh.dir, tenant)
	if err := os.MkdirAll(owner, 0o700); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(owner, u.manifest.ID)); err != nil {
		return err
	}
	return syncDir(owner)
}

func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// remove deletes a pack's folder: renamed out of place first, so a crash
// leaves it whole or gone.
func (sh *shelf) remove(p shelved) error {
	incoming := filepath.Join(sh.dir, ".incoming")
	if err := os.MkdirAll(incoming, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(incoming, "gone-")
	if err != nil {
		return err
	}
	gone := filepath.Join(tmp, "pack")
	if err := os.Rename(filepath.Join(sh.dir, p.Tenant, p.ID), gone); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return errors.Join(syncDir(filepath.Join(sh.dir, p.Tenant)), os.RemoveAll(tmp))
}

// stored is a pack read back from the shelf at start.
type stored struct {
	shelved
	manifest, passages []byte
}

// load clears what a crash left in .incoming and reads every kept pack
// (a folder that does not read as a pack is reported, not served).
func (sh *shelf) load() ([]stored, []error) {
	os.RemoveAll(filepath.Join(sh.dir, ".incoming"))
	tenants, err := os.ReadDir(sh.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, []error{err}
	}
	var out []stored
	var errs []error
	for _, t := range tenants {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		ps, err := os.ReadDir(filepath.Join(sh.dir, t.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range ps {
			folder := filepath.Join(sh.dir, t.Name(), p.Name())
			var size int64
			read := func(name string) ([]byte, error) {
				b, err := os.ReadFile(name)
				size += int64(len(b))
				return b, err
			}
			manifest, err := read(filepath.Join(folder, "manifest.json"))
			var m *corpus.Manifest
			if err == nil {
				m, err = corpus.ParseManifest(manifest)
			}
			if err == nil && m.ID != p.Name() {
				err = errors.New("its manifest names another id")
			}
			var passages []byte
			if err == nil {
				passages, err = read(filepath.Join(folder, m.PassagesFile))
			}
			if err == nil && strings.HasSuffix(m.PassagesFile, ".gz") {
				passages, err = m.Gunzip(passages)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("uploaded pack %s: %w", folder, err))
				continue
			}
			out = append(out, stored{shelved: shelved{Tenant: t.Name(), ID: m.ID, Bytes: size, File: m.PassagesFile},
				manifest: manifest, passages: passages})
		}
	}
	return out, errs
}
