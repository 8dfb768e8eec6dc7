package embedproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ragagentlab/ragagent/core/rerank"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// ManifestFile is the model folder's manifest (rerank.ModelFormat), which
// names the model and pins its files.
const ManifestFile = "ragagent-model.json"

// MaxVectorsBytes bounds a vectors file read (a million passages of 256
// dimensions).
const MaxVectorsBytes = 1 << 30

// Models is engine.Models for the command line: model folders by the id
// their manifest names, vectors files looked for in the given folders and
// beside each pack folder, and one embedder process per model, started on
// first use and kept until Close.
type Models struct {
	command func(modelDir string) []string
	dirs    map[string]string // model id → folder
	vecDirs []string

	mu       sync.Mutex
	packDirs map[string]string // pack id → folder
	procs    map[string]*Process
}

// NewModels reads each model folder's manifest (a folder named twice for
// one id is refused) and keeps command, which gives the embedder's
// command line for a model folder.
func NewModels(modelDirs, vectorDirs []string, command func(modelDir string) []string) (*Models, error) {
	m := &Models{command: command, dirs: map[string]string{}, vecDirs: vectorDirs, packDirs: map[string]string{}, procs: map[string]*Process{}}
	for _, dir := range modelDirs {
		data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			return nil, fmt.Errorf("model folder %s: %w (a model folder holds the model's files and its %s)", dir, err, ManifestFile)
		}
		man, err := rerank.ParseModelManifest(data)
		if err != nil {
			return nil, fmt.Errorf("model folder %s: %w", dir, err)
		}
		if other, dup := m.dirs[man.Model]; dup && other != dir {
			return nil, fmt.Errorf("model %s is in two folders, %s and %s", man.Model, other, dir)
		}
		m.dirs[man.Model] = dir
	}
	return m, nil
}

// PackDir says where a pack opened from a folder lives: its vectors files
// are looked for there too.
func (m *Models) PackDir(pack, dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.packDirs[pack] = dir
}

// Vectors reads the file called name from the first folder that holds it:
// the vectors folders in order, then the pack's own folder.
func (m *Models) Vectors(pack, name string) ([]byte, error) {
	path, err := m.find(pack, name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// HasVectors says whether a folder holds pack's vectors file called name,
// without reading it: `ragagent tune` asks it of each model folder given,
// to tell a sentence encoder with vectors from a cross-encoder.
func (m *Models) HasVectors(pack, name string) bool {
	_, err := m.find(pack, name)
	return err == nil
}

// IDs are the model ids of the folders given, sorted.
func (m *Models) IDs() []string {
	ids := make([]string, 0, len(m.dirs))
	for id := range m.dirs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// find is the path of the file called name in the first folder that
// holds it, checked against MaxVectorsBytes.
func (m *Models) find(pack, name string) (string, error) {
	if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("%q is not a plain file name", name)
	}
	m.mu.Lock()
	dirs := append(append([]string(nil), m.vecDirs...), m.packDirs[pack])
	m.mu.Unlock()
	var looked []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		path := filepath.Join(d, name)
		info, err := os.Stat(path)
		if err != nil {
			looked = append(looked, d)
			continue
		}
		if info.Size() > MaxVectorsBytes {
			return "", fmt.Errorf("%s has %d bytes; a vectors file is at most %d", path, info.Size(), MaxVectorsBytes)
		}
		return path, nil
	}
	if len(looked) == 0 {
		return "", fmt.Errorf("no folder to look in: give --vectors DIR, the folder `ragagent corpus embed` wrote it to")
	}
	return "", fmt.Errorf("it is not in %s (--vectors DIR adds a folder)", strings.Join(looked, ", "))
}

// Embedder is model's running embedder, started now if it is not yet.
func (m *Models) Embedder(ctx context.Context, model string) (vectors.Embedder, error) {
	return m.process(ctx, model, vectors.KindEmbedder)
}

// Scorer is the cross-encoder model's running scorer, likewise.
func (m *Models) Scorer(ctx context.Context, model string) (retrieval.Scorer, error) {
	return m.process(ctx, model, vectors.KindCrossEncoder)
}

// process is model's running child, started now if it is not yet, and
// refused when its runner says the model is not of kind.
func (m *Models) process(ctx context.Context, model, kind string) (*Process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.procs[model]
	if !ok {
		var err error
		if p, err = m.start(ctx, model); err != nil {
			return nil, err
		}
		m.procs[model] = p
	}
	if got := p.Model().Kind; got != "" && got != kind {
		return nil, fmt.Errorf("its folder %s holds a model of kind %s, not %s", m.dirs[model], got, kind)
	}
	return p, nil
}

// start starts model's child (m.mu held).
func (m *Models) start(ctx context.Context, model string) (*Process, error) {
	dir, ok := m.dirs[model]
	if !ok {
		known := make([]string, 0, len(m.dirs))
		for id := range m.dirs {
			known = append(known, id)
		}
		sort.Strings(known)
		if len(known) == 0 {
			return nil, fmt.Errorf("no model folder was given (--model DIR, a folder with the model's files and its %s)", ManifestFile)
		}
		return nil, fmt.Errorf("no --model folder holds it (the folders hold %s)", strings.Join(known, ", "))
	}
	p, err := Start(ctx, m.command(dir))
	if err != nil {
		return nil, err
	}
	if got := p.Model().ID; got != model {
		p.Close()
		return nil, fmt.Errorf("the model process in %s loaded model %s", dir, got)
	}
	return p, nil
}

// Open is the embedder of the model in dir, whatever its id (`ragagent
// corpus embed --model DIR`).
func (m *Models) Open(ctx context.Context, dir string) (vectors.Embedder, error) {
	for id, d := range m.dirs {
		if d == dir {
			return m.Embedder(ctx, id)
		}
	}
	return nil, fmt.Errorf("model folder %s was not given", dir)
}

// Close ends every embedder process.
func (m *Models) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first error
	for id, p := range m.procs {
		if err := p.Close(); err != nil && first == nil {
			first = fmt.Errorf("the embedder of %s: %w", id, err)
		}
		delete(m.procs, id)
	}
	return first
}

// Script finds the project's embedder script: RAGAGENT_EMBEDDER if set,
// else lab/embed.mjs in the working folder or beside the executable's
// folder (bin/ragagent in a checkout).
func Script(getenv func(string) string) (string, error) {
	if s := getenv("RAGAGENT_EMBEDDER"); s != "" {
		return s, nil
	}
	candidates := []string{filepath.Join("lab", "embed.mjs")}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "..", "lab", "embed.mjs"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("the embedder lab/embed.mjs is not in this folder or beside the executable: run from the checkout or set RAGAGENT_EMBEDDER to its path")
}

// NodeCommand is the embedder's command line for script under node.
func NodeCommand(script string) func(modelDir string) []string {
	return func(dir string) []string { return []string{"node", script, "serve", "--model", dir} }
}
