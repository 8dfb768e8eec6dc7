// Package corpus loads the pinned, versioned passages every run reads, and
// refuses a snapshot whose receipts or identifiers do not hold, because a
// citation is only worth its passage's sha256.
package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/ragagentlab/ragagent/core/jsonfile"
)

// Format is the snapshot file's format tag.
const Format = "ragagent-snapshot/1"

// Passage is one versioned documentation passage with its receipt.
type Passage struct {
	SourceID string `json:"source_id"`
	Version  string `json:"version"`
	URL      string `json:"url"`
	// Title is the passage's heading path ("pathlib › Concrete paths"),
	// for people; the agent never sees it. The seed's passages have none.
	Title string `json:"title,omitempty"`
	// Aliases are the passage's other URLs: the same page with another of
	// the ids its text holds (re.html#re.IGNORECASE beside re.html#re.I),
	// so a question set naming an object by any of its anchors finds it.
	// The seed's passages have none.
	Aliases    []string `json:"aliases,omitempty"`
	Text       string   `json:"text"`
	TextSHA256 string   `json:"text_sha256"`
}

// Bytes is the UTF-8 length of the text, which is what a read costs.
func (p Passage) Bytes() int { return len(p.Text) }

// Snapshot is the validated corpus, passages in file order (which is also
// the index's insertion order, so it breaks no ties silently).
type Snapshot struct {
	Format      string    `json:"format"`
	Description string    `json:"description,omitempty"`
	Passages    []Passage `json:"passages"`
	byID        map[string]int
}

// ValidVersion reports whether v fully matches [0-9]+\.[0-9]+ (ASCII digits).
func ValidVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	return ok && allDigits(major) && allDigits(minor)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ValidSourceID reports whether id is 1-128 of [a-z0-9._-] starting with a
// letter or digit, the form every source id in a receipt takes.
func ValidSourceID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' || id[0] == '_' || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SHA256 returns the lower-case hex sha256 of text, the form receipts use.
func SHA256(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Parse decodes and validates a snapshot file.
func Parse(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := jsonfile.Decode(data, &s); err != nil {
		return nil, fmt.Errorf("snapshot: not a valid snapshot file: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Snapshot) validate() error {
	if s.Format != Format {
		return fmt.Errorf("snapshot: format is %q, want %q", s.Format, Format)
	}
	if len(s.Passages) == 0 {
		return fmt.Errorf("snapshot: no passages")
	}
	var err error
	s.byID, err = checkPassages("snapshot", s.Passages)
	return err
}

// checkPassages refuses the first passage that is not well formed (its id,
// version, URL, title or text, a text that no longer matches its receipt,
// an id used before), naming it after prefix; it returns the index by id.
func checkPassages(prefix string, passages []Passage) (map[string]int, error) {
	byID := make(map[string]int, len(passages))
	for i, p := range passages {
		if err := checkPassage(p); err != nil {
			return nil, fmt.Errorf("%s: passage %d (%q): %w", prefix, i+1, p.SourceID, err)
		}
		if j, dup := byID[p.SourceID]; dup {
			return nil, fmt.Errorf("%s: passage %d (%q): source_id repeats passage %d", prefix, i+1, p.SourceID, j+1)
		}
		byID[p.SourceID] = i
	}
	return byID, nil
}

// MaxTitleBytes bounds a passage's title.
const MaxTitleBytes = 512

// MaxAliases bounds a passage's aliases (a Sphinx section can hold dozens
// of index targets; the first are the nearest to its start).
const MaxAliases = 64

// checkAliases refuses aliases that are not other anchors of the
// passage's page: each an absolute https URL of the URL's page with a
// #fragment, none the URL itself or repeated, at most MaxAliases.
func checkAliases(p Passage) error {
	if len(p.Aliases) > MaxAliases {
		return fmt.Errorf("%d aliases, over the cap of %d", len(p.Aliases), MaxAliases)
	}
	page, _, _ := strings.Cut(p.URL, "#")
	seen := map[string]bool{p.URL: true}
	for _, a := range p.Aliases {
		apage, fragment, ok := strings.Cut(a, "#")
		switch {
		case !ValidURL(a) || !ok || fragment == "" || apage != page:
			return fmt.Errorf("alias %q is not an absolute https URL of the page %s with a #fragment", a, page)
		case seen[a]:
			return fmt.Errorf("alias %q repeats the URL or another alias", a)
		}
		seen[a] = true
	}
	return nil
}

// URLs are a passage's URL and its aliases: every URL a target may name
// it by.
func (p Passage) URLs() []string { return append([]string{p.URL}, p.Aliases...) }

func checkPassage(p Passage) error {
	if err := checkHead(p); err != nil {
		return err
	}
	return checkText(p)
}

// checkHead checks what a passage is besides its text: id, version, title
// and URL.
func checkHead(p Passage) error {
	switch {
	case !ValidSourceID(p.SourceID):
		return fmt.Errorf("source_id must be 1-128 lower-case letters, digits, '.', '_' or '-'")
	case !ValidVersion(p.Version):
		return fmt.Errorf("version %q is not of the form 3.12", p.Version)
	case len(p.Title) > MaxTitleBytes || !utf8.ValidString(p.Title) || strings.ContainsAny(p.Title, "\r\n"):
		return fmt.Errorf("title must be one line of UTF-8, at most %d bytes", MaxTitleBytes)
	case !ValidURL(p.URL):
		return fmt.Errorf("url %q is not an absolute https URL", p.URL)
	case !hexSHA256.MatchString(p.TextSHA256):
		return fmt.Errorf("text_sha256 %q is not 64 lower-case hex digits", p.TextSHA256)
	}
	return checkAliases(p)
}

// checkText checks a passage's text and that it matches its receipt.
func checkText(p Passage) error {
	switch {
	case p.Text == "" || !utf8.ValidString(p.Text):
		return fmt.Errorf("text must be non-empty UTF-8")
	case SHA256(p.Text) != p.TextSHA256:
		return fmt.Errorf("text_sha256 %q does not match the text (which hashes to %s)", p.TextSHA256, SHA256(p.Text))
	}
	return nil
}

// ValidURL reports whether u is an absolute https URL with a host, the
// only kind of link a passage may carry.
func ValidURL(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && parsed.Scheme == "https" && parsed.Host != ""
}

// Passage returns the passage with the given source id.
func (s *Snapshot) Passage(sourceID string) (Passage, bool) {
	i, ok := s.byID[sourceID]
	if !ok {
		return Passage{}, false
	}
	return s.Passages[i], true
}

// CheckPassage checks one passage as a snapshot's are checked (id,
// version, title, URL, receipt form, text and the text matching its
// receipt).
func CheckPassage(p Passage) error { return checkPassage(p) }
