// Package packs embeds the corpus packs the command line ships besides
// the seed (which is in fixtures): each a folder with manifest.json and
// its passages file. The page does not embed them; it fetches a pack only
// when someone chooses it.
package packs

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
)

//go:embed python-3.11
var files embed.FS

// Sources are the embedded packs, for engine.Options.Packs. A folder
// without a manifest (a pack not built yet) is left out.
func Sources() ([]engine.PackSource, error) {
	dirs, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	var out []engine.PackSource
	for _, d := range dirs {
		manifest, err := fs.ReadFile(files, path.Join(d.Name(), "manifest.json"))
		if err != nil {
			continue
		}
		m, err := corpus.ParseManifest(manifest)
		if err != nil {
			return nil, fmt.Errorf("packs/%s: %w", d.Name(), err)
		}
		file := path.Join(d.Name(), m.PassagesFile)
		out = append(out, engine.PackSource{Manifest: manifest, Passages: func() ([]byte, error) { return Read(files, file, m) }})
	}
	return out, nil
}

// Read reads a pack's passages file from fsys, gunzipping a .gz file, and
// refuses one larger than the manifest says before reading all of it.
func Read(fsys fs.FS, name string, m *corpus.Manifest) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r = z
	}
	var b bytes.Buffer
	b.Grow(m.PassagesBytes)
	if _, err := io.Copy(&b, io.LimitReader(r, int64(m.PassagesBytes)+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if b.Len() > m.PassagesBytes {
		return nil, fmt.Errorf("%s holds more than the manifest's %d bytes", name, m.PassagesBytes)
	}
	return b.Bytes(), nil
}
