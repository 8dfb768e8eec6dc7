package engine

import (
	"bytes"
	"compress/gzip"
	"encoding/json"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"

	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/store"
)

// The encodings of a pack's passages file, and the build's defaults.
const (
	// EncodingJSON is a readable ragagent-snapshot/1 document, for small
	// packs (the seed's encoding).
	EncodingJSON = corpus.EncodingJSON
	// EncodingSQLite is a prebuilt FTS5 image, for large packs.
	EncodingSQLite = corpus.EncodingSQLite
	// DefaultSearchK is a built pack's agent search k unless one is given.
	DefaultSearchK = corpus.DefaultSearchK
	// DefaultPassageBytes is a built passage's size cap unless one is
	// given.
	DefaultPassageBytes = builder.DefaultMaxBytes
	// MaxSpecBytes bounds a spec file a pack's default is read from.
	MaxSpecBytes = corpus.MaxRetrievalSpecBytes
	// MaxDocumentBytes is the largest document the builder reads.
	MaxDocumentBytes = builder.MaxDocumentBytes
)

// CorpusBuild is a pack to build from documents a front end read: the
// builder's options (id, title, version, base URL, ...), the passages
// file's encoding and whether it is gzipped.
type CorpusBuild struct {
	builder.Options
	Documents []builder.Document
	// Encoding is EncodingJSON ("" too) or EncodingSQLite.
	Encoding string
	// Gzip compresses the passages file (the receipt stays that of the
	// uncompressed bytes).
	Gzip bool
	// OnDocument, if set, is told after each document is read.
	OnDocument func(done, total int)
}

// BuiltCorpus is a pack built: its manifest (checked) and that file's
// bytes, the passages file as it is to be written and uncompressed, and
// each document the build left out with its reason.
type BuiltCorpus struct {
	Manifest     *corpus.Manifest
	ManifestFile []byte
	// PassagesFile is the passages file as written (gzipped when asked);
	// Passages are its uncompressed bytes, which the receipt is of.
	PassagesFile []byte
	Passages     []byte
	Documents    int
	Skipped      []builder.Skipped
}

// BuildCorpus cuts documents into a pack (core/builder), encodes its
// passages file and writes its manifest, the one way a pack is made: by
// the command line from a folder and by the page from a person's files
// (BuildPack). A build with no readable document is an error, and the
// result then holds only why each document was left out.
func BuildCorpus(req CorpusBuild) (*BuiltCorpus, error) {
	if err := setDefault(&req.Options, req.RetrievalConfig, req.RetrievalSpec); err != nil {
		return nil, err
	}
	res, err := builder.Build(req.Documents, req.Options, req.OnDocument)
	if err != nil {
		if res != nil {
			return &BuiltCorpus{Skipped: res.Skipped}, err
		}
		return nil, err
	}
	out := &BuiltCorpus{Documents: res.Documents, Skipped: res.Skipped}
	if out.Skipped == nil {
		out.Skipped = []builder.Skipped{}
	}
	encoding, name := EncodingJSON, "passages.json"
	if req.Encoding == EncodingSQLite {
		encoding, name = EncodingSQLite, "passages.sqlite"
		out.Passages, err = store.Image(res.Passages)
	} else {
		out.Passages, err = corpus.EncodeJSON(req.Title, res.Passages)
	}
	if err != nil {
		return nil, err
	}
	out.PassagesFile = out.Passages
	compressed := 0
	if req.Gzip {
		if out.PassagesFile, err = gzipped(out.Passages); err != nil {
			return nil, err
		}
		name += ".gz"
		compressed = len(out.PassagesFile)
	}
	out.Manifest = req.Options.Manifest(res.Passages, out.Passages, encoding, name, compressed)
	if err := out.Manifest.Validate(); err != nil {
		return nil, err
	}
	if out.ManifestFile, err = corpus.EncodeManifest(out.Manifest); err != nil {
		return nil, err
	}
	return out, nil
}

// gzipped compresses data at the best level, with no name or time in the
// header, so the same input gives the same bytes.
func gzipped(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// setDefault makes a built-in's name or a spec of one's own (its JSON) a
// pack's default retrieval configuration in o: a built-in by its name in
// retrieval_config, a spec also whole in retrieval_spec, seed by neither
// (absent means seed, so the manifest is what it was before
// configurations). The spec must run offline, as every default's search
// does.
func setDefault(o *builder.Options, name string, spec []byte) error {
	o.RetrievalConfig, o.RetrievalSpec = name, nil
	if spec != nil {
		s, err := retrieval.Parse(spec)
		if err != nil {
			return err
		}
		if err := s.Runnable(); err != nil {
			return err
		}
		if builtin, err := retrieval.Lookup(s.Name); err == nil && !bytes.Equal(builtin.Canonical(), s.Canonical()) {
			return reason.New(reason.InvalidConfig, "the configuration is named %s, a built-in's name, but is not that built-in; give it a name of its own", s.Name)
		} else if err == nil {
			spec = nil // the built-in itself: named, not copied
		}
		if spec != nil {
			if spec, err = json.Marshal(s); err != nil {
				return err
			}
		}
		o.RetrievalConfig, o.RetrievalSpec = s.Name, spec
	} else if name != "" {
		if _, err := retrieval.Lookup(name); err != nil {
			return err
		}
	}
	if o.RetrievalConfig == retrieval.Seed {
		o.RetrievalConfig = ""
	}
	return nil
}

// SetPackDefault is a pack's manifest with another default retrieval
// configuration (a built-in's name, or a spec's JSON as `ragagent tune
// --out` writes it): every other field, the receipt among them, as it
// was. What `ragagent corpus config` writes, and what the page applies
// for a session.
func SetPackDefault(manifest []byte, name string, spec []byte) ([]byte, *corpus.Manifest, error) {
	m, err := corpus.ParseManifest(manifest)
	if err != nil {
		return nil, nil, err
	}
	var o builder.Options
	if err := setDefault(&o, name, spec); err != nil {
		return nil, nil, err
	}
	m.RetrievalConfig, m.RetrievalSpec = o.RetrievalConfig, o.RetrievalSpec
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	out, err := corpus.EncodeManifest(m)
	return out, m, err
}
