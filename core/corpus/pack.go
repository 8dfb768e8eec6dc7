package corpus

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/jsonfile"
)

// PackFormat is a pack manifest's format tag.
const PackFormat = "ragagent-corpus/1"

// The search depths a pack may ask for: the seed's agent searched 2
// candidates; a pack of real documentation may issue a few more per search,
// never so many that one search floods a run's observations.
const (
	DefaultSearchK = 2
	MaxSearchK     = 10
)

// The passages encodings a manifest may name.
const (
	// EncodingJSON is a ragagent-snapshot/1 document: readable, for small
	// packs (the seed, a folder of notes).
	EncodingJSON = "json"
	// EncodingSQLite is a SQLite database image holding the passages with
	// their FTS5 index already built (see store.Image): nothing to parse
	// or index when it opens, which is what a large pack needs in the
	// browser.
	EncodingSQLite = "sqlite"
)

// Manifest describes a pack: what it is, where it came from and under
// which licence, the settings the agent needs for it, and the receipt of
// its passages file. Optional fields say where the file lies and its size,
// for loaders that fetch it.
type Manifest struct {
	Format         string   `json:"format"`
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Language       string   `json:"language"`
	Versions       []string `json:"versions"`
	DefaultVersion string   `json:"default_version"`
	SearchK        int      `json:"search_k"`
	Licence        string   `json:"licence"`
	Attribution    string   `json:"attribution"`
	Source         string   `json:"source"`
	MadeBy         string   `json:"made_by"`
	Passages       int      `json:"passages"`
	PassagesSHA256 string   `json:"passages_sha256"`
	// PassagesEncoding is EncodingJSON or EncodingSQLite.
	PassagesEncoding string `json:"passages_encoding"`
	// PassagesFile is the passages file's name beside the manifest; a
	// name ending in .gz is that file gzip-compressed (the receipt and
	// PassagesBytes are of the uncompressed bytes).
	PassagesFile  string `json:"passages_file"`
	PassagesBytes int    `json:"passages_bytes"`
	// CompressedBytes is the size of PassagesFile when it is compressed,
	// so a loader can show a download's progress.
	CompressedBytes int `json:"compressed_bytes,omitempty"`
	// RetrievalConfig names the pack's default retrieval configuration (a
	// built-in of core/retrieval, checked when the pack opens): what the
	// agent's search and `ragagent search` rank by unless told otherwise.
	// Absent means "seed", the seed's literal search, so every pack built
	// before configurations existed keeps its ranking.
	RetrievalConfig string `json:"retrieval_config,omitempty"`
	// RetrievalSpec, when present, is the default configuration itself, a
	// spec of one's own (what `ragagent tune --out` writes), named by
	// RetrievalConfig; absent, RetrievalConfig names a built-in. The
	// receipt is of the passages file, so a pack's default changes without
	// a rebuild (`ragagent corpus config`).
	RetrievalSpec json.RawMessage `json:"retrieval_spec,omitempty"`
}

// MaxRetrievalSpecBytes bounds a manifest's retrieval_spec.
const MaxRetrievalSpecBytes = 16 << 10

var (
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fileName  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
)

