package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ragagentlab/ragagent/core/corpus"
)

// dirPacks is PackStore over a directory (serve-api --corpora DIR): one
// folder per tenant and in it one folder per pack holding its files as
// uploaded, dir/<tenant>/<id>/{manifest.json, its passages file}. A pack
// is written into dir/.incoming and renamed into place whole, and deleted
// by renaming it out first, so a crash leaves it whole or gone (load
// clears .incoming). One process keeps the directory, so what it holds is
// indexed in memory, read once by load.
type dirPacks struct {
	dir string

	mu    sync.Mutex
	packs map[string]KeptPack // by id
}

func newDirPacks(dir string) *dirPacks {
	return &dirPacks{dir: dir, packs: map[string]KeptPack{}}
}

var _ PackStore = (*dirPacks)(nil)

// load clears what a crash left in .incoming and indexes every kept pack
// (a folder that does not read as a pack is reported, not kept).
func (d *dirPacks) load() []error {
	os.RemoveAll(filepath.Join(d.dir, ".incoming"))
	tenants, err := os.ReadDir(d.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return []error{err}
	}
	var errs []error
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range tenants {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		ps, err := os.ReadDir(filepath.Join(d.dir, t.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range ps {
			k, err := d.read(t.Name(), p.Name())
			if err != nil {
				errs = append(errs, fmt.Errorf("uploaded pack %s: %w", filepath.Join(d.dir, t.Name(), p.Name()), err))
				continue
			}
			d.packs[k.ID] = k
		}
	}
	return errs
}

// read is a pack folder as kept: its manifest, which must name the
// folder's id, and its passages file's size.
func (d *dirPacks) read(tenant, id string) (KeptPack, error) {
	folder := filepath.Join(d.dir, tenant, id)
	manifest, err := os.ReadFile(filepath.Join(folder, "manifest.json"))
	if err != nil {
		return KeptPack{}, err
	}
	m, err := corpus.ParseManifest(manifest)
	if err != nil {
		return KeptPack{}, err
	}
	if m.ID != id {
		return KeptPack{}, errors.New("its manifest names another id")
	}
	fi, err := os.Stat(filepath.Join(folder, m.PassagesFile))
	if err != nil {
		return KeptPack{}, err
	}
	return KeptPack{Tenant: tenant, ID: id, Manifest: manifest, File: m.PassagesFile, Bytes: int64(len(manifest)) + fi.Size()}, nil
}

// all lists every tenant's kept packs by id.
func (d *dirPacks) all() []KeptPack {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]KeptPack, 0, len(d.packs))
	for _, p := range d.packs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (d *dirPacks) Kept(_ context.Context, tenant string) ([]KeptPack, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []KeptPack{}
	for _, p := range d.packs {
		if p.Tenant == tenant {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (d *dirPacks) Find(_ context.Context, id string) (KeptPack, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.packs[id]
	return p, ok, nil
}

// aside makes a new folder in dir/.incoming, where a pack is written
// before it is renamed into place and moved before it is removed (load
// clears what a crash left there).
func (d *dirPacks) aside(prefix string) (string, error) {
	incoming := filepath.Join(d.dir, ".incoming")
	if err := os.MkdirAll(incoming, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(incoming, prefix)
}

// Put writes the files into a folder of dir/.incoming, synced, then
// renames it into dir/<tenant>/<id>.
func (d *dirPacks) Put(_ context.Context, p KeptPack, passagesFile []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, taken := d.packs[p.ID]; taken {
		return ErrPackTaken
	}
	tmp, err := d.aside("pack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeSynced(filepath.Join(tmp, p.File), passagesFile); err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, "manifest.json"), p.Manifest); err != nil {
		return err
	}
	owner := filepath.Join(d.dir, p.Tenant)
	if err := os.MkdirAll(owner, 0o700); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(owner, p.ID)); err != nil {
		return err
	}
	if err := syncDir(owner); err != nil {
		return err
	}
	d.packs[p.ID] = p
	return nil
}

func (d *dirPacks) Passages(_ context.Context, p KeptPack) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.dir, p.Tenant, p.ID, p.File))
}

// Delete renames the pack's folder out of place, then removes it.
func (d *dirPacks) Delete(_ context.Context, p KeptPack) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	tmp, err := d.aside("gone-")
	if err != nil {
		return err
	}
	gone := filepath.Join(tmp, "pack")
	if err := os.Rename(filepath.Join(d.dir, p.Tenant, p.ID), gone); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	delete(d.packs, p.ID)
	return errors.Join(syncDir(filepath.Join(d.dir, p.Tenant)), os.RemoveAll(tmp))
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