// ParseManifest decodes and validates a pack manifest.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := jsonfile.Decode(data, &m); err != nil {
		return nil, fmt.Errorf("pack: not a valid manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate refuses a manifest with a field out of its rules, naming the
// field.
func (m *Manifest) Validate() error {
	where := "pack"
	if m.ID != "" {
		where = fmt.Sprintf("pack %s", m.ID)
	}
	bad := func(format string, a ...any) error { return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...)) }
	if m.Format != PackFormat {
		return bad("format is %q, want %q", m.Format, PackFormat)
	}
	if !ValidSourceID(m.ID) || len(m.ID) > 64 {
		return bad("id %q must be 1-64 lower-case letters, digits, '.', '_' or '-'", m.ID)
	}
	for _, f := range []struct{ name, value string }{
		{"title", m.Title}, {"language", m.Language}, {"licence", m.Licence},
		{"attribution", m.Attribution}, {"source", m.Source}, {"made_by", m.MadeBy},
	} {
		if f.value == "" || !utf8.ValidString(f.value) || len(f.value) > 4096 {
			return bad("%s must be non-empty UTF-8 of at most 4096 bytes", f.name)
		}
	}
	if err := CheckPackTitle(m.Title); err != nil {
		return bad("%v", err)
	}
	if len(m.Versions) == 0 {
		return bad("versions is empty")
	}
	seen := map[string]bool{}
	for _, v := range m.Versions {
		if !ValidVersion(v) || seen[v] {
			return bad("versions must be distinct versions of the form 3.12, got %q", v)
		}
		seen[v] = true
	}
	if !seen[m.DefaultVersion] {
		return bad("default_version %q is not among the versions %v", m.DefaultVersion, m.Versions)
	}
	if m.SearchK < 1 || m.SearchK > MaxSearchK {
		return bad("search_k must be a whole number from 1 to %d, got %d", MaxSearchK, m.SearchK)
	}
	if m.Passages < 1 {
		return bad("passages must be at least 1, got %d", m.Passages)
	}
	if !hexSHA256.MatchString(m.PassagesSHA256) {
		return bad("passages_sha256 must be 64 lower-case hex digits")
	}
	if m.PassagesEncoding != EncodingJSON && m.PassagesEncoding != EncodingSQLite {
		return bad("passages_encoding %q is not %q or %q", m.PassagesEncoding, EncodingJSON, EncodingSQLite)
	}
	if !fileName.MatchString(m.PassagesFile) {
		return bad("passages_file %q must be a plain file name (lower-case letters, digits, '.', '_' or '-')", m.PassagesFile)
	}
	if m.PassagesBytes < 1 || m.CompressedBytes < 0 {
		return bad("passages_bytes must be at least 1 and compressed_bytes not negative")
	}
	if m.RetrievalConfig != "" && (!ValidSourceID(m.RetrievalConfig) || len(m.RetrievalConfig) > 64) {
		return bad("retrieval_config %q must name a retrieval configuration: 1-64 lower-case letters, digits, '.', '_' or '-'", m.RetrievalConfig)
	}
	if m.RetrievalSpec != nil {
		trimmed := bytes.TrimSpace(m.RetrievalSpec)
		switch {
		case len(trimmed) > MaxRetrievalSpecBytes:
			return bad("retrieval_spec has %d bytes; the cap is %d", len(trimmed), MaxRetrievalSpecBytes)
		case len(trimmed) == 0 || trimmed[0] != '{':
			return bad("retrieval_spec must be a configuration's JSON object")
		case m.RetrievalConfig == "":
			return bad("retrieval_spec needs retrieval_config to name it")
		}
	}
	return nil
}

// MaxPackTitle is a pack title's cap in characters (code points).
const MaxPackTitle = 200

// CheckPackTitle refuses a pack title that is not one line of at most
// MaxPackTitle characters without control characters. The title is the
// pack's subject: the policy text tells the model it answers questions
// about the documents so titled (agent.Policy), and the page labels the
// pack's trials with it, so it must stay a short name on one line, never a
// paragraph that could pass for a rule of the policy.
func CheckPackTitle(title string) error {
	n := 0
	for _, r := range title {
		n++
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("title must be one line without control characters, found %U", r)
		}
	}
	if n > MaxPackTitle {
		return fmt.Errorf("title must be at most %d characters, it has %d", MaxPackTitle, n)
	}
	if strings.TrimSpace(title) == "" {
		return fmt.Errorf("title must not be blank")
	}
	return nil
}

// CheckFile refuses passages bytes that are not the manifest's: another
// size or another sha256.
func (m *Manifest) CheckFile(passages []byte) error {
	return m.CheckFileWith(passages, func(b []byte) (string, error) { return SHA256(string(b)), nil })
}

// Gunzip is the pack's gzip passages file raw decompressed into one
// buffer of the manifest's size, refusing more bytes than the manifest
// says before holding them. The one allocation matters where memory only
// grows (a Worker's Go program): reading into a growing buffer held up to
// twice a 12.7 MB image at once.
func (m *Manifest) Gunzip(raw []byte) ([]byte, error) {
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	// Not a bytes.Buffer: its ReadFrom wants 512 bytes free before each
	// read, so a buffer of the exact size is copied once more at its end.
	// The read after the buffer tells a clean end (io.EOF, again after a
	// short file) from a cut one and from more bytes.
	out := make([]byte, m.PassagesBytes)
	n, _ := io.ReadFull(z, out)
	more, err := io.ReadFull(z, make([]byte, 1))
	switch {
	case more > 0:
		return nil, fmt.Errorf("it holds more than the manifest's %d bytes", m.PassagesBytes)
	case err != io.EOF:
		return nil, err
	}
	return out[:n], nil // fewer bytes than the manifest's: CheckFile says so
}

// CheckFileWith is CheckFile with another implementation of sha256 (lower-
// case hex): in the browser, the platform's own (SubtleCrypto) hashes the
// 12.7 MB of a large pack in tens of milliseconds where Go's portable code
// compiled to WebAssembly takes a second.
func (m *Manifest) CheckFileWith(passages []byte, sha256 func([]byte) (string, error)) error {
	if len(passages) != m.PassagesBytes {
		return fmt.Errorf("pack %s: the passages file has %d bytes, the manifest says %d", m.ID, len(passages), m.PassagesBytes)
	}
	sum, err := sha256(passages)
	if err != nil {
		return fmt.Errorf("pack %s: hash the passages file: %w", m.ID, err)
	}
	if sum != m.PassagesSHA256 {
		return fmt.Errorf("pack %s: the passages file hashes to %s, the manifest's passages_sha256 is %s", m.ID, sum, m.PassagesSHA256)
	}
	return nil
}

// Pack is a validated corpus pack: its manifest and, for a pack whose
// passages were decoded (EncodingJSON), its snapshot, passages in file
// order (the index's insertion order). An image pack (EncodingSQLite) has
// no snapshot: its passages stay in the image until a search or a read
// needs one, which CheckHead and CheckPassage check then.
type Pack struct {
	Manifest *Manifest
	Snapshot *Snapshot
}

// NewPack validates decoded passages against their manifest: as many as it
// says, each of one of its versions, and each well formed with a text that
// matches its receipt and an id of its own (see Parse). Errors name the
// passage.
func NewPack(m *Manifest, passages []Passage) (*Pack, error) {
	prefix := "pack " + m.ID
	if len(passages) != m.Passages {
		return nil, fmt.Errorf("%s: the passages file has %d passages, the manifest says %d", prefix, len(passages), m.Passages)
	}
	byID, err := checkPassages(prefix, passages)
	if err != nil {
		return nil, err
	}
	for i, p := range passages {
		if err := m.checkVersion(i, p); err != nil {
			return nil, err
		}
	}
	return &Pack{Manifest: m, Snapshot: &Snapshot{Format: Format, Passages: passages, byID: byID}}, nil
}

func (m *Manifest) checkVersion(i int, p Passage) error {
	for _, v := range m.Versions {
		if p.Version == v {
			return nil
		}
	}
	return fmt.Errorf("pack %s: passage %d (%q): version %s is not among the manifest's versions %v", m.ID, i+1, p.SourceID, p.Version, m.Versions)
}

// CheckHead refuses the i-th passage (0-based) of a pack read without its
// text when its id, version, title, URL or receipt is not well formed or
// its version is not the manifest's, naming the passage as NewPack does.
func (m *Manifest) CheckHead(i int, p Passage) error {
	if err := checkHead(p); err != nil {
		return fmt.Errorf("pack %s: passage %d (%q): %w", m.ID, i+1, p.SourceID, err)
	}
	return m.checkVersion(i, p)
}

// CheckPassage is CheckHead with the text: non-empty UTF-8 matching its
// receipt.
func (m *Manifest) CheckPassage(i int, p Passage) error {
	if err := m.CheckHead(i, p); err != nil {
		return err
	}
	if err := checkText(p); err != nil {
		return fmt.Errorf("pack %s: passage %d (%q): %w", m.ID, i+1, p.SourceID, err)
	}
	return nil
}

// DecodeJSON reads an EncodingJSON passages file (a ragagent-snapshot/1
// document) without validating its passages: NewPack does that.
func DecodeJSON(data []byte) ([]Passage, error) {
	var s Snapshot
	if err := jsonfile.Decode(data, &s); err != nil {
		return nil, fmt.Errorf("pack: the passages file is not a valid %s document: %w", Format, err)
	}
	if s.Format != Format {
		return nil, fmt.Errorf("pack: the passages file's format is %q, want %q", s.Format, Format)
	}
	return s.Passages, nil
}

// EncodeJSON writes passages as an EncodingJSON file, indented by two
// spaces with a final newline: the seed's fixtures/snapshot.json is
// exactly this encoding of its passages.
func EncodeJSON(description string, passages []Passage) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Snapshot{Format: Format, Description: description, Passages: passages}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// EncodeManifest writes a manifest as the files hold it: indented by two
// spaces, with a final newline.
func EncodeManifest(m *Manifest) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(m)
	return b.Bytes(), err
}
